import { query, together, type WriteTx } from './query.ts';
import type { SqlValue } from './sqlite-statements.ts';

/** SQLite's default limit on bound variables per statement is 32766; stay well under it. */
const MAX_BINDINGS = 10_000;

/**
 * One multi-row `INSERT … VALUES (…), (…)` per chunk, every value bound. Knex's own multi-row insert
 * on SQLite is a compound SELECT, which SQLite caps at 500 terms. `table` and `columns` are ours,
 * never a client's.
 */
export async function insertMany(trx: WriteTx, table: string, columns: string[], rows: SqlValue[][]): Promise<void> {
  const perStatement = Math.max(1, Math.floor(MAX_BINDINGS / columns.length));
  const tuple = `(${columns.map(() => '?').join(', ')})`;
  for (let start = 0; start < rows.length; start += perStatement) {
    const chunk = rows.slice(start, start + perStatement);
    await query(trx, `insert into ${table} (${columns.join(', ')}) values ${chunk.map(() => tuple).join(', ')}`, chunk.flat());
  }
}

/**
 * SQLite: a batch's rows and their insert events, from the rows' texts bound once as one JSON array
 * of strings (`batch`, JSON.stringify of the texts), which json_each reads back exactly: two
 * statements side by side with a handful of bindings, where a multi-row VALUES binds every value of
 * every row (and costs three times as much). Row `i` (from 0) takes id `firstId + i` and seq
 * `firstSeq + i`; its event's row is the row's text with its id first, as rows.ts's rowJson() makes it.
 */
export async function insertBatchSqlite(
  trx: WriteTx,
  collectionId: number,
  firstId: number,
  firstSeq: number,
  batch: string,
  at: string,
): Promise<void> {
  await together(
    query(trx, 'insert into rows (collection_id, id, data) select ?1, ?2 + key, value from json_each(?3)', [collectionId, firstId, batch]),
    query(
      trx,
      `insert into events (collection_id, seq, type, row_id, row, at)
      select ?1, ?2 + key, 'insert', ?3 + key,
        '{"id":' || (?3 + key) || case value when '{}' then '}' else ',' || substr(value, 2) end, ?4
      from json_each(?5)`,
      [collectionId, firstSeq, firstId, at, batch],
    ),
  );
}

/**
 * SQLite: the events of several rows, from `rows` bound once as one JSON array of [row id, row's JSON
 * text] pairs; event `i` (from 0) takes seq `firstSeq + i`.
 */
export async function insertEventsSqlite(
  trx: WriteTx,
  collectionId: number,
  firstSeq: number,
  type: string,
  rows: [number, string][],
  at: string,
): Promise<void> {
  await query(
    trx,
    `insert into events (collection_id, seq, type, row_id, row, at)
      select ?1, ?2 + key, ?3, json_extract(value, '$[0]'), json_extract(value, '$[1]'), ?4 from json_each(?5)`,
    [collectionId, firstSeq, type, at, JSON.stringify(rows)],
  );
}
