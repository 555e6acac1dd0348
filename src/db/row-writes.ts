// The steps of a row write that both dialects take alike, inside a write transaction of theirs.
import { advance } from './collections.ts';
import type { Dialect, WriteTx } from './dialect.ts';
import { appendEvents, eventRow } from './events.ts';
import { preconditionFailed, rowNotFound, versionMatches, versionOf, type WriteOptions } from './rows.ts';
import { deleteRowSql, deleteSortKeysSql } from './sql.ts';

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
  options?: WriteOptions,
): Promise<void> {
  const { id, lastSeq, sorted } = await advance(db, trx, accountId, collection, 1, 0, -1);
  const [deleted] = await db.run<{ data: string; version: number | string }>(trx, deleteRowSql, [id, rowId]);
  if (!deleted) throw rowNotFound(collection, rowId);
  if (!versionMatches(options, versionOf(id, deleted.version))) throw preconditionFailed(collection, rowId);
  if (sorted.length > 0) await db.run(trx, deleteSortKeysSql, [id, rowId]);
  await appendEvents(db, trx, id, lastSeq, 'delete', [eventRow(rowId, deleted.data)]);
}
