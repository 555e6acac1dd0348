// Patches of rows as requests send them (openapi.yaml, updateRow and updateRows): each a write of its own,
// the rows patched inside it as patches.ts patches them, a refusal by a unique index told apart (unique.ts).
// Where a dialect can set the fields of a plain top-level merge without reading the row (SQLite), it
// does (RowPort.mergePatch, patchByPath).

import { expiryNow } from '../../expiry/ttl.ts';
import { applyPatch, type Patch } from '../../patches/index.ts';
import type { Filter } from '../../query/filter.ts';
import { assignable } from '../../rows.ts';
import type { WrittenRow } from '../collections/indexes.ts';
import type { Dialect } from '../engine/dialect.ts';
import type { PagedDialect } from '../engine/read-port.ts';
import { beginOnce, recordOnce } from './idempotency.ts';
import { patchRowIn, patchRowsIn } from './patches.ts';
import { type ChangedRows, type MatchedRow, noSuchRow, rowTooLarge, type VersionedRow, type WriteOptions, writeKey } from './rows.ts';
import { keepingUnique } from './unique.ts';
import { liveFilterWhere } from './writes.ts';

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
  // The row as patched, as a unique index would see it (unique.ts, keepingUnique): read again when the
  // patch was merged unread.
  let attempted: WrittenRow[] | undefined;
  const asPatched = () => attempted ?? storedPatched(db, accountId, collection, rowId, patch);
  try {
    // With the collection's schema as last seen: a merge unread is for a collection without one.
    return await keepingUnique(db, accountId, collection, asPatched, () =>
      db.schemas.retry(db.query, accountId, collection, (schemaId) => {
        const plain = schemaId === 0 && options?.ifMatch === undefined && once === undefined && guard === undefined;
        const merged = plain ? db.rows.mergePatch?.(accountId, collection, rowId, patch, expiryNow()) : undefined;
        return (
          merged ??
          db.rows.write(
            async (trx) => {
              if (once) await beginOnce(db, trx, accountId, once);
              const patched = await patchRowIn(db, trx, accountId, collection, rowId, patch, schemaId, options, 0, (row, before) => {
                guard?.updating(rowId, before, row);
                attempted = [{ id: rowId, fields: row }];
              });
              if (once) await recordOnce(db, trx, accountId, once, patched);
              return patched;
            },
            writeKey(accountId, collection),
          )
        );
      }),
    );
  } catch (error) {
    throw db.rows.isRowTooLarge(error) ? rowTooLarge() : error;
  }
}

/** The row as `patch` makes it of the row stored now (none when there is no such row). */
async function storedPatched(db: Dialect, accountId: number, collection: string, rowId: number, patch: Patch): Promise<WrittenRow[]> {
  const [stored] = await db.rows.readRow(accountId, collection, rowId, expiryNow());
  return stored?.data ? [{ id: rowId, fields: applyPatch(patch, JSON.parse(stored.data), rowId) }] : [];
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
  const where = await liveFilterWhere(db, accountId, collection, filter);
  // The rows as patched, as a unique index would see them.
  let seen: MatchedRow[] = [];
  const attempted = () => seen.map((row) => ({ id: row.id, fields: applyPatch(patch, JSON.parse(row.data), row.id) }));
  try {
    return await keepingUnique(db, accountId, collection, attempted, () =>
      db.rows.writeSeveral(
        async (trx) => {
          if (options?.once) await beginOnce(db, trx, accountId, options.once);
          const changed = await patchRowsIn(db, trx, accountId, collection, where, patch, max, options?.guard, (matched) => {
            seen = matched;
          });
          if (options?.once) await recordOnce(db, trx, accountId, options.once, changed);
          return changed;
        },
        writeKey(accountId, collection),
      ),
    );
  } catch (error) {
    throw db.rows.isRowTooLarge(error) ? rowTooLarge() : error;
  }
}
