// PostgreSQL's SQL of relations (../../relations/, docs/relations.md).
import { liveRowText } from '../../engine/sql/expiry.ts';
import { idList } from './collections.ts';

/**
 * Which of the ids `?` (joined by commas) are rows of the collection `?` that live at `?` (the expiry now),
 * each held FOR KEY SHARE until the write's commit: a delete of one waits for the write, and a write that
 * comes after a delete waits for it, then finds the row gone. Held in id order.
 */
export const existingIdsSql = `select id from rows where collection_id = ? and ${idList} and ${liveRowText('rows')}
  order by id for key share`;

/**
 * The rows of the collection `collectionId` whose id is one of `ids`, as a condition on `table` (`rows`,
 * or `sort_keys` for their keys, its column `column`) that needs no other, with one binding however many
 * they are: a cascade's rows and a sweep's, read and deleted by id (../../rows/writes.ts). Each id is a
 * probe of the table's primary key of its own (`offset 0` keeps the planner from turning it into a join),
 * and the rows are then read by their places (`ctid`). Under the statistics of a collection just filled,
 * which count one row for its `collection_id`, PostgreSQL read `id = any(…)` beside the collection's id
 * as a filter over the whole collection, and a sort key's `row_id` through `sort_keys_order`, where it is
 * the last column (docs/performance.md, "Rows that expire"); the collection's id as a subquery's is not
 * read from those statistics, so each probe takes the primary key. A filter's `$in` of the same ids, an
 * OR of as many equalities, made the planner scan the whole table once it held some hundred thousand
 * rows (docs/performance.md, "Related rows").
 */
const byIds = (table: string, column: string) => (collectionId: number, ids: readonly number[]) => ({
  sql: `${table}.ctid = any(array(select p.ctid from unnest(string_to_array(?::text, ',')::bigint[]) d(id)
    cross join lateral (select ctid from ${table} where collection_id = (select ?::integer) and ${column} = d.id offset 0) p))`,
  params: [ids.join(','), collectionId],
});
export const rowIdsSql = byIds('rows', 'id');
export const keyRowIdsSql = byIds('sort_keys', 'row_id');

/**
 * The rows of the collection `collectionId` whose key in the sort index in `slot` is one of `ids` as a
 * number, as a condition on `rows` that needs no other, as byIds() reads them: each id's keys by a probe
 * of `sort_keys_order` of its own, each key's row by a probe of the primary key: the rows a delete's
 * relations change (../../rows/writes.ts). Found as a page's filter finds rows, by `rows.id in` the keys
 * beside the order by id, they were read, under the statistics of a collection just filled, by a plan
 * that walked the collection's rows by id and read its keys of the index again for each
 * (docs/performance.md, "A cascade on PostgreSQL: its events as one text, its rows found through the index").
 */
export const namingRowsSql = (collectionId: number, slot: number, ids: readonly number[]) => ({
  sql: `rows.ctid = any(array(select r.ctid from unnest(string_to_array(?::text, ',')::bigint[]) d(id)
    cross join lateral (select row_id from sort_keys
      where collection_id = (select ?::integer) and slot = ? and rank = 1 and num = d.id::numeric offset 0) k
    cross join lateral (select ctid from rows where collection_id = (select ?::integer) and id = k.row_id offset 0) r))`,
  params: [ids.join(','), collectionId, slot, collectionId],
});
