// Reads that reach into related rows (docs/relations.md), each read in one snapshot with them: a page
// whose filter goes through relations (`$match`, `$some`: the related rows it finds, then the page), that
// is ordered by a related row's field (its last row's related values, for its cursor) or that expands
// its rows (the related rows set into them), and an aggregate whose filter goes through relations. A read that reaches no related row is read as it is, outside any snapshot;
// a page whose `$match`es and `$some`s its own statement reads (../relations/bound.ts) is one statement, no snapshot either.

import type { FieldError } from '../../errors.ts';
import type { AggregateQuery } from '../../query/aggregate.ts';
import { lastRow } from '../../query/cursor.ts';
import { type Filter, holdsRelated, holdsSearch } from '../../query/filter.ts';
import { ordersRelated, type SortKey } from '../../query/order.ts';
import { assignable } from '../../rows.ts';
import { KnownIndexes } from '../collections/sort-indexes.ts';
import type { SchemaCache } from '../engine/dialect.ts';
import type { AggregateSource, PageSource, SnapshotRead } from '../engine/read-port.ts';
import { byName, type LivePage } from '../engine/sql/pages.ts';
import type { JoinedRelation } from '../engine/sql/related.ts';
import { type Binding, boundAlone, learnRelations } from '../relations/bound.ts';
import { bindRelations, relatedReadsOf } from '../relations/filters.ts';
import { type AggregateResult, readAggregates } from './aggregates.ts';
import { type Expansion, expandPage, PageMoved } from './expand.ts';
import { guardedPage, type ListedPage, type RowsPage, readPage, readPageWithRelated } from './pages.ts';

type Fields = Record<string, unknown>;

/**
 * The page `page` of the collection (readPage), its filter's conditions through relations bound to the
 * related rows they find, with `expansions` set into its rows, and for an order through a relation its
 * last row's related values (RowsPage.related): the related rows and the page all read in one snapshot,
 * so that the page is exactly as of the related rows it was chosen and ordered by. A page that only
 * expands its rows one level deep is first read without a snapshot (expandedAlone), and so is one whose
 * `$match`es its own statement reads (matchedAlone).
 */
export async function readRelatedPage(
  source: PageSource,
  schemas: SchemaCache,
  accountId: number,
  collection: string,
  page: LivePage,
  expansions: readonly Expansion[] | undefined,
): Promise<ListedPage> {
  const expanding = expansions !== undefined && expansions.length > 0;
  const ordered = ordersRelated(page.order);
  const throughRelations = page.filter !== undefined && holdsRelated(page.filter);
  if (!expanding && !ordered && !throughRelations) return readPage(source, accountId, collection, page);
  if (expanding && !ordered && !throughRelations && expansions.every(alone)) {
    const answer = await expandedAlone(source, accountId, collection, page, expansions);
    if (answer) return answer;
  }
  // Past here a page that neither expands nor is ordered through a relation has a filter through one.
  if (!expanding && !ordered && page.filter && !holdsSearch(page.filter)) {
    const answer = await matchedAlone({ source, schemas, accountId, now: page.now }, collection, page, page.filter);
    if (answer) return answer;
  }
  return source.snapshot(async (read) => {
    const reads = inSnapshot(source, read);
    const filter = await bindRelations(relatedReadsOf(reads), accountId, collection, page.filter);
    const answer = await readPage(reads, accountId, collection, { ...page, filter });
    if (ordered && answer.n > 0 && !page.versions) answer.related = await relatedValues(reads, accountId, page, lastRow(answer.json));
    if (!expanding) return answer;
    return { ...answer, ...(await expandPage(reads, accountId, answer.json, page.versions === true, expansions, page.now)) };
  });
}

/**
 * A page whose filter's `$match`es are read by its own statement, bound with what was last seen of the
 * collection and its relations (../relations/bound.ts), looked up first when something was not seen.
 * Undefined when they cannot be read so, or when what they were bound with has changed since: then the
 * page is read in a snapshot, its related rows by reads of their own.
 */
async function matchedAlone(binding: Binding, collection: string, page: LivePage, filter: Filter): Promise<RowsPage | undefined> {
  let bound = await boundAlone(binding, collection, filter);
  if (bound === 'unknown') {
    await learnRelations(binding, collection);
    bound = await boundAlone(binding, collection, filter);
  }
  if (typeof bound !== 'object') return undefined;
  const answer = await guardedPage(binding.source, bound.known, collection, { ...page, filter: bound.filter }, bound.guard);
  // Changed since last seen (or gone): seen again, for the next page.
  if (!answer) await learnRelations(binding, collection);
  return answer;
}

/**
 * An expansion read by one statement that reads nothing else first: no nested expansions, no filter
 * through relations or by a search (each bound by reads of its own).
 */
const alone = ({ expand, filter }: Expansion) => expand.length === 0 && !(filter && (holdsRelated(filter) || holdsSearch(filter)));

/**
 * The page, then its expansions, each read alone (no snapshot: on SQLite, no begin and commit each a
 * hop to the driver's threads; on PostgreSQL, no round trips of their own), each relation's statement
 * reading again the latest event seq of the page's collection (ReadAt). The same seq as the page's: the
 * page's rows were as read when its related rows were, and the page is as one snapshot would read it.
 * Another: undefined, for a snapshot to read it all. A page whose expansions its own statement can read
 * (joinedInPage) is that one statement.
 */
async function expandedAlone(
  source: PageSource,
  accountId: number,
  collection: string,
  page: LivePage,
  expansions: readonly Expansion[],
): Promise<ListedPage | undefined> {
  const relations = joinedInPage(source, accountId, page, expansions);
  const joined = relations && (await readPageWithRelated(source, accountId, collection, page, relations));
  if (joined) return joined;
  const answer = await readPage(source, accountId, collection, page);
  const at = { collection: byName(accountId, collection), seq: answer.seq };
  try {
    return { ...answer, ...(await expandPage(source, accountId, answer.json, page.versions === true, expansions, page.now, at)) };
  } catch (error) {
    if (error instanceof PageMoved) return undefined;
    throw error;
  }
}

/**
 * The relations a page's own statement reads (PageSource.pageWithRelated, readPageWithRelated): of a page
 * in the order of its ids, unfiltered, whose every expansion is read as it is stored (no hidden fields to
 * mask, no `select`, no nested expansion, a filter through no relation and no search), to-ones and then at
 * most one to-many, last, ordered by id alone. Undefined for any other page, and in a dialect without that
 * statement: its expansions are read apart.
 */
function joinedInPage(
  source: PageSource,
  accountId: number,
  page: LivePage,
  expansions: readonly Expansion[],
): JoinedRelation[] | undefined {
  if (!source.pageWithRelated) return undefined;
  const [key] = page.order;
  const byIds = page.order.length === 1 && key.field === 'id' && !key.related;
  if (!byIds || page.filter || page.versions) return undefined;
  const asStored = (expansion: Expansion) => !expansion.mask && !expansion.select && alone(expansion);
  if (!expansions.every(asStored) || !expansions.slice(0, -1).every(({ kind }) => kind === 'to_one')) return undefined;
  const last = expansions.at(-1);
  const [order] = last?.order ?? [];
  if (last?.kind === 'to_many' && (last.order.length !== 1 || order.field !== 'id' || order.related)) return undefined;
  return expansions.map(({ name, kind, collection, field, filter, order, limit }) => ({
    name,
    collection: byName(accountId, collection),
    field,
    where: filter && source.filterSql(filter),
    ...(kind === 'to_many' ? { many: { direction: order[0].direction, limit } } : {}),
  }));
}

/**
 * `row`'s value of each key of the page's order through a relation: the field of the related row, read
 * as the order read it (kept by the key's filter; its `id` for `id`); none when it has none.
 */
async function relatedValues(source: PageSource, accountId: number, page: LivePage, row: Fields): Promise<Fields> {
  const values: Fields = {};
  for (const { field, related } of page.order) {
    const id = related && row[related.field];
    if (!related || typeof id !== 'number' || !assignable(id)) continue;
    const byId: Filter = { kind: 'field', path: ['id'], op: '$eq', operand: id };
    const filter: Filter = related.filter ? { kind: 'and', filters: [byId, related.filter] } : byId;
    const read = await readPage(source, accountId, related.collection, { limit: 1, offset: 0, order: BY_ID, filter, now: page.now });
    const [found] = JSON.parse(read.json) as Fields[];
    if (found && Object.hasOwn(found, related.name)) values[field] = found[related.name];
  }
  return values;
}

const BY_ID: SortKey[] = [{ field: 'id', direction: 'asc' }];

/**
 * The answer to an aggregate query over the rows that live at `now` (readAggregates), its filter's
 * conditions through relations bound in its snapshot, as a page's.
 */
export function readRelatedAggregates(
  source: AggregateSource,
  accountId: number,
  collection: string,
  query: AggregateQuery,
  maxGroupsRead: number,
  place: FieldError,
  now: number,
): Promise<AggregateResult> {
  if (!query.filter || !holdsRelated(query.filter)) return readAggregates(source, accountId, collection, query, maxGroupsRead, place, now);
  return source.snapshot(async (read) => {
    const reads = inSnapshot(source, read);
    const filter = await bindRelations(relatedReadsOf(reads), accountId, collection, query.filter);
    return readAggregates(reads, accountId, collection, { ...query, filter }, maxGroupsRead, place, now);
  });
}

/**
 * `source` with every read in the snapshot `read`. Inside it, no sort index is made (one made meanwhile
 * would not be in the snapshot): a page whose field has none yet sorts whole.
 */
const inSnapshot = <S extends PageSource>(source: S, read: SnapshotRead): S => ({
  ...source,
  read: (sql, params) => read(sql, params),
  knownIndexes: new KnownIndexes(),
  sortIndexes: { ...source.sortIndexes, max: 0 },
});
