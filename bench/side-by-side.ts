// What the scripts that measure servers beside baseline (a), outside `npm run bench`, share
// (concurrency.ts, patch-ceiling.ts): a temp folder with a seeded file (100,000 rows as the bench
// seeds them, the sort index on score) and its key, copies of it for the servers, rowbase as
// `npm run bench` serves it, and a rate measured by the bench's own load generator.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseMeasured } from './measure.ts';
import { runToEnd, startServer, stopAll } from './processes.ts';
import { createKey, seedFile } from './seed-file.ts';
import type { Settings } from './settings.ts';

export interface SideBySide {
  /** The bench account's key on the seeded file and on every copy. */
  key: string;
  /** A copy of the seeded file for one server, `<name>.sqlite`. */
  copyOf(name: string): string;
  /** rowbase (metering on) on a copy of its own: its url. */
  serveRowbase(): Promise<string>;
  /** Answers a second of `workload` at `url`, as load.ts measures it; throws on any failed answer. */
  rate(workload: string, url: string, settings: Settings): Promise<number>;
}

/** Runs `measure` with a seeded folder of `rows` rows, then stops every server started and removes the folder. */
export async function sideBySide(name: string, rows: number, measure: (bench: SideBySide) => Promise<void>): Promise<void> {
  const work = mkdtempSync(join(os.tmpdir(), `rowbase-${name}-`));
  try {
    const seeded = join(work, 'seeded.sqlite');
    const key = await createKey(`sqlite:${seeded}`);
    await seedFile(seeded, rows);
    const copyOf = (copy: string) => {
      const file = join(work, `${copy}.sqlite`);
      copyFileSync(seeded, file);
      return file;
    };
    const serveRowbase = async () => {
      const env = { PORT: '0', HOST: '127.0.0.1', DATABASE_URL: `sqlite:${copyOf('rowbase')}`, LOG_LEVEL: 'info', ROWBASE_METERING: 'on' };
      return (await startServer('bin/rowbase', ['serve'], 'rowbase is listening', env)).url;
    };
    const rate = async (workload: string, url: string, settings: Settings) => {
      const measured = parseMeasured(await runToEnd('bench/load.ts', [JSON.stringify({ workload, url, key, settings })]));
      if (measured.failures > 0)
        throw new Error(`${workload} at ${url}, ${settings.connections} connections: ${measured.failures} failures`);
      return measured.requests / measured.seconds;
    };
    await measure({ key, copyOf, serveRowbase, rate });
  } finally {
    await stopAll(5000);
    rmSync(work, { recursive: true, force: true });
  }
}
