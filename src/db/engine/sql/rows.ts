// The SQL of rows both dialects run: deletes, changes by filter, Idempotency-Key answers, export and import.
// Values a client sends are always bindings, never part of the text.
import { liveRowCountSql } from './expiry.ts';

/**
 * Deletes a row of the collection by id, unless it expired by `?` (ms since the epoch: then it is gone
 * already, docs/expiry.md), and answers its text, as it was, for the event, and its version, for If-Match.
 */
export const deleteRowSql =
  'delete from rows where collection_id = ? and id = ? and (expires_at is null or expires_at > ?) returning data, version';

/**
 * Changes by filter (../rows/writes.ts): the rows of the collection `?` that the filter `where` (SQL on
 * `id` and `data`, its bindings after the collection's id) matches, in id order, at most `?` of them, each
 * its id, text and version.
 */
export const matchedRowsSql = (where: string) =>
  `select id, data, version from rows where collection_id = ? and (${where}) order by id limit ?`;

/**
 * The rows named by id (the Dialect's rowIdsSql, a condition `byId` that names their collection too) that
 * also meet `where` (true for none; its bindings after byId's), in id order, at most `?` of them. Found
 * by their ids first, and only then tested (MATERIALIZED): beside another condition an index could
 * serve, PostgreSQL, under a collection's stale statistics, read that index for every collection's rows
 * rather than the ids' probes (docs/performance.md, "Rows that expire").
 */
export const matchedByIdSql = (byId: string, where = 'true') =>
  `with named as materialized (select * from rows where ${byId}) select id, data, version from named as rows where (${where}) order by id limit ?`;

/** The rows the condition `byId` names (the Dialect's rowIdsSql), deleted. */
export const deleteRowsByIdSql = (byId: string) => `delete from rows where ${byId}`;

/** The sort keys the condition `byId` names (the Dialect's keyRowIdsSql), deleted before their rows. */
export const deleteKeysByIdSql = (byId: string) => `delete from sort_keys where ${byId}`;

/** A row's keys, of every slot. */
export const deleteSortKeysSql = 'delete from sort_keys where collection_id = ? and row_id = ?';

/** The stored answer to the account's Idempotency-Key `?`, unless it expired (at `?`). */
export const onceAnswerSql =
  'select request_hash, status, headers, body from idempotency_keys where account_id = ? and key = ? and expires_at > ?';
/**
 * Stores the answer to a request sent with an Idempotency-Key, in the transaction of the change it
 * answers: a new key, or one whose answer expired. Answers no row when the key holds an answer that
 * has not expired (another request stored it first).
 */
export const recordOnceSql = `insert into idempotency_keys (account_id, key, request_hash, status, headers, body, created_at, expires_at)
  values (?, ?, ?, ?, ?, ?, ?, ?)
  on conflict (account_id, key) do update set request_hash = excluded.request_hash, status = excluded.status,
    headers = excluded.headers, body = excluded.body, created_at = excluded.created_at, expires_at = excluded.expires_at
    where idempotency_keys.expires_at <= excluded.created_at
  returning account_id`;

// Export and import (exports.ts, imports.ts; docs/operations.md, "Export and import").

/** The rows of one page of an export at most: a bound on what the command holds at once. */
export const EXPORT_PAGE_ROWS = 1000;
/**
 * The collection as an export describes it, read in the export's snapshot, by account and name after `?`,
 * now (ms since the epoch): its row count that of the rows that live then, the rows it writes.
 */
export const exportedCollectionSql = `select c.id, c.name, c.created_at, ${liveRowCountSql('c')} as row_count, c.last_row_id, c.last_seq, nullif(s.schema, '') as schema, c.rules, c.ttl_field
  from collections c left join collection_schemas s on s.id = c.schema_id where c.account_id = ? and c.name = ?`;
/** The collection's declared indexes, in the order they were made. */
export const exportedIndexesSql = 'select fields, is_unique, is_search from collection_indexes where collection_id = ? order by id';
/** The relations declared of the collection, in the order they were declared, each with the name of the collection it names. */
export const exportedRelationsSql = `select r.name, r.field, t.name as collection, r.on_delete, r.reverse
  from collection_relations r join collections t on t.id = r.target_id where r.collection_id = ? order by r.id`;
/** The page of an export after row id `?`, by id: keyset pages, each found through the primary key. */
export const exportRowsSql = `select id, data from rows where collection_id = ? and id > ? order by id limit ${EXPORT_PAGE_ROWS}`;
/** exportRowsSql() of the rows that have not expired by `?` (ms since the epoch: docs/expiry.md), as an export writes them. */
export const exportLiveRowsSql = `select id, data from rows where collection_id = ? and id > ? and (expires_at is null or expires_at > ?)
  order by id limit ${EXPORT_PAGE_ROWS}`;
/**
 * An import's first statement (imports.ts), advance() for rows that bring their own ids: moves the
 * collection's seq by `?` events and its row count by `?` rows, and its last row id up to `?` (never
 * down); found by account and name, and only while its last row id is below `?`, the first id
 * imported. Answers its id, its last seq, now taken, its sorted fields and its unique indexes.
 */
export const importAdvanceSql = `update collections set last_seq = last_seq + ?, row_count = row_count + ?,
    last_row_id = case when last_row_id < ? then ? else last_row_id end
  where account_id = ? and name = ? and last_row_id < ? returning id, last_seq, sorted, uniques, schema_id, search`;
/** The last row id the collection has handed out, where an import resumed goes on from. */
export const lastRowIdSql = 'select last_row_id from collections where account_id = ? and name = ?';
