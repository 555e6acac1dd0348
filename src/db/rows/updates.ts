// Patches of rows as requests send them (openapi.yaml, updateRow and updateRows): the rows patched as
// patches.ts patches them, those of one collection sent side by side written together (together.ts), a
// refusal by a unique index told apart (unique.ts). Where a dialect can set the fields of a plain
// top-level merge without reading the row (SQLite), it does (RowPort.mergePatch, patchByPath).

import { expiryNow } from '../../expiry/ttl.ts';
import { applyPatch, type Patch } from '../../patches/index.ts';
import { type Filter, holdsRelated, holdsSearch } from '../../query/filter.ts';
import { assignable } from '../../rows.ts';
import type { WrittenRow } from '../collections/indexes.ts';
import type { Dialect, WriteTx } from '../engine/dialect.ts';
import { Groups } from '../engine/grouping.ts';
import type { PagedDialect } from '../engine/read-port.ts';
import { beginOnce, recordOnce } from './idempotency.ts';
import { patchRowIn, patchRowsIn, type RowPatch } from './patches.ts';
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
import { type FilterChange, patchEachIn, patchEachWhereIn } from './together.ts';
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
type QueuedPatch = RowPatch & Queued & { schemaId: number };

/** A change by filter as updateRowsWhere() queues it (changeGroups). */
type QueuedChange = FilterChange & Queued;

/** A write queued by its collection. */
type Queued = { accountId: number; collection: string };

/** The writes of one collection written together at most: a bound on how long the first waits for its answer. */
const MAX_WRITES_TOGETHER = 200;

/**
 * The patches, and the changes by filter, of each database, by collection, written in groups
 * (../engine/grouping.ts): those that come while a group is written wait, and go together in the next,
 * one transaction that reads their rows in one statement and stores them in a few (together.ts), where
 * each alone would read and write in statements of its own, holding the collection's row from its first
 * to its commit. A write alone is written as before (patchRowIn, patchRowsIn). A group that fails writes
 * nothing, and runs each write again alone, which fails or succeeds as it would have without the others
 * (a unique index's refusal, told apart by keepingUnique()).
 */
const patchGroups = new WeakMap<Dialect, Groups<QueuedPatch, VersionedRow | Error>>();
const changeGroups = new WeakMap<Dialect, Groups<QueuedChange, ChangedRows | Error>>();

/**
 * `item` in a group with the writes of its collection queued beside it in `made`'s groups of `db` (made on
 * first use, with `alone`, the write of a group of one, and `each`, of several): its answer, or its own
 * refusal, thrown.
 */
async function writtenTogether<I extends Queued, R>(
  made: WeakMap<Dialect, Groups<I, R | Error>>,
  db: Dialect,
  item: I,
  alone: (item: I, key: string) => Promise<R>,
  each: (trx: WriteTx, accountId: number, collection: string, items: I[]) => Promise<(R | Error)[]>,
): Promise<R> {
  let groups = made.get(db);
  if (!groups) {
    groups = new Groups<I, R | Error>({
      maxWeight: MAX_WRITES_TOGETHER,
      run(key, items) {
        const [{ accountId, collection }] = items;
        if (items.length === 1) return alone(items[0], key).then((answer) => [answer]);
        return db.rows.writeSeveral((trx) => each(trx, accountId, collection, items));
      },
    });
    made.set(db, groups);
  }
  const answer = await groups.add(writeKey(item.accountId, item.collection), item);
  if (answer instanceof Error) throw answer;
  return answer;
}

const patchedTogether = (db: Dialect, queued: QueuedPatch) =>
  writtenTogether<QueuedPatch, VersionedRow>(
    patchGroups,
    db,
    queued,
    ({ accountId, collection, rowId, patch, schemaId, options, seen }, key) =>
      db.rows.write((trx) => patchRowIn(db, trx, accountId, collection, rowId, patch, schemaId, options, 0, seen), key),
    (trx, accountId, collection, patches) => patchEachIn(db, trx, accountId, collection, patches),
  );

const changedTogether = (db: Dialect, queued: QueuedChange) =>
  writtenTogether<QueuedChange, ChangedRows>(
    changeGroups,
    db,
    queued,
    ({ accountId, collection, match, patch, max, guard, matched }, key) =>
      db.rows.writeSeveral((trx) => patchRowsIn(db, trx, accountId, collection, match, patch, max, guard, matched), key),
    (trx, accountId, collection, changes) => patchEachWhereIn(db, trx, accountId, collection, changes),
  );

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
  const match = await liveFilterWhere(db, accountId, collection, filter);
  // The rows as patched, as a unique index would see them.
  let seen: MatchedRow[] = [];
  const attempted = () => seen.map((row) => ({ id: row.id, fields: applyPatch(patch, JSON.parse(row.data), row.id) }));
  const matched = (rows: MatchedRow[]) => {
    seen = rows;
  };
  const { once, guard } = options ?? {};
  try {
    return await keepingUnique(db, accountId, collection, attempted, () => {
      // Together with the changes beside it, where its filter can be tested in Node too (together.ts).
      if (!once && !holdsRelated(filter) && !holdsSearch(filter))
        return changedTogether(db, { accountId, collection, filter, match, patch, max, guard, matched });
      return db.rows.writeSeveral(
        async (trx) => {
          if (once) await beginOnce(db, trx, accountId, once);
          const changed = await patchRowsIn(db, trx, accountId, collection, match, patch, max, guard, matched);
          if (once) await recordOnce(db, trx, accountId, once, changed);
          return changed;
        },
        writeKey(accountId, collection),
      );
    });
  } catch (error) {
    throw db.rows.isRowTooLarge(error) ? rowTooLarge() : error;
  }
}
