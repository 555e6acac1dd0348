import type { Knex } from 'knex';
import type { components } from '../../generated/openapi.ts';
import { notFound } from '../errors.ts';
import { announceChange, type DatabaseParams } from './changes.ts';
import { advance, collectionId, collectionIdQuery, collectionNotFound } from './collections.ts';
import { appendEvents, type EventRow } from './events.ts';
import { insertBatchSqlite, insertMany } from './insert.ts';
import { orderedRowsQuery, type Page } from './ordering.ts';
import { query } from './query.ts';
import { deleteSortKeys, makeSortIndex, presentCountQuery, rekeyPatchedRow, sortedPageQuery, writeSortKeys } from './sort-keys.ts';
import type { ReadKind, SnapshotRead, SqlValue } from './sqlite-statements.ts';
import { writeTransaction } from './writes.ts';

export type Row = components['schemas']['Row'];
export type Fields = Record<string, unknown>;
type StoredRow = { id: number | string; data: string };
type CollectionRow = { id: number | string; row_count: number | string; sorted: string };

const toRow = (id: number | string, data: string): Row => ({ id: Number(id), ...JSON.parse(data) });
/**
 * A row's JSON text from its stored text (the fields but id, as JSON.stringify wrote them), the same
 * as JSON.stringify of the row, without parsing it.
 */
const rowJson = (id: number | string, data: string) => (data === '{}' ? `{"id":${id}}` : `{"id":${id},${data.slice(1)}`);
const eventRow = (id: number, data: string): EventRow => ({ id, json: rowJson(id, data) });
/** JSON text of a value of type T. */
export type Json<T> = string & { readonly json?: T };
const pageJson = (rows: StoredRow[]): Json<Row[]> => `[${rows.map((row) => rowJson(Number(row.id), row.data)).join(',')}]`;
const rowNotFound = (collection: string, id: number) => notFound(`There is no row ${id} in collection ${collection}.`);

/**
 * Stores every row or none, each with the next id of the collection, and one insert event each.
 * Answers the rows as JSON text, made from the stored texts.
 */
export async function insertRows(knex: Knex, accountId: number, collection: string, items: Fields[]): Promise<Json<Row[]>> {
  // Node's work comes first: the write holds the collection's row from its first statement to commit.
  const texts = items.map((fields) => JSON.stringify(fields));
  const { sqlite } = knex.userParams as DatabaseParams;
  const firstId = await writeTransaction(knex, async (trx) => {
    const { id, lastRowId, lastSeq, sorted } = await advance(trx, accountId, collection, items.length, items.length, items.length);
    const firstId = lastRowId - items.length + 1;
    if (sqlite) {
      await insertBatchSqlite(trx, id, firstId, lastSeq - items.length + 1, texts, new Date().toISOString());
      await announceChange(trx, id);
    } else {
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
    }
    await writeSortKeys(trx, id, sorted, firstId, lastRowId);
    return firstId;
  });
  return `[${texts.map((data, index) => rowJson(firstId + index, data)).join(',')}]`;
}

/**
 * One page of rows, as JSON text (read as stored: never parsed); 404 when the collection does not exist. A page ordered by a field reads the
 * collection's sort index for it (sort-keys.ts), made now if the collection is large enough and has
 * none; otherwise it sorts the whole collection (ordering.ts).
 */
export async function listRows(knex: Knex, accountId: number, collection: string, page: Page): Promise<Json<Row[]>> {
  const { sqlite, sortIndexes } = knex.userParams as DatabaseParams;
  // On SQLite a page has a read-only connection of its own: one that reads a whole collection to
  // order it holds up neither row reads nor writes.
  const read = async <T = StoredRow>(sql: string, params: SqlValue[], kind: ReadKind = 'scan'): Promise<T[]> =>
    sqlite ? sqlite.read<T>(sql, params, kind) : (await knex.raw(sql, params)).rows;
  if (page.orderBy !== 'id' && sortIndexes) {
    const [found] = await read<CollectionRow>(collectionSql, [accountId, collection], 'point');
    if (!found) throw collectionNotFound(collection);
    let slot = (JSON.parse(found.sorted) as string[]).indexOf(page.orderBy);
    if (slot < 0 && Number(found.row_count) >= sortIndexes.minRows && sortIndexes.max > 0) {
      slot = await makeSortIndex(knex, accountId, collection, page.orderBy, sortIndexes.max);
    }
    if (slot >= 0) return pageJson(await sortedPage(knex, Number(found.id), slot, page));
  }
  const { sql, params } = orderedRowsQuery(sqlite ? 'sqlite' : 'postgres', accountId, collection, page);
  const rows = await read(sql, params);
  if (rows.length === 0) await collectionId(knex, accountId, collection);
  return pageJson(rows);
}

/**
 * A page from the sort index in `slot`. An ascending page, and a descending one that ends before the
 * rows missing the field, is one statement. One that reaches them reads the rest from the missing
 * ones, in the same snapshot, so that a change made meanwhile never shows half.
 */
async function sortedPage(knex: Knex, collectionId: number, slot: number, page: Page): Promise<StoredRow[]> {
  const { sqlite } = knex.userParams as DatabaseParams;
  const first = (read: SnapshotRead) => {
    const { sql, params } = sortedPageQuery(
      collectionId,
      slot,
      page.order,
      page.order === 'asc' ? 'all' : 'present',
      page.limit,
      page.offset,
    );
    return read<StoredRow>(sql, params);
  };
  const rows = await first((sql, params) => (sqlite ? sqlite.read(sql, params, 'scan') : knex.raw(sql, params).then((r) => r.rows)));
  if (page.order === 'asc' || rows.length === page.limit) return rows;
  const inSnapshot = async (read: SnapshotRead) => {
    const present = await first(read);
    if (present.length === page.limit) return present;
    // Past the present values: the missing ones start at the offset's remainder, 0 on this page's own.
    let offset = 0;
    if (present.length === 0) {
      const count = presentCountQuery(collectionId, slot);
      const [{ n }] = await read<{ n: number | string }>(count.sql, count.params);
      offset = page.offset - Number(n);
    }
    const { sql, params } = sortedPageQuery(collectionId, slot, 'desc', 'missing', page.limit - present.length, offset);
    return [...present, ...(await read<StoredRow>(sql, params))];
  };
  if (sqlite) return sqlite.snapshot(inSnapshot);
  return knex.transaction((trx) => inSnapshot(async (sql, params) => (await trx.raw(sql, params)).rows), {
    isolationLevel: 'repeatable read',
    readOnly: true,
  });
}

// The hot statements: the first two are SQLite's row reads (the read-only connection), the others run
// in a write transaction through query(), the same SQL on both backends.
const rowSql = `select r.data from rows r join collections c on c.id = r.collection_id
  where c.account_id = ? and c.name = ? and r.id = ?`;
const collectionSql = 'select id, row_count, sorted from collections where account_id = ? and name = ?';
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

/** Top-level merge: each given field replaces the old value whole. Emits one update event; answers the row as JSON text. */
export async function updateRow(knex: Knex, accountId: number, collection: string, rowId: number, patch: Fields): Promise<Json<Row>> {
  return writeTransaction(knex, async (trx) => {
    const { id, lastSeq, sorted, current } = await advance(trx, accountId, collection, 1, 0, 0, rowId);
    if (!current) throw rowNotFound(collection, rowId);
    const data = JSON.stringify({ ...JSON.parse(current), ...patch });
    await query(trx, updateSql, [data, id, rowId]);
    await rekeyPatchedRow(trx, id, sorted, rowId, patch);
    await appendEvents(trx, id, lastSeq, 'update', [eventRow(rowId, data)]);
    return rowJson(rowId, data);
  });
}

/** Deletes the row and emits one delete event carrying the row as it was. */
export async function deleteRow(knex: Knex, accountId: number, collection: string, rowId: number): Promise<void> {
  await writeTransaction(knex, async (trx) => {
    const { id, lastSeq, sorted } = await advance(trx, accountId, collection, 1, 0, -1);
    const [deleted] = await query<{ data: string }>(trx, deleteSql, [id, rowId]);
    if (!deleted) throw rowNotFound(collection, rowId);
    if (sorted.length > 0) await deleteSortKeys(trx, id, rowId);
    await appendEvents(trx, id, lastSeq, 'delete', [eventRow(rowId, deleted.data)]);
  });
}
