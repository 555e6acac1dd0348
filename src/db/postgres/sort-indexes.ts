// PostgreSQL: making a sort index (../sort-indexes.ts). An insert keys its rows in its own statement
// (sql/, insertBatchSql), a patch re-keys its rows after their update (rows.ts, rekeyPatchedRows).
import type { Dialect, WriteSteps } from '../engine/dialect.ts';
import { type SortedEntry, slotOf } from '../engine/sorted.ts';
import { setSortedSql } from '../engine/sql/collections.ts';
import { keysSql } from './sql/collections.ts';

/**
 * The slot of `field`'s sort index (a field's or a pair's) in the account's collection `name`, making the index (and every
 * row's key) now when the collection has none for it; -1 when it already has `max`. In one
 * transaction, which holds only this collection's writes.
 */
export function makeSortIndex(
  db: Dialect,
  steps: WriteSteps,
  accountId: number,
  name: string,
  field: SortedEntry,
  max: number,
): Promise<number> {
  return db.knex.transaction(async (trx) => {
    const { id, lastRowId, sorted } = await steps.advance(db, trx, accountId, name, 0);
    const slot = slotOf(sorted, field);
    if (slot >= 0 || sorted.length >= max) return slot;
    await db.run(trx, setSortedSql, [JSON.stringify([...sorted, field]), id]);
    const { sql, bindings } = keysSql(field, id);
    await db.run(trx, sql, [sorted.length, ...bindings, id, 1, lastRowId]);
    return sorted.length;
  });
}
