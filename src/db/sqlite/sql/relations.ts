// SQLite's SQL of relations (../../relations/, docs/relations.md).
import { liveRowText } from '../../engine/sql/expiry.ts';

/**
 * Which of the ids `?` (joined by commas) are rows of the collection `?` that live at `?` (the expiry now):
 * read on the writer's connection inside the write, which no other write comes between.
 */
export const existingIdsSql = `select id from rows where collection_id = ?1 and id in (select value from json_each('[' || ?2 || ']'))
  and ${liveRowText('rows', '?3')}`;

/**
 * The rows of the collection `collectionId` whose id is one of `ids`, as a condition on `rows` that needs
 * no other, with one binding for the ids however many they are: a cascade's rows and a sweep's, read and
 * deleted by id (../../rows/writes.ts), through the primary key.
 */
export const rowIdsSql = (collectionId: number, ids: readonly number[]) => ({
  sql: 'rows.collection_id = ? and rows.id in (select value from json_each(?))',
  params: [collectionId, JSON.stringify(ids)],
});

/**
 * The rows of the collection `collectionId` whose key in the sort index in `slot` is one of `ids` as a
 * number, as a condition on `rows` that needs no other: each id's keys through the index, each key's row
 * through the primary key. A cascade's and a restrict's rows (../../rows/writes.ts).
 */
export const namingRowsSql = (collectionId: number, slot: number, ids: readonly number[]) => ({
  sql: `rows.collection_id = ? and rows.id in (select row_id from sort_keys
    where collection_id = ? and slot = ? and rank = 1 and num in (select value from json_each(?)))`,
  params: [collectionId, collectionId, slot, JSON.stringify(ids)],
});

/** rowIdsSql of the rows' sort keys, as a condition on `sort_keys`, through its primary key. */
export const keyRowIdsSql = (collectionId: number, ids: readonly number[]) => ({
  sql: 'sort_keys.collection_id = ? and sort_keys.row_id in (select value from json_each(?))',
  params: [collectionId, JSON.stringify(ids)],
});
