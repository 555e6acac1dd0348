// The most any Node server could do for the patch workload on this machine, with each SQLite driver:
// a bare node:http server that does nothing but rowbase's own patch statement (sqlite-procedures.ts),
// its patches grouped as rowbase groups them, beside baseline (a), interleaved. No keys, no metering,
// no validation, no Koa: what is left is the driver and SQLite.
//
//   node --import tsx bench/patch-ceiling.ts
//     seeds a temp file as patch-cost.ts does, then three rounds of, each beside baseline (a): rowbase
//     itself (`rowbase serve`, metering on, as in `npm run bench`), the ceiling server through sqlite3
//     (rowbase's driver), and through better-sqlite3 when it is installed
//     (npm install --no-save better-sqlite3@11.10.0; it builds from source here, about a minute).
//   node --import tsx bench/patch-ceiling.ts serve sqlite3|better-sqlite3 <file> <account id>
//     one ceiling server, as the first form starts it.
//
// sqlite3 runs each group on a thread of libuv's pool, as rowbase does: a second group goes out while
// one is under way once three patches wait (writes.ts). better-sqlite3 runs on the main thread, the
// patches of one turn of the event loop as one group. Both set their connection up as rowbase's writer
// (sqliteWriterSetup), and have rowbase's own checkpoints (SqliteStatements).
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import sqlite3 from 'sqlite3';
import { sqliteWriterSetup } from '../src/db/connect.ts';
import { patchSql } from '../src/db/sqlite-procedures.ts';
import { SqliteStatements } from '../src/db/sqlite-statements.ts';
import { listen } from './listen.ts';
import { parseMeasured } from './measure.ts';
import { runToEnd, startServer, stopAll } from './processes.ts';
import { createKey, seedFile } from './seed-file.ts';
import { settingsFromArgs } from './settings.ts';

type Driver = 'sqlite3' | 'better-sqlite3';
const ROUNDS = 3;
/** Imported by a name in a variable, so that TypeScript does not look for a package installed only by hand. */
const betterSqlite3 = 'better-sqlite3';

if (process.argv[2] === 'serve') await serve(process.argv[3] as Driver, process.argv[4], Number(process.argv[5]));
else await compare();

async function compare(): Promise<void> {
  const settings = { ...settingsFromArgs([]), rounds: ROUNDS, profile: false };
  const drivers: Driver[] = (await import(betterSqlite3).then(Boolean, () => false)) ? ['sqlite3', 'better-sqlite3'] : ['sqlite3'];
  const work = mkdtempSync(join(os.tmpdir(), 'rowbase-patch-ceiling-'));
  try {
    const seeded = join(work, 'seeded.sqlite');
    const key = await createKey(`sqlite:${seeded}`);
    const accountId = await seedFile(seeded, settings.rows);
    const memory = await startServer('bench/baseline-memory.ts', [String(settings.rows)], 'baseline-memory is listening');
    const copyOf = (name: string) => {
      const file = join(work, `${name}.sqlite`);
      copyFileSync(seeded, file);
      return file;
    };
    const env = { PORT: '0', HOST: '127.0.0.1', DATABASE_URL: `sqlite:${copyOf('rowbase')}`, LOG_LEVEL: 'info', ROWBASE_METERING: 'on' };
    const servers = new Map<string, string>([['rowbase', (await startServer('bin/rowbase', ['serve'], 'rowbase is listening', env)).url]]);
    for (const driver of drivers) {
      const args = ['serve', driver, copyOf(driver), String(accountId)];
      servers.set(`bare ${driver}`, (await startServer('bench/patch-ceiling.ts', args, `${driver} is listening`)).url);
    }
    const rate = async (workload: string, url: string) => {
      const measured = parseMeasured(await runToEnd('bench/load.ts', [JSON.stringify({ workload, url, key, settings })]));
      if (measured.failures > 0) throw new Error(`${workload} at ${url}: ${measured.failures} failures`);
      return measured.requests / measured.seconds;
    };
    process.stdout.write(
      `${os.availableParallelism()} cores, Node ${process.version}, ${settings.connections} connections, ${settings.durationSeconds} s each\n`,
    );
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [name, url] of servers) {
        const baseline = await rate('baseline-memory', memory.url);
        const patches = await rate('patch', url);
        const line = `round ${round}  ${name.padEnd(19)} ${Math.round(patches).toLocaleString('en-US').padStart(7)} req/s`;
        process.stdout.write(
          `${line}   (a) ${Math.round(baseline).toLocaleString('en-US').padStart(7)} req/s   ${(patches / baseline).toFixed(3)} × (a)\n`,
        );
      }
    }
  } finally {
    await stopAll(5000);
    rmSync(work, { recursive: true, force: true });
  }
}

interface Patch {
  id: number;
  fields: string[][];
  response: ServerResponse;
}

interface Written {
  i: number;
  data: string | null;
}

async function serve(driver: Driver, file: string, accountId: number): Promise<void> {
  // rowbase's checkpoints: SqliteStatements checkpoints from the start, and opens nothing else until a read.
  new SqliteStatements(file);
  let queue: Patch[] = [];
  const params = (group: Patch[]) => [
    accountId,
    'bench',
    JSON.stringify(group.map(({ id, fields }) => [id, fields])),
    new Date().toISOString(),
  ];
  const answer = (group: Patch[], written: Written[]) => {
    const byIndex = new Map(written.map((row) => [Number(row.i), row.data]));
    for (const [index, { id, response }] of group.entries()) {
      const data = byIndex.get(index);
      if (!data) response.writeHead(404).end();
      else response.writeHead(200, { 'content-type': 'application/json' }).end(`{"id":${id},${data.slice(1)}`);
    }
  };
  let schedule: () => void;
  if (driver === 'better-sqlite3') {
    const Database = (await import(betterSqlite3)).default;
    const db = new Database(file);
    db.exec(sqliteWriterSetup);
    // better-sqlite3 will not take the values of `?1`…`?4` by position; the same SQL with names takes an object.
    const statement = db.prepare(patchSql.replace(/\?(\d)/g, '@p$1'));
    let scheduled = false;
    schedule = () => {
      if (scheduled) return;
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        const group = queue;
        queue = [];
        const [p1, p2, p3, p4] = params(group);
        answer(group, statement.all({ p1, p2, p3, p4 }));
      });
    };
  } else {
    const db = new sqlite3.Database(file);
    await new Promise<void>((resolve, reject) => db.exec(sqliteWriterSetup, (error) => (error ? reject(error) : resolve())));
    const statement = db.prepare(patchSql);
    let inFlight = 0;
    schedule = () => {
      while (queue.length > 0 && inFlight < 2 && (inFlight === 0 || queue.length >= 3)) {
        const group = queue;
        queue = [];
        inFlight++;
        statement.all(params(group), (error: Error | null, written: Written[]) => {
          inFlight--;
          if (error) for (const { response } of group) response.writeHead(500).end();
          else answer(group, written);
          schedule();
        });
      }
    };
  }
  const prefix = '/v1/collections/bench/rows/';
  const server = createServer((request, response) => {
    // load.ts's GET after its warm-up only waits for the answers under way.
    if (request.method !== 'PATCH') return void response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    const id = Number(request.url?.slice(prefix.length));
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const patch = JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>;
      queue.push({ id, fields: Object.entries(patch).map(([name, value]) => [`$."${name}"`, JSON.stringify(value)]), response });
      schedule();
    });
  });
  await listen(server, driver);
}
