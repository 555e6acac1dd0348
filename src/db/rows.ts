import type { Knex } from 'knex';
import type { components } from '../../generated/openapi.ts';
import { notFound } from '../errors.ts';
import type { DatabaseParams } from './changes.ts';
import { advance, collectionId, collectionIdQuery, collectionNotFound } from './collections.ts';
import { appendEvents, type EventRow } from './events.ts';
import { insertMany } from './insert.ts';
import { orderedRowsQuery, type Page } from './ordering.ts';
import { query } from './query.ts';

export type Row = components['schemas']['Row'];
export type Fields = Record<string, unknown>;
type StoredRow = { id: number | string; data: string };

const toRow = (id: number | string, data: string): Row => ({ id: Number(id), ...JSON.parse(data) });
/** A row's event text from its stored text (the fields but id, as JSON.stringify wrote them), without a second stringify. */
const eventRow = (id: number, data: string): EventRow => ({ id, json: data === '{}' ? `{"id":${id}}` : `{"id":${id},${data.slice(1)}` });
const rowNotFound = (collection: string, id: number) => notFound(`There is no row ${id} in collection ${collection}.`);

/** Stores every row or none, each with the next id of the collection, and one insert event each. */
export async function insertRows(knex: Knex, accountId: number, collection: string, items: Fields[]): Promise<Row[]> {
  return knex.transaction(async (trx) => {
    const { id, lastRowId, lastSeq } = await advance(trx, accountId, collection, items.length, items.length, items.length);
    const firstId = lastRowId - items.length + 1;
    const texts = items.map((fields) => JSON.stringify(fields));
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
    return items.map((fields, index) => ({ id: firstId + index, ...fields }));
  });
}

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
