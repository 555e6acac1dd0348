// `npm run bench [-- --quick]`: rowbase against two baselines on one machine, in one run.
//
//   1. a fresh SQLite file in a temp folder; a plan without a rate and a key, made with bin/rowbase;
//   2. `rowbase serve` seeds it over HTTP, then stops; the file is copied for the other servers;
//   3. four servers: rowbase, rowbase with metering off, baseline (a) from memory, baseline (b) sqlite3;
//   4. every round measures each workload right after its baseline, so that machine drift hits both;
//      each measurement's load comes from a process of its own (load.ts);
//   5. the table: printed, and written to bench/results.json and BENCHMARKS.md (a full run) or
//      bench/results-quick.json (--quick, which leaves the record alone);
//   6. (full run) rowbase again under `node --cpu-prof` for get-row, list and every missed target.
//
// Every child process is stopped at the end, on failure and on Ctrl-C too; the temp folder is removed.
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { type Measured, milliseconds, parseMeasured } from './measure.ts';
import {
  isInterrupted,
  memoryKb,
  outputOf,
  repoRoot,
  runToEnd,
  type Started,
  sampleRss,
  spawnNode,
  startServer,
  stop,
  stopAll,
  stopOnSignals,
} from './processes.ts';
import { type ProfileSummary, summariseProfile } from './profile.ts';
import {
  judgeTargets,
  type Measurement,
  meteringCost,
  noise,
  type Results,
  ratedByRows,
  summarise,
  table,
  writeBenchmarksMd,
} from './report.ts';
import { plan, seedCollections } from './seed.ts';
import { settingsFromArgs } from './settings.ts';
import { httpWorkloads, type LoadJob, type ServerName } from './workloads.ts';

/**
 * Each round, in this order. A workload with `ratioTo` is measured right after that baseline, and its
 * ratio is taken to it, so that drift of the machine hits both alike.
 */
const afterMemory = (workload: string) => [{ workload: 'baseline-memory' }, { workload, ratioTo: 'baseline-memory' }];
const schedule: { workload: string; ratioTo?: string }[] = [
  ...afterMemory('get-row'),
  // Right after get-row: metering's cost is the ratio of these two, both rowbase, side by side.
  { workload: 'get-row-metering-off', ratioTo: 'baseline-memory' },
  ...afterMemory('baseline-sqlite'),
  ...afterMemory('list'),
  ...afterMemory('list-deep'),
  ...afterMemory('insert-1'),
  ...afterMemory('patch'),
  { workload: 'baseline-driver-rows' },
  { workload: 'baseline-driver-statement' },
  { workload: 'insert-batch', ratioTo: 'baseline-driver-statement' },
  // PLACEHOLDER: fanout (1,000 subscribers) and idle-sockets (10,000 idle subscribers) go here once the
  // WebSocket feed lands; until then the table lists them as not yet measured (notYetMeasured in report.ts).
];

const settings = settingsFromArgs(process.argv.slice(2));
const startedAt = new Date();
const work = await mkdtemp(join(os.tmpdir(), 'rowbase-bench-'));
const files = {
  rowbase: join(work, 'rowbase.sqlite'),
  meteringOff: join(work, 'metering-off.sqlite'),
  baseline: join(work, 'baseline.sqlite'),
  profiles: join(work, 'profiles'),
};
const benchDir = join(repoRoot, 'bench');

const cleanUp = async () => {
  await stopAll(settings.stopGraceMs);
  rmSync(work, { recursive: true, force: true });
};
stopOnSignals(cleanUp);

try {
  await main();
} catch (error) {
  if (!isInterrupted()) process.stderr.write(`bench: ${(error as Error).stack ?? error}\n`);
  process.exitCode = 1;
} finally {
  await cleanUp();
}

async function main(): Promise<void> {
  say(`${settings.mode} run: ${os.availableParallelism()} cores, Node ${process.version}, work folder ${work}`);
  const key = await createKey();
  const seedSeconds = await seed(key);
  copyDatabase(files.rowbase, files.meteringOff);
  copyDatabase(files.rowbase, files.baseline);

  const [rowbase, meteringOff, memory, sqlite] = await Promise.all([
    serveRowbase(files.rowbase, 'on'),
    serveRowbase(files.meteringOff, 'off'),
    startServer('bench/baseline-memory.ts', [String(settings.rows)], 'baseline-memory is listening'),
    startServer('bench/baseline-sqlite.ts', ['serve', files.baseline], 'baseline-sqlite is listening'),
  ]);
  const servers: Record<ServerName, Started> = { rowbase, 'rowbase-metering-off': meteringOff, memory, sqlite };

  const measurements: Measurement[] = [];
  for (let round = 1; round <= settings.rounds; round++) {
    for (const { workload, ratioTo } of schedule) measurements.push({ ...(await measure(workload, round, servers, key)), ratioTo });
  }
  const serverProblems = Object.fromEntries(Object.entries(servers).map(([name, server]) => [name, Object.fromEntries(server.problems)]));
  const serverPeakRssKb = Object.fromEntries(Object.entries(servers).map(([name, server]) => [name, memoryKb(server.pid, 'VmHWM')]));
  await Promise.all(Object.values(servers).map((server) => stop(server.child, settings.stopGraceMs)));

  const summaries = summarise(measurements);
  const cost = meteringCost(measurements);
  const targets = judgeTargets(summaries, cost, serverPeakRssKb.rowbase);

  const profiles: Record<string, ProfileSummary> = {};
  if (settings.profile) {
    const missed = targets.filter((t) => !t.met && httpWorkloads[t.name]?.server === 'rowbase').map((t) => t.name);
    for (const workload of new Set([...settings.profileWorkloads, ...missed])) profiles[workload] = await profile(workload, key);
  }

  const results: Results = {
    mode: settings.mode,
    startedAt: startedAt.toISOString(),
    wallSeconds: (Date.now() - startedAt.getTime()) / 1000,
    machine: {
      cores: os.availableParallelism(),
      cpu: os.cpus()[0]?.model ?? 'unknown',
      memoryGb: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
      os: `${os.type()} ${os.release()}`,
    },
    settings,
    seedSeconds,
    serverPeakRssKb,
    serverProblems,
    summaries,
    targets,
    meteringCost: cost,
    profiles,
    measurements,
  };
  say(`\n${table(results)}\n\n${noise(results)}\n`);
  for (const t of targets) say(`${t.met ? 'met   ' : 'MISSED'}  ${t.name} ${t.target}: ${t.value}`);
  for (const [server, problems] of Object.entries(serverProblems)) {
    for (const [problem, count] of Object.entries(problems)) say(`${server} logged ${count} × ${problem}`);
  }
  const resultsFile = join(benchDir, settings.mode === 'full' ? 'results.json' : 'results-quick.json');
  writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
  if (settings.mode === 'full') writeBenchmarksMd(join(repoRoot, 'BENCHMARKS.md'), results, '# Benchmarks\n\n{{generated}}\n');
  say(`\nwritten: ${resultsFile}${settings.mode === 'full' ? ', BENCHMARKS.md' : ''}; ${Math.round(results.wallSeconds)} s in all`);
}

/** A plan with no rate and a quota no run reaches, and a key on it, through the CLI as an operator would. */
async function createKey(): Promise<string> {
  const env = { DATABASE_URL: `sqlite:${files.rowbase}` };
  await runToEnd('bin/rowbase', ['plans', 'set', plan.name, '--quota', String(plan.quota), '--period', plan.period, '--no-rate'], env);
  const created = await runToEnd('bin/rowbase', ['keys', 'create', '--account', 'bench', '--plan', plan.name, '--json'], env);
  return JSON.parse(created).key;
}

async function seed(key: string): Promise<number> {
  const seeder = await serveRowbase(files.rowbase, 'on');
  const seconds = await seedCollections(seeder.url, key, settings);
  say(`seeded ${settings.rows.toLocaleString('en-US')} rows in ${seconds.toFixed(1)} s`);
  // A clean stop closes the last connection, which checkpoints the WAL into the file that is copied next.
  await stop(seeder.child, settings.stopGraceMs);
  return seconds;
}

/**
 * `rowbase serve` on a free loopback port. LOG_LEVEL=info only because the line that says where it
 * listens is at info: rowbase logs nothing per request.
 */
function serveRowbase(file: string, metering: 'on' | 'off', nodeFlags: string[] = []): Promise<Started> {
  const env = { PORT: '0', HOST: '127.0.0.1', DATABASE_URL: `sqlite:${file}`, LOG_LEVEL: 'info', ROWBASE_METERING: metering };
  return startServer('bin/rowbase', ['serve'], 'rowbase is listening', env, nodeFlags);
}

/** One workload for one round: a load worker against its server, or the driver baseline in its own process. */
async function measure(workload: string, round: number, servers: Record<ServerName, Started>, key: string): Promise<Measurement> {
  let child: ReturnType<typeof spawnNode>;
  let watched: number;
  if (workload.startsWith('baseline-driver-')) {
    const mode = workload === 'baseline-driver-rows' ? 'insert-rows' : 'insert-statement';
    child = spawnNode('bench/baseline-sqlite.ts', [mode, files.baseline, JSON.stringify(settings)]);
    watched = child.pid!;
  } else {
    const server = servers[httpWorkloads[workload].server];
    const job: LoadJob = { workload, url: server.url, key, settings };
    child = spawnNode('bench/load.ts', [JSON.stringify(job)]);
    watched = server.pid;
  }
  const rss = sampleRss(watched, settings.rssSampleMs);
  const measured: Measured = parseMeasured(await outputOf(child));
  const peakRssKb = rss.done();
  const rate = ratedByRows(workload)
    ? `${Math.round(measured.rows / measured.seconds)} rows/s`
    : `${Math.round(measured.requests / measured.seconds)} req/s`;
  const failed = measured.failures > 0 ? `  ${measured.failures} FAILED ${JSON.stringify(measured.statusCodes)}` : '';
  say(
    `round ${round}/${settings.rounds}  ${workload.padEnd(22)} ${rate.padStart(15)}  p50 ${milliseconds(measured.p50Ms)} ms  p99 ${milliseconds(measured.p99Ms)} ms  RSS ${Math.round(peakRssKb / 1024)} MB${failed}`,
  );
  return { workload, round, measured, peakRssKb };
}

/** rowbase under `node --cpu-prof` for one workload; self time within the measured window only. */
async function profile(workload: string, key: string): Promise<ProfileSummary> {
  const dir = join(files.profiles, workload);
  const server = await serveRowbase(files.rowbase, 'on', ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
  const job: LoadJob = { workload, url: server.url, key, settings: { ...settings, durationSeconds: settings.profileSeconds } };
  const measured: Measured = parseMeasured(await runToEnd('bench/load.ts', [JSON.stringify(job)]));
  await stop(server.child, settings.stopGraceMs); // the profile is written as the process exits
  // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: thread 0 is the main thread (1 is tsx's loader).
  const [file] = readdirSync(dir).filter((name) => /\.\d+\.0\.\d+\.cpuprofile$/.test(name));
  if (!file) throw new Error(`rowbase wrote no profile for ${workload}`);
  // Kept (git-ignored) for a closer look in Chrome DevTools or speedscope.
  mkdirSync(join(benchDir, 'profiles'), { recursive: true });
  copyFileSync(join(dir, file), join(benchDir, 'profiles', `${workload}.cpuprofile`));
  const summary = summariseProfile(join(dir, file), measured.windowUs);
  say(
    `profiled ${workload}: ${Math.round(measured.requests / measured.seconds)} req/s under the profiler; top: ${summary.areas
      .slice(0, 4)
      .map((a) => `${a.name} ${a.percent}%`)
      .join(', ')}`,
  );
  return summary;
}

/** Copies an SQLite file with its WAL, if one was left. */
function copyDatabase(from: string, to: string): void {
  copyFileSync(from, to);
  if (existsSync(`${from}-wal`)) copyFileSync(`${from}-wal`, `${to}-wal`);
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}
