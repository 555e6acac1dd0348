// The steps of a row write that both dialects take alike, inside a write transaction of theirs.
import { rowNotFound, validationFailed } from '../../errors.ts';
import { advance } from '../collections/collections.ts';
import type { Dialect, WriteTx } from '../engine/dialect.ts';
import { appendEvents, type EventRow, eventRow } from '../events/events.ts';
import type { Sql } from '../reads/filter.ts';
import { deleteKeysWhereSql, deleteRowSql, deleteRowsWhereSql, deleteSortKeysSql, matchedRowsSql } from '../sql/rows.ts';
import { beginOnce, recordOnce } from './idempotency.ts';
import { type ChangedRows, preconditionFailed, versionMatches, versionOf, type WriteOptions } from './rows.ts';

/**
 * Deletes the row, its sort keys, and writes one delete event carrying the row as it was; 404 for a
 * missing row or collection, 412 (and nothing deleted: the transaction rolls back) for a row whose
 * version is none of `options.ifMatch`.
 */
export async function deleteRowIn(
  db: Dialect,
  trx: WriteTx,
  accountId: number,
  collection: string,
  rowId: number,
  options?: WriteOptions<void>,
): Promise<void> {
  if (options?.once) await beginOnce(db, trx, accountId, options.once);
  const { id, lastSeq, sorted } = await advance(db, trx, accountId, collection, 1, 0, -1);
  const [deleted] = await db.run<{ data: string; version: number | string }>(trx, deleteRowSql, [id, rowId]);
  if (!deleted) throw rowNotFound(collection, rowId);
  // The row's 404 for a caller that may not see it, before If-Match's 412.
  options?.guard?.deleting(rowId, JSON.parse(deleted.data));
  if (!versionMatches(options, versionOf(id, deleted.version))) throw preconditionFailed(collection, rowId);
  if (sorted.length > 0) await db.run(trx, deleteSortKeysSql, [id, rowId]);
  await appendEvents(db, trx, id, lastSeq, 'delete', [eventRow(rowId, deleted.data)]);
  if (options?.once) await recordOnce(db, trx, accountId, options.once, undefined);
}

/** 400 for a change by filter that matches more rows than one request may change: nothing of it is written. */
const tooManyRows = (max: number) =>
  validationFailed(
    `One change by filter changes at most ${max} rows, and this filter matches more: narrow it (by ranges of id, say) and send each part.`,
    [{ in: 'query', name: 'filter', message: `matches more than ${max} rows` }],
  );

/** A row a change by filter matched: its id and its stored text as it was. */
export interface MatchedRow {
  id: number;
  data: string;
}

/**
 * The rows of the collection `collectionId` that `where` matches, in id order; 400 when there are more
 * than `max`. Read inside the change's transaction, after the collection's row is held (advance()), so
 * that no other write of the collection comes between this read and the change.
 */
export async function matchedRows(db: Dialect, trx: WriteTx, collectionId: number, where: Sql, max: number): Promise<MatchedRow[]> {
  // Statements made for this request's filter: prepared for one run (Dialect.run's `once`).
  const params = [collectionId, ...where.params, max + 1];
  const rows = await db.run<{ id: number | string; data: string }>(trx, matchedRowsSql(where.sql), params, true);
  if (rows.length > max) throw tooManyRows(max);
  return rows.map((row) => ({ id: Number(row.id), data: row.data }));
}

/**
 * Deletes every row of the collection that `where` matches, all or none (at most `max`, else 400 with
 * nothing deleted), with one delete event each, in id order, with consecutive seqs; answers them as
 * their events carry them.
 */
export async function deleteRowsIn(
  db: Dialect,
  trx: WriteTx,
  accountId: number,
  collection: string,
  where: Sql,
  max: number,
  options?: WriteOptions<ChangedRows>,
): Promise<ChangedRows> {
  if (options?.once) await beginOnce(db, trx, accountId, options.once);
  // The collection's row first, held until commit: no write of the collection comes between the match and the delete.
  const { id } = await advance(db, trx, accountId, collection, 0);
  const matched = await matchedRows(db, trx, id, where, max);
  let rows: EventRow[] = [];
  if (matched.length > 0) {
    const { lastSeq, sorted } = await advance(db, trx, accountId, collection, matched.length, 0, -matched.length);
    if (sorted.length > 0) await db.run(trx, deleteKeysWhereSql(where.sql), [id, id, ...where.params], true);
    await db.run(trx, deleteRowsWhereSql(where.sql), [id, ...where.params], true);
    rows = matched.map((row) => eventRow(row.id, row.data));
    await appendEvents(db, trx, id, lastSeq, 'delete', rows);
  }
  const changed = changedRows(rows);
  if (options?.once) await recordOnce(db, trx, accountId, options.once, changed);
  return changed;
}

/** Rows as a change by filter answers them (ChangedRows), from their events' rows or versioned rows, in id order. */
export const changedRows = (rows: { json: string }[]): ChangedRows => ({
  count: rows.length,
  json: `[${rows.map((row) => row.json).join(',')}]`,
});
