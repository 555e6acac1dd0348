// A page of a collection's rows (openapi.yaml, listRows and queryRows), read the same way on both
// dialects through the SQL each writes (sqlite/sql/reads.ts, postgres/sql/reads.ts). The order, and
// how a page is read: docs/development.md, "Pages".

import { collectionNotFound } from '../../errors.ts';
import type { Position } from '../../query/cursor.ts';
import { type Filter, rankedSearch, without } from '../../query/filter.ts';
import { type Direction, ordersRelated, SCORE, type SortKey } from '../../query/order.ts';
import type { Relevance } from '../../query/select.ts';
import { EXPANDED, type Json, type JsonBytes, type Row } from '../../rows.ts';
import type { KnownCollection } from '../collections/sort-indexes.ts';
import type { PageSource, SnapshotRead } from '../engine/read-port.ts';
import { pairSlot, type SortedEntry } from '../engine/sorted.ts';
import { byId, byName, type CollectionRef, type KeyRange, type LivePage, withinIndex } from '../engine/sql/pages.ts';
import { collectionSql, keyCountUpToSql, presentCountSql } from '../engine/sql/reads.ts';
import type { JoinedRelation } from '../engine/sql/related.ts';
import { raw, type Sql, type Template, template } from '../engine/sql/template.ts';
import { pageTooLarge } from '../rows/rows.ts';
import { bindSearch } from '../search/indexes.ts';
import { type IndexedField, type InIndex, indexedFields, inIndex, oneValue } from './filter-indexes.ts';

/**
 * A page of rows as JSON text, and `seq`, the collection's latest event seq as of the snapshot the rows
 * were read from: the rows are exactly what the events up to it made, so a feed resumed with
 * `since=seq` brings every later change and none the page already shows.
 */
export type RowsPage<J = Json<Row[]>> = {
  json: J;
  n: number;
  seq: number;
  total?: number;
  /**
   * The last row's value of each key of the order through a relation (SortKey.related), by the key's
   * `field`, read in the page's snapshot; none where the row has none (related.ts): its cursor's place.
   */
  related?: Record<string, unknown>;
  /**
   * The last row's JSON text as read, before the expansions set into the page (expand.ts): its cursor's
   * place; of a page by id alone read with its related rows (readPageWithRelated), `{"id":…}`.
   */
  last?: string;
} & Relevance;

/**
 * A page as a list of rows answers it (readPageWithRelated, ./related.ts): its rows' JSON text, or the
 * UTF-8 bytes of it as the dialect's statement answered them, which are answered as they are.
 */
export type ListedPage = RowsPage<Json<Row[]> | JsonBytes<Row[]>>;

/**
 * What a page's statement answers, in one row: how many rows, their JSON texts joined by commas (null
 * for none; on PostgreSQL also null when they weigh more than a page may), the collection's latest event
 * seq in the same snapshot (null when the collection is gone), and on PostgreSQL whether the sort
 * index's order is exact (postgres/sql/collections.ts, POSTGRES_KEY_CHARS).
 */
type PagePart = {
  n: number | string;
  json: string | null;
  seq: number | string | null;
  exact?: boolean;
  total?: number | string;
  /** A scored page's scores, in its order, joined by commas (JSON numbers' text). */
  scores?: string | null;
};

/**
 * What a page with its related rows answers (PageSource.pageWithRelated): PagePart's, but its `json` the
 * whole JSON array of its rows, as text or as its UTF-8 bytes (a blob: SQLite's), null when it has no rows
 * or they are longer than a page may be; whether a to-many's collection has no sort index of its field
 * (`apart`); its last row's id.
 */
type RelatedPagePart = Omit<PagePart, 'json'> & {
  json: string | Buffer | null;
  apart?: number | boolean | null;
  last_id?: number | string | null;
};
type CollectionRow = { id: number | string; row_count: number | string; sorted: string; ttl_field: string | null };
type Joined = { json: Json<Row[]>; n: number; seq: number | null; exact: boolean };

/** One page of rows; 404 when the collection does not exist. */
export async function readPage(source: PageSource, accountId: number, collection: string, page: LivePage): Promise<RowsPage> {
  if (page.filter) {
    const filter = await bindSearch((sql, params) => source.read(sql, params, 'point'), accountId, collection, page.filter);
    if (page.scored) return scoredPage(source, byName(accountId, collection), collection, { ...page, filter });
    return filteredPage(source, accountId, collection, { ...page, filter }, filter);
  }
  // A related row's field has no sort index: sorted whole.
  if (page.count || page.order.length > 1 || page.versions || ordersRelated(page.order))
    return queryPage(source, byName(accountId, collection), collection, page);
  const [key] = page.order;
  if (key.field !== 'id') {
    const indexed = await indexedPage(source, accountId, collection, page, key);
    if (indexed) return indexed;
  }
  if (page.after) return queryPage(source, byName(accountId, collection), collection, page);
  const { sql, params } = source.orderedPage(byName(accountId, collection), page);
  // By id, the primary key's order; by a field without a sort index, a sort of the whole collection.
  const [part] = await source.read<PagePart>(sql, params, key.field === 'id' ? 'scan' : 'sort');
  return wholeAnswer(part, collection, page);
}

/**
 * A page sorted whole without a filter, each row with the rows of its relations `joined` set in by its own
 * statement (PageSource.pageWithRelated); 404 when the collection does not exist. Undefined when the
 * dialect has no such statement, when a to-many's collection has no sort index of its field (lookUpIndex()
 * makes one, as the page read apart asks for it), or when a row or a related row may hold a stored field named
 * EXPANDED (storesExpanded), which ./expand.ts drops: then its expansions are for statements of their own.
 */
export async function readPageWithRelated(
  source: PageSource,
  accountId: number,
  collection: string,
  page: LivePage,
  joined: readonly JoinedRelation[],
): Promise<ListedPage | undefined> {
  if (!source.pageWithRelated) return undefined;
  const { sql, params } = source.pageWithRelated(byName(accountId, collection), page, joined);
  // A count reads the whole collection, as a page sorted whole does; a to-many's rows, hundreds, are
  // read as an expansion's statement reads them.
  const kind = page.count ? 'sort' : joined.some((relation) => relation.many) ? 'related' : 'scan';
  const [part] = await source.read<RelatedPagePart>(sql, params, kind);
  if (part.apart) return undefined;
  const { json } = part;
  // The statement's own text or bytes, answered as they are: nothing joined to them in Node.
  const answer =
    json === null
      ? wholeAnswer({ ...part, json: null }, collection, page)
      : wholeOf({ json, n: Number(part.n), seq: partSeq(part) }, part, collection, page);
  if (storesExpanded(answer)) return undefined;
  // Its order is by id alone: the id is all of its last row its cursor's place reads (RowsPage.last).
  return part.last_id === null || part.last_id === undefined ? answer : { ...answer, last: `{"id":${Number(part.last_id)}}` };
}

/**
 * Whether a page of rows each with its member EXPANDED (readPageWithRelated) names EXPANDED more often than
 * once a row: then a row, or a related row, holds a stored field of that name, or a string that is the
 * name itself, which a search of the text cannot tell apart (the quotes of a string within a string are
 * escaped). A stored field of that name would be answered beside the expansions, or as one.
 */
function storesExpanded({ json, n }: ListedPage): boolean {
  // Found by its end, whose first character JSON seldom holds (a quote it holds everywhere), then its quote;
  // in bytes by bytes, which a string would be encoded to at each search.
  const next = (from: number) => (typeof json === 'string' ? json.indexOf(EXPANDED_END, from) : json.indexOf(EXPANDED_END_BYTES, from));
  let found = 0;
  for (let at = next(1); at >= 0; at = next(at + EXPANDED_END.length)) if (codeAt(json, at - 1) === QUOTE && ++found > n) return true;
  return false;
}

const QUOTE = 0x22;
const EXPANDED_END = `${EXPANDED}"`;
const EXPANDED_END_BYTES = Buffer.from(EXPANDED_END);

/** The character code, or byte, at `at` of a JSON text or its bytes. */
const codeAt = (json: string | Buffer, at: number): number => (typeof json === 'string' ? json.charCodeAt(at) : json[at]);

/** The answer of a page sorted whole from its statement's one row (with its total when counted); 404 when the collection does not exist. */
function wholeAnswer(part: PagePart, collection: string, page: LivePage): RowsPage {
  return wholeOf(joinParts([part]), part, collection, page);
}

/** A page's rows (`json`, `n`) and `seq` as wholeAnswer() answers them, with its total from `part` when counted. */
function wholeOf<J>(
  { json, n, seq }: { json: J; n: number; seq: number | null },
  part: Pick<PagePart, 'total'>,
  collection: string,
  page: LivePage,
): RowsPage<J> {
  if (seq === null) throw collectionNotFound(collection);
  return page.count ? { json, n, seq, total: Number(part.total) } : { json, n, seq };
}

/**
 * A filtered page. When the filter's top level holds an equality, a range or a prefix on a field with a
 * sort index (filter-indexes.ts), only the rows of that index's range are read and tested, the
 * collection found by its id, so that a collection gone since it was remembered (its seq null) is looked
 * up again. Otherwise every row of the collection is tested. The first filter on such a field of a
 * collection large enough, none of whose fields has an index, makes the index of the first (as the
 * first page ordered by a field makes its); the field the page is ordered by comes first.
 */
async function filteredPage(source: PageSource, accountId: number, collection: string, page: LivePage, filter: Filter): Promise<RowsPage> {
  const fields = fieldsInOrder(filter, page.order);
  if (fields.length === 0) return queryPage(source, byName(accountId, collection), collection, page);
  const pair = pairAsked(source, fields, page);
  const known = source.knownIndexes.get(accountId, collection);
  if (known && pair) {
    const paired = await pairedPage(source, known, page, pair);
    if (paired) return paired;
  }
  // A pair asked for and not known to be there: looked up, and made if it may be.
  const knownIndex = known && !(pair && wantsPair(source, known.sorted, pair)) && inIndex(known.sorted, fields);
  const read = knownIndex && (await pageInIndex(source, known, collection, page, knownIndex));
  if (read) return read;
  const looked = await lookUpIndex(
    source,
    accountId,
    collection,
    fields.map(({ field }) => field),
    pair?.fields,
  );
  const paired = pair && (await pairedPage(source, looked, page, pair));
  if (paired) return paired;
  const index = inIndex(looked.sorted, fields);
  const indexed = index && (await pageInIndex(source, looked, collection, page, index));
  return indexed || queryPage(source, byName(accountId, collection), collection, page);
}

/**
 * What a page reads from a pair's slot (../engine/sorted.ts): its `fields` [F, G], and `prefix`, its keys'
 * prefix of the value F equals. A page's filter is then one equality on F alone (a grant's rule `owner ==
 * sub`, with no filter of the caller's beside it), of a value whose prefix holds exactly the values equal
 * to it (PageSource.pairPrefix), and its order one field G (then id) with neither a count nor versions:
 * the rows it keeps are then one range of the pair's keys, in the page's order, none to test.
 */
type PairAsk = { fields: readonly [string, string]; prefix: string };

/** The pair a page can be read from whole (PairAsk), or undefined. */
function pairAsked(source: PageSource, fields: readonly IndexedField[], page: LivePage): PairAsk | undefined {
  const [key] = page.order;
  if (page.order.length !== 1 || page.count || page.versions || key.related || key.field === 'id' || key.field === SCORE) return undefined;
  const equal = fields.find(({ field, bounds }) => field !== key.field && oneValue(bounds));
  if (!equal?.whole || equal.bounds.conditions.length !== 1) return undefined;
  const [condition] = equal.bounds.conditions;
  if (condition.op !== '$eq') return undefined;
  const prefix = source.pairPrefix(condition.operand);
  return prefix === undefined ? undefined : { fields: [equal.field, key.field], prefix };
}

/** Whether a collection with the slots `sorted` lacks the pair `pair` and may have one more slot. */
const wantsPair = (source: PageSource, sorted: readonly SortedEntry[], { fields }: PairAsk) =>
  pairSlot(sorted, fields[0], fields[1]) < 0 && sorted.length < source.sortIndexes.max;

/**
 * The page from the pair's slot, the keys of its prefix alone: read as a page of one field's index is
 * (sortedPage, pageAfter), in either direction, after a cursor's place or from an offset, the rows
 * missing the order's field (or null) last. Undefined when the collection has no such slot, is gone, or
 * the order is not exact (a string as long as a key is cut at, on PostgreSQL).
 */
async function pairedPage(
  source: PageSource,
  { id, sorted, expiring }: KnownCollection,
  page: LivePage,
  { fields, prefix }: PairAsk,
): Promise<RowsPage | undefined> {
  const slot = pairSlot(sorted, fields[0], fields[1]);
  if (slot < 0) return undefined;
  const index: SortIndex = { source, collectionId: id, expiring, slot, order: page.order[0].direction, now: page.now, prefix };
  const { json, n, seq, exact } = page.after ? await pageAfter(index, page.after, page.limit) : await sortedPage(index, page);
  return seq !== null && exact ? { json, n, seq } : undefined;
}

/**
 * A filtered page of the collection `known` (its id and sort indexes as last seen) read only while its row
 * in `collections` meets `guard`: a filter bound to what was last seen of the collection (a `$match` or
 * `$some` read in the page's own statement: ../relations/bound.ts, boundAlone), which the guard says is
 * still so. Through the sort index of a field of the filter's top level where the collection has one, else
 * its rows in the page's order, each tested. Undefined when the guard does not hold (or the collection is
 * gone): then the page is for its caller to read otherwise.
 */
export async function guardedPage(
  source: PageSource,
  known: { id: number; sorted: readonly SortedEntry[] },
  collection: string,
  page: LivePage,
  guard: Sql,
): Promise<RowsPage | undefined> {
  if (!page.filter || page.scored) return undefined;
  const index = inIndex(known.sorted, fieldsInOrder(page.filter, page.order));
  if (index) return pageInIndex(source, known, collection, page, index, guard);
  return pageIfThere(await queryPart(source, byId(known.id, guard), page), collection, page);
}

/** The filter's indexed fields (indexedFields), the field the page is ordered by first. */
function fieldsInOrder(filter: Filter, [key]: readonly SortKey[]): IndexedField[] {
  const found = indexedFields(filter);
  return [...found.filter(({ field }) => field === key.field), ...found.filter(({ field }) => field !== key.field)];
}

/**
 * A filtered page read through `index`, the sort index of a field of its filter (inIndex). Ordered by
 * that field alone, or by id under an equality (no count, cursor or versions), it reads the index's
 * range in the page's order and stops once the page is full; otherwise it sorts the rows of the range
 * whole. Undefined when the collection of that id is gone (or its guard does not hold).
 */
async function pageInIndex(
  source: PageSource,
  { id, sorted }: { id: number; sorted: readonly SortedEntry[] },
  collection: string,
  page: LivePage,
  index: InIndex,
  guard?: Sql,
): Promise<RowsPage | undefined> {
  if (!page.filter) return undefined;
  const [key] = page.order;
  // An equality's keys are of one value, in the order of their rows' ids.
  const inOrder = !key.related && (index.field === key.field || (key.field === 'id' && oneValue(index.bounds)));
  if (page.order.length === 1 && inOrder && !page.after && !page.count && !page.versions) {
    // Every key of the range a match: no row needs testing, and the page reads no more than its offset
    // and limit, as an indexed page does.
    const exact = keepsExactly(source, index);
    const bounds = source.keyBoundsSql(index.bounds);
    const filterSql = exact ? raw('true') : source.filterSql(page.filter);
    const keys = { collectionId: id, slot: index.slot, order: key.direction, bounds, guard };
    const statement = source.filteredSortedPage(keys, filterSql, page.limit, page.offset, page.now);
    const [part] = await source.read<PagePart>(statement.sql, statement.params, exact ? 'scan' : 'once');
    const read = joinParts([part]);
    if (read.seq === null) return undefined;
    // Not in exact order (PostgreSQL, strings as long as a key is cut at): the range sorted whole.
    if (read.exact) return { json: read.json, n: read.n, seq: read.seq };
  } else {
    const walked = await walkedPage(source, { id, sorted }, page, index, guard);
    if (walked) return walked;
  }
  return pageIfThere(await queryPart(source, byId(id, guard), page, index), collection, page);
}

/**
 * A filtered page ordered by a field with a sort index, whose filter's index range (`index`) is large,
 * holding as many keys as make a collection worth a sort index (SortIndexLimits.minRows): the keys of
 * the order's index read from its start, each key's row tested by the whole filter, no more than that
 * many (or the page's offset and limit); the page when they fill it, else undefined (the range is then
 * sorted whole). A rule such as `owner = sub` over a user's many rows keeps most of the collection,
 * whose first rows in the order are the page; the walk costs at most as many rows as the range it spares.
 */
async function walkedPage(
  source: PageSource,
  { id, sorted }: { id: number; sorted: readonly SortedEntry[] },
  page: LivePage,
  index: InIndex,
  guard: Sql | undefined,
): Promise<RowsPage | undefined> {
  const [key] = page.order;
  const slot = key.related ? -1 : sorted.indexOf(key.field);
  const plain = page.order.length === 1 && !page.after && !page.count && !page.versions;
  if (slot < 0 || !plain || !page.filter) return undefined;
  const large = source.sortIndexes.minRows;
  if (!(await isLarge(source, id, index, large))) return undefined;
  const statement = walkStatement(source, page.filter, key.direction, guard);
  const scan = Math.max(large, page.offset + page.limit);
  const params = statement.bind({ collectionId: id, slot, scan, limit: page.limit, offset: page.offset, now: page.now });
  // Bounded by the keys it reads, as an indexed page is: not a timed read.
  const [part] = await source.read<PagePart>(statement.sql, params, 'scan');
  const read = joinParts([part]);
  if (read.seq === null || !read.exact || read.n < page.limit) return undefined;
  return { json: read.json, n: read.n, seq: read.seq };
}

/** What a walk's statement binds anew for each page (walkStatement()). */
const WALK_HOLES = ['collectionId', 'slot', 'scan', 'limit', 'offset', 'now'] as const;
type Walk = Template<(typeof WALK_HOLES)[number]>;

/**
 * The walks' statements written, by the filter they test, then by source and order. A grant's rule is one
 * filter object for every page of one token under one version of the rules (Grant.scope, src/handlers/
 * grants.ts), so those pages share one text, which the statements' caches (sqlite/writer.ts,
 * postgres/statements.ts) find without writing or hashing it again. A filter's SQL is its own alone
 * (filterSql), and the rest of the text is the order's: a page's own values are the holes' bindings.
 */
const walks = new WeakMap<Filter, { source: PageSource; order: Direction; statement: Walk }[]>();

/** The statement of walkedPage() for `filter` in `order`, under `guard`: written once a filter and order, but for a guard. */
function walkStatement(source: PageSource, filter: Filter, order: Direction, guard: Sql | undefined): Walk {
  const write = () =>
    template(WALK_HOLES, (hole) => {
      // Descending, the rows missing the field come after the others (KeyRange).
      const present = raw(order === 'asc' ? 'true' : 'rank < 5');
      const keys = { collectionId: hole.collectionId, slot: hole.slot, order, bounds: present, scan: hole.scan, guard };
      return source.filteredSortedPage(keys, source.filterSql(filter), hole.limit, hole.offset, hole.now);
    });
  // A guard is one request's (guardedPage): its statement is for that page alone.
  if (guard) return write();
  let written = walks.get(filter);
  if (!written) {
    written = [];
    walks.set(filter, written);
  }
  const found = written.find((each) => each.source === source && each.order === order);
  if (found) return found.statement;
  const statement = write();
  written.push({ source, order, statement });
  return statement;
}

/**
 * Whether the range of `index` in the collection holds `large` keys or more: counted up to that many,
 * once a moment (KnownIndexes.largeRange) for each range, not once a page. A user's rows under a rule
 * (`owner = sub`) are one range for every page the user asks for.
 */
async function isLarge(source: PageSource, collectionId: number, index: InIndex, large: number): Promise<boolean> {
  const bounds = source.keyBoundsSql(index.bounds);
  const range = `${collectionId} ${index.slot} ${large} ${bounds.sql} ${JSON.stringify(bounds.params)}`;
  const known = source.knownIndexes.largeRange(range);
  if (known !== undefined) return known;
  const count = keyCountUpToSql(collectionId, index.slot, bounds, large);
  const [{ n }] = await source.read<{ n: number | string }>(count.sql, count.params, 'point');
  source.knownIndexes.countedRange(range, Number(n) >= large);
  return Number(n) >= large;
}

/**
 * Whether the range of `index` holds exactly the rows the filter keeps, none to test: the whole filter is
 * its conditions, and its keys hold their values whole (a string's key may be cut: `wholeStringKeys`).
 */
export const keepsExactly = (source: Pick<PageSource, 'wholeStringKeys'>, index: InIndex) =>
  index.whole && (index.bounds.rank !== 2 || source.wholeStringKeys);

/**
 * A page of the rows that match the page's filter, after its cursor's place, in its order of one key
 * or more, sorted whole, with their count when asked: one statement, so that the rows, the count and
 * the seq are of one snapshot; 404 when the collection does not exist (queryPart).
 */
async function queryPage(source: PageSource, ref: CollectionRef, collection: string, page: LivePage): Promise<RowsPage> {
  return wholeAnswer(await queryPart(source, ref, page), collection, page);
}

/** The page of a statement's one row, as wholeAnswer() has it; undefined when its collection (found by id) is gone or its guard does not hold. */
function pageIfThere(part: PagePart, collection: string, page: LivePage): RowsPage | undefined {
  return part.seq === null ? undefined : wholeAnswer(part, collection, page);
}

/**
 * The one row of queryPage()'s statement. A page after a place reads only the rows past it (a condition
 * on the sort keys and the id), so that the hundredth page of a walk costs no more than the first. With
 * `index`, the rows tested are those of its range only.
 */
async function queryPart(source: PageSource, ref: CollectionRef, page: LivePage, index?: InIndex): Promise<PagePart> {
  let where = page.filter && source.filterSql(page.filter);
  if (where && index) where = withinIndex(ref, index.slot, source.keyBoundsSql(index.bounds), where);
  const { sql: text, params } = source.orderedPage(ref, page, where);
  // A filter's SQL is made for one request; a page after a place, of the same keys, has the same text.
  // A page by id after a place is a range of the primary key: an index read, not timed.
  const byIdOrder = page.order.length === 1 && page.order[0].field === 'id' && !page.count;
  const [part] = await source.read<PagePart>(text, params, where ? 'once' : byIdOrder ? 'scan' : 'sort');
  return part;
}

/**
 * A page whose rows' relevance to the search at the top level of its filter is read beside them (the
 * dialect's scoresSql, joined), sorted whole as queryPage() sorts, by `_score` or by its order, its
 * rows' scores answered in its order, and the search, bound, that the rows' highlights are of.
 */
async function scoredPage(source: PageSource, ref: CollectionRef, collection: string, page: LivePage): Promise<RowsPage> {
  const search = rankedSearch(page.filter);
  if (!page.filter || !search) throw new Error('a scored page has a $search at the top level of its filter (readsRelevance)');
  // The rows joined with their scores are those the search finds: the rest of the filter, if any, tests them.
  const rest = without(page.filter, search);
  const where = holdsForEveryRow(rest) ? undefined : source.filterSql(rest);
  const { sql: text, params } = source.orderedPage(ref, page, where, source.scoresSql(search));
  const [part] = await source.read<PagePart>(text, params, 'once');
  const { json, n, seq } = joinParts([part]);
  if (seq === null) throw collectionNotFound(collection);
  const scores = JSON.parse(`[${part.scores ?? ''}]`) as number[];
  return page.count ? { json, n, seq, total: Number(part.total), scores, search } : { json, n, seq, scores, search };
}

/**
 * The page from the sort index of its field, made now if the collection is large enough and has none;
 * undefined when there is no index to read, or when its order would not be exact: then the collection
 * is sorted whole.
 */
async function indexedPage(
  source: PageSource,
  accountId: number,
  collection: string,
  page: LivePage,
  { field, direction }: SortKey,
): Promise<RowsPage | undefined> {
  const { knownIndexes } = source;
  const read = ({ id, expiring }: KnownCollection, slot: number) => {
    const index: SortIndex = { source, collectionId: id, expiring, slot, order: direction, now: page.now };
    return page.after ? pageAfter(index, page.after, page.limit) : sortedPage(index, page);
  };
  // A collection known to have the index: its page at once, unless the collection of that id is gone
  // (ids are never reused: the name may now be another collection's, or none).
  const known = knownIndexes.get(accountId, collection);
  const knownSlot = known?.sorted.indexOf(field) ?? -1;
  if (known && knownSlot >= 0) {
    const { json, n, seq, exact } = await read(known, knownSlot);
    if (seq !== null) return exact ? { json, n, seq } : undefined;
  }
  const index = await lookUpIndex(source, accountId, collection, [field]);
  const slot = index.sorted.indexOf(field);
  if (slot < 0) return undefined;
  const { json, n, seq, exact } = await read(index, slot);
  // No seq: the collection was deleted since it was looked up (and maybe made again): read by name.
  return seq !== null && exact ? { json, n, seq } : undefined;
}

/**
 * The collection's id and indexed fields, as the database has them now, and remembered: when it is large
 * enough, the slot of the pair `pair` (../engine/sorted.ts) is made now if it has none, else, when it has an
 * index of none of `fields`, the index of the first (unless it has as many as it may). 404 when the
 * collection does not exist.
 */
export async function lookUpIndex(
  source: PageSource,
  accountId: number,
  collection: string,
  fields: readonly string[],
  pair?: readonly [string, string],
): Promise<KnownCollection> {
  const { sortIndexes } = source;
  const [found] = await source.read<CollectionRow>(collectionSql, [accountId, collection], 'point');
  if (!found) throw collectionNotFound(collection);
  const sorted = JSON.parse(found.sorted) as SortedEntry[];
  const wanted =
    pair && pairSlot(sorted, pair[0], pair[1]) < 0 ? pair : !fields.some((field) => sorted.includes(field)) ? fields[0] : undefined;
  if (wanted !== undefined && Number(found.row_count) >= sortIndexes.minRows && sortIndexes.max > 0) {
    const slot = await source.makeSortIndex(accountId, collection, wanted, sortIndexes.max);
    if (slot === sorted.length) sorted.push(wanted);
  }
  const known = { id: Number(found.id), sorted, expiring: found.ttl_field !== null };
  source.knownIndexes.set(accountId, collection, known);
  return known;
}

/**
 * A page from the sort index in `slot`. An ascending page, and a descending one that ends before the
 * rows missing the field, is one statement. One that reaches them reads the rest from the missing
 * ones, in the same snapshot, so that a change made meanwhile never shows half.
 */
async function sortedPage(index: SortIndex, page: LivePage): Promise<Joined> {
  const { source, order } = index;
  const present = await firstPart(source.read, index, page);
  if (order === 'asc' || Number(present.n) === page.limit) return joinParts([present]);
  return source.snapshot((read) => restOfDescendingPage(read, index, page));
}

/**
 * A page of the rows after a place in the order of the sort index in `slot`: one statement, which
 * seeks the index to the place (../sql/pages.ts, sortedPages) and so reads no key before it. Not exact when
 * the index cannot find the place (then the page sorts whole).
 */
async function pageAfter(
  { source, collectionId, expiring, slot, order, now, prefix }: SortIndex,
  place: Position,
  limit: number,
): Promise<Joined> {
  const statement = source.sortedPageAfter({ id: collectionId, expiring }, slot, order, place, limit, now, prefix);
  // A place the index cannot find exactly: read as a page whose order is not exact, sorted whole.
  if (!statement) return { json: '[]', n: 0, seq: 0, exact: false };
  const [part] = await source.read<PagePart>(statement.sql, statement.params);
  return joinParts([part]);
}

/** A descending page that reaches past the rows that have the field, read in one snapshot. */
async function restOfDescendingPage(read: SnapshotRead, index: SortIndex, page: LivePage): Promise<Joined> {
  const present = await firstPart(read, index, page);
  if (Number(present.n) === page.limit) return joinParts([present]);
  // Past the present values: the missing ones start at the offset's remainder, 0 on this page's own.
  let offset = 0;
  if (Number(present.n) === 0) {
    const counted = presentCountSql(index.collectionId, index.slot, index.now, index.prefix);
    const [{ n }] = await read<{ n: number | string }>(counted.sql, counted.params);
    offset = page.offset - Number(n);
  }
  return joinParts([present, await readPart(read, index, 'missing', page.limit - Number(present.n), offset)]);
}

/** Where sortedPage() reads: the index of one collection's field, in the page's order, of the rows that live at `now`. */
interface SortIndex {
  source: PageSource;
  collectionId: number;
  /** Whether the collection had a time to live when last seen (KnownCollection): which statement reads it. */
  expiring: boolean;
  slot: number;
  order: Direction;
  now: number;
  /** Of a pair's slot, the prefix whose keys are read (../engine/sorted.ts). */
  prefix?: string;
}

/** A page's first part: all of it when ascending; descending, its rows that have the field. */
const firstPart = (read: SnapshotRead, index: SortIndex, page: LivePage) =>
  readPart(read, index, index.order === 'asc' ? 'all' : 'present', page.limit, page.offset);

/** The rows of `range` in the sort index, from `offset`, at most `limit`, as one part of a page. */
async function readPart(
  read: SnapshotRead,
  { source, collectionId, expiring, slot, order, now, prefix }: SortIndex,
  range: KeyRange,
  limit: number,
  offset: number,
) {
  const { sql, params } = source.sortedPage({ id: collectionId, expiring }, slot, order, range, limit, offset, now, prefix);
  const [part] = await read<PagePart>(sql, params);
  return part;
}

/**
 * A page made of its parts, in order (all read in one snapshot): its JSON text, the seq of that
 * snapshot (null when the collection is gone), and whether its order is exact.
 */
function joinParts(parts: PagePart[]): Joined {
  // No text for rows that are there: PostgreSQL found them longer than a page may be.
  if (parts.some((part) => part.json === null && Number(part.n) > 0)) throw pageTooLarge();
  const texts = parts.flatMap((part) => (part.json === null ? [] : [part.json]));
  const seq = partSeq(parts[0]);
  let n = 0;
  for (const part of parts) n += Number(part.n);
  return { json: `[${texts.join(',')}]`, n, seq, exact: parts[0].exact !== false };
}

/** A statement's seq as a number; null when the collection is gone. */
const partSeq = ({ seq }: Pick<PagePart, 'seq'>): number | null => (seq === null ? null : Number(seq));

/** Whether a filter holds for every row: an `$and` of nothing (what without() leaves of a search alone). */
const holdsForEveryRow = (filter: Filter): boolean => filter.kind === 'and' && filter.filters.every(holdsForEveryRow);
