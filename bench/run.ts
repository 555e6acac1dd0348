// `npm run bench [-- --quick]`: rowbase against two baselines on one machine, in one run.
//
//   1. bin/rowbase's bundle made, if stale (scripts/bundle.js); a fresh SQLite file in a temp folder; a
//      plan without a rate and a key, made with bin/rowbase;
//   2. `rowbase serve` seeds it over HTTP, and sets up the app of the end user's workloads (end-user.ts),
//      then stops; the file is copied for the other servers;
//   3. ten servers: rowbase, rowbase with metering on and off and with metrics on (each on a copy), baseline (a) from memory,
//      baseline (b) sqlite3 for get-row and for patch, rowbase for the feed's fanout (and the streams and
//      long polls of the changes beside it), rowbase for the webhooks, and rowbase for the catch-up of the
//      changes (a copy with a log of `changesLog` changes added, all retained); and, when a PostgreSQL server answers, three more: rowbase on a database made for the
//      run (dropped at the end), seeded as the SQLite file is, baseline (d), a bare pg server reading that
//      database, and rowbase for the webhooks on a database of its own (dropped too);
//   4. every round measures each workload right after its baseline, so that machine drift hits both;
//      each measurement's load comes from a process of its own (load.ts; for the feed, subscribers.ts
//      and writer.ts, see feed.ts; for the webhooks, receivers.ts too, see webhooks.ts; for the catch-up of
//      the changes, catch-up.ts, on a rowbase of its own whose log holds them); idle-sockets,
//      idle-streams and idle-long-polls, once, in the last round, each on a rowbase of its own; and
//      idle-server on each backend, once, the service as an operator starts it on an empty database
//      (idle-server.ts; PostgreSQL's made beside the run's and dropped too);
//   5. the table: printed, and written to BENCHMARKS.md and bench/results.json (a full run; not kept in git: BENCHMARKS.md is the record) or
//      bench/results-quick.json (--quick, which leaves the record alone);
//   6. (full run) rowbase again under `node --cpu-prof` for get-row, list and every missed target
//      (fanout and insert-batch (postgres) too; the idle workloads' targets are on memory, not CPU).
//
// Every child process is stopped at the end, on failure and on Ctrl-C too; the temp folder is removed, and
// the PostgreSQL databases dropped.
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readdirSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { bundle } from '../scripts/bundle.js';
import type { CascadeJob } from './cascade.ts';
import type { CatchUpJob } from './catch-up.ts';
import type { DeclarationsJob } from './declarations.ts';
import { endUserToken, fanoutRules, setUpApp } from './end-user.ts';
import type { ExpiryJob } from './expiry.ts';
import { fanoutCollection, fanoutCount, fanoutWorkloads, idleCollections, idleWorkloads, measureFanout, measureIdle } from './feed.ts';
import { measureIdleServer } from './idle-server.ts';
import { accountKey, createKey } from './key.ts';
import { type Measured, milliseconds, parseMeasured } from './measure.ts';
import {
  isInterrupted,
  machineTicks,
  memoryKb,
  openFilesLimit,
  outputOf,
  repoRoot,
  runToEnd,
  type SpawnOptions,
  type Started,
  sampleCpu,
  sampleMachine,
  sampleRss,
  spawnNode,
  startServer,
  stop,
  stopAll,
  stopOnSignals,
} from './processes.ts';
import { type ProfileSummary, summariseProfile } from './profile.ts';
import {
  cascadeTargets,
  changesTargets,
  cpuCell,
  declarationTargets,
  driverBaselines,
  driverName,
  expiryTargets,
  hostCell,
  idleServerTargets,
  judgeTargets,
  type Measurement,
  mainShares,
  meteringCost,
  metricsCost,
  noise,
  type Results,
  ratedByRows,
  searchTargets,
  summarise,
  table,
  webhookTargets,
  writeBenchmarksMd,
} from './report.ts';
import {
  collections,
  createCollections,
  seedAnswers,
  seedChanges,
  seedCollections,
  seedCorpus,
  seedMillion,
  seedRelations,
  send,
} from './seed.ts';
import { settingsFromArgs } from './settings.ts';
import { measureWebhooks, webhookCollections, webhooksLine, webhookWorkloads } from './webhooks.ts';
import {
  cascadeWorkloads,
  declarationWorkloads,
  expiryWorkloads,
  httpWorkloads,
  idleServerWorkloads,
  type LoadJob,
  type ServerName,
  usesRelations,
} from './workloads.ts';

/**
 * Each round, in this order. A workload with `ratioTo` is measured right after that baseline, and its
 * ratio is taken to it, so that drift of the machine hits both alike.
 */
const afterMemory = (workload: string) => [{ workload: 'baseline-memory' }, { workload, ratioTo: 'baseline-memory' }];
type Step = { workload: string; ratioTo?: string; lastRoundOnly?: boolean; postgresOnly?: boolean };
/** Steps run only when a PostgreSQL server answers. */
const onPostgres = (steps: Step[]) => steps.map((step) => ({ ...step, postgresOnly: true }));
const schedule: Step[] = [
  ...afterMemory('get-row'),
  // get-row as an app's user makes it, right after get-row (issue 53: ≥ 0.8 × it, side by side).
  { workload: 'get-row-app', ratioTo: 'baseline-memory' },
  // Metering's cost is the ratio of these two: rowbase with metering on and off, side by side, each on
  // a copy of the seeded file that serves nothing else (the rowbase above serves every write workload).
  // On, off, off, on: a drift of the machine during the four moves both sides alike. The metrics' cost
  // is that of metering on with METRICS_PORT set to metering on, measured between them the same way.
  { workload: 'get-row-metrics-on', ratioTo: 'baseline-memory' },
  { workload: 'get-row-metering-on', ratioTo: 'baseline-memory' },
  { workload: 'get-row-metering-off', ratioTo: 'baseline-memory' },
  { workload: 'get-row-metering-off', ratioTo: 'baseline-memory' },
  { workload: 'get-row-metering-on', ratioTo: 'baseline-memory' },
  { workload: 'get-row-metrics-on', ratioTo: 'baseline-memory' },
  ...afterMemory('baseline-sqlite'),
  ...afterMemory('baseline-sqlite-patch'),
  ...afterMemory('list'),
  { workload: 'list-app', ratioTo: 'baseline-memory' },
  // list-deep and the driver's one-row INSERTs are reported, not judged: once a run, in the last round,
  // as three rounds of both, with settle()'s waits, made the full run minutes longer.
  ...afterMemory('list-deep').map((step) => ({ ...step, lastRoundOnly: true })),
  // A cursor walk's hundredth page right after its first, both taken to the same (a).
  ...afterMemory('cursor-page-1'),
  { workload: 'cursor-page-100', ratioTo: 'baseline-memory' },
  // The collection of 1,000,000 rows: two filtered pages, and a cursor walk's first and hundredth pages,
  // each pair taken to the (a) measured just before it.
  ...afterMemory('filter-equal'),
  // The count of filter-equal's rows right after it (issue 46: at least half its rate), then the grouped
  // aggregate of every row, reported, not judged.
  { workload: 'aggregate-count-equal', ratioTo: 'baseline-memory' },
  { workload: 'aggregate-grouped' },
  { workload: 'filter-range', ratioTo: 'baseline-memory' },
  ...afterMemory('million-cursor-page-1'),
  { workload: 'million-cursor-page-100', ratioTo: 'baseline-memory' },
  // Issue 55: a two-word search of the corpus of 1,000,000 rows; its target is a latency, judged alone.
  { workload: 'search' },
  // insert-1 into the typed collection right after insert-1, both taken to the same (a): what a schema
  // and a unique index cost an insert.
  ...afterMemory('insert-1'),
  { workload: 'insert-1-typed', ratioTo: 'baseline-memory' },
  // And into a collection with a search index over two fields (issue 55: ≥ 0.6 × insert-1, side by side).
  { workload: 'insert-1-search', ratioTo: 'baseline-memory' },
  // And into a collection with one enforced relation (issue 54: ≥ 0.8 × insert-1, side by side).
  { workload: 'insert-1-related', ratioTo: 'baseline-memory' },
  ...afterMemory('insert-1-idempotent'),
  ...afterMemory('patch'),
  // A change by filter of about one row through the index on score, right after patch.
  { workload: 'patch-by-filter', ratioTo: 'baseline-memory' },
  { workload: 'baseline-driver-rows', lastRoundOnly: true },
  { workload: 'baseline-driver-statement' },
  { workload: 'insert-batch', ratioTo: 'baseline-driver-statement' },
  // A batch of 100 single-row inserts over two collections right after the same rows inserted as one request.
  { workload: 'insert-100' },
  { workload: 'batch-100' },
  // Issue 54: a page of 50 posts, then the same page with each post's author (≥ 0.5 × it, side by side)
  // and with each post's 10 comments (≥ 0.25 ×); and a row named by 1,000 others deleted with them (< 1 s).
  ...afterMemory('list-posts'),
  { workload: 'list-posts-author', ratioTo: 'baseline-memory' },
  { workload: 'list-posts-comments', ratioTo: 'baseline-memory' },
  // Issue 63: one person's posts by author_id, then through the relation by the person's email (≥ 0.25 ×).
  { workload: 'list-posts-by-author', ratioTo: 'baseline-memory' },
  { workload: 'list-posts-match-author', ratioTo: 'baseline-memory' },
  { workload: 'cascade-1000' },
  // Issue 64: a declaration of 100 collections planned and applied onto a new account, another account's
  // reads beside it (declarations.ts). Last of rowbase's on SQLite: it leaves 100 collections behind.
  { workload: 'declaration-100' },
  // Issue 65: reads beside rows expiring over a minute, and the sweeper's rate; once, its seeding is long.
  { workload: 'expiry', lastRoundOnly: true },
  // PostgreSQL (skipped when no server answers). Each read right after its bare pg server (d), both taken
  // to the same (a), so that its ratio to (d) is that of two neighbours; the batch right after a bare pg
  // client (c).
  ...onPostgres([
    { workload: 'baseline-memory' },
    { workload: 'baseline-pg-get-row', ratioTo: 'baseline-memory' },
    { workload: 'get-row-postgres', ratioTo: 'baseline-memory' },
    { workload: 'get-row-app-postgres', ratioTo: 'baseline-memory' },
    { workload: 'baseline-memory' },
    { workload: 'baseline-pg-list', ratioTo: 'baseline-memory' },
    { workload: 'list-postgres', ratioTo: 'baseline-memory' },
    { workload: 'list-app-postgres', ratioTo: 'baseline-memory' },
    { workload: 'baseline-postgres' },
    { workload: 'insert-batch-postgres', ratioTo: 'baseline-postgres' },
    { workload: 'insert-100-postgres' },
    { workload: 'batch-100-postgres' },
    // insert-1 and its keyed twin, side by side after one (a): what a key costs on PostgreSQL; and, just
    // before them, insert-1 into the typed collection and into one with a search index (before, so that
    // the keyed pair stays neighbours).
    { workload: 'baseline-memory' },
    { workload: 'insert-1-search-postgres', ratioTo: 'baseline-memory' },
    { workload: 'insert-1-typed-postgres', ratioTo: 'baseline-memory' },
    { workload: 'insert-1-related-postgres', ratioTo: 'baseline-memory' },
    { workload: 'insert-1-postgres', ratioTo: 'baseline-memory' },
    { workload: 'insert-1-idempotent-postgres', ratioTo: 'baseline-memory' },
    { workload: 'baseline-memory' },
    { workload: 'patch-postgres', ratioTo: 'baseline-memory' },
    { workload: 'patch-by-filter-postgres', ratioTo: 'baseline-memory' },
    { workload: 'aggregate-grouped-postgres' },
    { workload: 'search-postgres' },
    { workload: 'baseline-memory' },
    { workload: 'list-posts-postgres', ratioTo: 'baseline-memory' },
    { workload: 'list-posts-author-postgres', ratioTo: 'baseline-memory' },
    { workload: 'list-posts-comments-postgres', ratioTo: 'baseline-memory' },
    { workload: 'list-posts-by-author-postgres', ratioTo: 'baseline-memory' },
    { workload: 'list-posts-match-author-postgres', ratioTo: 'baseline-memory' },
    { workload: 'cascade-1000-postgres' },
    { workload: 'declaration-100-postgres' },
    { workload: 'expiry-postgres', lastRoundOnly: true },
  ]),
  // The feed (feed.ts): no baseline; its targets are absolute. Webhooks beside it (webhooks.ts): their
  // latency is of the same writes as a feed socket's, measured with it.
  { workload: 'fanout' },
  // Issue 56: the same writes heard by streams and long polls of the changes over plain HTTP, right after
  // the sockets; and a client catching up the changes by pages, on a rowbase of its own.
  { workload: 'fanout-sse' },
  { workload: 'fanout-long-poll' },
  { workload: 'changes-catch-up' },
  { workload: 'fanout-filtered' },
  { workload: 'fanout-rules' },
  { workload: 'webhook-latency' },
  { workload: 'webhook-throughput' },
  ...onPostgres([{ workload: 'webhook-latency-postgres' }, { workload: 'webhook-throughput-postgres' }]),
  // Once: 10,000 sockets take a while to open, and the server's memory with them all barely moves.
  { workload: 'idle-sockets', lastRoundOnly: true },
  // Issue 56: as many idle streams of the changes, and as many waiting long polls (issue 63), each judged
  // against idle-sockets' memory just before.
  { workload: 'idle-streams', lastRoundOnly: true },
  { workload: 'idle-long-polls', lastRoundOnly: true },
  // Issue 63: the service started on an empty database with one collection, then 30 s of nothing, on each backend.
  { workload: 'idle-server', lastRoundOnly: true },
  ...onPostgres([{ workload: 'idle-server-postgres', lastRoundOnly: true }]),
];
/**
 * With `--only`: the steps of the workloads asked for, each with the baseline step just before it, and
 * the bare server on its driver (driverBaselines) with its own.
 */
const selectedSteps = (only: string[]) => {
  const workloads = new Set(only.flatMap((workload) => [workload, driverBaselines[workload] ?? []].flat()));
  return new Set(
    schedule.flatMap((step, index) => {
      if (!workloads.has(step.workload)) return [];
      if (!step.ratioTo) return [index];
      const baseline = schedule.findLastIndex((other, before) => before < index && other.workload === step.ratioTo);
      return [baseline, index];
    }),
  );
};
/** The bare pg client's rows go to a collection of their own, in rowbase's `rows` table. */
const baselineCollection = 'baseline';

const settings = settingsFromArgs(process.argv.slice(2));
/** A measurement waits at most this long for the machine to be quiet (settle()); a quick run, less. */
const SETTLE_MAX_MS = settings.mode === 'quick' ? 5_000 : 30_000;
const startedAt = new Date();
const work = await mkdtemp(join(os.tmpdir(), 'rowbase-bench-'));
const files = {
  rowbase: join(work, 'rowbase.sqlite'),
  million: join(work, 'million.sqlite'),
  corpus: join(work, 'corpus.sqlite'),
  meteringOn: join(work, 'metering-on.sqlite'),
  meteringOff: join(work, 'metering-off.sqlite'),
  metrics: join(work, 'metrics.sqlite'),
  baseline: join(work, 'baseline.sqlite'),
  baselinePatch: join(work, 'baseline-patch.sqlite'),
  feed: join(work, 'feed.sqlite'),
  webhooks: join(work, 'webhooks.sqlite'),
  idle: join(work, 'idle.sqlite'),
  idleStreams: join(work, 'idle-streams.sqlite'),
  idleLongPolls: join(work, 'idle-long-polls.sqlite'),
  /** idle-server's: made by it, empty but for its key and collection. */
  idleServer: join(work, 'idle-server.sqlite'),
  changes: join(work, 'changes.sqlite'),
  profiles: join(work, 'profiles'),
};
/** The file of each idle workload's rowbase of its own: a copy of the seeded one. */
const idleFiles: Record<string, string> = {
  'idle-sockets': files.idle,
  'idle-streams': files.idleStreams,
  'idle-long-polls': files.idleLongPolls,
};
/** The SQLite file each server of the HTTP workloads reads (baseline (a) and rowbase-postgres read none). */
const serverFiles: Partial<Record<ServerName, string>> = {
  rowbase: files.rowbase,
  'rowbase-million': files.million,
  'rowbase-corpus': files.corpus,
  'rowbase-metering-on': files.meteringOn,
  'rowbase-metering-off': files.meteringOff,
  'rowbase-metrics': files.metrics,
  sqlite: files.baseline,
  'sqlite-patch': files.baselinePatch,
};
/**
 * The servers of the million workloads let a read run 60 s (5 by default): a grouped aggregate of every
 * row of `million` takes seconds, near the default on this host, and is measured, not refused
 * (docs/performance.md, "Aggregates"). No other workload reads that long.
 */
const aggregateTimeout = { ROWBASE_QUERY_TIMEOUT_MS: '60000' };
/** Every change of changes-catch-up's log retained (by age, the default keeps a day's: more than a run). */
const changesRetained = { ROWBASE_EVENTS_RETAIN_COUNT: String(settings.changesLog) };

/**
 * The PostgreSQL workloads: the database made for the run (dropped at the end), or why there is none;
 * and the webhooks' own database, made beside it when a webhook workload on PostgreSQL runs.
 */
const postgres: Results['postgres'] & {
  url?: string;
  key?: string;
  /** The publishable key of the end user's workloads on PostgreSQL (end-user.ts). */
  appKey?: string;
  webhooks?: { database: string; url?: string; key?: string };
  /** idle-server-postgres's database, made empty beside the run's. */
  idle?: { database: string; url: string };
} = {};
/**
 * The end user's workloads on SQLite (end-user.ts): the publishable key of the seeded file, and the user's
 * token, minted once a run, as an app's user holds one token for its session.
 */
const app: { key?: string; token?: string } = {};
/** The seconds the search index of `corpus` took to build over its rows, on each backend that built it (serveCorpus, startPostgres). */
const searchIndexSeconds: Results['searchIndexSeconds'] = {};
/** How long the user's token is valid: longer than any run. */
const TOKEN_SECONDS = 24 * 3600;
const benchDir = join(repoRoot, 'bench');

const cleanUp = async () => {
  await stopAll(settings.stopGraceMs);
  rmSync(work, { recursive: true, force: true });
  for (const database of [postgres.database, postgres.webhooks?.database, postgres.idle?.database]) {
    if (!database) continue;
    await dropDatabase(database).catch((error) => process.stderr.write(`bench: could not drop database ${database}: ${error.message}\n`));
  }
  postgres.database = undefined;
  postgres.webhooks = undefined;
  postgres.idle = undefined;
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
  // Once, before any server starts: bin/rowbase would otherwise make it in each of the first at once.
  await bundle();
  const openFiles = openFilesLimit();
  say(`open files: ulimit -n ${openFiles.soft} (hard ${openFiles.hard})`);
  const key = await createKey(`sqlite:${files.rowbase}`);
  app.token = await endUserToken(TOKEN_SECONDS);
  const seedSeconds = await seed(key);
  for (const copy of [
    files.million,
    files.corpus,
    files.meteringOn,
    files.meteringOff,
    files.metrics,
    files.baseline,
    files.baselinePatch,
    files.feed,
    files.webhooks,
    files.idle,
    files.idleStreams,
    files.idleLongPolls,
    files.changes,
  ]) {
    copyDatabase(files.rowbase, copy);
  }
  if (measures('insert-1-idempotent')) await seedKeys(`sqlite:${files.rowbase}`);

  const [
    million,
    corpus,
    changes,
    rowbase,
    meteringOn,
    meteringOff,
    metrics,
    memory,
    sqlite,
    sqlitePatch,
    feed,
    webhooks,
    onPostgresServers,
  ] = await Promise.all([
    serveMillion(key),
    serveCorpus(key),
    serveChanges(key),
    serveRowbase(`sqlite:${files.rowbase}`, 'on'),
    serveRowbase(`sqlite:${files.meteringOn}`, 'on'),
    serveRowbase(`sqlite:${files.meteringOff}`, 'off'),
    serveRowbase(`sqlite:${files.metrics}`, 'on', [], {}, { METRICS_PORT: '0' }),
    startServer('bench/baseline-memory.ts', [String(settings.rows)], 'baseline-memory is listening'),
    startServer('bench/baseline-sqlite.ts', ['serve', files.baseline], 'baseline-sqlite is listening'),
    startServer('bench/baseline-patch.ts', [files.baselinePatch], 'baseline-patch is listening'),
    serveRowbase(`sqlite:${files.feed}`, 'on', [], { openFiles: settings.fanoutSubscribers + 1024 }),
    measuresWebhooks(false) ? serveWebhooks(`sqlite:${files.webhooks}`) : undefined,
    startPostgres(),
  ]);
  if (measuresRelations()) {
    const seconds = await seedRelations(rowbase.url, key, settings);
    say(`seeded the related rows (${relatedRows()}) in ${seconds.toFixed(1)} s`);
  }
  await createCollections(feed.url, key, [fanoutCollection]);
  // The feed's file is a copy of the seeded one: it holds the app's issuer and publishable key (end-user.ts).
  await send(feed.url, key, 'PUT', `/v1/collections/${fanoutCollection}/rules`, fanoutRules);
  if (webhooks) await createCollections(webhooks.url, key, Object.values(webhookCollections));
  /** The rowbase of a webhook workload, and its key. */
  const webhooksOf = (workload: string): [Started, string] =>
    workload.endsWith('-postgres') ? [onPostgresServers!.webhooks!, postgres.webhooks!.key!] : [webhooks!, key];
  const servers: Partial<Record<ServerName, Started>> = {
    rowbase,
    'rowbase-metering-on': meteringOn,
    'rowbase-metering-off': meteringOff,
    'rowbase-metrics': metrics,
    memory,
    sqlite,
    'sqlite-patch': sqlitePatch,
  };
  if (million) servers['rowbase-million'] = million;
  if (corpus) servers['rowbase-corpus'] = corpus;
  if (changes) servers['rowbase-changes'] = changes;
  if (onPostgresServers) {
    servers['rowbase-postgres'] = onPostgresServers.rowbase;
    // The same rowbase, its database also holding `million` and `corpus` when a workload of them is measured.
    servers['rowbase-postgres-million'] = onPostgresServers.rowbase;
    servers['rowbase-postgres-corpus'] = onPostgresServers.rowbase;
    servers['postgres-read'] = onPostgresServers.read;
  }
  /** Every rowbase that served, for what it logged and its peak memory: the idle-sockets one joins when it runs. */
  const watched: Record<string, Started> = { ...servers, 'rowbase-feed': feed };
  if (webhooks) watched['rowbase-webhooks'] = webhooks;
  if (onPostgresServers?.webhooks) watched['rowbase-webhooks-postgres'] = onPostgresServers.webhooks;
  const serverPeakRssKb: Record<string, number> = {};

  const measurements: Measurement[] = [];
  for (let round = 1; round <= settings.rounds; round++) {
    const steps = settings.only && selectedSteps(settings.only);
    for (const [index, { workload, ratioTo, lastRoundOnly, postgresOnly }] of schedule.entries()) {
      if (steps && !steps.has(index)) continue;
      if (lastRoundOnly && round !== settings.rounds) continue;
      if (postgresOnly && !onPostgresServers) continue;
      await settle();
      const host = sampleMachine(settings.rssSampleMs);
      let measurement: Omit<Measurement, 'ratioTo'>;
      if (fanoutWorkloads.includes(workload)) {
        readIntoPageCache(files.feed);
        measurement = { workload, round, ...(await measureFanout(feed, key, settings, workload, undefined, app.key)) };
      } else if (webhookWorkloads.includes(workload)) {
        if (!workload.endsWith('-postgres')) readIntoPageCache(files.webhooks);
        const [server, serverKey] = webhooksOf(workload);
        measurement = { workload, round, ...(await measureWebhooks(server, serverKey, settings, workload)) };
      } else if (idleWorkloads[workload]) measurement = await measureIdleSockets(workload, round, key, watched, serverPeakRssKb);
      else if (idleServerWorkloads[workload]) {
        const onPostgres = idleServerWorkloads[workload] === 'postgres';
        const { measured, peakRssKb } = await measureIdleServer(onPostgres ? postgres.idle!.url : `sqlite:${files.idleServer}`, settings);
        serverPeakRssKb[`rowbase-${workload}`] = peakRssKb;
        measurement = { workload, round, measured, peakRssKb };
      } else measurement = await measure(workload, round, servers, key);
      measurement.host = host.done(measurement.measured.windowUs);
      report(measurement);
      measurements.push({ ...measurement, ratioTo });
    }
  }
  const serverProblems = Object.fromEntries(Object.entries(watched).map(([name, server]) => [name, Object.fromEntries(server.problems)]));
  for (const [name, server] of Object.entries(watched)) serverPeakRssKb[name] ??= memoryKb(server.pid, 'VmHWM');
  await Promise.all(Object.values(watched).map((server) => stop(server.child, settings.stopGraceMs)));

  const summaries = summarise(measurements);
  if (settings.only) {
    for (const s of summaries) {
      const rate = ratedByRows(s.workload) ? `${Math.round(s.rowsPerSecond)} rows/s` : `${Math.round(s.requestsPerSecond)} req/s`;
      say(
        `${s.workload.padEnd(26)} ${rate.padStart(14)}  ${Number.isNaN(s.p99Ms) ? '' : `p99 ${s.p99Ms.toFixed(2)} ms`}${s.ratio === undefined ? '' : `  ratio ${s.ratio.toFixed(3)}`}${s.ofDriver === undefined ? '' : ` (${s.ofDriver.toFixed(3)} × its ${driverName(s.workload)})`}${s.sideBySide ? `  ${s.sideBySide.ratio.toFixed(3)} × ${s.sideBySide.neighbour}` : ''}${s.cpu ? `  CPU µs/req ${cpuCell(s.cpu)}` : ''}`,
      );
    }
    for (const t of [
      ...webhookTargets(summaries),
      ...searchTargets(summaries),
      ...changesTargets(summaries, settings),
      ...cascadeTargets(summaries),
      ...declarationTargets(summaries),
      ...expiryTargets(summaries),
      ...idleServerTargets(summaries),
    ])
      say(`${t.met ? 'met   ' : 'MISSED'}  ${t.name} ${t.target}: ${t.value}`);
    say(`peak RSS of rowbase: ${Math.round((serverPeakRssKb.rowbase ?? 0) / 1024)} MB`);
    if (['get-row-metering-on', 'get-row-metering-off'].every((workload) => settings.only?.includes(workload))) {
      say(`metering costs ${(meteringCost(measurements) * 100).toFixed(1)}% of get-row`);
    }
    if (['get-row-metering-on', 'get-row-metrics-on'].every((workload) => settings.only?.includes(workload))) {
      say(`metrics cost ${(metricsCost(measurements) * 100).toFixed(1)}% of get-row`);
    }
    if (!settings.profile) return;
    for (const workload of settings.only) {
      const { areas, functions } = await profile(workload, key);
      for (const { name, percent } of [...areas.slice(0, 10), ...functions.slice(0, 20)]) say(`  ${String(percent).padStart(5)}%  ${name}`);
    }
    return;
  }
  const cost = meteringCost(measurements);
  const metricsCostShare = metricsCost(measurements);
  const targets = judgeTargets(summaries, { metering: cost, metrics: metricsCostShare }, serverPeakRssKb.rowbase, settings);

  const profiles: Record<string, ProfileSummary> = {};
  if (settings.profile) {
    const profilable = (name: string) =>
      name === 'changes-catch-up' ||
      cascadeWorkloads[name] !== undefined ||
      declarationWorkloads[name] !== undefined ||
      fanoutWorkloads.includes(name) ||
      webhookWorkloads.includes(name) ||
      ['rowbase', 'rowbase-postgres', 'rowbase-corpus', 'rowbase-postgres-corpus'].includes(httpWorkloads[name]?.server);
    const missed = targets.filter((t) => !t.met && profilable(t.name)).map((t) => t.name);
    for (const workload of new Set([...settings.profileWorkloads, ...missed])) {
      // A profile explains a result; a run's results stand without it.
      try {
        profiles[workload] = await profile(workload, key);
      } catch (error) {
        say(`not profiled: ${workload}: ${(error as Error).message}`);
      }
    }
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
    // A password in ROWBASE_BENCH_POSTGRES_URL stays out of the record.
    settings: { ...settings, postgresUrl: settings.postgresUrl.replace(/:[^:@/]*@/, ':***@') },
    seedSeconds,
    searchIndexSeconds,
    serverPeakRssKb,
    serverProblems,
    openFiles,
    postgres: { database: postgres.database, unavailable: postgres.unavailable },
    summaries,
    targets,
    meteringCost: cost,
    metricsCost: metricsCostShare,
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

async function seed(key: string): Promise<number> {
  const seeder = await serveRowbase(`sqlite:${files.rowbase}`, 'on');
  const seconds = await seedCollections(seeder.url, key, settings);
  app.key = await setUpApp(seeder.url, key);
  say(`seeded ${settings.rows.toLocaleString('en-US')} rows in ${seconds.toFixed(1)} s`);
  // A clean stop closes the last connection, which checkpoints the WAL into the file that is copied next.
  await stop(seeder.child, settings.stopGraceMs);
  return seconds;
}

/** Whether this run measures `workload`. */
function measures(workload: string): boolean {
  return !settings.only || settings.only.includes(workload);
}

/** The answers of Idempotency-Keys a service in use keeps, stored where a keyed workload will add its own. */
async function seedKeys(url: string): Promise<void> {
  const seconds = await seedAnswers(url, settings.answersKept);
  say(
    `seeded ${settings.answersKept.toLocaleString('en-US')} answers of Idempotency-Keys on ${url.split(':')[0]} in ${seconds.toFixed(1)} s`,
  );
}

/**
 * The rowbase of the million workloads, on a copy of the seeded file with the `million` collection
 * added (seed.ts, seedMillion); undefined when none of them is measured (`--only`).
 */
async function serveMillion(key: string): Promise<Started | undefined> {
  if (settings.only && !settings.only.some((workload) => httpWorkloads[workload]?.server === 'rowbase-million')) return undefined;
  const server = await serveRowbase(`sqlite:${files.million}`, 'on', [], {}, aggregateTimeout);
  const seconds = await seedMillion(server.url, key, settings);
  say(
    `seeded ${settings.millionRows.toLocaleString('en-US')} rows of ${collections.million}, indexed by score and tag, in ${seconds.toFixed(1)} s`,
  );
  return server;
}

/**
 * The rowbase of changes-catch-up, on a copy of the seeded file with the collection `changes` added, its
 * log of `changesLog` changes kept whole (ROWBASE_EVENTS_RETAIN_COUNT); undefined when it is not measured.
 */
async function serveChanges(key: string, nodeFlags: string[] = []): Promise<Started | undefined> {
  if (!measures('changes-catch-up')) return undefined;
  const server = await serveRowbase(`sqlite:${files.changes}`, 'on', nodeFlags, {}, changesRetained);
  if (nodeFlags.length > 0) return server;
  const seconds = await seedChanges(server.url, key, settings);
  say(`seeded ${settings.changesLog.toLocaleString('en-US')} changes of ${collections.changes} in ${seconds.toFixed(1)} s`);
  return server;
}

/** Whether this run measures a workload of the related rows (issue 54), whose servers are then seeded with them. */
function measuresRelations(): boolean {
  return !settings.only || settings.only.some(usesRelations);
}

/** The related rows seeded, in words. */
function relatedRows(): string {
  return (
    `${settings.people.toLocaleString('en-US')} people, ${settings.posts.toLocaleString('en-US')} posts, ` +
    `${(settings.posts * settings.commentsPerPost).toLocaleString('en-US')} comments`
  );
}

/** What cascade-1000's client (cascade.ts) is handed. */
function cascadeJob(server: Started, key: string, durationSeconds = settings.durationSeconds): CascadeJob {
  return {
    url: server.url,
    key,
    parents: collections.parents,
    children: collections.children,
    naming: settings.cascadeNaming,
    warmupSeconds: settings.warmupSeconds,
    durationSeconds,
    timeoutSeconds: settings.timeoutSeconds,
  };
}

/**
 * What declaration-100's client (declarations.ts) is handed: the server, a key of a new account of its
 * database (`databaseUrl`), which the declaration is applied onto, and the bench account's key, whose
 * rows it reads beside.
 */
async function declarationsJob(server: Started, databaseUrl: string, otherKey: string): Promise<DeclarationsJob> {
  return {
    url: server.url,
    key: await accountKey(databaseUrl, `declarations-${Date.now()}`),
    otherKey,
    otherCollection: collections.rows,
    otherRows: settings.rows,
    warmupSeconds: settings.warmupSeconds,
    // A stage is seconds on a loaded host: the reads' timeout is the settings', the stages' a few minutes.
    timeoutSeconds: Math.max(settings.timeoutSeconds, 300),
  };
}

/** What the expiry workloads' client (expiry.ts) is handed: its collections named after the workload, as it runs once. */
function expiryJob(server: Started, key: string, workload: string): ExpiryJob {
  const name = workload.replaceAll('-', '_');
  return {
    url: server.url,
    key,
    plain: `${name}_plain`,
    expiring: `${name}_expiring`,
    burst: `${name}_burst`,
    rows: settings.expiryRows,
    expiringEvery: 10,
    spreadSeconds: settings.expirySpreadSeconds,
    windowSeconds: settings.durationSeconds,
    connections: settings.expiryConnections,
    batchSize: settings.batchSize,
    pageSize: settings.pageSize,
    burstRows: settings.expiryBurstRows,
    timeoutSeconds: settings.timeoutSeconds,
  };
}

/** What changes-catch-up's client (catch-up.ts) is handed. */
function catchUpJob(server: Started, key: string, durationSeconds = settings.durationSeconds): CatchUpJob {
  return {
    url: server.url,
    key,
    collection: collections.changes,
    changes: settings.changesLog,
    limit: settings.changesPageSize,
    warmupSeconds: settings.warmupSeconds,
    durationSeconds,
    timeoutSeconds: settings.timeoutSeconds,
  };
}

/**
 * The rowbase of search, on a copy of the seeded file with the `corpus` collection and its search index
 * added (seed.ts, seedCorpus); undefined when search is not measured (`--only`).
 */
async function serveCorpus(key: string): Promise<Started | undefined> {
  if (!measuresOn('rowbase-corpus')) return undefined;
  const server = await serveRowbase(`sqlite:${files.corpus}`, 'on');
  searchIndexSeconds.sqlite = await seedSearchCorpus(server.url, key, 'SQLite');
  return server;
}

/** Seeds `corpus` and builds its search index (seedCorpus), says how long each took; the index's seconds. */
async function seedSearchCorpus(url: string, key: string, backend: string): Promise<number> {
  const { seedSeconds, indexSeconds } = await seedCorpus(url, key, settings);
  say(
    `${backend}: seeded ${settings.millionRows.toLocaleString('en-US')} rows of ${collections.corpus} in ${seedSeconds.toFixed(1)} s; ` +
      `its search index over ${settings.millionRows.toLocaleString('en-US')} rows took ${indexSeconds.toFixed(1)} s to build`,
  );
  return indexSeconds;
}

/** Whether this run measures a workload on `server`. */
function measuresOn(server: ServerName): boolean {
  return !settings.only || settings.only.some((workload) => httpWorkloads[workload]?.server === server);
}

/**
 * The rowbase of the webhook workloads (webhooks.ts) on `databaseUrl` (a copy of the seeded SQLite file,
 * or a PostgreSQL database of its own): it lets webhooks reach 127.0.0.1, where the bench's receivers listen.
 */
function serveWebhooks(databaseUrl: string, nodeFlags: string[] = []): Promise<Started> {
  return serveRowbase(databaseUrl, 'on', nodeFlags, {}, { ROWBASE_WEBHOOKS_ALLOW_PRIVATE: 'on' });
}

/** Whether this run measures a webhook workload on PostgreSQL (`postgres`), or on SQLite. */
function measuresWebhooks(onPostgres: boolean): boolean {
  return webhookWorkloads.some((workload) => workload.endsWith('-postgres') === onPostgres && measures(workload));
}

/**
 * `rowbase serve` on a free loopback port. LOG_LEVEL=info only because the line that says where it
 * listens is at info: rowbase logs nothing per request. The feed workloads hold all their sockets with one
 * key, more than the 1,000 an account may hold by default.
 */
function serveRowbase(
  databaseUrl: string,
  metering: 'on' | 'off',
  nodeFlags: string[] = [],
  options: SpawnOptions = {},
  more: Record<string, string> = {},
): Promise<Started> {
  const env = {
    ...more,
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'info',
    ROWBASE_METERING: metering,
    // Waiting long polls hold places too (fanout-long-poll): none of a workload's clients may find none.
    ROWBASE_FEED_MAX_SOCKETS_PER_ACCOUNT: String(
      Math.max(settings.idleSubscribers, settings.fanoutSubscribers, settings.longPollSubscribers),
    ),
    // Events past retention are deleted within a second of the writes that made them (every 60 s by
    // default), so that this work falls in the write workload that causes it, as under steady load it
    // would, and not in whichever measurement the next minute's tick lands in: after insert-batch, the
    // pass that deleted its hundreds of thousands of events took the cores from the next round's first
    // get-row measurements, and metering's cost swung from run to run with where the tick fell.
    ROWBASE_EVENTS_PRUNE_SECONDS: '1',
  };
  return startServer('bin/rowbase', ['serve'], 'rowbase is listening', env, nodeFlags, options);
}

/**
 * rowbase on a database of its own on the PostgreSQL server of the settings, with a key, seeded as the
 * SQLite file is (the collection the reads read, with its sort index on score, and the one insert-batch
 * writes to), and the collection the bare pg client writes to; then baseline (d), the bare pg server
 * reading the same database; and, when a webhook workload on PostgreSQL runs, the webhooks' rowbase
 * (serveWebhooks) on a database of its own. Undefined (and `postgres.unavailable` says why) when no
 * server answers there.
 */
async function startPostgres(): Promise<{ rowbase: Started; read: Started; webhooks?: Started } | undefined> {
  const where = settings.postgresUrl.replace(/\/\/[^@]*@/, '//');
  const admin = new pg.Client({ connectionString: settings.postgresUrl, connectionTimeoutMillis: 3000 });
  try {
    await admin.connect();
    await admin.query('select 1');
  } catch (error) {
    postgres.unavailable = `no PostgreSQL server answered at ${where} (${(error as Error).message})`;
    say(`not measured: the PostgreSQL workloads: ${postgres.unavailable}`);
    await admin.end().catch(() => {});
    return undefined;
  }
  const database = `rowbase_bench_${process.pid}_${Date.now()}`;
  const hooked = measuresWebhooks(true);
  const urlOf = (name: string) => {
    const url = new URL(settings.postgresUrl);
    url.pathname = `/${name}`;
    return url.toString();
  };
  try {
    await admin.query(`create database ${database} encoding 'UTF8' template template0`);
    postgres.database = database; // dropped by cleanUp, whatever happens next
    if (hooked) {
      await admin.query(`create database ${database}_webhooks encoding 'UTF8' template template0`);
      postgres.webhooks = { database: `${database}_webhooks` };
    }
    if (measures('idle-server-postgres')) {
      await admin.query(`create database ${database}_idle encoding 'UTF8' template template0`);
      postgres.idle = { database: `${database}_idle`, url: urlOf(`${database}_idle`) };
    }
  } finally {
    await admin.end();
  }
  postgres.url = urlOf(database);
  postgres.key = await createKey(postgres.url);
  const rowbase = await serveRowbase(postgres.url, 'on', [], {}, aggregateTimeout);
  const seconds = await seedCollections(rowbase.url, postgres.key, settings);
  postgres.appKey = await setUpApp(rowbase.url, postgres.key);
  await createCollections(rowbase.url, postgres.key, [baselineCollection]);
  if (measures('insert-1-idempotent-postgres')) await seedKeys(postgres.url);
  if (measures('aggregate-grouped-postgres')) {
    const millionSeconds = await seedMillion(rowbase.url, postgres.key, settings);
    say(
      `PostgreSQL: seeded ${settings.millionRows.toLocaleString('en-US')} rows of ${collections.million} in ${millionSeconds.toFixed(1)} s`,
    );
  }
  if (measuresOn('rowbase-postgres-corpus')) searchIndexSeconds.postgres = await seedSearchCorpus(rowbase.url, postgres.key, 'PostgreSQL');
  if (measuresRelations()) {
    const relatedSeconds = await seedRelations(rowbase.url, postgres.key, settings);
    say(`PostgreSQL: seeded the related rows (${relatedRows()}) in ${relatedSeconds.toFixed(1)} s`);
  }
  await vacuum(postgres.url);
  say(`PostgreSQL: database ${database} at ${where}, seeded ${settings.rows.toLocaleString('en-US')} rows in ${seconds.toFixed(1)} s`);
  const read = await startServer('bench/baseline-pg-read.ts', [postgres.url], 'baseline-pg-read is listening');
  if (!postgres.webhooks) return { rowbase, read };
  postgres.webhooks.url = urlOf(postgres.webhooks.database);
  postgres.webhooks.key = await createKey(postgres.webhooks.url);
  const webhooks = await serveWebhooks(postgres.webhooks.url);
  await createCollections(webhooks.url, postgres.webhooks.key, Object.values(webhookCollections));
  return { rowbase, read, webhooks };
}

/**
 * VACUUM ANALYZE of the freshly seeded database, as autovacuum would do within a minute or so: its
 * first pass then falls here, not in whichever measurement it would have landed in, and the planner
 * works from the statistics of a database in service in every round, the first too.
 */
async function vacuum(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('vacuum analyze');
  } finally {
    await client.end();
  }
}

async function dropDatabase(database: string): Promise<void> {
  const admin = new pg.Client({ connectionString: settings.postgresUrl, connectionTimeoutMillis: 3000 });
  await admin.connect();
  try {
    await admin.query(`drop database if exists ${database} with (force)`);
  } finally {
    await admin.end();
  }
}

/** One workload for one round: a load worker against its server, or a driver baseline in its own process. */
async function measure(
  workload: string,
  round: number,
  servers: Partial<Record<ServerName, Started>>,
  key: string,
): Promise<Omit<Measurement, 'ratioTo'>> {
  let child: ReturnType<typeof spawnNode>;
  let watched: number;
  if (workload.startsWith('baseline-driver-')) {
    readIntoPageCache(files.baseline);
    const mode = workload === 'baseline-driver-rows' ? 'insert-rows' : 'insert-statement';
    child = spawnNode('bench/baseline-sqlite.ts', [mode, files.baseline, JSON.stringify(settings)]);
    watched = child.pid!;
  } else if (workload === 'baseline-postgres') {
    child = spawnNode('bench/baseline-postgres.ts', [postgres.url!, baselineCollection, JSON.stringify(settings)]);
    watched = child.pid!;
  } else if (workload === 'changes-catch-up') {
    const server = servers['rowbase-changes']!;
    readIntoPageCache(files.changes);
    child = spawnNode('bench/catch-up.ts', [JSON.stringify(catchUpJob(server, key))]);
    watched = server.pid;
  } else if (cascadeWorkloads[workload]) {
    const name = cascadeWorkloads[workload];
    const server = servers[name]!;
    if (name === 'rowbase') readIntoPageCache(files.rowbase);
    child = spawnNode('bench/cascade.ts', [JSON.stringify(cascadeJob(server, name === 'rowbase' ? key : postgres.key!))]);
    watched = server.pid;
  } else if (declarationWorkloads[workload]) {
    const name = declarationWorkloads[workload];
    const server = servers[name]!;
    const job = await (name === 'rowbase'
      ? declarationsJob(server, `sqlite:${files.rowbase}`, key)
      : declarationsJob(server, postgres.url!, postgres.key!));
    child = spawnNode('bench/declarations.ts', [JSON.stringify(job)]);
    watched = server.pid;
  } else if (expiryWorkloads[workload]) {
    const name = expiryWorkloads[workload];
    const server = servers[name]!;
    child = spawnNode('bench/expiry.ts', [JSON.stringify(expiryJob(server, name === 'rowbase' ? key : postgres.key!, workload))]);
    watched = server.pid;
  } else {
    const name = httpWorkloads[workload].server;
    const server = servers[name];
    if (!server) throw new Error(`no server ${name} for ${workload}`);
    const file = serverFiles[name];
    if (file) readIntoPageCache(file);
    const job: LoadJob = { workload, url: server.url, ...credentialsOf(workload, key), settings };
    child = spawnNode('bench/load.ts', [JSON.stringify(job)]);
    watched = server.pid;
  }
  const rss = sampleRss(watched, settings.rssSampleMs);
  const cpu = sampleCpu(watched, settings.rssSampleMs);
  const measured: Measured = parseMeasured(await outputOf(child, settings.workloadLimitSeconds * 1000));
  const peakRssKb = rss.done();
  const used = cpu.done(measured.windowUs);
  const perRequest = (us: number) => us / measured.requests;
  return {
    workload,
    round,
    measured,
    peakRssKb,
    cpu: {
      mainUsPerRequest: perRequest(used.mainUs),
      processUsPerRequest: perRequest(used.processUs),
      mainBusy: used.busy,
      mainWaiting: used.waiting,
    },
  };
}

/**
 * An idle workload on a rowbase of its own (a copy of the seeded file, one collection per client process),
 * stopped right after: its RSS is that of a server that has served nothing but these sockets (streams).
 */
async function measureIdleSockets(
  workload: string,
  round: number,
  key: string,
  watched: Record<string, Started>,
  serverPeakRssKb: Record<string, number>,
): Promise<Omit<Measurement, 'ratioTo'>> {
  const server = await serveRowbase(`sqlite:${idleFiles[workload]}`, 'on', [], { openFiles: settings.idleSubscribers + 1024 });
  const name = workload === 'idle-sockets' ? 'rowbase-idle' : `rowbase-${workload}`;
  watched[name] = server;
  try {
    await createCollections(server.url, key, idleCollections(settings));
    const { measured, peakRssKb, hwmKb } = await measureIdle(server, key, settings, workload);
    serverPeakRssKb[name] = hwmKb;
    return { workload, round, measured, peakRssKb };
  } finally {
    await stop(server.child, settings.stopGraceMs);
  }
}

/** One line per measurement, as it comes. */
function report({ workload, round, measured, peakRssKb, cpu, host }: Omit<Measurement, 'ratioTo'>): void {
  const rate = ratedByRows(workload)
    ? `${Math.round(measured.rows / measured.seconds)} rows/s`
    : `${Math.round(measured.requests / measured.seconds)} req/s`;
  const failed = measured.failures > 0 ? `  ${measured.failures} FAILED ${JSON.stringify(measured.statusCodes)}` : '';
  const { feed } = measured;
  let what = `${rate.padStart(15)}  p50 ${milliseconds(measured.p50Ms)} ms  p99 ${milliseconds(measured.p99Ms)} ms`;
  if (fanoutWorkloads.includes(workload) && feed) {
    what =
      `${rate.padStart(15)}  delivery p50 ${milliseconds(measured.p50Ms)} ms  p99 ${milliseconds(measured.p99Ms)} ms  ` +
      `${feed.delivered} of ${feed.expected} delivered to ${feed.ready} sockets${feed.undue ? ` (and ${feed.undue} not due)` : ''}  ` +
      `CPU per insert: rowbase ${milliseconds(feed.serverCpuMsPerInsert ?? Number.NaN)} ms, subscribers ${milliseconds(feed.clientCpuMsPerInsert ?? Number.NaN)} ms`;
  } else if (measured.webhooks) {
    what = `${rate.padStart(15)}  ${webhooksLine(measured)}`;
  } else if (idleWorkloads[workload] && feed) {
    what = `${feed.ready} of ${feed.subscribers} ready in ${measured.seconds.toFixed(1)} s (p50 ${milliseconds(measured.p50Ms)} ms, p99 ${milliseconds(measured.p99Ms)} ms)  RSS ${Math.round((feed.rssBeforeKb ?? Number.NaN) / 1024)} MB before, ${Math.round((feed.rssConnectedKb ?? Number.NaN) / 1024)} MB with all open`;
  } else if (measured.idle) {
    what = `RSS ${Math.round(measured.idle.rssKb / 1024)} MB after ${measured.idle.seconds} s of nothing, ${Math.round(measured.idle.hwmKb / 1024)} MB at its peak`;
  }
  const socketFailures = feed && Object.keys(feed.socketFailures).length ? `  sockets: ${JSON.stringify(feed.socketFailures)}` : '';
  say(
    `round ${round}/${settings.rounds}  ${workload.padEnd(22)} ${what}  RSS ${Math.round(peakRssKb / 1024)} MB${cpu ? `  CPU µs/req ${cpuCell(cpu)}` : ''}${measured.loadCpuUsPerRequest === undefined ? '' : `  load generator ${Math.round(measured.loadCpuUsPerRequest)}`}${host ? `  host ${hostCell(host)}` : ''}${failed}${socketFailures}`,
  );
}

/**
 * rowbase under `node --cpu-prof` for one workload; self time within the measured window only. fanout
 * runs on a copy of the feed's file, insert-batch (postgres) on the run's PostgreSQL database.
 */
async function profile(workload: string, key: string): Promise<ProfileSummary> {
  const dir = join(files.profiles, workload);
  const flags = ['--cpu-prof', `--cpu-prof-dir=${dir}`];
  const onPostgres =
    (httpWorkloads[workload]?.server ?? cascadeWorkloads[workload] ?? declarationWorkloads[workload])?.startsWith('rowbase-postgres') ??
    false;
  const hookedPostgres = webhookWorkloads.includes(workload) && workload.endsWith('-postgres');
  let server: Started;
  if (workload === 'changes-catch-up') server = (await serveChanges(key, flags))!;
  else if (fanoutWorkloads.includes(workload))
    server = await serveRowbase(`sqlite:${files.feed}`, 'on', flags, { openFiles: fanoutCount(settings, workload) + 1024 });
  else if (webhookWorkloads.includes(workload))
    server = await serveWebhooks(hookedPostgres ? postgres.webhooks!.url! : `sqlite:${files.webhooks}`, flags);
  else server = await serveRowbase(onPostgres ? postgres.url! : `sqlite:${profiledFile(workload)}`, 'on', flags, {}, withMetrics(workload));
  const cpu = sampleCpu(server.pid, settings.rssSampleMs);
  let measured: Measured;
  try {
    if (workload === 'changes-catch-up')
      measured = parseMeasured(await runToEnd('bench/catch-up.ts', [JSON.stringify(catchUpJob(server, key, settings.profileSeconds))]));
    else if (cascadeWorkloads[workload]) {
      const job = cascadeJob(server, onPostgres ? postgres.key! : key, settings.profileSeconds);
      measured = parseMeasured(await runToEnd('bench/cascade.ts', [JSON.stringify(job)]));
    } else if (declarationWorkloads[workload]) {
      const job = await (onPostgres
        ? declarationsJob(server, postgres.url!, postgres.key!)
        : declarationsJob(server, `sqlite:${profiledFile(workload)}`, key));
      measured = parseMeasured(await runToEnd('bench/declarations.ts', [JSON.stringify(job)]));
    } else if (fanoutWorkloads.includes(workload))
      measured = (await measureFanout(server, key, settings, workload, settings.profileSeconds, app.key)).measured;
    else if (webhookWorkloads.includes(workload)) {
      const hooksKey = hookedPostgres ? postgres.webhooks!.key! : key;
      measured = (await measureWebhooks(server, hooksKey, settings, workload, settings.profileSeconds)).measured;
    } else {
      const job: LoadJob = {
        workload,
        url: server.url,
        ...credentialsOf(workload, key),
        settings: { ...settings, durationSeconds: settings.profileSeconds },
      };
      measured = parseMeasured(await runToEnd('bench/load.ts', [JSON.stringify(job)]));
    }
  } finally {
    await stop(server.child, settings.stopGraceMs); // the profile is written as the process exits
  }
  // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: thread 0 is the main thread. bin/rowbase's `serve`
  // starts again as it begins (execve, the same pid), and the first start writes a profile of its own:
  // the server's is the later.
  const file = readdirSync(dir)
    .filter((name) => /\.\d+\.0\.\d+\.cpuprofile$/.test(name))
    .sort()
    .at(-1);
  if (!file) throw new Error(`rowbase wrote no profile for ${workload}`);
  // Kept (git-ignored) for a closer look in Chrome DevTools or speedscope.
  mkdirSync(join(benchDir, 'profiles'), { recursive: true });
  copyFileSync(join(dir, file), join(benchDir, 'profiles', `${workload}.cpuprofile`));
  const { busy, waiting } = cpu.done(measured.windowUs);
  const summary = { ...summariseProfile(join(dir, file), measured.windowUs), main: { busy, waiting } };
  const shares = mainShares(summary.main);
  say(
    `profiled ${workload}: ${Math.round(measured.requests / measured.seconds)} req/s under the profiler${fanoutWorkloads.includes(workload) ? `, delivery p99 ${milliseconds(measured.p99Ms)} ms` : ''}; top: ${summary.areas
      .slice(0, 4)
      .map((a) => `${a.name} ${a.percent}%`)
      .join(', ')}${shares ? `; ${shares}` : ''}`,
  );
  return summary;
}

/**
 * What a workload's requests carry: the secret key of its server's database (`key` on SQLite), or, for an
 * end user's workload, the publishable key of that database and the user's token.
 */
function credentialsOf(workload: string, key: string): Pick<LoadJob, 'key' | 'token'> {
  const { server, endUser } = httpWorkloads[workload];
  const onPostgres = server.startsWith('rowbase-postgres');
  if (!endUser) return { key: onPostgres ? postgres.key! : key };
  return { key: onPostgres ? postgres.appKey! : app.key!, token: app.token };
}

/** The SQLite file a workload's rowbase is profiled on: that of its server (the million's, the corpus's own), else the main one. */
function profiledFile(workload: string): string {
  const server = httpWorkloads[workload]?.server;
  return server === 'rowbase-million' || server === 'rowbase-corpus' ? serverFiles[server]! : files.rowbase;
}

/** The environment a workload's server adds: METRICS_PORT for the one of the metrics' cost. */
function withMetrics(workload: string): Record<string, string> {
  return httpWorkloads[workload]?.server === 'rowbase-metrics' ? { METRICS_PORT: '0' } : {};
}

/**
 * Reads an SQLite file and its WAL, if any, so that their pages are in the page cache before a server
 * that reads them is measured. This machine's kernel pages out file pages nothing has touched for about
 * a minute (a DAMON `pageout` scheme), and a server the interleaving leaves idle for minutes otherwise
 * reads its database back from disk while it is measured, its main thread waiting on the disk rather
 * than working. Steady traffic keeps a server's pages; so does this.
 */
function readIntoPageCache(file: string): void {
  const chunk = Buffer.allocUnsafe(1 << 20);
  for (const path of [file, `${file}-wal`]) {
    if (!existsSync(path)) continue;
    const fd = openSync(path, 'r');
    try {
      while (readSync(fd, chunk, 0, chunk.length, null) > 0);
    } finally {
      closeSync(fd);
    }
  }
}

/**
 * Waits until the machine is quiet, busy for less than a quarter of its cores over a tenth of a
 * second, or SETTLE_MAX_MS has passed: what a workload left to do (a server's WAL checkpoint, the
 * deletion of events past retention, PostgreSQL's own writes) finishes before the next measurement,
 * rather than in it. A wait of a second or more is reported. Off Linux, where there is no /proc/stat
 * to read, it does not wait.
 */
async function settle(): Promise<void> {
  const started = Date.now();
  for (;;) {
    const before = machineTicks();
    if (!before) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
    const after = machineTicks()!;
    const busy = (after.busy - before.busy) / Math.max(1, after.all - before.all);
    if (busy < 0.25 || Date.now() - started > SETTLE_MAX_MS) break;
  }
  const waited = Date.now() - started;
  if (waited >= 1000) say(`  (waited ${(waited / 1000).toFixed(1)} s for the machine to be quiet)`);
}

/** Copies an SQLite file with its WAL, if one was left. */
function copyDatabase(from: string, to: string): void {
  copyFileSync(from, to);
  if (existsSync(`${from}-wal`)) copyFileSync(`${from}-wal`, `${to}-wal`);
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}
