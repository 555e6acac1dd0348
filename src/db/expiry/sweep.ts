// The sweeper's deletes (docs/expiry.md): the rows past their expiry, a small batch of one collection
// at a time, each batch a delete by filter (../rows/writes.ts, deleteRowsIn) in a write of its own: one
// delete event a row, marked `"reason": "expired"`, and its relations' on_delete followed, as any delete;
// on PostgreSQL a collection without relations has each batch as its row held, then one statement
// (Dialect.sweepAlone).

import { expiryNow } from '../../expiry/ttl.ts';
import type { Dialect, WriteTx } from '../engine/dialect.ts';
import { collectionTtlSql, expiredRowIdsSql, expiringCollectionsSql, rowExpiredSql, stillExpiredWhere } from '../engine/sql/expiry.ts';
import { deleteRowsIn, rowWritesIn } from '../rows/writes.ts';

/** A collection whose rows have expired: its id, its account's and its name. */
export interface ExpiringCollection {
  id: number;
  accountId: number;
  name: string;
}

/** The collections with a time to live after the id `after` that hold a row expired at `now` (ms since the epoch), at most `limit`, in id order. */
export async function expiringCollections(db: Dialect, after: number, now: number, limit: number): Promise<ExpiringCollection[]> {
  const rows = await db.query<{ id: number | string; account_id: number | string; name: string }>(expiringCollectionsSql, [
    after,
    now,
    limit,
  ]);
  return rows.map((row) => ({ id: Number(row.id), accountId: Number(row.account_id), name: row.name }));
}

/**
 * Deletes the first `batchSize` rows of the collection to have expired at `now` (ms since the epoch),
 * found through the expiry index, in a write of their own (on SQLite, a turn of the writer's queue):
 * answers how many went. The delete (by their ids, each through the primary key) finds them again once
 * it holds the collection, still expired: a row deleted meanwhile (by a request, or another instance's
 * sweep) is deleted, and its event written, once, and a row patched to expire later is left.
 */
export async function sweepExpiredBatch(db: Dialect, collection: ExpiringCollection, now: number, batchSize: number): Promise<number> {
  const alone = await db.sweepAlone?.(collection.id, now, batchSize);
  if (alone !== undefined) return alone;
  const { accountId, name } = collection;
  const deleted = await db.rows.writeSeveral(async (trx) => {
    const found = await db.run<{ id: number | string }>(trx, expiredRowIdsSql, [collection.id, now, batchSize]);
    if (found.length === 0) return { count: 0 };
    const match = { ids: found.map((row) => Number(row.id)), where: { sql: stillExpiredWhere, params: [now] } };
    return deleteRowsIn(db, trx, rowWritesIn(db, trx, accountId), accountId, name, match, batchSize, undefined, 'expired');
  });
  return deleted.count;
}

/**
 * Whether the row `rowId` of the account's collection, found holding the values of a unique index that
 * refused a write, no longer lives (docs/expiry.md, "Gone at once"): deleted since the refusal (by a
 * request, the sweeper, another instance), or expired; then every expired row of the collection is
 * deleted now (sweepCollection), so that the write, tried again (../rows/unique.ts), finds the values free.
 */
export async function holderGone(db: Dialect, accountId: number, name: string, rowId: number): Promise<boolean> {
  const [held] = await db.rows.readRow(accountId, name, rowId, expiryNow());
  if (held?.data) return false;
  await sweepCollection(db, accountId, name);
  return true;
}

/**
 * Deletes now every expired row of the account's collection, as the sweeper would (a batch at a time,
 * each with its event): answers whether any went.
 */
async function sweepCollection(db: Dialect, accountId: number, name: string): Promise<boolean> {
  const [found] = await db.query<{ id: number | string; ttl_field: string | null }>(collectionTtlSql, [accountId, name]);
  if (!found || found.ttl_field === null) return false;
  const collection = { id: Number(found.id), accountId, name };
  const now = expiryNow();
  let deleted = 0;
  const rows = db.sweepBatchRows;
  for (let batch = rows; batch === rows; deleted += batch) batch = await sweepExpiredBatch(db, collection, now, rows);
  return deleted > 0;
}

/**
 * Deletes the row `rowId` of the account's collection (its id `collectionId`) inside the write `trx` if
 * it has expired, as the sweeper would, with its delete event marked expired: answers whether it went.
 * An upsert whose values an expired row holds calls it, then inserts (../rows/upserts.ts).
 */
export async function sweptIfExpired(db: Dialect, trx: WriteTx, accountId: number, name: string, collectionId: number, rowId: number) {
  const now = expiryNow();
  if ((await db.run(trx, rowExpiredSql, [collectionId, rowId, now])).length === 0) return false;
  const match = { ids: [rowId], where: { sql: stillExpiredWhere, params: [now] } };
  return (await deleteRowsIn(db, trx, rowWritesIn(db, trx, accountId), accountId, name, match, 1, undefined, 'expired')).count > 0;
}
