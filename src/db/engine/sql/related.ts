// The SQL of the rows related to a page's (../../reads/expand.ts), as both dialects build it: one statement
// for a relation of the whole page: a to-one's rows by their ids, each one's JSON text; a to-many's rows
// of each key read through the relation field's sort index in their order and stopped at as many as
// asked (a LATERAL join on PostgreSQL, a correlated subquery on SQLite), or without that index, every
// key's rows read by their field and numbered in their order by a window; each key's rows joined as JSON
// text, one row of the answer for each key. Each dialect gives how it binds the keys, reads each key's
// rows, joins them and reads their fields for an order (RelatedJson, FieldOrder): sqlite/sql/reads.ts,
// postgres/sql/reads.ts.
import { type Direction, ordersRelated, type SortKey } from '../../../query/order.ts';
import type { SqlValue } from '../dialect.ts';
import { liveKeySql, liveRowSql } from './expiry.ts';
import type { CollectionRef, FieldOrder, Statement } from './pages.ts';
import { raw, type Sql, sql } from './template.ts';

/** What an expansion reads of its related collection for a whole page (PageSource.relatedRows). */
export interface RelatedRead {
  collection: CollectionRef;
  /** The keys: the ids of the related rows (to-one), or the ids of the page's rows, which the related rows' field holds (to-many). */
  keys: readonly number[];
  /**
   * How a key finds its rows: by their `id` (to-one); to-many, through the sort index of the relation's
   * field (`index`), its slot looked up by the same statement, which answers a row of a null key when
   * the collection has no such index (or is gone); or without one, by the `field` of each row of the
   * collection.
   */
  by: 'id' | { index: string } | { field: string };
  /** A condition on `rows` the related rows hold (the caller's filter, the read rule). */
  where?: Sql;
  order: readonly SortKey[];
  /** Of each key, the rows read at most: each one's JSON text answered, and how many. */
  each: number;
  /** The expiry now the related rows live at (ms since the epoch: the page's, LivePage). */
  now: number;
  /**
   * SQL of the latest event seq of the collection whose rows hold the keys (CollectionRef.lastSeq): the
   * statement answers it as a row of its own, the key 0 (no row's id), its count that seq. A read outside
   * any snapshot tells by it whether those rows have changed since they were read (../../reads/related.ts).
   */
  keysSeq?: Sql;
}

/**
 * A relation whose rows a page's own statement reads (PageSource.pageWithRelated): its `name` (its member
 * of EXPANDED), the related `collection`, the `field` of the page's rows holding a related row's id (a
 * to-one; a number that is none, or not a whole number, names no row: null), and the condition `where` on
 * `rows` the related rows hold (the read rule, a to-many's filter), as RelatedRead's.
 */
export interface JoinedRelation {
  name: string;
  collection: CollectionRef;
  field: string;
  where?: Sql;
  /**
   * A to-many relation instead: `field` is then the field of the related rows holding a page row's id,
   * read through its sort index; its rows come in the order of their ids in `direction`, at most `limit`
   * (one more read, to tell that they were cut).
   */
  many?: { direction: Direction; limit: number };
}

/**
 * One row of a relatedRows statement: a key, how many rows it has (at most `each`; null or 0 for none),
 * and the JSON texts of those rows in their order, joined by commas (on PostgreSQL null, beside a count
 * above 0, when they weigh more than a page may). A key without rows has no row, or one of no rows; a null
 * key says the sort index read through is none (RelatedRead.by); the key 0 answers RelatedRead.keysSeq.
 */
export type RelatedPart = { k: number | string | null; n: number | string | null; json: string | null };

/** What differs between the dialects in a relatedRows statement. */
export interface RelatedJson {
  /** A table of one column: the numbers of `list`, a JSON array (bound), as `type` (`id`: a row id; `num`: a sort key's number). */
  keys(list: string, type: 'id' | 'num'): Sql;
  /**
   * For each number of `list` (a JSON array, bound), the key `key.value`, a row `k` (the key), `n` (how
   * many rows `rows` reads of it) and `json` (their JSON texts joined in the order they come in): `rows`
   * is a subquery of `key.value`, ordered and limited, with the columns `id` and `data`.
   */
  eachKey(list: string, rows: Sql): Sql;
  /** A row's `field` as a number (null when it holds none), as a sort key's number compares with a key. */
  fieldKey(field: string): Sql;
  /** The slot of the collection's sort index of `field` (bound), null when it has none: a scalar subquery on the collection's `id`. */
  slotOf(id: Sql, field: string): Sql;
  /** The keys of `sort_keys k` joined with their rows, as `rows`. */
  keyedRows: string;
  /** A row's JSON text, of its columns `id` and `data`. */
  row: string;
  /** The JSON texts of a key's rows, numbered `rn` in their order and coming in it, joined in that order. */
  rows: string;
  /** Ends the subquery of the rows ordered through a relation, so that each related row is looked up once (PageJson's). */
  fence: string;
  /**
   * The text of the row of the key `k` of the collection `collectionId` where its key carries it (each
   * dialect's sql/collections.ts, carriedText), else looked up: keyRows() reads a key's rows by their keys
   * alone when it reads nothing else of them.
   */
  carried(collectionId: Sql): Sql;
}

/** The statement of a relation's rows for a whole page: its rows are RelatedPart. */
export function relatedPage(json: RelatedJson, byField: FieldOrder, read: RelatedRead): Statement {
  const { collection, keys, by, where, order, now, keysSeq } = read;
  const list = JSON.stringify(keys);
  const filtered = where ? sql` and (${where})` : raw('');
  const seq = keysSeq
    ? sql`
    union all select 0, ${keysSeq}, null`
    : raw('');
  if (by === 'id') {
    // A key's row is the one of its id, if any: nothing to number, cut or join.
    return sql`select rows.id as k, 1 as n, ${raw(json.row)} as json from rows
    where rows.collection_id = ${collection.id} and rows.id in ${json.keys(list, 'id')} and ${liveRowSql('rows', now)}${filtered}${seq}`;
  }
  const many = { ...read, list, filtered, fence: raw(ordersRelated(order) ? ` ${json.fence}` : '') };
  return 'index' in by
    ? sql`${throughIndex(json, byField, many, by.index)}${seq}`
    : sql`${byItsField(json, byField, many, by.field)}${seq}`;
}

/** A to-many's read, its keys as a JSON array (`list`), its condition (`filtered`) and fence. */
type ManyRead = RelatedRead & { list: string; filtered: Sql; fence: Sql };

/**
 * A to-many's rows through the sort index of `field`: of each key, its keys in the index walked in the
 * order asked and stopped at `each`, so that no window numbers them and no sort orders them all. A key's
 * keys of the index (rank 1, its number) come in the order of `str` (null in each) and then the row's id:
 * ordered by `str` first, in the first key's direction, a page by id walks the index as it is, forwards
 * or backwards; another order sorts that key's rows alone. Its LIMIT bound as `+?`, as a page's is
 * (pages.ts, sortedPages). Then the row of a null key when the collection has no such index (or is gone).
 */
function throughIndex(json: RelatedJson, byField: FieldOrder, read: ManyRead, field: string): Sql {
  const { collection, list } = read;
  const slot = json.slotOf(collection.id, field);
  return sql`${json.eachKey(list, keyRows(json, byField, read, slot, raw('key.value')))}
    union all select null, null, null where ${slot} is null`;
}

/** What keyRows() reads of a to-many: a RelatedRead's collection, order, limit and now, its condition and fence. */
type KeyRead = Pick<ManyRead, 'collection' | 'order' | 'each' | 'now' | 'filtered' | 'fence'>;

/**
 * The rows of the key `key` (SQL of a number) through the sort index in `slot`, as throughIndex() reads
 * them: the columns `id` and `data`, and those of the order. Read by their keys alone, which carry their
 * rows' texts (RelatedJson.carried), where nothing else of the rows is read: no condition,
 * no field of the order, no fence; each key then tested as a page's keys are (liveKeySql()).
 */
function keyRows(json: RelatedJson, byField: FieldOrder, read: KeyRead, slot: Sql, key: Sql): Sql {
  const { collection, order, each, now, filtered, fence } = read;
  const { columns, placed } = orderColumns(byField, read);
  const keyed = sql`k.collection_id = ${collection.id} and k.slot = ${slot} and k.rank = 1
          and k.num = ${key}`;
  const rows =
    columns.sql === '' && filtered.sql === '' && fence.sql === ''
      ? sql`select k.str, k.row_id as id, ${json.carried(collection.id)} as data from sort_keys k
        where ${keyed} and ${liveKeySql(collection.id, now)}`
      : sql`select k.str, k.row_id as id, rows.data${columns} from ${raw(json.keyedRows)}
        where rows.collection_id = ${collection.id} and ${keyed} and ${liveRowSql('rows', now)}${filtered}${fence}`;
  return sql`select * from (${rows}) r
      order by str ${raw(order[0]?.direction ?? 'asc')}, ${raw(placed)} limit +${each}`;
}

/**
 * A to-many relation a page's own statement reads (JoinedRelation.many): the SQL of its related rows' sort
 * index slot (null when none), and of the rows of the page row whose id is `key`, ordered by id and
 * stopped at its limit and one more, as keyRows() reads them.
 */
export function pageRowRelated(
  json: RelatedJson,
  byField: FieldOrder,
  { collection, field, where }: JoinedRelation,
  many: NonNullable<JoinedRelation['many']>,
  now: number,
  key: Sql,
): { slot: Sql; rows: Sql } {
  const slot = json.slotOf(collection.id, field);
  const read: KeyRead = {
    collection,
    order: [{ field: 'id', direction: many.direction }],
    each: many.limit + 1,
    now,
    filtered: where ? sql` and (${where})` : raw(''),
    fence: raw(''),
  };
  return { slot, rows: keyRows(json, byField, read, slot, key) };
}

/**
 * A to-many's rows by the `field` of each row of the collection (no sort index of it): every key's rows
 * read at once, numbered per key in their order, cut at `each`, then sorted by key and number, so that
 * each key's rows come to its group in their order.
 */
function byItsField(json: RelatedJson, byField: FieldOrder, read: ManyRead, field: string): Sql {
  const { collection, each, now, list, filtered, fence } = read;
  const { columns, placed } = orderColumns(byField, read);
  const key = json.fieldKey(field);
  return sql`select k, count(*) as n, ${raw(json.rows)} as json
    from (select * from (select r.*, row_number() over (partition by k order by ${raw(placed)}) as rn
      from (select ${key} as k, rows.id, rows.data${columns} from rows
        where rows.collection_id = ${collection.id} and ${key} in ${json.keys(list, 'num')} and ${liveRowSql('rows', now)}${filtered}${fence}) r) r
      where rn <= ${each} order by k, rn) r
    group by k`;
}

/**
 * The columns a to-many's order reads of its rows beside `id` and `data` (SQL, with its bindings), and
 * the order of them (`placed`): ties break by id, in the last key's direction.
 */
function orderColumns(
  byField: FieldOrder,
  { order, collection, now }: Pick<RelatedRead, 'order' | 'collection' | 'now'>,
): { columns: Sql; placed: string } {
  let columns = '';
  const bindings: SqlValue[] = [];
  const placed: string[] = [];
  order.forEach((key, index) => {
    if (key.field === 'id') {
      placed.push(`id ${key.direction}`);
      return;
    }
    const field = byField(key, index, undefined, collection, now);
    columns += field.columns;
    bindings.push(...field.bindings);
    for (const { column } of field.order) placed.push(`${column.sql} ${column.direction}`);
  });
  if (!order.some((key) => key.field === 'id')) placed.push(`id ${order.at(-1)?.direction ?? 'asc'}`);
  return { columns: { sql: columns, params: bindings }, placed: placed.join(', ') };
}
