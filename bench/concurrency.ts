// How the ratios to baseline (a) move with the load generator's connections: each HTTP workload and
// the bare servers, each right after (a) at the same connections, for several connection counts, in
// rounds. The connections of `npm run bench` (settings.ts) were chosen from what this prints.
//
//   node --import tsx bench/concurrency.ts [--connections=10,32,64] [--rounds=2] [--seconds=4]
//     seeds a temp file as patch-cost.ts does (100,000 rows, the sort index on score), starts rowbase
//     (metering on) and the bare servers on copies of it, and prints one line a measurement and a
//     table of medians.
import os from 'node:os';
import { startServer } from './processes.ts';
import { median } from './report.ts';
import { collections, createCollections } from './seed.ts';
import { settingsFromArgs } from './settings.ts';
import { sideBySide } from './side-by-side.ts';

const argument = (name: string, fallback: string) =>
  process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const connectionCounts = argument('connections', '10,32,64').split(',').map(Number);
const rounds = Number(argument('rounds', '2'));
const seconds = Number(argument('seconds', '4'));
/** `--workloads=patch,…`: only these (default: every one below). */
const only = argument('workloads', '').split(',').filter(Boolean);

/** Each workload, and the server it goes to. */
const every: [string, string][] = [
  ['baseline-sqlite', 'sqlite'],
  ['get-row', 'rowbase'],
  ['list', 'rowbase'],
  ['insert-1', 'rowbase'],
  ['patch', 'rowbase'],
  ['baseline-sqlite-patch', 'sqlite-patch'],
];
const workloads = only.length > 0 ? every.filter(([workload]) => only.includes(workload)) : every;

const base = { ...settingsFromArgs([]), durationSeconds: seconds, profile: false };
await sideBySide('concurrency', base.rows, async ({ key, copyOf, serveRowbase, rate }) => {
  const rowbase = await serveRowbase();
  await createCollections(rowbase, key, [collections.inserts]);
  const urls: Record<string, string> = {
    memory: (await startServer('bench/baseline-memory.ts', [String(base.rows)], 'baseline-memory is listening')).url,
    sqlite: (await startServer('bench/baseline-sqlite.ts', ['serve', copyOf('sqlite')], 'baseline-sqlite is listening')).url,
    'sqlite-patch': (await startServer('bench/baseline-patch.ts', ['sqlite3', copyOf('patch')], 'baseline-patch is listening')).url,
    rowbase,
  };
  process.stdout.write(`${os.availableParallelism()} cores, Node ${process.version}, ${seconds} s each, ${rounds} rounds\n`);
  const ratios = new Map<string, number[]>();
  const baselines = new Map<number, number[]>();
  for (let round = 1; round <= rounds; round++) {
    for (const connections of connectionCounts) {
      const settings = { ...base, connections };
      for (const [workload, server] of workloads) {
        const baseline = await rate('baseline-memory', urls.memory, settings);
        const measured = await rate(workload, urls[server], settings);
        const cell = `${workload}@${connections}`;
        ratios.set(cell, [...(ratios.get(cell) ?? []), measured / baseline]);
        baselines.set(connections, [...(baselines.get(connections) ?? []), baseline]);
        process.stdout.write(
          `round ${round}  ${String(connections).padStart(3)} conn  ${workload.padEnd(22)} ${Math.round(measured).toLocaleString('en-US').padStart(7)} req/s` +
            `   (a) ${Math.round(baseline).toLocaleString('en-US').padStart(7)}   ${(measured / baseline).toFixed(3)} × (a)\n`,
        );
      }
    }
  }
  process.stdout.write(`\nmedian ratio to (a)     ${connectionCounts.map((c) => `${c} conn`.padStart(10)).join('')}\n`);
  process.stdout.write(
    `(a) req/s               ${connectionCounts.map((c) => String(Math.round(median(baselines.get(c)!))).padStart(10)).join('')}\n`,
  );
  for (const [workload] of workloads) {
    const cells = connectionCounts.map((c) =>
      median(ratios.get(`${workload}@${c}`)!)
        .toFixed(3)
        .padStart(10),
    );
    process.stdout.write(`${workload.padEnd(24)}${cells.join('')}\n`);
  }
});
