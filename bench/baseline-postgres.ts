// Baseline (c), for insert-batch on PostgreSQL: the least the same `pg` driver and server can do.
//
//   node --import tsx bench/baseline-postgres.ts <database url> <collection> '<Settings as JSON>'
//
// No HTTP: one client, one transaction of `batchSize` rows at a time (BEGIN, one multi-row INSERT into
// rowbase's own `rows` table, COMMIT), the INSERT a named statement, so prepared once. The rows are those
// insert-batch sends, JSON-stringified per batch as rowbase must. It warms up, measures for the settings'
// seconds, and prints one JSON line (Measured) with rows/s, as the SQLite baseline (b) does.
import pg from 'pg';
import { timeBatches } from './measure.ts';
import { batchOf } from './seed.ts';
import type { Settings } from './settings.ts';

const [url, collection, settingsJson] = process.argv.slice(2);
const settings: Settings = JSON.parse(settingsJson);
const client = new pg.Client({ connectionString: url });
await client.connect();

try {
  const found = await client.query<{ id: number }>('select id from collections where name = $1', [collection]);
  if (found.rows.length !== 1) throw new Error(`no collection ${collection} in the database`);
  const collectionId = found.rows[0].id;
  const last = await client.query<{ last: string | null }>('select max(id) as last from rows where collection_id = $1', [collectionId]);
  let nextId = Number(last.rows[0].last ?? 0);

  const tuples = Array.from({ length: settings.batchSize }, (_, i) => `($${3 * i + 1}, $${3 * i + 2}, $${3 * i + 3})`);
  const insert = { name: 'baseline-insert-batch', text: `insert into rows (collection_id, id, data) values ${tuples.join(', ')}` };
  const batch = batchOf(1, settings.batchSize);

  const writeBatch = async () => {
    const values = batch.flatMap((fields) => [collectionId, ++nextId, JSON.stringify(fields)]);
    await client.query('begin');
    try {
      await client.query({ ...insert, values });
      await client.query('commit');
    } catch (error) {
      await client.query('rollback');
      throw error;
    }
  };

  const measured = await timeBatches(writeBatch, settings);
  process.stdout.write(`${JSON.stringify(measured)}\n`);
} finally {
  await client.end();
}
