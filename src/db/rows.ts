import type { Knex } from 'knex';
import type { components } from '../../generated/openapi.ts';
import { notFound } from '../errors.ts';
import { collectionId } from './collections.ts';
import { appendEvents } from './events.ts';
import { insertAll } from './insert.ts';
import { type Direction, orderRows } from './ordering.ts';

export type Row = components['schemas']['Row'];
export type Fields = Record<string, unknown>;

export interface Page {
  limit: number;
  offset: number;
  orderBy: string;
  order: Direction;
}

const toRow = (id: number | string, data: string): Row => ({ id: Number(id), ...JSON.parse(data) });
const rowNotFound = (collection: string, id: number) => notFound(`There is no row ${id} in collection ${collection}.`);

/**
 * Moves the collection's counters by one change of `rows` rows (`rowDelta` of them added or removed)
 * and returns the last row id and event seq, now taken. The update also locks the collection's row
 * until commit, so writers to one collection take their seqs in commit order.
 */
async function advance(trx: Knex.Transaction, id: number, events: number, rowIds: number, rowDelta: number) {
  const [counters] = await trx('collections')
    .where({ id })
    .update(
      {
        last_row_id: trx.raw('last_row_id + ?', [rowIds]),
        last_seq: trx.raw('last_seq + ?', [events]),
        row_count: trx.raw('row_count + ?', [rowDelta]),
      },
      ['last_row_id', 'last_seq'],
    );
  return { lastRowId: Number(counters.last_row_id), lastSeq: Number(counters.last_seq) };
}

/** Stores every row or none, each with the next id of the collection, and one insert event each. */
export async function insertRows(knex: Knex, accountId: number, collection: string, items: Fields[]): Promise<Row[]> {
  return knex.transaction(async (trx) => {
    const id = await collectionId(trx, accountId, collection);
    const { lastRowId, lastSeq } = await advance(trx, id, items.length, items.length, items.length);
    const firstId = lastRowId - items.length + 1;
    const rows = items.map((fields, index) => ({ id: firstId + index, ...fields }));
    await insertAll(
      trx,
      'rows',
      items.map((fields, index) => ({ collection_id: id, id: firstId + index, data: JSON.stringify(fields) })),
    );
    await appendEvents(trx, id, lastSeq, 'insert', rows);
    return rows;
  });
}

export async function listRows(knex: Knex, accountId: number, collection: string, page: Page): Promise<Row[]> {
  const id = await collectionId(knex, accountId, collection);
  const query = knex('rows').where({ collection_id: id }).select('id', 'data').limit(page.limit).offset(page.offset);
  const rows = await orderRows(query, page.orderBy, page.order);
  return rows.map((row: { id: number; data: string }) => toRow(row.id, row.data));
}

export async function getRow(knex: Knex, accountId: number, collection: string, rowId: number): Promise<Row> {
  const id = await collectionId(knex, accountId, collection);
  const row = await knex('rows').where({ collection_id: id, id: rowId }).first('data');
  if (!row) throw rowNotFound(collection, rowId);
  return toRow(rowId, row.data);
}

/** Top-level merge: each given field replaces the old value whole. Emits one update event. */
export async function updateRow(knex: Knex, accountId: number, collection: string, rowId: number, patch: Fields): Promise<Row> {
  return knex.transaction(async (trx) => {
    const id = await collectionId(trx, accountId, collection);
    const current = await trx('rows').where({ collection_id: id, id: rowId }).first('data');
    if (!current) throw rowNotFound(collection, rowId);
    const fields = { ...JSON.parse(current.data), ...patch };
    const { lastSeq } = await advance(trx, id, 1, 0, 0);
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
    const id = await collectionId(trx, accountId, collection);
    const current = await trx('rows').where({ collection_id: id, id: rowId }).first('data');
    if (!current) throw rowNotFound(collection, rowId);
    const { lastSeq } = await advance(trx, id, 1, 0, -1);
    await trx('rows').where({ collection_id: id, id: rowId }).delete();
    await appendEvents(trx, id, lastSeq, 'delete', [toRow(rowId, current.data)]);
  });
}
