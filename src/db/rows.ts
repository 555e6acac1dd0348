import type { Knex } from 'knex';
import type { components } from '../../generated/openapi.ts';
import { notFound } from '../errors.ts';
import type { DatabaseParams } from './changes.ts';
import { advance, collectionId, collectionIdQuery, collectionNotFound } from './collections.ts';
import { appendEvents } from './events.ts';
import { insertMany } from './insert.ts';
import { orderedRows, type Page } from './ordering.ts';

export type Row = components['schemas']['Row'];
export type Fields = Record<string, unknown>;

const toRow = (id: number | string, data: string): Row => ({ id: Number(id), ...JSON.parse(data) });
const rowNotFound = (collection: string, id: number) => notFound(`There is no row ${id} in collection ${collection}.`);

/** Stores every row or none, each with the next id of the collection, and one insert event each. */
export async function insertRows(knex: Knex, accountId: number, collection: string, items: Fields[]): Promise<Row[]> {
  return knex.transaction(async (trx) => {
    const { id, lastRowId, lastSeq } = await advance(trx, accountId, collection, items.length, items.length, items.length);
    const firstId = lastRowId - items.length + 1;
    const rows = items.map((fields, index) => ({ id: firstId + index, ...fields }));
    const values = items.map((fields, index) => [id, firstId + index, JSON.stringify(fields)]);
    await insertMany(trx, 'rows', ['collection_id', 'id', 'data'], values);
    await appendEvents(trx, id, lastSeq, 'insert', rows);
    return rows;
  });
}

/** One page of rows; an empty page is a 404 when the collection does not exist. */
export async function listRows(knex: Knex, accountId: number, collection: string, page: Page): Promise<Row[]> {
  const rows = await orderedRows(knex, collectionIdQuery(knex, accountId, collection), page);
  if (rows.length === 0) await collectionId(knex, accountId, collection);
  return rows.map((row) => toRow(row.id, row.data));
}

// The hot path's reads on SQLite, each one statement prepared once (see sqlite-reads.ts).
const rowSql = `select r.data from rows r join collections c on c.id = r.collection_id
  where c.account_id = ? and c.name = ? and r.id = ?`;
const collectionSql = 'select 1 as found from collections where account_id = ? and name = ?';

/** The row, found with its collection in one statement; 404 for a missing row or collection. */
export async function getRow(knex: Knex, accountId: number, collection: string, rowId: number): Promise<Row> {
  const { reads } = knex.userParams as DatabaseParams;
  if (reads) {
    const [row] = await reads.all<{ data: string }>(rowSql, [accountId, collection, rowId]);
    if (row) return toRow(rowId, row.data);
    const [found] = await reads.all(collectionSql, [accountId, collection]);
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
    const current = await trx('rows').where({ collection_id: id, id: rowId }).first('data');
    if (!current) throw rowNotFound(collection, rowId);
    const fields = { ...JSON.parse(current.data), ...patch };
    await trx('rows')
      .where({ collection_id: id, id: rowId })
      .update({ data: JSON.stringify(fields) });
    const row = { id: rowId, ...fields };
    await appendEvents(trx, id, lastSeq, 'update', [row]);
    return row;
  });
}

/** Deletes the row and emits one delete event carrying the row as it was. */
export async function deleteRow(knex: Knex, accountId: number, collection: string, rowId: number): Promise<void> {
  await knex.transaction(async (trx) => {
    const { id, lastSeq } = await advance(trx, accountId, collection, 1, 0, -1);
    const current = await trx('rows').where({ collection_id: id, id: rowId }).first('data');
    if (!current) throw rowNotFound(collection, rowId);
    await trx('rows').where({ collection_id: id, id: rowId }).delete();
    await appendEvents(trx, id, lastSeq, 'delete', [toRow(rowId, current.data)]);
  });
}
