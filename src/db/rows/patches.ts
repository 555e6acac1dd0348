// Patches of rows (openapi.yaml, updateRow and updateRows): a row read inside the write that stores it,
// guarded, checked against If-Match, patched (../../patches/), checked against its collection's schema,
// then stored by the dialect (../engine/port.ts, RowPort) with its event, its sort keys and its words.
// Where a dialect can set the fields of a plain top-level merge without reading the row (SQLite), it
// does (RowPort.mergePatch, patchByPath).

import { expiryNow } from '../../expiry/ttl.ts';
import { applyPatch, type Patch } from '../../patches/index.ts';
import type { Filter } from '../../query/filter.ts';
import { assignable, overRowBound, versionOf } from '../../rows.ts';
import { advance } from '../collections/collections.ts';
import { keepingUnique, uniqueViolation, type WrittenRow } from '../collections/indexes.ts';
import type { Dialect, SqlValue, WriteTx } from '../engine/dialect.ts';
import type { PagedDialect } from '../engine/read-port.ts';
import type { Sql } from '../engine/sql/template.ts';
import { liveWhere } from '../expiry/live.ts';
import { bindSearch } from '../search/indexes.ts';
import { beginOnce, recordOnce } from './idempotency.ts';
import {
  type ChangedRows,
  changedRows,
  type Fields,
  type MatchedRow,
  matchedRows,
  noSuchRow,
  preconditionFailed,
  type RowGuard,
  rowTooLarge,
  type VersionedRow,
  versionMatches,
  type WriteOptions,
} from './rows.ts';

/** Reads inside the write `trx`. */
export const readIn =
  (db: Dialect, trx: WriteTx) =>
  <T>(sql: string, params: SqlValue[]) =>
    db.run<T>(trx, sql, params);

/**
 * Applies `patch` (a top-level merge, a JSON Merge Patch or a JSON Patch) to the row read in the write's
 * own transaction, with one update event; answers the row and its new version. 412 when the row's
 * version is none of `options.ifMatch`; 409 patch_conflict when the patch cannot apply to it; 404 for a
 * missing row or collection.
 */
export async function updateRow(
  db: Dialect,
  accountId: number,
  collection: string,
  rowId: number,
  patch: Patch,
  options?: WriteOptions<VersionedRow>,
): Promise<VersionedRow> {
  if (!assignable(rowId)) return noSuchRow(db, accountId, collection, rowId);
  const { guard, once } = options ?? {};
  // The row as patched, as a unique index would see it (indexes.ts, keepingUnique): read again when the
  // patch was merged unread.
  let attempted: WrittenRow[] | undefined;
  try {
    // With the collection's schema as last seen: a merge unread is for a collection without one.
    return await db.schemas.retry(db.query, accountId, collection, (schemaId) => {
      const plain = schemaId === 0 && options?.ifMatch === undefined && once === undefined && guard === undefined;
      const merged = plain ? db.rows.mergePatch?.(accountId, collection, rowId, patch, expiryNow()) : undefined;
      return (
        merged ??
        db.rows.write(async (trx) => {
          if (once) await beginOnce(db, trx, accountId, once);
          const patched = await patchRowIn(db, trx, accountId, collection, rowId, patch, schemaId, options, 0, (row, before) => {
            guard?.updating(rowId, before, row);
            attempted = [{ id: rowId, fields: row }];
          });
          if (once) await recordOnce(db, trx, accountId, once, patched);
          return patched;
        })
      );
    });
  } catch (error) {
    if (db.isUniqueViolation(error)) {
      const violation = await uniqueViolation(
        db,
        accountId,
        collection,
        attempted ?? (await storedPatched(db, accountId, collection, rowId, patch)),
      );
      if (violation) throw violation;
    }
    throw db.rows.isRowTooLarge(error) ? rowTooLarge() : error;
  }
}

/** The row as `patch` makes it of the row stored now (none when there is no such row). */
async function storedPatched(db: Dialect, accountId: number, collection: string, rowId: number, patch: Patch): Promise<WrittenRow[]> {
  const [stored] = await db.rows.readRow(accountId, collection, rowId, expiryNow());
  return stored?.data ? [{ id: rowId, fields: applyPatch(patch, JSON.parse(stored.data), rowId) }] : [];
}

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
 * Patches every row of the collection that `filter` matches as updateRow() does, all or none, each
 * with one update event, in id order, with consecutive seqs; 400 (nothing written) when more than
 * `max` match, 409 patch_conflict (nothing written) when the patch cannot apply to one of them.
 * Answers the rows as they now are.
 */
export async function updateRowsWhere(
  db: PagedDialect,
  accountId: number,
  collection: string,
  filter: Filter,
  patch: Patch,
  max: number,
  options?: WriteOptions<ChangedRows>,
): Promise<ChangedRows> {
  const read = <T>(sql: string, params: SqlValue[]) => db.pages.read<T>(sql, params, 'point');
  const where = liveWhere(db.pages.filterSql(await bindSearch(read, accountId, collection, filter)));
  // The rows as patched, as a unique index would see them.
  let seen: MatchedRow[] = [];
  const attempted = () => seen.map((row) => ({ id: row.id, fields: applyPatch(patch, JSON.parse(row.data), row.id) }));
  try {
    return await keepingUnique(db, accountId, collection, attempted, () =>
      db.rows.writeSeveral(async (trx) => {
        if (options?.once) await beginOnce(db, trx, accountId, options.once);
        const changed = await patchRowsIn(db, trx, accountId, collection, where, patch, max, options?.guard, (matched) => {
          seen = matched;
        });
        if (options?.once) await recordOnce(db, trx, accountId, options.once, changed);
        return changed;
      }),
    );
  } catch (error) {
    throw db.rows.isRowTooLarge(error) ? rowTooLarge() : error;
  }
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
  where: Sql,
  patch: Patch,
  max: number,
  guard?: RowGuard,
  matched?: (rows: MatchedRow[]) => void,
): Promise<ChangedRows> {
  const { id, schemaId } = await advance(db, trx, accountId, collection, 0);
  const rows = await matchedRows(db, trx, id, where, max);
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
