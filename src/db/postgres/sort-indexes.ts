// PostgreSQL: making a sort index (../sort-indexes.ts), and keeping a patched row's keys. An insert keys
// its rows in its own statement (sql.ts, insertBatchSql).
import { advance } from '../collections.ts';
import type { Dialect, WriteTx } from '../dialect.ts';
import { setSortedSql } from '../sql.ts';
import { keysSql, rowKeysSql } from './sql.ts';

/**
 * The slot of `field`'s sort index in the account's collection `name`, making the index (and every
 * row's key) now when the collection has none for it; -1 when it already has `max`. In one
 * transaction, which holds only this collection's writes.
 */
export function makeSortIndex(db: Dialect, accountId: number, name: string, field: string, max: number): Promise<number> {
  return db.knex.transaction(async (trx) => {
    const { id, lastRowId, sorted } = await advance(db, trx, accountId, name, 0);
    const slot = sorted.indexOf(field);
    if (slot >= 0 || sorted.length >= max) return slot;
    await db.run(trx, setSortedSql, [JSON.stringify([...sorted, field]), id]);
    const { sql, bindings } = keysSql(field);
    await db.run(trx, sql, [sorted.length, ...bindings, id, 1, lastRowId]);
    return sorted.length;
  });
}

/**
 * Re-keys a patched row from its new text `data`, replacing its keys in place: only the indexed fields
 * the patch gave can have moved. Reads nothing of the row, so it may run beside its update.
 */
export async function rekeyPatchedRow(
  db: Dialect,
  trx: WriteTx,
  collectionId: number,
  sorted: string[],
  rowId: number,
  patched: object,
  data: string,
): Promise<void> {
  for (const [slot, field] of sorted.entries()) {
    if (!Object.hasOwn(patched, field)) continue;
    const { sql, bindings } = rowKeysSql(field);
    await db.run(trx, sql, [collectionId, slot, rowId, data, ...bindings]);
  }
}
