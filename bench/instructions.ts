// Instructions a request costs each server, counted by valgrind's callgrind: the same count for the
// same build and requests whatever else the machine is doing, where a rate on this shared host moves
// two- to fourfold within an hour. It says how far rowbase is from a bare server doing the same work,
// and whether a change made it cheaper, to within about 1% (the same build twice). It does not count
// time in the kernel (the socket writes, SQLite's file I/O) nor waits between threads, so it is no
// substitute for `npm run bench`; it is how changes of a few percent are found and checked.
//
//   node --import tsx bench/instructions.ts [--only=get-row,patch,list,insert-1] [--rowbase-only]
//     [--requests=1000] [--warmup=6000] [--connections=10] [--keep]
//
// Needs valgrind (on every machine of this kind; not an npm package). Seeds a temp SQLite file as
// patch-cost.ts does, then for each workload starts each server under callgrind, on a copy of the file:
// rowbase, and the bare servers of `npm run bench` that do the same work (get-row: baselines (a) and
// (b); patch: patch's bare server). It sends `warmup` requests uncounted, so that V8 has compiled the
// hot code, then counts `requests` more, sent by this process over `connections` keep-alive connections,
// then counts the same length of time with no requests and takes that away: what the server does on
// its timers whether or not requests come. Valgrind runs a server some 30 times slower, so the server's
// clock and timers run that much slower too (slow-clock.ts), and what it does each second keeps its
// share of each request. Prints instructions per request on the main thread and on all threads, and
// rowbase's main thread against its bare server's (the last bare server of the workload). `--keep` keeps the callgrind files (for callgrind_annotate) and names their folder.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { repoRoot } from './processes.ts';
import { benchRow, collections } from './seed.ts';
import { createKey, seedFile } from './seed-file.ts';

const ROWS = 100_000;
const options = Object.fromEntries(
  process.argv.slice(2).map((arg) => {
    const [name, value = 'true'] = arg.replace(/^--/, '').split('=');
    return [name, value];
  }),
);
const requests = Number(options.requests ?? 1000);
const warmup = Number(options.warmup ?? 6000);
const connections = Number(options.connections ?? 10);
const slowClock = Number(options['slow-clock'] ?? 30);

interface Server {
  name: string;
  script: string;
  args(file: string): string[];
}

const rowbase: Server = { name: 'rowbase', script: 'bin/rowbase', args: () => ['serve'] };
const memory: Server = { name: 'baseline (a)', script: 'bench/baseline-memory.ts', args: () => [String(ROWS)] };
const driver: Server = { name: 'baseline (b)', script: 'bench/baseline-sqlite.ts', args: (file) => ['serve', file] };
const barePatch: Server = { name: "patch's bare server", script: 'bench/baseline-patch.ts', args: (file) => ['sqlite3', file] };

interface Request {
  method: string;
  path: string;
  body?: string;
}

/** Each workload's servers, rowbase first, and its requests, the n-th a pure function of n: every server gets the same ones. */
const rowsPath = (collection: string) => `/v1/collections/${collection}/rows`;
const workloads: Record<string, { servers: Server[]; request(n: number): Request }> = {
  'get-row': { servers: [rowbase, memory, driver], request: (n) => ({ method: 'GET', path: `${rowsPath(collections.rows)}/${idOf(n)}` }) },
  patch: {
    servers: [rowbase, barePatch],
    request: (n) => ({
      method: 'PATCH',
      path: `${rowsPath(collections.rows)}/${idOf(n)}`,
      body: JSON.stringify({ score: (n * 7919) % 1_000_000 }),
    }),
  },
  list: {
    servers: [rowbase],
    request: () => ({ method: 'GET', path: `${rowsPath(collections.rows)}?limit=50&offset=0&order_by=score&order=desc` }),
  },
  'insert-1': {
    servers: [rowbase],
    request: () => ({ method: 'POST', path: rowsPath(collections.inserts), body: JSON.stringify([benchRow(1)]) }),
  },
};
const idOf = (n: number) => 1 + ((n * 2_654_435_761) % ROWS);

const only = options.only ? String(options.only).split(',') : Object.keys(workloads);
for (const name of only) if (!workloads[name]) throw new Error(`no workload ${name}: ${Object.keys(workloads).join(', ')}`);
try {
  execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
} catch {
  throw new Error('bench/instructions.ts needs valgrind (apt-get install valgrind)');
}

const work = mkdtempSync(join(os.tmpdir(), 'rowbase-instructions-'));
const seeded = join(work, 'seeded.db');
process.stderr.write(`seeding ${ROWS.toLocaleString('en-US')} rows…\n`);
await seedFile(seeded, ROWS);
const key = await createKey(`sqlite:${seeded}`);

const lines: string[] = [];
for (const workload of only) {
  const { servers, request } = workloads[workload];
  let bare: number | undefined;
  // The bare servers first, then rowbase, beside the last of them.
  for (const server of options['rowbase-only'] ? [rowbase] : [...servers.slice(1), rowbase]) {
    const counted = await count(server, workload, request);
    if (server !== rowbase) bare = counted.main;
    const versus = server === rowbase && bare !== undefined ? `${(counted.main / bare).toFixed(2)} ×` : '';
    const line = `${workload.padEnd(9)} ${server.name.padEnd(20)} ${fmt(counted.main)} ${fmt(counted.all)} ${versus.padStart(9)}`;
    lines.push(line);
    process.stderr.write(`${line}\n`);
  }
}
process.stdout.write(
  `\n${'workload'.padEnd(9)} ${'server'.padEnd(20)} ${'main thread'.padStart(12)} ${'all threads'.padStart(12)}  rowbase ÷ bare (main)\n`,
);
process.stdout.write(`${'instructions a request'.padStart(57)}\n${lines.join('\n')}\n`);
if (options.keep) process.stdout.write(`callgrind files in ${work}\n`);
else rmSync(work, { recursive: true, force: true });

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US').padStart(12);
}

/** Instructions per request of `server` on `workload`, on its main thread and on all, after the warm-up, less its idle cost. */
async function count(server: Server, workload: string, request: (n: number) => Request): Promise<{ main: number; all: number }> {
  const folder = mkdtempSync(join(work, `${workload}-`));
  for (const file of readdirSync(work))
    if (file.startsWith('seeded.db')) copyFileSync(join(work, file), join(folder, file.replace('seeded', 'bench')));
  const file = join(folder, 'bench.db');
  const node = [process.execPath, '--import', 'tsx', '--import', './bench/slow-clock.ts', server.script, ...server.args(file)];
  const child = spawn(
    'valgrind',
    ['--tool=callgrind', '--instr-atstart=no', '--separate-threads=yes', `--callgrind-out-file=${join(folder, 'callgrind.%p')}`, ...node],
    {
      cwd: repoRoot,
      env: { ...process.env, DATABASE_URL: `sqlite:${file}`, PORT: '0', ROWBASE_SLOW_CLOCK: String(slowClock) },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  try {
    const url = await listening(child);
    const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
    if (workload === 'insert-1' && server === rowbase)
      await send(agent, url, { method: 'POST', path: '/v1/collections', body: JSON.stringify({ name: collections.inserts }) });
    await load(agent, url, request, 0, warmup);
    const control = (...args: string[]) => execFileSync('callgrind_control', [...args, String(child.pid)], { stdio: 'ignore' });
    control('-i', 'on');
    const started = performance.now();
    await load(agent, url, request, warmup, requests);
    const wallMs = performance.now() - started;
    control('-d'); // part 1: the requests
    agent.destroy();
    await new Promise((resolve) => setTimeout(resolve, wallMs));
    control('-d'); // part 2: as long again, idle
    const threads = readdirSync(folder).filter((name) => name.startsWith(`callgrind.${child.pid}.1-`));
    const counts = threads.map((name) => {
      const busy = totalOf(join(folder, name));
      const idle = totalOf(join(folder, name.replace(/\.1-(\d+)$/, '.2-$1')));
      return { thread: Number(name.slice(-2)), ir: Math.max(0, busy - idle) / requests };
    });
    return { main: counts.find(({ thread }) => thread === 1)?.ir ?? 0, all: counts.reduce((sum, { ir }) => sum + ir, 0) };
  } finally {
    child.kill('SIGKILL');
    if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
  }
}

function totalOf(file: string): number {
  try {
    return Number(/^(?:summary|totals): (\d+)/m.exec(readFileSync(file, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0; // a thread that ended before the dump
  }
}

function listening(child: ChildProcess): Promise<string> {
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const url = /"msg":"[^"]* is listening"/.test(line) ? JSON.parse(line).url : undefined;
      if (url) resolve(url);
    });
    child.once('exit', (code) => reject(new Error(`the server exited (${code}) before listening: ${stderr}`)));
  });
}

/** Requests `first`..`first + n - 1`, over `connections` connections, each one after another; any answer but 2xx throws. */
async function load(agent: http.Agent, url: string, request: (n: number) => Request, first: number, n: number): Promise<void> {
  let next = first;
  const end = first + n;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < end) await send(agent, url, request(next++));
    }),
  );
}

function send(agent: http.Agent, url: string, { method, path, body }: Request): Promise<void> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return new Promise((resolve, reject) => {
    const sent = http.request(`${url}${path}`, { agent, method, headers }, (response) => {
      response.resume();
      response.once('end', () =>
        (response.statusCode ?? 0) < 300 ? resolve() : reject(new Error(`${method} ${path}: ${response.statusCode}`)),
      );
    });
    sent.once('error', reject);
    sent.end(body);
  });
}
