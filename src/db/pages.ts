// A page of a collection's rows (openapi.yaml, listRows), ordered by any top-level field of their JSON:
// within one JSON type numbers numerically, strings by code point and false < true; across types
// numbers < strings < booleans < objects and arrays (which tie with each other); rows where the field
// is missing or null come last in both directions; ties break by id in the same direction. Both
// dialects give the same order for the same data; each writes the SQL of it (sqlite/sql.ts,
// postgres/sql.ts), and this module reads pages through it, the same way on both.
//
// A page ordered by a field reads the collection's sort index for it (sort-indexes.ts), made now if the
// collection is large enough and has none; otherwise it sorts the whole collection. A page is one
// string made in the database (the rows' JSON texts joined), never an object per row, with the
// collection's latest event seq read in the same snapshot (openapi.yaml, Rowbase-Seq).
import type { Filter } from '../query/filter.ts';
import { collectionNotFound } from './collections.ts';
import type { SqlValue } from './dialect.ts';
import type { Sql } from './filter.ts';
import { type Json, pageTooLarge, type Row } from './rows.ts';
import type { KeyRange, KnownIndexes, SortIndexLimits } from './sort-indexes.ts';
import { collectionSql, pageRange, presentCountSql } from './sql.ts';

export type Direction = 'asc' | 'desc';

export interface Page {
  limit: number;
  offset: number;
  orderBy: string;
  order: Direction;
  /** Only the rows that match (src/query/filter.ts); all of them when absent. */
  filter?: Filter;
  /** Also count the rows that match, in the page's snapshot (RowsPage.total). */
  count?: boolean;
  /** Answer each row with its ETag (openapi.yaml, VersionedRow), sorted whole as a filtered page is. */
  versions?: boolean;
}

/**
 * A page of rows as JSON text, and `seq`, the collection's latest event seq as of the snapshot the rows
 * were read from: the rows are exactly what the events up to it made, so a feed resumed with
 * `since=seq` brings every later change and none the page already shows.
 */
export type RowsPage = { json: Json<Row[]>; seq: number; total?: number };

/** A statement and its bindings. */
export type Statement = { sql: string; params: SqlValue[] };

/**
 * How a read is run: `point` for one row, `scan` for a page (the default), `once` for a page whose SQL
 * is made for one request (a filter's), which is not worth preparing to keep.
 */
export type ReadKind = 'point' | 'scan' | 'once';

/** Reads that all see one snapshot of the database. */
export type SnapshotRead = <T>(sql: string, params: SqlValue[]) => Promise<T[]>;

/** What a dialect gives the page reader. */
export interface PageSource {
  /** Runs a read outside any transaction: `point` for one row, `scan` for a page (default). */
  read<T>(sql: string, params: SqlValue[], kind?: ReadKind): Promise<T[]>;
  /** Runs `work` with reads that all see one snapshot. */
  snapshot<T>(work: (read: SnapshotRead) => Promise<T>): Promise<T>;
  /**
   * One page of the account's collection, sorted whole, of the rows `where` keeps (all without it), and
   * their count with `page.count`; its one row is a PagePart.
   */
  orderedPage(accountId: number, name: string, page: Page, where?: Sql): Statement;
  /** A filter as a condition on the columns of `rows` (the dialect's filter.ts). */
  filterSql(filter: Filter): Sql;
  /** The rows of `range` in the sort index in `slot`, from `offset`, at most `limit`; its one row is a PagePart. */
  sortedPage(collectionId: number, slot: number, order: Direction, range: KeyRange, limit: number, offset: number): Statement;
  /** The slot of `field`'s sort index in the collection, made now if it has none; -1 when it holds `max` already. */
  makeSortIndex(accountId: number, name: string, field: string, max: number): Promise<number>;
  sortIndexes: SortIndexLimits;
  knownIndexes: KnownIndexes;
}

/**
 * What a page's statement answers, in one row: how many rows, their JSON texts joined by commas (null
 * for none; on PostgreSQL also null when they weigh more than a page may), the collection's latest event
 * seq in the same snapshot (null when the collection is gone), and on PostgreSQL whether the sort
 * index's order is exact (postgres/sql.ts, POSTGRES_KEY_CHARS).
 */
type PagePart = { n: number | string; json: string | null; seq: number | string | null; exact?: boolean; total?: number | string };
type CollectionRow = { id: number | string; row_count: number | string; sorted: string };
type Joined = { json: Json<Row[]>; seq: number | null; exact: boolean };

/** One page of rows; 404 when the collection does not exist. */
export async function readPage(source: PageSource, accountId: number, collection: string, page: Page): Promise<RowsPage> {
  if (page.filter || page.count || page.versions) return filteredPage(source, accountId, collection, page);
  if (page.orderBy !== 'id') {
    const indexed = await indexedPage(source, accountId, collection, page);
    if (indexed) return indexed;
  }
  const { sql, params } = source.orderedPage(accountId, collection, page);
  const [part] = await source.read<PagePart>(sql, params);
  const { json, seq } = joinParts([part]);
  if (seq === null) throw collectionNotFound(collection);
  return { json, seq };
}

/**
 * A page of the rows that match the page's filter, sorted whole, with their count when asked: one
 * statement, so that the rows, the count and the seq are of one snapshot.
 */
async function filteredPage(source: PageSource, accountId: number, collection: string, page: Page): Promise<RowsPage> {
  const where = page.filter && source.filterSql(page.filter);
  const { sql, params } = source.orderedPage(accountId, collection, page, where);
  const [part] = await source.read<PagePart>(sql, params, 'once');
  const { json, seq } = joinParts([part]);
  if (seq === null) throw collectionNotFound(collection);
  return page.count ? { json, seq, total: Number(part.total) } : { json, seq };
}

/**
 * `json`, a page's rows, with only the fields `fields` of each, and its id: a row without one of them
 * is answered without it.
 */
export function selectFields(json: Json<Row[]>, fields: readonly string[], versions = false): Json<Row[]> {
  // Object.fromEntries defines each field as its own, `__proto__` too, where assigning it would not.
  const select = (row: Record<string, unknown>) =>
    Object.fromEntries([['id', row.id], ...fields.filter((field) => Object.hasOwn(row, field)).map((field) => [field, row[field]])]);
  if (versions) {
    const rows = JSON.parse(json) as { etag: string; row: Record<string, unknown> }[];
    return JSON.stringify(rows.map(({ etag, row }) => ({ etag, row: select(row) })));
  }
  return JSON.stringify((JSON.parse(json) as Record<string, unknown>[]).map(select));
}

/**
 * The page from the sort index of its field, made now if the collection is large enough and has none;
 * undefined when there is no index to read, or when its order would not be exact: then the collection
 * is sorted whole.
 */
async function indexedPage(source: PageSource, accountId: number, collection: string, page: Page): Promise<RowsPage | undefined> {
  const { sortIndexes, knownIndexes } = source;
  // A collection known to have the index: its page at once, unless the collection of that id is gone
  // (ids are never reused: the name may now be another collection's, or none).
  const known = knownIndexes.get(accountId, collection);
  const knownSlot = known?.sorted.indexOf(page.orderBy) ?? -1;
  if (known && knownSlot >= 0) {
    const { json, seq, exact } = await sortedPage(source, known.id, knownSlot, page);
    if (seq !== null) return exact ? { json, seq } : undefined;
  }
  const [found] = await source.read<CollectionRow>(collectionSql, [accountId, collection], 'point');
  if (!found) throw collectionNotFound(collection);
  const sorted = JSON.parse(found.sorted) as string[];
  let slot = sorted.indexOf(page.orderBy);
  if (slot < 0 && Number(found.row_count) >= sortIndexes.minRows && sortIndexes.max > 0) {
    slot = await source.makeSortIndex(accountId, collection, page.orderBy, sortIndexes.max);
    if (slot === sorted.length) sorted.push(page.orderBy);
  }
  knownIndexes.set(accountId, collection, Number(found.id), sorted);
  if (slot < 0) return undefined;
  const { json, seq, exact } = await sortedPage(source, Number(found.id), slot, page);
  // No seq: the collection was deleted since it was looked up (and maybe made again): read by name.
  return seq !== null && exact ? { json, seq } : undefined;
}

/**
 * A page from the sort index in `slot`. An ascending page, and a descending one that ends before the
 * rows missing the field, is one statement. One that reaches them reads the rest from the missing
 * ones, in the same snapshot, so that a change made meanwhile never shows half.
 */
async function sortedPage(source: PageSource, collectionId: number, slot: number, page: Page): Promise<Joined> {
  const index: SortIndex = { source, collectionId, slot, order: page.order };
  const present = await firstPart(source.read, index, page);
  if (page.order === 'asc' || Number(present.n) === page.limit) return joinParts([present]);
  return source.snapshot((read) => restOfDescendingPage(read, index, page));
}

/** A descending page that reaches past the rows that have the field, read in one snapshot. */
async function restOfDescendingPage(read: SnapshotRead, index: SortIndex, page: Page): Promise<Joined> {
  const present = await firstPart(read, index, page);
  if (Number(present.n) === page.limit) return joinParts([present]);
  // Past the present values: the missing ones start at the offset's remainder, 0 on this page's own.
  let offset = 0;
  if (Number(present.n) === 0) {
    const [{ n }] = await read<{ n: number | string }>(presentCountSql, [index.collectionId, index.slot]);
    offset = page.offset - Number(n);
  }
  return joinParts([present, await readPart(read, index, 'missing', page.limit - Number(present.n), offset)]);
}

/** Where sortedPage() reads: the index of one collection's field, in the page's order. */
interface SortIndex {
  source: PageSource;
  collectionId: number;
  slot: number;
  order: Direction;
}

/** A page's first part: all of it when ascending; descending, its rows that have the field. */
const firstPart = (read: SnapshotRead, index: SortIndex, page: Page) =>
  readPart(read, index, page.order === 'asc' ? 'all' : 'present', page.limit, page.offset);

/** The rows of `range` in the sort index, from `offset`, at most `limit`, as one part of a page. */
async function readPart(
  read: SnapshotRead,
  { source, collectionId, slot, order }: SortIndex,
  range: KeyRange,
  limit: number,
  offset: number,
) {
  const { sql, params } = source.sortedPage(collectionId, slot, order, range, limit, offset);
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
  const seq = parts[0].seq === null ? null : Number(parts[0].seq);
  return { json: `[${texts.join(',')}]`, seq, exact: parts[0].exact !== false };
}

/** The rows of the account's collection (`?` its account, `?` its name), as both dialects find them for a page. */
export const inCollection = 'collection_id = (select id from collections where account_id = ? and name = ?)';

/**
 * A page sorted whole, as both dialects make it, in one row `{ n, json, seq }`: `rows` selects `id` and
 * `data` of the rows inCollection, and what `order` reads (with `bindings`); they are ordered, cut to the
 * page and joined by `pageJson`; `seq` is read by the same statement, null when there is no such
 * collection. Its text depends only on the direction and how the field is read, so a prepared statement
 * serves every field name.
 */
export function wholePage(
  pageJson: (order: string) => string,
  { rows, order, bindings }: { rows: string; order: string; bindings: SqlValue[] },
  accountId: number,
  name: string,
  page: Page,
  where?: Sql,
): Statement {
  // `rows` ends with its condition on the collection: the filter's is added to it, and to the count's.
  const filtered = where ? ` and (${where.sql})` : '';
  const filterParams = where?.params ?? [];
  const total = page.count ? `, (select count(*) from rows where ${inCollection}${filtered}) as total` : '';
  return {
    sql: `select count(*) as n, ${pageJson(order)} as json,
        (select last_seq from collections where account_id = ? and name = ?) as seq${total}
      from (select * from (${rows}${filtered}) r order by ${order} ${pageRange}) r`,
    params: [
      accountId,
      name,
      ...(page.count ? [accountId, name, ...filterParams] : []),
      ...bindings,
      accountId,
      name,
      ...filterParams,
      page.limit,
      page.offset,
    ],
  };
}

/**
 * A dialect's PageSource.sortedPage from its statement `text` for each direction and range: each text
 * made once, since statements are kept by their text. Every such text takes the collection's id (for
 * its seq), the collection's id and the slot (for its keys), the limit and offset, then the collection's
 * id (for its rows).
 */
export function sortedPages(text: (dir: Direction, range: KeyRange) => string): PageSource['sortedPage'] {
  const texts = {
    asc: { all: text('asc', 'all'), present: text('asc', 'present'), missing: text('asc', 'missing') },
    desc: { all: text('desc', 'all'), present: text('desc', 'present'), missing: text('desc', 'missing') },
  };
  return (collectionId, slot, order, range, limit, offset) => ({
    sql: texts[order][range],
    params: [collectionId, collectionId, slot, limit, offset, collectionId],
  });
}
