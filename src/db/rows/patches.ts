// Patches of rows inside a write (openapi.yaml, updateRow and updateRows; batches and upserts too): a row
// read inside the write that stores it, guarded, checked against If-Match, patched (../../patches/),
// checked against its collection's schema, then stored by the dialect (../engine/port.ts, RowPort) with
// its event, its sort keys and its words. The requests' own writes are updates.ts's.

import { expiryNow } from '../../expiry/ttl.ts';
import { applyPatch, type Patch } from '../../patches/index.ts';
import { overRowBound, versionOf } from '../../rows.ts';
import { advance } from '../collections/collections.ts';
import type { Dialect, SqlValue, WriteTx } from '../engine/dialect.ts';
import {
  type ChangedRows,
  changedRows,
  type Fields,
  type MatchedRow,
  matchedRows,
  preconditionFailed,
  type RowGuard,
  type RowMatch,
  rowTooLarge,
  type VersionedRow,
  versionMatches,
} from './rows.ts';

/** Reads inside the write `trx`. */
export const readIn =
  (db: Dialect, trx: WriteTx) =>
  <T>(sql: string, params: SqlValue[]) =>
    db.run<T>(trx, sql, params);

/**
 * A patch of the row `rowId` inside `trx`: the row read and held (no other write of it comes between,
 * so concurrent increments all count), guarded, checked against If-Match, patched (409 patch_conflict
 * when the patch cannot apply to it), checked against the collection's schema (its errors naming the
 * row `place`), and stored. `schemaId`: the schema the patch was sent with in mind. `seen` is told the
 * row as patched, and as it was, before it is written.
 */
export async function patchRowIn(
  db: Dialect,
  trx: WriteTx,
  accountId: number,
  collection: string,
  rowId: number,
  patch: Patch,
  schemaId: number,
  options?: { ifMatch?: readonly string[]; guard?: RowGuard },
  place = 0,
  seen?: (row: Fields, before: Fields) => void,
): Promise<VersionedRow> {
  const stored = await db.rows.readToPatch(trx, accountId, collection, rowId, schemaId, expiryNow());
  const before = JSON.parse(stored.data) as Fields;
  options?.guard?.reading(rowId, before);
  if (!versionMatches(options, versionOf(stored.collectionId, stored.version))) throw preconditionFailed(collection, rowId);
  const row = applyPatch(patch, before, rowId);
  seen?.(row, before);
  // The schema the row commits under: the row is held.
  await db.schemas.check(readIn(db, trx), stored.schemaId, collection, [row], () => place);
  const text = JSON.stringify(row);
  if (overRowBound(text)) throw rowTooLarge();
  return stored.write(text, row, patch);
}

/**
 * Patches the rows of the collection that `where` matches inside `trx`, each with its update event, in
 * id order: the collection's row held first, so no write of the collection comes between the match and
 * the change; each row checked as patched against the schema (409 patch_conflict, 422, nothing
 * written). `matched` is told the rows matched, as they were.
 */
export async function patchRowsIn(
  db: Dialect,
  trx: WriteTx,
  accountId: number,
  collection: string,
  where: RowMatch,
  patch: Patch,
  max: number,
  guard?: RowGuard,
  matched?: (rows: MatchedRow[]) => void,
): Promise<ChangedRows> {
  const { id, schemaId, sorted } = await advance(db, trx, accountId, collection, 0);
  const rows = await matchedRows(db, trx, id, where, max, sorted);
  matched?.(rows);
  if (rows.length === 0) return changedRows([]);
  const unread = schemaId === 0 && !guard ? db.rows.patchByPath?.(trx, accountId, collection, rows, patch) : undefined;
  if (unread) return changedRows(await unread);
  const patched = rows.map((row) => applyPatch(patch, JSON.parse(row.data), row.id));
  for (const [index, row] of rows.entries()) guard?.updating(row.id, JSON.parse(row.data), patched[index]);
  // Each row that fails is named by its id (openapi.yaml, RowError).
  await db.schemas.check(readIn(db, trx), schemaId, collection, patched, (index) => rows[index].id);
  const texts = patched.map((fields) => JSON.stringify(fields));
  if (texts.some(overRowBound)) throw rowTooLarge();
  const written = rows.map((row, index) => ({ ...row, fields: patched[index], text: texts[index] }));
  return changedRows(await db.rows.writePatched(trx, accountId, collection, id, schemaId, written, patch));
}
