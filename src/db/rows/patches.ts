// Patches of rows inside a write (openapi.yaml, updateRow and updateRows; batches and upserts too): a row
// read inside the write that stores it, guarded, checked against If-Match, patched (../../patches/),
// checked against its collection's schema, then stored by the dialect (../engine/port.ts, RowPort) with
// its event, its sort keys and its words. The requests' own writes are updates.ts's.

import { expiryNow } from '../../expiry/ttl.ts';
import { applyPatch, type Patch, patchedFields } from '../../patches/index.ts';
import { overRowBound, versionOf } from '../../rows.ts';
import { advance } from '../collections/collections.ts';
import type { Dialect, SqlValue, WriteTx } from '../engine/dialect.ts';
import type { PatchedRow } from '../engine/port.ts';
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
  const version = versionOf(stored.collectionId, stored.version);
  // The schema the row commits under: the row is held.
  const { row, text } = await patchedRow(
    db,
    trx,
    collection,
    stored.schemaId,
    { rowId, patch, options, seen },
    stored.data,
    version,
    place,
  );
  return stored.write(text, row, patch);
}

/** A patch of one row of a collection, as updateRow() sends it (patchRowIn's, patchEachIn's). */
export interface RowPatch {
  rowId: number;
  patch: Patch;
  options?: { ifMatch?: readonly string[]; guard?: RowGuard };
  /** Told the row as patched, and as it was, before it is written. */
  seen?: (row: Fields, before: Fields) => void;
}

/**
 * The row as `patch` makes it of `data`, its stored text of version `version`, held: guarded, checked
 * against If-Match (412), patched (409 patch_conflict), checked against the schema `schemaId` (its
 * errors naming the row `place`) and the bound on a row's weight.
 */
export async function patchedRow(
  db: Dialect,
  trx: WriteTx,
  collection: string,
  schemaId: number,
  { rowId, patch, options, seen }: RowPatch,
  data: string,
  version: string,
  place: number,
): Promise<{ row: Fields; text: string }> {
  const before = JSON.parse(data) as Fields;
  options?.guard?.reading(rowId, before);
  if (!versionMatches(options, version)) throw preconditionFailed(collection, rowId);
  const row = applyPatch(patch, before, rowId);
  seen?.(row, before);
  await db.schemas.check(readIn(db, trx), schemaId, collection, [row], () => place);
  const text = JSON.stringify(row);
  if (overRowBound(text)) throw rowTooLarge();
  return { row, text };
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
  const written = await patchedRows(db, trx, collection, schemaId, rows, patch, guard);
  return changedRows(await db.rows.writePatched(trx, accountId, collection, id, schemaId, written, patchedFields(patch)));
}

/**
 * `rows` as `patch` makes them (409 patch_conflict), each guarded, checked against the schema
 * `schemaId` (422, each failing row named by its id: openapi.yaml, RowError) and the bound on a row's
 * weight (413).
 */
export async function patchedRows(
  db: Dialect,
  trx: WriteTx,
  collection: string,
  schemaId: number,
  rows: readonly MatchedRow[],
  patch: Patch,
  guard?: RowGuard,
): Promise<PatchedRow[]> {
  const patched = rows.map((row) => applyPatch(patch, JSON.parse(row.data), row.id));
  for (const [index, row] of rows.entries()) guard?.updating(row.id, JSON.parse(row.data), patched[index]);
  await db.schemas.check(readIn(db, trx), schemaId, collection, patched, (index) => rows[index].id);
  const texts = patched.map((fields) => JSON.stringify(fields));
  if (texts.some(overRowBound)) throw rowTooLarge();
  return rows.map((row, index) => ({ ...row, fields: patched[index], text: texts[index] }));
}
