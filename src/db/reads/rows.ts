// A collection's rows read (openapi.yaml, getRow, listRows, queryRows, aggregateRows): a row by its id,
// a page (pages.ts) and an aggregate (aggregates.ts), each with its filter's conditions through
// relations bound, and its expansions read, in one snapshot (related.ts).

import { collectionNotFound, type FieldError, queryTimeout, rowNotFound } from '../../errors.ts';
import { expiryNow } from '../../expiry/ttl.ts';
import type { AggregateQuery } from '../../query/aggregate.ts';
import type { Filter } from '../../query/filter.ts';
import type { Page } from '../../query/page.ts';
import { assignable, rowJson, versionOf } from '../../rows.ts';
import type { Dialect } from '../engine/dialect.ts';
import type { PagedDialect } from '../engine/read-port.ts';
import { type SortedEntry, slotsOfIndex } from '../engine/sorted.ts';
import { noSuchRow, pageTooLarge, type VersionedRow } from '../rows/rows.ts';
import type { AggregateResult } from './aggregates.ts';
import type { Expansion } from './expand.ts';
import type { ListedPage } from './pages.ts';
import { readRelatedAggregates, readRelatedPage } from './related.ts';

/**
 * The row and its version; 404 for a missing row or collection, and for a row that does not match
 * `where` (a caller's read rule: src/rules/access.ts, Grant.rowCondition), which the row's statement
 * tests: the row is not parsed in Node to test it. `where` names the row's fields and id only (no
 * search, no relation), as a rule does.
 */
export async function getRow(
  db: PagedDialect,
  accountId: number,
  collection: string,
  rowId: number,
  where?: Filter,
): Promise<VersionedRow> {
  if (!assignable(rowId)) return noSuchRow(db, accountId, collection, rowId);
  const [row] = await db.rows.readRow(accountId, collection, rowId, expiryNow(), where);
  if (!row) throw collectionNotFound(collection);
  if (row.data === null) throw rowNotFound(collection, rowId);
  return { json: rowJson(rowId, row.data), version: versionOf(row.collection_id, row.version) };
}

/**
 * One page of rows (pages.ts); 404 when the collection does not exist. Its filter's conditions through
 * relations are bound to the related rows they find, and with `expansions` the rows related to its rows
 * are set into them, all read in one snapshot with the page (related.ts).
 */
export async function listRows(
  db: PagedDialect,
  accountId: number,
  collection: string,
  page: Page,
  expansions?: readonly Expansion[],
): Promise<ListedPage> {
  try {
    return await readRelatedPage(db.pages, db.schemas, accountId, collection, { ...page, now: expiryNow() }, expansions);
  } catch (error) {
    throw readRefusal(db, error);
  }
}

/**
 * The answer to an aggregate query (aggregates.ts), its filter's conditions through relations bound in
 * its snapshot (related.ts); 404 when the collection does not exist, 400 (whose one error is `place`)
 * when its rows fall into more than `maxGroupsRead` groups, 503 past the query timeout.
 */
export async function aggregateRows(
  db: PagedDialect,
  accountId: number,
  collection: string,
  query: AggregateQuery,
  maxGroupsRead: number,
  place: FieldError,
): Promise<AggregateResult> {
  try {
    return await readRelatedAggregates(db.pages, accountId, collection, query, maxGroupsRead, place, expiryNow());
  } catch (error) {
    throw readRefusal(db, error);
  }
}

/** A read's error as the product's: a page longer than a string its connection makes, a read stopped past the query timeout. */
function readRefusal(db: Dialect, error: unknown): unknown {
  if (db.rows.isPageTooLarge(error)) return pageTooLarge();
  if (db.rows.isQueryCanceled(error)) return queryTimeout(db.queryTimeoutMs);
  return error;
}

/**
 * Makes a sort index of `field` (a field, or a pair: ../engine/sorted.ts) in the collection
 * (../collections/sort-indexes.ts), unless it has one or as many as it may.
 */
export async function sortBy({ pages }: PagedDialect, accountId: number, collection: string, field: SortedEntry): Promise<void> {
  await pages.makeSortIndex(accountId, collection, field, pages.sortIndexes.max);
}

/** Makes the sort indexes a declared index of `fields` makes (slotsOfIndex), each as sortBy() does. */
export async function sortByIndex(db: PagedDialect, accountId: number, collection: string, fields: readonly string[]): Promise<void> {
  for (const entry of slotsOfIndex(fields)) await sortBy(db, accountId, collection, entry);
}
