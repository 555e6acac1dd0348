// The SQL of a page of a collection's rows both dialects build alike (src/db/reads/pages.ts reads it): a
// page sorted whole (wholePage), the statements that read a sort index's keys (sortedPages), and how a
// page finds its collection. Each dialect gives what differs: how it joins a page's JSON (PageJson), reads
// a field for an order (FieldOrder) and binds a sort key (KeyBinding): sqlite/sql/reads.ts, postgres/sql/reads.ts.
import type { Position } from '../../../query/cursor.ts';
import { type Direction, ordersRelated, SCORE, type SortKey } from '../../../query/order.ts';
import type { Page } from '../../../query/page.ts';
import type { KeyValue } from '../../../query/sort-keys.ts';
import type { SqlValue } from '../dialect.ts';
import { keyOrder } from './collections.ts';
import { liveRowSql } from './expiry.ts';
import { pageColumns } from './reads.ts';
import { allOf, raw, type Sql, sql } from './template.ts';

/**
 * Which keys of a sort index a page reads: `all` of them (ascending, where missing and null come last
 * in the index too), or for a descending page first the `present` values, then the `missing` ones.
 */
export type KeyRange = 'all' | 'present' | 'missing';

/** The condition on `rank` of each range. */
const ranks: Record<KeyRange, string> = { all: '', present: 'and rank < 5', missing: 'and rank = 5' };

/**
 * The collection a page reads through a sort index: its id, and whether it had a time to live when last seen
 * (KnownCollection, ../../collections/sort-indexes.ts), by which a dialect may write the statement for it.
 * Either statement reads only the rows that live.
 */
type IndexedCollection = { id: number; expiring: boolean };

/**
 * The statements that read a page of a sort index's keys (sortedPages()). With `prefix`, the index in
 * `slot` is a pair's (../sorted.ts), and the keys read are those within that prefix alone.
 */
export interface SortedPages {
  /** The rows of `range` in the sort index in `slot` that live at `now`, from `offset`, at most `limit`; its one row is a PagePart. */
  sortedPage(
    collection: IndexedCollection,
    slot: number,
    order: Direction,
    range: KeyRange,
    limit: number,
    offset: number,
    now: number,
    prefix?: string,
  ): Statement;
  /**
   * The rows after `place` in the order of the sort index in `slot` that live at `now`, at most `limit`,
   * missing ones included; its one row is a PagePart. Undefined when the index cannot find the place
   * exactly (on PostgreSQL, a string as long as a key is cut at): then the page sorts whole.
   */
  sortedPageAfter(
    collection: IndexedCollection,
    slot: number,
    order: Direction,
    place: Position,
    limit: number,
    now: number,
    prefix?: string,
  ): Statement | undefined;
}

/** The direction ties between equal keys break by id in: the last key's. */
const tieDirection = (order: readonly SortKey[]) => order[order.length - 1].direction;

/** A statement and its bindings. */
export type Statement = { sql: string; params: SqlValue[] };

/**
 * How a dialect cuts rows in a page's order to the page (every page's statement: wholePage, sortedPages,
 * a filtered page's): `sorted`, a select in that order with no LIMIT, cut to `limit` rows past `offset`
 * (SQL of their placeholders, placed in that order after `sorted`'s; no `offset`: none skipped).
 * `planned` is the count of rows the statement is written for (plannedRows()).
 */
export interface PageCut {
  /**
   * The count of rows a page's statement is written for when the page reads at most `rows` (its offset
   * and limit): one of a fixed list of the dialect's own (PostgreSQL's: its planner's estimate of a
   * page), never the client's number; undefined where the statement's text does not depend on it (SQLite),
   * or past the list's last.
   */
  plannedRows(rows: number): number | undefined;
  cut(sorted: string, limit: string, offset: string | undefined, planned: number | undefined): string;
}

/** `sorted` (SQL and its bindings) cut by `dialect` to `limit` rows past `offset` (PageCut): numbers, or a template's holes (template.ts). */
export function cutSql(dialect: PageCut, sorted: Sql, limit: number | Sql, offset: number | Sql): Sql {
  // A template's holes are bound anew at each use: its text is written for no count of rows.
  const planned = typeof limit === 'number' && typeof offset === 'number' ? dialect.plannedRows(offset + limit) : undefined;
  const [limitSql, offsetSql] = [sql`${limit}`, sql`${offset}`];
  return {
    sql: dialect.cut(sorted.sql, limitSql.sql, offsetSql.sql, planned),
    params: [...sorted.params, ...limitSql.params, ...offsetSql.params],
  };
}

/**
 * A filter's condition `filter` on the rows whose keys in the sort index in `slot` of the collection are
 * within `bounds` (the dialect's keyBoundsSql): the index finds them, the filter tests them.
 */
export const withinIndex = (collection: CollectionRef, slot: number, bounds: Sql, filter: Sql): Sql =>
  allOf([sql`rows.id in (select row_id from sort_keys where collection_id = ${collection.id} and slot = ${slot} and ${bounds})`, filter]);

/** A collection as a page finds it: SQL of its id, and of its latest event seq (null when there is no such collection). */
export interface CollectionRef {
  id: Sql;
  lastSeq: Sql;
}

/**
 * A page as read at an instant: its rows those that live at `now` (ms since the epoch, the read's
 * expiryNow(): docs/expiry.md), bound to each statement of it.
 */
export type LivePage = Page & { now: number };

/** The account's collection by name, as a page finds it. */
export const byName = (accountId: number, name: string): CollectionRef => ({
  id: sql`(select id from collections where account_id = ${accountId} and name = ${name})`,
  lastSeq: sql`(select last_seq from collections where account_id = ${accountId} and name = ${name})`,
});

/**
 * A collection by its id, as a page read through a sort index finds it: its seq null once it is gone, or
 * with `guard` (a condition on its row in `collections`) once that no longer holds.
 */
export const byId = (id: number, guard?: Sql): CollectionRef => ({ id: sql`${id}`, lastSeq: seqOf(id, guard) });

/** The latest event seq of the collection `id`, null when it is gone or its row does not meet `guard` (byId). */
export const seqOf = (id: number | Sql, guard?: Sql): Sql =>
  guard ? sql`(select last_seq from collections where id = ${id} and ${guard})` : sql`(select last_seq from collections where id = ${id})`;

/** One column of a page's order beside the place's value of it (afterPlace()). */
interface PlacedColumn {
  column: OrderColumn;
  at?: Sql;
}

/**
 * How a dialect orders a page sorted whole by a key other than the id: the `columns` that read its field
 * (after a comma, named by `index`, its place in the order), their `bindings`, and its columns of the
 * order, each beside the value at the page's place (`at`, the place's key of the field, when the page
 * comes after one). A key through a relation (SortKey.related) reads the field of the related row of the
 * page's `collection`'s account, found by its id, that lives at `now` (relatedRowSql).
 */
export type FieldOrder = (
  key: SortKey,
  index: number,
  at: KeyValue | null | undefined,
  collection: CollectionRef,
  now: number,
) => { columns: string; bindings: SqlValue[]; order: PlacedColumn[] };

/**
 * A page sorted whole, as both dialects make it, in one row `{ n, json, seq }`: the rows of the
 * collection with their `id`, `data` and what `byField` reads of each field of the order are kept by
 * `where` (the filter's) and by the place the page comes after (afterPlace()), ordered by those fields
 * and then by id, cut to the page and joined by `pageJson`; `seq` is read by the same statement, null
 * when there is no such collection. Its text depends only on the directions, how the fields are read
 * and how the collection is found, so a prepared statement serves every field name. Its rows are cut to
 * the page as the dialect cuts them (PageCut). With `scores`, the rows are those it scores, each with its
 * `score` (an order's `_score`), and `{ scores }` their scores, joined by `pageJson` too. With `withRelated`,
 * joined by it instead, each row with its related rows (JoinedJson).
 */
export function wholePage(
  pageJson: PageJson,
  byField: FieldOrder,
  collection: CollectionRef,
  page: LivePage,
  where?: Sql,
  scores?: Sql,
  withRelated?: JoinedJson,
): Statement {
  let columns = pageColumns(page.versions);
  const bindings: SqlValue[] = [];
  if (withRelated) {
    columns += withRelated.columns.sql;
    bindings.push(...withRelated.columns.params);
  }
  const placed: PlacedColumn[] = [];
  const afterId = page.after && sql`${page.after.id}`;
  page.order.forEach(({ field, direction }, index) => {
    if (field === 'id') {
      placed.push({ column: { sql: 'id', direction }, at: afterId });
      return;
    }
    if (field === SCORE) {
      // The most relevant first, ties by id ascending (docs/search.md, "Ranking").
      const at = page.after?.values[index]?.scalar;
      placed.push({ column: { sql: 'score', direction: 'desc' }, at: typeof at === 'number' ? sql`${at}` : undefined });
      placed.push({ column: { sql: 'id', direction: 'asc' }, at: afterId });
      return;
    }
    const read = byField(page.order[index], index, page.after?.values[index], collection, page.now);
    columns += read.columns;
    bindings.push(...read.bindings);
    placed.push(...read.order);
  });
  // Ties break by id.
  if (!page.order.some((key) => key.field === 'id' || key.field === SCORE))
    placed.push({ column: { sql: 'id', direction: tieDirection(page.order) }, at: afterId });
  const order = placed.map(({ column }) => `${column.sql} ${column.direction}`).join(',\n        ');
  const after = page.after && afterPlace(placed);
  const filtered = where ? sql` and (${where})` : raw('');
  // A scored page's rows, and their count, are those of its scores: `where` tests them. The scores are
  // read first, then each one's row by its key, the collection's and the row's, so that no plan looks a row's
  // score up by its id alone: a CROSS JOIN, which SQLite never reorders, where its planner, not knowing the
  // best scores' count (bound), read the collection's every row and looked each one's score up
  // (docs/search.md, "The cost of a ranked page").
  const [from, joined] = scores
    ? [
        sql`${bestScores(scores, page, where, liveScores(collection, page.now))} scored cross join rows`,
        raw(' and scored.collection_id = rows.collection_id and scored.row_id = rows.id'),
      ]
    : [raw('rows'), raw('')];
  const live = sql` and ${liveRowSql('rows', page.now)}`;
  const total = page.count
    ? sql`, (select count(*) from ${from} where rows.collection_id = ${collection.id}${joined}${live}${filtered}) as total`
    : raw('');
  const scored = scores ? raw(', scored.score') : raw('');
  const fence = raw(ordersRelated(page.order) ? ` ${pageJson.fence}` : '');
  const rows = sql`select ${{ sql: columns, params: bindings }}${scored} from ${from} where rows.collection_id = ${collection.id}${joined}${live}${filtered}${fence}`;
  const scoresJson = scores ? raw(`, ${pageJson.scores(order)} as scores`) : raw('');
  const json = withRelated ? withRelated.rows(order) : raw(pageJson.rows(order));
  const sorted = sql`select * from (${rows}) r${after ? sql` where ${after}` : raw('')} order by ${raw(order)}`;
  return sql`select count(*) as n, ${json} as json${scoresJson},
        ${collection.lastSeq} as seq${total}${withRelated ? withRelatedColumns(withRelated, page) : raw('')}
      from (${cutSql(pageJson, sorted, page.limit, page.offset)}) r${withRelated ? withRelated.joins : raw('')}`;
}

/**
 * The columns a page with its related rows answers beside PagePart's: `last_id`, its last row's id (its
 * order is by id alone), and `apart` (JoinedJson).
 */
const withRelatedColumns = (withRelated: JoinedJson, page: LivePage): Sql => {
  const last = raw(`, ${page.order[0]?.direction === 'desc' ? 'min' : 'max'}(r.id) as last_id`);
  return withRelated.apart ? sql`${last}, ${withRelated.apart} as apart` : last;
};

/**
 * A search's `scores`, cut to the page's when nothing else tests its rows and the page is in their order
 * without a count: the best `offset + limit` past the page's place of the rows that live (`live`, a
 * condition on the scores `s`: liveScores()), found before any row is read, so that a search matching many
 * rows sorts their scores, not the rows.
 */
function bestScores(scores: Sql, page: Page, where: Sql | undefined, live: Sql): Sql {
  const [key] = page.order;
  if (where || page.count || page.order.length !== 1 || key.field !== SCORE) return scores;
  const best = (past: Sql) =>
    sql`(select collection_id, row_id, score from ${scores} s where ${live}${past} order by score desc, row_id asc limit +${page.offset + page.limit})`;
  if (!page.after) return best(raw(''));
  const at = page.after.values[0]?.scalar;
  return typeof at === 'number' ? best(sql` and (score < ${at} or (score = ${at} and row_id > ${page.after.id}))`) : scores;
}

/**
 * Whether a search's score `s` is of a row that lives at `now` (docs/expiry.md), so that a page cut to its
 * best scores is full of rows that live: of a collection without a time to live, every one (its row read
 * once a statement); else each one's row looked up by its key, as liveKeyText() does a sort key's (and
 * why as a scalar subquery).
 */
const liveScores = (collection: CollectionRef, now: number): Sql =>
  sql`((select ttl_field from collections where id = ${collection.id}) is null
        or coalesce((select ${liveRowSql('x', now)} from rows x where x.collection_id = s.collection_id and x.id = s.row_id), true))`;

/**
 * A page's rows joined with each one's related rows set in (PageSource.pageWithRelated): the
 * `columns` the page's rows read beside `id` and `data` (after a comma: the relation fields' values),
 * `joins`, what the page's rows, cut to the page (`r`), are joined with (each beginning with its join),
 * `rows`, the whole JSON array of the rows in `order`, each with its member EXPANDED (null when there
 * are none), as PagePart's `json`.
 */
export interface JoinedJson {
  columns: Sql;
  joins: Sql;
  rows(order: string): Sql;
  /** A condition true when a to-many relation's rows are for a statement of their own (PagePart's `apart`). */
  apart?: Sql;
}

/**
 * How a dialect cuts a page's rows sorted whole to the page (PageCut) and joins them, each in `order` (SQL
 * of the page's order): `rows`, their JSON texts, as PagePart's `json`; `scores`, a scored page's rows'
 * `score` as PagePart's `scores`.
 * `fence` ends the subquery of the rows of a page ordered through a relation, so that the database runs
 * it as it is: merged into the query that sorts it, each use of a related row's field in the order would
 * look the related row up again.
 */
export interface PageJson extends PageCut {
  rows(order: string): string;
  scores(order: string): string;
  fence: string;
}

/** One column of a page's order, as SQL on the columns `rows` selects, and its direction. */
interface OrderColumn {
  sql: string;
  direction: Direction;
}

/**
 * The rows strictly after a place in the order of `columns` (the last of them the id), each column
 * beside the place's value of it (`at`, SQL with its bindings; undefined where every row that ties on
 * the columns before holds null, as an object's or a missing field's value does): later in the first
 * column, or equal in it and later in the rest. Nested, so that it grows with the columns, not their
 * square.
 */
function afterPlace(columns: readonly PlacedColumn[]): Sql {
  let condition: Sql | undefined;
  for (let index = columns.length - 1; index >= 0; index--) {
    const { column, at } = columns[index];
    if (!at) continue;
    const later = sql`${raw(column.sql)} ${raw(column.direction === 'asc' ? '>' : '<')} ${at}`;
    condition = condition ? sql`${later} or (${raw(column.sql)} = ${at} and (${condition}))` : later;
  }
  return condition ?? raw('true');
}

/**
 * How a dialect writes the statements of sortedPages: `param(n)`, the placeholder of a statement's n-th
 * binding, numbered so that a binding used in several places is bound once; `sql(placeholder)`, a sort
 * key's number or string where a statement compares it with the keys; `value`, its binding, or
 * undefined when no key can be compared with it exactly; and how it cuts the keys to the page (PageCut).
 */
export interface KeyBinding extends PageCut {
  param(n: number): string;
  sql(placeholder: string): string;
  value(scalar: number | string): SqlValue | undefined;
}

/**
 * The numbers of the bindings of sortedPages' statements: a page of a range binds the collection's id,
 * the slot, the limit, the expiry now its keys' rows live at (LivePage) and the offset; a page after a
 * place binds the collection's id, the slot, the limit, the expiry now, the place's rank, its row's id
 * and, when the rank has one (a number, string or boolean), its value, last, so that a statement without
 * it binds no more than it names.
 */
const binding = { collectionId: 1, slot: 2, limit: 3, now: 4, offset: 5, rank: 5, id: 6, value: 7 } as const;

/** The placeholder of the binding `name` (binding) in a statement of sortedPages. */
const placeholder = (bind: KeyBinding, name: keyof typeof binding) => bind.param(binding[name]);

/** Which of a sort key's columns place a page after a row (sortedPages): none (ranks 4 and 5), `num` or `str`. */
type PlaceColumn = 'none' | 'num' | 'str';

/**
 * How a statement of sortedPages reads the keys of its range or ranges (SortedPageText): `columns`
 * selected from `from` (`sort_keys`, and what the dialect joins to it), the keys of the page's collection
 * those where `collection` holds, each kept when `live` holds (SQL with the placeholders of `binding`).
 */
interface KeysRead {
  columns: string;
  from: string;
  collection: string;
  live: string;
}

/**
 * A dialect's statement of sortedPages (one row, a PagePart) from `keys(read)`: SQL of the keys of its
 * range or ranges as `read` reads them, in the page's order and cut to it. `order` is that order on the
 * keys `k` (with `k.part` first after a place); `collectionId` and `now` are the placeholders of the
 * collection's id and of the expiry now its rows live at; `skips`, whether the statement passes keys by
 * before its page (an offset past 0); `expiring`, whether the collection had a time to live when last seen
 * (IndexedCollection).
 */
type SortedPageText = (
  keys: (read: KeysRead) => string,
  order: string,
  at: { collectionId: string; now: string; skips: boolean; expiring: boolean },
) => string;

/**
 * A dialect's PageSource.sortedPage and sortedPageAfter from its statement `text` (SortedPageText): each
 * text made once for each shape and count of rows planned (PageCut), since statements are kept by their
 * text. Their bindings are numbered as `binding` says; the keys are cut to the page by the dialect.
 *
 * A page after a place is the keys of the index past it, as ranges of the index one after another,
 * each read from its start: the place's key with a later id; the same rank with a later value (for
 * numbers, strings and booleans); the later ranks (descending: the lower ranks, then the missing ones).
 * So a page deep into a walk reads no more of the index than the first. `part` numbers the ranges, for
 * PostgreSQL's string_agg to order by.
 */
export function sortedPages(text: SortedPageText, bind: KeyBinding): SortedPages {
  const at = { collectionId: placeholder(bind, 'collectionId'), now: placeholder(bind, 'now') };
  const slot = `slot = ${placeholder(bind, 'slot')}`;
  const limit = placeholder(bind, 'limit');
  // A pair's prefix, bound after the statement's other bindings (the `n`-th).
  const within = (pair: boolean, n: number) => (pair ? ` and prefix = ${bind.param(n)}` : '');
  const rangeText = (dir: Direction, range: KeyRange, skips: boolean, expiring: boolean, pair: boolean, planned: number | undefined) =>
    text(
      (read) =>
        bind.cut(
          `select ${read.columns} from ${read.from} where ${read.collection} and ${slot}${within(pair, 6)} ${ranks[range]} and ${read.live}
      order by ${keyOrder('', dir)}`,
          limit,
          placeholder(bind, 'offset'),
          planned,
        ),
      keyOrder('k.', dir),
      { ...at, skips, expiring },
    );
  // By direction, range, whether the page starts past an offset, whether the collection expires, whether it is a
  // pair's, and the count of rows planned.
  const texts = new Map<string, string>();
  const afterText = (
    order: Direction,
    column: PlaceColumn,
    laterRanks: boolean,
    expiring: boolean,
    pair: boolean,
    planned: number | undefined,
  ) => {
    const ranges = rangesAfter(order, column, laterRanks, bind);
    // The place's value, when it has one, is the 7th binding.
    const prefix = within(pair, column === 'none' ? 7 : 8);
    const parts = (read: KeysRead) =>
      ranges.map(
        (range, index) =>
          `select * from (${bind.cut(
            `select ${index} as part, ${read.columns} from ${read.from}
        where ${read.collection} and ${slot}${prefix} and ${range} and ${read.live} order by ${keyOrder('', order)}`,
            limit,
            undefined,
            planned,
          )}) k${index}`,
      );
    return text((read) => bind.cut(parts(read).join('\n      union all '), limit, undefined, planned), `k.part, ${keyOrder('k.', order)}`, {
      ...at,
      skips: false,
      expiring,
    });
  };
  const afterTexts = new Map<string, string>();
  return {
    sortedPage({ id, expiring }, slot, order, range, limit, offset, now, prefix) {
      const planned = bind.plannedRows(offset + limit);
      const pair = prefix !== undefined;
      const sql = kept(texts, `${order} ${range} ${offset > 0} ${expiring} ${pair} ${planned}`, () =>
        rangeText(order, range, offset > 0, expiring, pair, planned),
      );
      return { sql, params: pair ? [id, slot, limit, now, offset, prefix] : [id, slot, limit, now, offset] };
    },
    sortedPageAfter({ id, expiring }, slot, order, place, limit, now, prefix) {
      const { rank, scalar } = place.values[0] ?? { rank: 5, scalar: null };
      const params: SqlValue[] = [id, slot, limit, now, rank, place.id];
      if (scalar !== null) {
        const value = bind.value(typeof scalar === 'boolean' ? Number(scalar) : scalar);
        if (value === undefined) return undefined;
        params.push(value);
      }
      const column: PlaceColumn = scalar === null ? 'none' : rank === 2 ? 'str' : 'num';
      const pair = prefix !== undefined;
      if (pair) params.push(prefix);
      const planned = bind.plannedRows(limit);
      const sql = kept(afterTexts, `${order} ${column} ${rank < 5} ${expiring} ${pair} ${planned}`, () =>
        afterText(order, column, rank < 5, expiring, pair, planned),
      );
      return { sql, params };
    },
  };
}

/** The text kept in `texts` for `shape`, made by `make` the first time. */
function kept(texts: Map<string, string>, shape: string, make: () => string): string {
  let text = texts.get(shape);
  if (text === undefined) {
    text = make();
    texts.set(shape, text);
  }
  return text;
}

/**
 * The ranges of a sort index after a place (sortedPages), each a condition on its keys, with the
 * place's rank, row id and value bound as sortedPageAfter binds them.
 */
function rangesAfter(order: Direction, column: PlaceColumn, laterRanks: boolean, bind: KeyBinding): string[] {
  const later = order === 'asc' ? '>' : '<';
  const [rank, id] = [placeholder(bind, 'rank'), placeholder(bind, 'id')];
  const ranges: string[] = [];
  if (column === 'none') {
    ranges.push(`rank = ${rank} and num is null and str is null and row_id ${later} ${id}`);
  } else {
    const value = bind.sql(placeholder(bind, 'value'));
    // A number's or boolean's key has no string, a string's no number: `num is null` puts a string's
    // range right after the rank's in the index, and a condition on `str` after the range of `num`
    // would have SQLite sort each run of equal numbers again.
    const [sameKey, laterKey] =
      column === 'str'
        ? [`num is null and str = ${value}`, `num is null and str ${later} ${value}`]
        : [`num = ${value} and str is null`, `num ${later} ${value}`];
    ranges.push(`rank = ${rank} and ${sameKey} and row_id ${later} ${id}`, `rank = ${rank} and ${laterKey}`);
  }
  if (laterRanks) {
    if (order === 'asc') ranges.push(`rank > ${rank}`);
    else ranges.push(`rank < ${rank}`, 'rank = 5');
  }
  return ranges;
}
