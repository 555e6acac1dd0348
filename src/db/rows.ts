import type { Knex } from 'knex';
import type { components } from '../../generated/openapi.ts';
import { notFound } from '../errors.ts';
import { announceCommitted, type DatabaseParams, notifyParams } from './changes.ts';
import { advance, collectionId, collectionIdQuery, collectionNotFound } from './collections.ts';
import { appendEvents, type EventRow } from './events.ts';
import { insertMany } from './insert.ts';
import { orderedRowsQuery, type Page } from './ordering.ts';
import { query, queryAlone } from './query.ts';

export type Row = components['schemas']['Row'];
export type Fields = Record<string, unknown>;
type StoredRow = { id: number | string; data: string };

const toRow = (id: number | string, data: string): Row => ({ id: Number(id), ...JSON.parse(data) });
/** A row's event text from its stored text (the fields but id, as JSON.stringify wrote them), without a second stringify. */
const eventRow = (id: number, data: string): EventRow => ({ id, json: data === '{}' ? `{"id":${id}}` : `{"id":${id},${data.slice(1)}` });
const rowNotFound = (collection: string, id: number) => notFound(`There is no row ${id} in collection ${collection}.`);

/** Stores every row or none, each with the next id of the collection, and one insert event each. */
export async function insertRows(knex: Knex, accountId: number, collection: string, items: Fields[]): Promise<Row[]> {
  // Node's work comes first: the write holds the collection's row from its first statement to its
  // commit, and every other writer of the collection waits for it.
  const texts = items.map((fields) => JSON.stringify(fields));
  const { sqlite } = knex.userParams as DatabaseParams;
  const insert = sqlite ? insertInTransaction : insertInOneStatement;
  const firstId = await insert(knex, accountId, collection, texts);
  return items.map((fields, index) => ({ id: firstId + index, ...fields }));
}

/** SQLite: advance(), then the rows and their events, each a prepared multi-row INSERT. Answers the first id. */
async function insertInTransaction(knex: Knex, accountId: number, collection: string, texts: string[]): Promise<number> {
  return knex.transaction(async (trx) => {
    const { id, lastRowId, lastSeq } = await advance(trx, accountId, collection, texts.length, texts.length, texts.length);
    const firstId = lastRowId - texts.length + 1;
    await insertMany(
      trx,
      'rows',
      ['collection_id', 'id', 'data'],
      texts.map((data, index) => [id, firstId + index, data]),
    );
    await appendEvents(
      trx,
      id,
      lastSeq,
      'insert',
      texts.map((data, index) => eventRow(firstId + index, data)),
    );
    return firstId;
  });
}

/**
 * PostgreSQL: the whole write in one statement, which commits on its own: the collection's row is
 * held for PostgreSQL's work alone, with no round trip to Node in between. Answers the first id.
 */
async function insertInOneStatement(knex: Knex, accountId: number, collection: string, texts: string[]): Promise<number> {
  // JSON.stringify's output never holds a line feed (it escapes every control character), so the
  // lines of one string are the rows: one parameter, where an array would be escaped item by item.
  const params = [accountId, collection, texts.length, texts.join('\n'), ...notifyParams(knex)];
  const [written] = await queryAlone<{ id: number; first_id: number | string }>(knex, insertBatchSql, params);
  if (!written) throw collectionNotFound(collection);
  announceCommitted(knex, Number(written.id));
  return Number(written.first_id);
}

/**
 * advance(), the rows and appendEvents() as one statement. $1 the account, $2 the collection's name,
 * $3 the number of rows, $4 their texts, one a line; $5 and $6 the NOTIFY's (notifyParams). No such
 * collection: no row answered, and nothing written. Each event's row is made from the row's text as
 * eventRow() makes it. The events' time is PostgreSQL's clock once the collection's row is held (where
 * appendEvents() takes Node's, after advance()): a batch that waited its turn is not stamped before
 * the one it waited for.
 */
const insertBatchSql = `with counters as (
    update collections set last_row_id = last_row_id + $3, last_seq = last_seq + $3, row_count = row_count + $3
      where account_id = $1 and name = $2
      returning id, last_row_id - $3 as before_id, last_seq - $3 as before_seq,
        to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at
  ), batch as (
    select c.id as collection_id, c.before_id + t.ord as id, c.before_seq + t.ord as seq, t.data, c.at
      from counters c, unnest(string_to_array($4::text, chr(10))) with ordinality as t(data, ord)
  ), stored as (
    insert into rows (collection_id, id, data) select collection_id, id, data from batch
  ), logged as (
    insert into events (collection_id, seq, type, row_id, row, at)
      select collection_id, seq, 'insert', id, '{"id":' || id || case data when '{}' then '}' else ',' || substr(data, 2) end, at
        from batch
  )
  select id, before_id + 1 as first_id, pg_notify($5, $6 || ' ' || id) from counters`;

/** One page of rows; an empty page is a 404 when the collection does not exist. */
export async function listRows(knex: Knex, accountId: number, collection: string, page: Page): Promise<Row[]> {
  const { sqlite } = knex.userParams as DatabaseParams;
  const { sql, params } = orderedRowsQuery(sqlite ? 'sqlite' : 'postgres', accountId, collection, page);
  // On SQLite a page has a read-only connection of its own: one that reads a whole collection to
  // order it holds up neither row reads nor writes.
  const rows = sqlite ? await sqlite.read<StoredRow>(sql, params, 'scan') : (await knex.raw(sql, params)).rows;
  if (rows.length === 0) await collectionId(knex, accountId, collection);
  return rows.map((row: StoredRow) => toRow(row.id, row.data));
}

// The hot statements: the first two are SQLite's row reads (the read-only connection), the others run
// in a write transaction through query(), the same SQL on both backends.
const rowSql = `select r.data from rows r join collections c on c.id = r.collection_id
  where c.account_id = ? and c.name = ? and r.id = ?`;
const collectionSql = 'select 1 as found from collections where account_id = ? and name = ?';
const currentSql = 'select data from rows where collection_id = ? and id = ?';
const updateSql = 'update rows set data = ? where collection_id = ? and id = ?';
const deleteSql = 'delete from rows where collection_id = ? and id = ? returning data';

/** The row, found with its collection in one statement; 404 for a missing row or collection. */
export async function getRow(knex: Knex, accountId: number, collection: string, rowId: number): Promise<Row> {
  const { sqlite } = knex.userParams as DatabaseParams;
  if (sqlite) {
    const [row] = await sqlite.read<{ data: string }>(rowSql, [accountId, collection, rowId]);
    if (row) return toRow(rowId, row.data);
    const [found] = await sqlite.read(collectionSql, [accountId, collection]);
    throw found ? rowNotFound(collection, rowId) : collectionNotFound(collection);
  }
  const row = await knex('rows')
    .where({ collection_id: collectionIdQuery(knex, accountId, collection), id: rowId })
    .first('data');
  if (row) return toRow(rowId, row.data);
  await collectionId(knex, accountId, collection);
  throw rowNotFound(collection, rowId);
}

/** Top-level merge: each given field replaces the old value whole. Emits one update event. */
export async function updateRow(knex: Knex, accountId: number, collection: string, rowId: number, patch: Fields): Promise<Row> {
  return knex.transaction(async (trx) => {
    const { id, lastSeq } = await advance(trx, accountId, collection, 1);
    const [current] = await query<{ data: string }>(trx, currentSql, [id, rowId]);
    if (!current) throw rowNotFound(collection, rowId);
    const fields = { ...JSON.parse(current.data), ...patch };
    const data = JSON.stringify(fields);
    await query(trx, updateSql, [data, id, rowId]);
    await appendEvents(trx, id, lastSeq, 'update', [eventRow(rowId, data)]);
    return { id: rowId, ...fields };
  });
}

/** Deletes the row and emits one delete event carrying the row as it was. */
export async function deleteRow(knex: Knex, accountId: number, collection: string, rowId: number): Promise<void> {
  await knex.transaction(async (trx) => {
    const { id, lastSeq } = await advance(trx, accountId, collection, 1, 0, -1);
    const [deleted] = await query<{ data: string }>(trx, deleteSql, [id, rowId]);
    if (!deleted) throw rowNotFound(collection, rowId);
    await appendEvents(trx, id, lastSeq, 'delete', [eventRow(rowId, deleted.data)]);
  });
}
