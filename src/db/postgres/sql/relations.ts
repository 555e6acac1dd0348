// PostgreSQL's SQL of relations (../../relations/, docs/relations.md).
import { idList } from './collections.ts';

/**
 * Which of the ids `?` (joined by commas) are rows of the collection `?`, each held FOR KEY SHARE until
 * the write's commit: a delete of one waits for the write, and a write that comes after a delete waits
 * for it, then finds the row gone. Held in id order.
 */
export const existingIdsSql = `select id from rows where collection_id = ? and ${idList} order by id for key share`;

/**
 * The rows whose id is one of `ids`, as a condition on `rows` with one binding however many they are: a
 * cascade's rows, deleted by id (../../rows/writes.ts, followDeletes), read through the primary key. A
 * filter's `$in` of the same ids, an OR of as many equalities, made the planner scan the whole table
 * once it held some hundred thousand rows (docs/performance.md, "Related rows").
 */
export const rowIdsSql = (ids: readonly number[]) => ({
  sql: "rows.id = any(string_to_array(?::text, ',')::bigint[])",
  params: [ids.join(',')],
});
