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
import { Groups } from '../engine/grouping.ts';
import type { PagedDialect } from '../engine/read-port.ts';
import { beginOnce, recordOnce } from './idempotency.ts';
import { patchEachIn, patchRowIn, patchRowsIn, type RowPatch } from './patches.ts';
import {
  type ChangedRows,
  type Fields,
  type MatchedRow,
  noSuchRow,
  rowTooLarge,
  type VersionedRow,
  type WriteOptions,
  writeKey,
} from './rows.ts';
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
        const seen = (row: Fields, before: Fields) => {
          guard?.updating(rowId, before, row);
          attempted = [{ id: rowId, fields: row }];
        };
        if (merged) return merged;
        if (!once) return patchedTogether(db, { accountId, collection, rowId, patch, options, seen, schemaId });
        return db.rows.write(
          async (trx) => {
            await beginOnce(db, trx, accountId, once);
            const patched = await patchRowIn(db, trx, accountId, collection, rowId, patch, schemaId, options, 0, seen);
            await recordOnce(db, trx, accountId, once, patched);
            return patched;
          },
          writeKey(accountId, collection),
        );
      }),
    );
  } catch (error) {
    throw db.rows.isRowTooLarge(error) ? rowTooLarge() : error;
  }
}

/** A patch as updateRow() queues it (patchGroups): with the schema it was sent with in mind. */
type QueuedPatch = RowPatch & { accountId: number; collection: string; schemaId: number };

/** The patches of one collection written together at most: a bound on how long the first waits for its answer. */
const MAX_PATCHES_TOGETHER = 200;

/**
 * A patch without an Idempotency-Key, in a group with the patches of its collection queued beside it
 * (patchGroups); its answer, or its own refusal, thrown.
 */
async function patchedTogether(db: Dialect, queued: QueuedPatch): Promise<VersionedRow> {
  const answer = await patchGroups(db).add(writeKey(queued.accountId, queued.collection), queued);
  if (answer instanceof Error) throw answer;
  return answer;
}

/**
 * The patches of each database, by collection, written in groups (../engine/grouping.ts): those that
 * come while a group is written wait, and go together in the next, one transaction that reads their rows
 * in one statement and stores them in a few (patches.ts, patchEachIn), where each alone would read and
 * write its row in statements of its own, holding the collection's row from its first to its commit. A
 * patch alone is written as before (patchRowIn). A group that fails writes nothing, and runs each patch
 * again alone, which fails or succeeds as it would have without the others (a unique index's refusal,
 * told apart by keepingUnique()).
 */
const grouped = new WeakMap<Dialect, Groups<QueuedPatch, VersionedRow | Error>>();

function patchGroups(db: Dialect): Groups<QueuedPatch, VersionedRow | Error> {
  let groups = grouped.get(db);
  if (!groups) {
    groups = new Groups({
      maxWeight: MAX_PATCHES_TOGETHER,
      run(key, patches) {
        const [{ accountId, collection, rowId, patch, schemaId, options, seen }] = patches;
        if (patches.length > 1) return db.rows.writeSeveral((trx) => patchEachIn(db, trx, accountId, collection, patches));
        return db.rows
          .write((trx) => patchRowIn(db, trx, accountId, collection, rowId, patch, schemaId, options, 0, seen), key)
          .then((answer) => [answer]);
      },
    });
    grouped.set(db, groups);
  }
  return groups;
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
