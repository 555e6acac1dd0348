// SQLite's SQL of relations (../../relations/, docs/relations.md).
/**
 * Which of the ids `?` (joined by commas) are rows of the collection `?`: read on the writer's connection
 * inside the write, which no other write comes between.
 */
export const existingIdsSql = "select id from rows where collection_id = ?1 and id in (select value from json_each('[' || ?2 || ']'))";

/**
 * The rows whose id is one of `ids`, as a condition on `rows` with one binding however many they are: a
 * cascade's rows, deleted by id (../../rows/writes.ts, followDeletes).
 */
export const rowIdsSql = (ids: readonly number[]) => ({
  sql: 'rows.id in (select value from json_each(?))',
  params: [JSON.stringify(ids)],
});
