// The SQL of the rows related to a page's (../../reads/expand.ts), as both dialects build it: one statement
// for a relation of the whole page: a to-one's rows by their ids, each one's JSON text; a to-many's rows
// by the relation field's sort index, numbered in their order by a window, at most as many of each key as
// asked, and joined as JSON text, one row of the answer for each key. Each dialect gives how it binds the keys, joins
// a key's rows and reads their fields for an order (RelatedJson, FieldOrder): sqlite/sql/reads.ts,
// postgres/sql/reads.ts.
import { ordersRelated, type SortKey } from '../../../query/order.ts';
import type { SqlValue } from '../dialect.ts';
import { liveRowSql } from './expiry.ts';
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
  /** Of each key, the rows read at most (its count answered), and the rows joined into its JSON text. */
  each: number;
  joined: number;
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
 * One row of a relatedRows statement: a key, how many rows it has (at most `each`), and the JSON texts
 * of its first `joined` of them in their order, joined by commas (on PostgreSQL null, beside a count above
 * 0, when they weigh more than a page may). Keys without rows have no row; a null key says the sort index
 * read through is none (RelatedRead.by); the key 0 answers RelatedRead.keysSeq.
 */
export type RelatedPart = { k: number | string | null; n: number | string | null; json: string | null };

/** What differs between the dialects in a relatedRows statement. */
export interface RelatedJson {
  /** A table of one column: the numbers of `list`, a JSON array (bound), as `type` (`id`: a row id; `num`: a sort key's number). */
  keys(list: string, type: 'id' | 'num'): Sql;
  /** A row's `field` as a number (null when it holds none), as a sort key's number compares with a key. */
  fieldKey(field: string): Sql;
  /** The slot of the collection's sort index of `field` (bound), null when it has none: a scalar subquery on the collection's `id`. */
  slotOf(id: Sql, field: string): Sql;
  /** The keys of `sort_keys k` joined with their rows, as `rows`. */
  keyedRows: string;
  /** A row's JSON text, of its columns `id` and `data`. */
  row: string;
  /** The JSON texts of a key's rows, numbered `rn` in their order and coming in it, the first `joined` of them, joined in that order. */
  rows(joined: number): string;
  /** Ends the subquery of the rows ordered through a relation, so that each related row is looked up once (PageJson's). */
  fence: string;
}

/** The statement of a relation's rows for a whole page: its rows are RelatedPart. */
export function relatedPage(json: RelatedJson, byField: FieldOrder, read: RelatedRead): Statement {
  const { collection, keys, by, where, order, each, joined, now, keysSeq } = read;
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
  let columns = 'rows.id, rows.data';
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
  // Ties break by id, in the last key's direction.
  if (!order.some((key) => key.field === 'id')) placed.push(`id ${order.at(-1)?.direction ?? 'asc'}`);
  const { key, from, keyed, noIndex } = keyedRows(json, collection, by, list);
  const fence = raw(ordersRelated(order) ? ` ${json.fence}` : '');
  // Numbered, cut, then sorted by key and number, so that each key's rows come to its group in their order.
  return sql`select k, count(*) as n, ${raw(json.rows(joined))} as json
    from (select * from (select r.*, row_number() over (partition by k order by ${raw(placed.join(', '))}) as rn
      from (select ${key} as k, ${{ sql: columns, params: bindings }} from ${from}
        where rows.collection_id = ${collection.id} and ${keyed} and ${liveRowSql('rows', now)}${filtered}${fence}) r) r
      where rn <= ${each} order by k, rn) r
    group by k${noIndex}${seq}`;
}

/**
 * How a to-many's statement finds the rows of its keys (`list`, a JSON array): `key`, the SQL of a row's
 * key; `from`, what it reads; `keyed`, the condition on them; `noIndex`, the row it answers when the sort
 * index it reads through is none (RelatedRead.by).
 */
function keyedRows(json: RelatedJson, collection: CollectionRef, by: { index: string } | { field: string }, list: string) {
  if ('index' in by) {
    const slot = json.slotOf(collection.id, by.index);
    return {
      key: raw('k.num'),
      from: raw(json.keyedRows),
      keyed: sql`k.collection_id = ${collection.id} and k.slot = ${slot} and k.rank = 1 and k.num in ${json.keys(list, 'num')}`,
      noIndex: sql`
    union all select null, null, null where ${slot} is null`,
    };
  }
  const key = json.fieldKey(by.field);
  return { key, from: raw('rows'), keyed: sql`${key} in ${json.keys(list, 'num')}`, noIndex: raw('') };
}
