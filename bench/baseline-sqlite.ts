// Baseline (b): the same sqlite3 driver rowbase uses, on a copy of the seeded file, with nothing else.
//
//   node --import tsx bench/baseline-sqlite.ts serve <file>
//     node:http answering GET /v1/collections/bench/rows/{id} from one statement prepared once.
//   node --import tsx bench/baseline-sqlite.ts insert-rows|insert-statement <file> '<Settings as JSON>'
//     no HTTP: writes `batchSize` rows per transaction through a statement prepared once (a one-row
//     INSERT run per row, or one INSERT of every row), warms up, measures for the settings' seconds,
//     and prints one JSON line (Measured) with rows/s.
//
// The file gets rowbase's pragmas (connect.ts): WAL, synchronous=NORMAL.
import { createServer } from 'node:http';
import sqlite3 from 'sqlite3';
import { listen } from './listen.ts';
import { timeBatches } from './measure.ts';
import { batchOf, collections } from './seed.ts';
import type { Settings } from './settings.ts';

const [mode, file, settingsJson] = process.argv.slice(2);
const db = new sqlite3.Database(file);
await exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;');

if (mode === 'serve') await serve();
else if (mode === 'insert-rows') await insertBatches(JSON.parse(settingsJson), 'rows');
else if (mode === 'insert-statement') await insertBatches(JSON.parse(settingsJson), 'statement');
else throw new Error('usage: baseline-sqlite.ts serve|insert-rows|insert-statement <file> [settings]');

async function serve(): Promise<void> {
  const collectionId = await collectionIdOf(collections.rows);
  const select = db.prepare('select data from rows where collection_id = ? and id = ?');
  const prefix = `/v1/collections/${collections.rows}/rows/`;
  const server = createServer((request, response) => {
    const id = request.url?.startsWith(prefix) ? Number(request.url.slice(prefix.length)) : Number.NaN;
    if (request.method !== 'GET' || !Number.isInteger(id)) {
      response.writeHead(404).end();
      return;
    }
    select.get(collectionId, id, (error: Error | null, row?: { data: string }) => {
      if (error || !row) {
        response.writeHead(error ? 500 : 404).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id, ...JSON.parse(row.data) }));
    });
  });
  await listen(server, 'baseline-sqlite', () => new Promise((resolve) => select.finalize(() => db.close(() => resolve()))));
}

/**
 * One transaction of `batchSize` rows at a time, through one statement prepared once: `rows` runs a
 * one-row INSERT per row; `statement` runs one INSERT of all the rows' VALUES (as rowbase's insert.ts does).
 */
async function insertBatches(settings: Settings, variant: 'rows' | 'statement'): Promise<void> {
  const collectionId = await collectionIdOf(collections.batches);
  const perStatement = variant === 'rows' ? 1 : settings.batchSize;
  const insert = db.prepare(`insert into rows (collection_id, id, data) values ${Array(perStatement).fill('(?, ?, ?)').join(', ')}`);
  const batch = batchOf(1, settings.batchSize);
  let nextId = (await get<{ last: number | null }>('select max(id) as last from rows where collection_id = ?', [collectionId])).last ?? 0;

  const writeBatch = () =>
    new Promise<void>((resolve, reject) => {
      const fail = (error: Error | null) => error && reject(error);
      const values = batch.map((fields) => [collectionId, ++nextId, JSON.stringify(fields)]);
      db.serialize(() => {
        db.run('begin immediate', fail);
        for (let start = 0; start < values.length; start += perStatement)
          insert.run(values.slice(start, start + perStatement).flat(), fail);
        db.run('commit', (error) => (error ? reject(error) : resolve()));
      });
    });

  const measured = await timeBatches(writeBatch, settings);
  await new Promise<void>((resolve) => insert.finalize(() => db.close(() => resolve())));
  process.stdout.write(`${JSON.stringify(measured)}\n`);
}

async function collectionIdOf(name: string): Promise<number> {
  const row = await get<{ id: number } | undefined>('select id from collections where name = ?', [name]);
  if (!row) throw new Error(`no collection ${name} in ${file}`);
  return row.id;
}

function get<T>(sql: string, params: unknown[]): Promise<T> {
  return new Promise((resolve, reject) => db.get(sql, params, (error, row) => (error ? reject(error) : resolve(row as T))));
}

function exec(sql: string): Promise<void> {
  return new Promise((resolve, reject) => db.exec(sql, (error) => (error ? reject(error) : resolve())));
}
