// What the reads of pages and aggregates (../reads/pages.ts, ../reads/aggregates.ts) need of a dialect:
// how it runs a read (alone, timed, in a snapshot), the SQL it writes of a page, a filter, a search's
// scores and an aggregate, on the builders both share (../sql/pages.ts), and the sort indexes it keeps.
import type { AggregateQuery } from '../../query/aggregate.ts';
import type { Filter, JsonValue, SearchCondition } from '../../query/filter.ts';
import type { KnownIndexes, SortIndexLimits } from '../collections/sort-indexes.ts';
import type { Dialect, KeyBounds, SqlValue } from './dialect.ts';
import type { SortedEntry } from './sorted.ts';
import type { CollectionRef, LivePage, SortedPages, Statement } from './sql/pages.ts';
import type { KeysWithin } from './sql/reads.ts';
import type { JoinedRelation, RelatedRead } from './sql/related.ts';
import type { Sql } from './sql/template.ts';

/**
 * How a read is run: `point` for one row; `scan` for a page read through an index (by id, or a sort
 * index), which reads no more than its offset and limit (the default); `sort` for a page that sorts or
 * filters the collection, which may read all of it, and so is stopped past the query timeout
 * (config.ts, queryTimeoutMs); `once` for such a page whose SQL is made for one request (a filter's),
 * which is not worth preparing to keep; `related` for the rows related to a page (an expansion's statement,
 * ../reads/expand.ts, or a page read with a to-many's rows), read through an index as a page is but hundreds
 * of rows at a time: on SQLite connections of their own, so that pages and their expansions do not take
 * turns on one (docs/performance.md, "An expansion's statement on a connection of its own").
 */
type ReadKind = 'point' | 'scan' | 'sort' | 'once' | 'related';

/** Reads that all see one snapshot of the database. */
export type SnapshotRead = <T>(sql: string, params: SqlValue[]) => Promise<T[]>;

/** What a dialect gives the page reader (../reads/pages.ts). */
export interface PageSource extends SortedPages {
  /** Runs a read outside any transaction, as `kind` says (default `scan`). */
  read<T>(sql: string, params: SqlValue[], kind?: ReadKind): Promise<T[]>;
  /** Runs `work` with reads that all see one snapshot. */
  snapshot<T>(work: (read: SnapshotRead) => Promise<T>): Promise<T>;
  /**
   * One page of the account's collection, sorted whole, of the rows that live at `page.now` and `where`
   * keeps (all without it), and their count with `page.count`; its one row is a PagePart. With `scores`
   * (scoresSql()), of the rows it scores only, each with its `score`.
   */
  orderedPage(collection: CollectionRef, page: LivePage, where?: Sql, scores?: Sql): Statement;
  /**
   * One page of the account's collection sorted whole, as orderedPage() reads it without a filter, each
   * row with the rows of its relations `joined` (to-ones, then at most one to-many) set in as its member
   * EXPANDED by the same statement; its one row is a PagePart, `apart` true when the to-many's collection
   * has no sort index of its field. None in a dialect whose pages read them by a statement of their own,
   * as every page with other expansions does (../reads/expand.ts).
   */
  pageWithRelated?(collection: CollectionRef, page: LivePage, joined: readonly JoinedRelation[]): Statement;
  /**
   * The relevance of each row holding `search` (bound: bindSearch()), as a table of `collection_id`,
   * `row_id` and `score`, the higher the more relevant (docs/search.md, "Ranking").
   */
  scoresSql(search: SearchCondition): Sql;
  /** A filter as a condition on the columns of `rows` (the dialect's filter.ts). */
  filterSql(filter: Filter): Sql;
  /** The keys of a sort index within `bounds`, as a condition on the columns of `sort_keys` (the dialect's filter.ts). */
  keyBoundsSql(bounds: KeyBounds): Sql;
  /** The rows of a sort index's range, as a condition on `rows` (the Dialect's rangeRowsSql). */
  rangeRowsSql(collectionId: number, slot: number, bounds: Sql): Sql;
  /**
   * A page of the rows that live at `now` and `filter` keeps among those of `keys`, in their order, from
   * `offset`, at most `limit`; its one row is a PagePart. Each number may be a template's hole (template.ts).
   */
  filteredSortedPage(keys: KeysWithin, filter: Sql, limit: number | Sql, offset: number | Sql, now: number | Sql): Statement;
  /** The rows related to a page's, for one relation of the whole page (../reads/expand.ts); its rows are RelatedPart. */
  relatedRows(read: RelatedRead): Statement;
  /** Whether a sort index keys strings whole (SQLite), or cut (PostgreSQL: postgres/sql/collections.ts, POSTGRES_KEY_CHARS). */
  wholeStringKeys: boolean;
  /**
   * The prefix a pair's keys (../sorted.ts) hold for the value `operand` of its first field, or undefined
   * when no prefix holds exactly the values equal to it (pairPrefix there).
   */
  pairPrefix(operand: number | string | boolean): string | undefined;
  /** The slot of `field`'s sort index (a field's or a pair's) in the collection, made now if it has none; -1 when it holds `max` already. */
  makeSortIndex(accountId: number, name: string, field: SortedEntry, max: number): Promise<number>;
  sortIndexes: SortIndexLimits;
  knownIndexes: KnownIndexes;
}

/** A Dialect with the pages of rows it reads: what every operation of the Store is bound to (../store.ts). */
export type PagedDialect = Dialect & { pages: AggregateSource };

/** What a dialect gives the aggregates besides what it gives pages (../reads/aggregates.ts). */
export interface AggregateSource extends PageSource {
  /**
   * The statement of `query`'s aggregates over the collection's rows that live at `now` and `where` keeps
   * (all without it), at most `maxGroups` groups of them. Its rows are AggregatePart, in any order.
   */
  aggregateSql(collection: CollectionRef, query: AggregateQuery, where: Sql | undefined, maxGroups: number, now: number): Statement;
  /** A JSON text the statement answers, as its value (on PostgreSQL, its strings escaped as jsonb holds them, read back). */
  jsonOf(text: string): JsonValue;
  /** Whether a sort index's key of the string `text` holds it whole (always on SQLite; on PostgreSQL, a short one). */
  keyHoldsWhole(text: string): boolean;
}
