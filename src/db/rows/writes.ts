// Deletes of rows (openapi.yaml, deleteRow and deleteRows), the relations naming them followed, and the
// writes of rows inside a write transaction that a batch, an upsert and a delete's followers make.

import { conflict, rowNotFound } from '../../errors.ts';
import { expiryNow } from '../../expiry/ttl.ts';
import type { Patch } from '../../patches/index.ts';
import type { Filter } from '../../query/filter.ts';
import { assignable, type EventRow, eventRow, versionOf } from '../../rows.ts';
import { advance } from '../collections/collections.ts';
import type { Dialect, SqlValue, WriteTx } from '../engine/dialect.ts';
import type { PagedDialect } from '../engine/read-port.ts';
import { sortedSql } from '../engine/sql/relations.ts';
import { deleteKeysByIdSql, deleteRowSql, deleteRowsByIdSql, deleteSortKeysSql } from '../engine/sql/rows.ts';
import type { Sql } from '../engine/sql/template.ts';
import { appendEvents, type EventReason } from '../events/events.ts';
import { liveWhere } from '../expiry/live.ts';
import { indexedFields } from '../reads/filter-indexes.ts';
import type { RelationLinks, StoredRelation } from '../relations/links.ts';
import { bindSearch } from '../search/indexes.ts';
import { beginOnce, recordOnce } from './idempotency.ts';
import { patchRowIn, patchRowsIn, readIn } from './patches.ts';
import {
  type ChangedRows,
  changedRows,
  type Fields,
  type FilterMatch,
  type FirstInserted,
  matchedRows,
  matchedSql,
  noSuchRow,
  preconditionFailed,
  type RowGuard,
  type RowIds,
  type RowMatch,
  type VersionedRow,
  versionMatches,
  type WriteOptions,
  writeKey,
} from './rows.ts';

/** How rows are written inside a write transaction: a batch's writes, an upsert's, and a delete's followers' (rowWritesIn). */
export interface RowWrites {
  /**
   * Inserts the rows of `inserts`, each an operation's rows' texts, checked against the collection's
   * schema `schemaId` already, one after another: the first id and seq of each.
   */
  insert(collection: string, schemaId: number, inserts: string[][]): Promise<FirstInserted[]>;
  /**
   * Patches the row `rowId` (If-Match in `options`), checking it as patched against the schema, its
   * errors naming the row `place`; `seen` is told the row as patched, and as it was, before it is written. `schemaId`:
   * the collection's, as the transaction holds it (0 when it holds the row already).
   */
  patch(
    collection: string,
    schemaId: number,
    rowId: number,
    patch: Patch,
    options?: { ifMatch?: readonly string[]; guard?: RowGuard },
    place?: number,
    seen?: (row: Fields, before: Fields) => void,
  ): Promise<VersionedRow>;
  /** Patches every row of the collection that `where` matches, as a change by filter does (at most `max`, else 400): a relation's set_null. */
  patchWhere(collection: string, where: RowMatch, patch: Patch, max: number): Promise<ChangedRows>;
}

/** The rows one relation's cascade or set_null changes at most, each delete: past it, nothing of the delete is written. */
const MAX_FOLLOWING_ROWS = 100_000;

/** The rows a cascade deletes in one statement at most. */
const IDS_PER_DELETE = 1000;

/** 409 for a delete of rows that rows of a relation with on_delete restrict name: nothing was deleted. */
const restricted = (relation: StoredRelation, namingId: number) =>
  conflict(
    `Row ${namingId} of collection ${relation.sourceName} names a row being deleted (relation ${relation.name}, on_delete restrict): nothing was deleted.`,
  );

/**
 * Holds, for the rest of `trx`, the collections whose rows a delete of the collection of `links` may
 * change (set_null, cascade, and the cascades' own, and so on), before it deletes anything: a write
 * that names a row holds its collection first, then the row named (FOR KEY SHARE), so a delete that
 * held a row first and then waited for that collection would wait in a circle (on PostgreSQL, a deadlock).
 */
async function holdFollowers(db: Dialect, trx: WriteTx, accountId: number, links: RelationLinks, held: Set<number>): Promise<void> {
  for (const relation of links.in) {
    if (relation.onDelete === 'restrict' || held.has(relation.source)) continue;
    held.add(relation.source);
    const { schemaId } = await advance(db, trx, accountId, relation.sourceName, 0);
    const next = relation.onDelete === 'cascade' ? await db.schemas.links(readIn(db, trx), schemaId) : undefined;
    if (next) await holdFollowers(db, trx, accountId, next, held);
  }
}

/**
 * What deleting the rows `ids` of a collection does to the rows that name them, by the relations
 * `links.in`: restrict refuses the delete (409), cascade deletes them (each with its delete event, and
 * what deleting them does in turn), set_null sets their field to null (each with its update event).
 */
async function followDeletes(db: Dialect, trx: WriteTx, writes: RowWrites, accountId: number, links: RelationLinks, ids: number[]) {
  for (const relation of links.in) {
    const where = db.filterSql({ kind: 'field', path: [relation.field], op: '$in', operand: ids });
    // The rows naming them found through the field's sort index (made when the relation was declared):
    // each id's keys, each key's row by its id, the filter tested on them alone.
    const [source] = await db.run<{ sorted: string }>(trx, sortedSql, [relation.source]);
    const slot = source ? (JSON.parse(source.sorted) as string[]).indexOf(relation.field) : -1;
    const match: RowMatch = slot >= 0 ? { slot, naming: ids, where } : where;
    if (relation.onDelete === 'restrict') {
      const { sql, params } = matchedSql(db, relation.source, match, 1);
      const [naming] = await db.run<{ id: number | string }>(trx, sql, params, true);
      if (naming) throw restricted(relation, Number(naming.id));
    } else if (relation.onDelete === 'cascade') {
      // Found through the index, then deleted by id through the primary key, a part at a time (the
      // index's keys go with them).
      const naming = await matchedRows(db, trx, relation.source, match, MAX_FOLLOWING_ROWS);
      for (let from = 0; from < naming.length; from += IDS_PER_DELETE) {
        const part = naming.slice(from, from + IDS_PER_DELETE).map((row) => row.id);
        await deleteRowsIn(db, trx, writes, accountId, relation.sourceName, { ids: part }, part.length);
      }
    } else {
      await writes.patchWhere(relation.sourceName, match, { format: 'merge', fields: { [relation.field]: null } }, MAX_FOLLOWING_ROWS);
    }
  }
}

/**
 * Deletes the row, its sort keys, and writes one delete event carrying the row as it was; 404 for a
 * missing row or collection, 412 (and nothing deleted: the transaction rolls back) for a row whose
 * version is none of `options.ifMatch`. Then follows the relations naming it (followDeletes).
 */
export async function deleteRowIn(
  db: Dialect,
  trx: WriteTx,
  writes: RowWrites,
  accountId: number,
  collection: string,
  rowId: number,
  options?: WriteOptions<void>,
): Promise<void> {
  if (options?.once) await beginOnce(db, trx, accountId, options.once);
  const { id, lastSeq, sorted, schemaId } = await advance(db, trx, accountId, collection, 1, 0, -1);
  const links = await db.schemas.links(readIn(db, trx), schemaId);
  if (links) await holdFollowers(db, trx, accountId, links, new Set([id]));
  const [deleted] = await db.run<{ data: string; version: number | string }>(trx, deleteRowSql, [id, rowId, expiryNow()]);
  if (!deleted) throw rowNotFound(collection, rowId);
  // The row's 404 for a caller that may not see it, before If-Match's 412.
  options?.guard?.deleting(rowId, JSON.parse(deleted.data));
  if (!versionMatches(options, versionOf(id, deleted.version))) throw preconditionFailed(collection, rowId);
  if (sorted.length > 0) await db.run(trx, deleteSortKeysSql, [id, rowId]);
  await appendEvents(db, trx, id, lastSeq, 'delete', [eventRow(rowId, deleted.data)]);
  if (links) await followDeletes(db, trx, writes, accountId, links, [rowId]);
  if (options?.once) await recordOnce(db, trx, accountId, options.once, undefined);
}

/**
 * Deletes every row of the collection that `match` matches (a filter, or ids), all or none (at most `max`, else 400 with
 * nothing deleted), with one delete event each, in id order, with consecutive seqs, and follows the
 * relations naming them (followDeletes); answers them as their events carry them. `reason`: why, when
 * no request asked (the sweeper's expiries, ../expiry/sweep.ts), on their events alone, not on those
 * of the rows their relations cascade to.
 */
export async function deleteRowsIn(
  db: Dialect,
  trx: WriteTx,
  writes: RowWrites,
  accountId: number,
  collection: string,
  match: Sql | FilterMatch | RowIds,
  max: number,
  options?: WriteOptions<ChangedRows>,
  reason?: EventReason,
): Promise<ChangedRows> {
  if (options?.once) await beginOnce(db, trx, accountId, options.once);
  // The collection's row first, held until commit: no write of the collection comes between the match and the delete.
  const { id, schemaId, sorted } = await advance(db, trx, accountId, collection, 0);
  const matched = await matchedRows(db, trx, id, match, max, sorted);
  let rows: EventRow[] = [];
  if (matched.length > 0) {
    const links = await db.schemas.links(readIn(db, trx), schemaId);
    if (links) await holdFollowers(db, trx, accountId, links, new Set([id]));
    const { lastSeq } = await advance(db, trx, accountId, collection, matched.length, 0, -matched.length);
    // Deleted by the ids matched, each through the primary keys, not by the filter again: the collection
    // is held, so they are the rows it matches, and a filter read twice in one statement is a plan the
    // database may get wrong (docs/expiry.md, "Deleted within seconds").
    const ids = matched.map((row) => row.id);
    if (sorted.length > 0) {
      const keys = db.keyRowIdsSql(id, ids);
      await db.run(trx, deleteKeysByIdSql(keys.sql), keys.params, true);
    }
    const byId = db.rowIdsSql(id, ids);
    await db.run(trx, deleteRowsByIdSql(byId.sql), byId.params, true);
    rows = matched.map((row) => eventRow(row.id, row.data));
    await appendEvents(db, trx, id, lastSeq, 'delete', rows, reason);
    if (links)
      await followDeletes(
        db,
        trx,
        writes,
        accountId,
        links,
        matched.map((row) => row.id),
      );
  }
  const changed = changedRows(rows);
  if (options?.once) await recordOnce(db, trx, accountId, options.once, changed);
  return changed;
}

/** The writes of a batch, an upsert or a delete's followers inside `trx` (RowWrites). */
export const rowWritesIn = (db: Dialect, trx: WriteTx, accountId: number): RowWrites => ({
  patchWhere: (collection, where, patch, max) => patchRowsIn(db, trx, accountId, collection, where, patch, max),
  insert: (collection, schemaId, inserts) => db.rows.insertIn(trx, accountId, collection, schemaId, inserts),
  patch: (collection, schemaId, rowId, patch, options, place, seen) =>
    patchRowIn(db, trx, accountId, collection, rowId, patch, schemaId, options, place, seen),
});

/** Deletes the row, with one delete event carrying the row as it was. 412 when its version is none of `options.ifMatch`. */
export async function deleteRow(db: Dialect, accountId: number, collection: string, rowId: number, options?: WriteOptions<void>) {
  if (!assignable(rowId)) return noSuchRow(db, accountId, collection, rowId);
  await db.rows.writeSeveral(
    (trx) => deleteRowIn(db, trx, rowWritesIn(db, trx, accountId), accountId, collection, rowId, options),
    writeKey(accountId, collection),
  );
}

/** Deletes every row of the collection that `filter` matches, as updateRowsWhere() patches them (updates.ts); answers them as they were. */
export async function deleteRowsWhere(
  db: PagedDialect,
  accountId: number,
  collection: string,
  filter: Filter,
  max: number,
  options?: WriteOptions<ChangedRows>,
): Promise<ChangedRows> {
  const where = await liveFilterWhere(db, accountId, collection, filter);
  return db.rows.writeSeveral(
    (trx) => deleteRowsIn(db, trx, rowWritesIn(db, trx, accountId), accountId, collection, where, max, options),
    writeKey(accountId, collection),
  );
}

/**
 * What a change by filter matches (deleteRowsWhere(), updateRowsWhere() of updates.ts): the rows that live
 * and that `filter` matches, its search bound to the collection's index, found through a sort index where
 * one of its fields has one.
 */
export async function liveFilterWhere(db: PagedDialect, accountId: number, collection: string, filter: Filter): Promise<FilterMatch> {
  const read = <T>(sql: string, params: SqlValue[]) => db.pages.read<T>(sql, params, 'point');
  const bound = await bindSearch(read, accountId, collection, filter);
  return { where: liveWhere(db.pages.filterSql(bound)), fields: indexedFields(bound) };
}
