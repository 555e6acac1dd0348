// Baseline (b) for patch: the most a Node server can do for the patch workload through rowbase's SQLite
// driver. A bare node:http server that does nothing but rowbase's own patch statement (sqlite-procedures.ts),
// its patches grouped as rowbase groups them, on a copy of the seeded file (which has its sort index on
// score, so each patch moves its row's key as rowbase's do). No keys, no metering, no validation, no
// Koa: what is left is HTTP, the driver and SQLite.
//
//   node --import tsx bench/baseline-patch.ts <file>
//     answers PATCH /v1/collections/bench/rows/{id}; prints one JSON line with its url.
//
// Each group runs on a thread of libuv's pool, as rowbase's do: a second group goes out while one is under
// way once three patches wait (src/db/engine/grouping.ts, GroupedWrites). The connection is set up as rowbase's writer
// (writerSetup), with rowbase's own checkpoints (SqliteReaders).
import { createServer, type ServerResponse } from 'node:http';
import sqlite3 from 'sqlite3';
import { writerSetup } from '../src/db/sqlite/index.ts';
import { SqliteReaders } from '../src/db/sqlite/readers.ts';
import { patchSql } from '../src/db/sqlite/sql/rows.ts';
import { listen } from './listen.ts';
import { collections } from './seed.ts';

interface Patch {
  id: number;
  fields: string[][];
  response: ServerResponse;
}

interface Written {
  i: number;
  data: string | null;
}

const [file] = process.argv.slice(2);
if (!file) throw new Error('usage: baseline-patch.ts <file>');

// rowbase's checkpoints: SqliteReaders checkpoints from the start, and opens nothing else until a read.
new SqliteReaders(file);
let queue: Patch[] = [];
/** The collection's account and schema id (0: none), which the patch statement finds it by, as rowbase's patches do. */
let collection: { accountId: number; schemaId: number };
const params = (group: Patch[]) => [
  collection.accountId,
  collections.rows,
  JSON.stringify(group.map(({ id, fields }) => [id, fields])),
  new Date().toISOString(),
  collection.schemaId,
];
const answer = (group: Patch[], written: Written[]) => {
  const byIndex = new Map(written.map((row) => [Number(row.i), row.data]));
  for (const [index, { id, response }] of group.entries()) {
    const data = byIndex.get(index);
    if (!data) response.writeHead(404).end();
    else response.writeHead(200, { 'content-type': 'application/json' }).end(`{"id":${id},${data.slice(1)}`);
  }
};
const schedule = await onPoolThread();

const prefix = `/v1/collections/${collections.rows}/rows/`;
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
await listen(server, 'baseline-patch');

/** Groups on the pool's threads, at most two under way, as rowbase's GroupedWrites. */
async function onPoolThread(): Promise<() => void> {
  const db = new sqlite3.Database(file);
  await new Promise<void>((resolve, reject) => db.exec(writerSetup, (error) => (error ? reject(error) : resolve())));
  collection = await new Promise((resolve, reject) =>
    db.get<{ accountId: number; schemaId: number }>(
      'select account_id as accountId, schema_id as schemaId from collections where name = ?',
      [collections.rows],
      (error, row) => (error || !row ? reject(error ?? new Error(`no collection ${collections.rows} in ${file}`)) : resolve(row)),
    ),
  );
  // The bench's patches set one field. patchSql() says which statement a group of its size takes; each
  // distinct text is prepared once, so that the groups go as rowbase's do whatever rule it follows.
  const statements = new Map<string, sqlite3.Statement>();
  const forGroup = (size: number) => {
    const sql = patchSql(1, size);
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
  let inFlight = 0;
  const schedule = () => {
    while (queue.length > 0 && inFlight < 2 && (inFlight === 0 || queue.length >= 3)) {
      const group = queue;
      queue = [];
      inFlight++;
      forGroup(group.length).all(params(group), (error: Error | null, written: Written[]) => {
        inFlight--;
        if (error) for (const { response } of group) response.writeHead(500).end();
        else answer(group, written);
        schedule();
      });
    }
  };
  return schedule;
}
