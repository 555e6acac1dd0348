// The most any Node server could do for the patch workload on this machine, with each SQLite driver:
// the bare patch server of baseline-patch.ts, beside baseline (a), interleaved, with a fresh rowbase
// in the rotation. `npm run bench` measures the sqlite3 one as patch's baseline (b); this script adds
// better-sqlite3 (synchronous) when it is installed (npm install --no-save better-sqlite3@11.10.0; it
// builds from source here, about a minute), and more rounds of the three side by side.
//
//   node --import tsx bench/patch-ceiling.ts
//     seeds a temp file as patch-cost.ts does, then three rounds of, each beside baseline (a): rowbase
//     itself (`rowbase serve`, metering on, as in `npm run bench`), the bare server through sqlite3
//     (rowbase's driver), and through better-sqlite3.
import os from 'node:os';
import { startServer } from './processes.ts';
import { settingsFromArgs } from './settings.ts';
import { sideBySide } from './side-by-side.ts';

const ROUNDS = 3;
/** Imported by a name in a variable, so that TypeScript does not look for a package installed only by hand. */
const betterSqlite3 = 'better-sqlite3';

const settings = { ...settingsFromArgs([]), rounds: ROUNDS, profile: false };
const drivers = (await import(betterSqlite3).then(Boolean, () => false)) ? ['sqlite3', 'better-sqlite3'] : ['sqlite3'];
await sideBySide('patch-ceiling', settings.rows, async ({ copyOf, serveRowbase, rate }) => {
  const memory = await startServer('bench/baseline-memory.ts', [String(settings.rows)], 'baseline-memory is listening');
  const servers = new Map<string, string>([['rowbase', await serveRowbase()]]);
  for (const driver of drivers) {
    const bare = await startServer('bench/baseline-patch.ts', [driver, copyOf(driver)], 'baseline-patch is listening');
    servers.set(`bare ${driver}`, bare.url);
  }
  process.stdout.write(
    `${os.availableParallelism()} cores, Node ${process.version}, ${settings.connections} connections, ${settings.durationSeconds} s each\n`,
  );
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [name, url] of servers) {
      const baseline = await rate('baseline-memory', memory.url, settings);
      const patches = await rate('patch', url, settings);
      const line = `round ${round}  ${name.padEnd(19)} ${Math.round(patches).toLocaleString('en-US').padStart(7)} req/s`;
      process.stdout.write(
        `${line}   (a) ${Math.round(baseline).toLocaleString('en-US').padStart(7)} req/s   ${(patches / baseline).toFixed(3)} × (a)\n`,
      );
    }
  }
});
