// The SQL of rows that expire both dialects run (openapi.yaml, the `expiry` tag; docs/expiry.md): a
// collection's time to live is the name of its rows' field (`ttl_field`, null for none); each row's
// expiry, in ms since the epoch, is `rows.expires_at`, which every write of a row's text sets from that
// field in its own statement (sqlite/sql/expiry.ts, postgres/sql/expiry.ts: rowExpiry, refreshExpiriesSql),
// indexed where it is not null.
import type { Sql } from './template.ts';

/** The collection's id and time to live's field (null for none), by account and name. */
export const collectionTtlSql = 'select id, ttl_field from collections where account_id = ? and name = ?';
/** The collection `?`'s time to live's field (null for none), by id. */
export const ttlOfCollectionSql = 'select ttl_field from collections where id = ?';
/** Sets the collection `?`'s time to live's field to `?` (null: none). */
export const setTtlSql = 'update collections set ttl_field = ? where id = ?';
/** How many of the collection `?`'s rows have expired by `?` (ms since the epoch). */
export const expiredCountSql = 'select count(*) as total from rows where collection_id = ? and expires_at <= ?';
/** The first `?` of the collection `?`'s rows expired by `?` (ms since the epoch), in id order. */
export const firstExpiredSql = 'select id from rows where collection_id = ? and expires_at <= ? order by id limit ?';
/** The collection `?`'s rows expire no more (its time to live removed): through the index, only those that had an expiry. */
export const clearExpiriesSql = 'update rows set expires_at = null where collection_id = ? and expires_at is not null';
/** Whether a relation that restricts deletes names the rows of the collection `?`. */
export const restrictingRelationSql = `select r.name, s.name as source_name from collection_relations r join collections s on s.id = r.collection_id
  where r.target_id = ? and r.on_delete = 'restrict' limit 1`;

/**
 * Whether the row `r` (a table's alias) lives at `now` (SQL of a placeholder, `?` by default), ms since
 * the epoch: it has no expiry, or one past now. Every read of rows tests it, with the expiry now of the
 * read bound (expiryNow(), ../../../expiry/ttl.ts; docs/expiry.md).
 */
export const liveRowText = (r: string, now = '?') => `(${r}.expires_at is null or ${r}.expires_at > ${now})`;

/** liveRowText() with `now` (ms since the epoch) bound, or a template's hole for it. */
export const liveRowSql = (r: string, now: number | Sql): Sql =>
  typeof now === 'number' ? { sql: liveRowText(r), params: [now] } : { sql: liveRowText(r, now.sql), params: now.params };

/**
 * Whether a key of `sort_keys` (its `row_id`) of the collection `collectionId` (SQL of its id) is of a
 * row that lives at `now` (SQL of a placeholder): of a collection without a time to live, every key (its
 * row read once a statement); else each key's row looked up by its key, so that a page read through a
 * sort index is full of rows that live, and its cursor goes on past them, and a count of its keys counts
 * those only. PostgreSQL's pages test their keys so; SQLite's join each key's row once and test it there
 * (../../sqlite/sql/reads.ts, sortedPage). The lookup is a scalar
 * subquery of the row's liveRowText() by its primary key, true when there is no row. As a NOT EXISTS on
 * the expiry, PostgreSQL found a hash of all the collection's expired rows (through `rows_expiry`)
 * cheaper than a probe a key, and built it whole for each page that read a few keys; a scalar subquery
 * is never hashed, and its one condition is the primary key.
 */
export const liveKeyText = (collectionId: string, now: string) =>
  `((select ttl_field from collections where id = ${collectionId}) is null
        or coalesce((select ${liveRowText('x', now)} from rows x where x.collection_id = ${collectionId} and x.id = row_id), true))`;

/** liveKeyText() of the collection `collectionId` (SQL with its bindings) with `now` (ms since the epoch) bound. */
export const liveKeySql = (collectionId: Sql, now: number): Sql => ({
  sql: liveKeyText(collectionId.sql, '?'),
  params: [...collectionId.params, now, ...collectionId.params],
});

/** The latest expiry now the database keeps (0028_expiry_clock; ../../expiry/clock.ts). */
export const keptExpiryNowSql = 'select now_ms from expiry_clock where id = 1';

/** Raises the expiry now the database keeps to `?` (ms since the epoch), the same again as `?`, when it is later. */
export const keepExpiryNowSql = 'update expiry_clock set now_ms = ? where id = 1 and now_ms < ?';

/**
 * A request's filter `where` (SQL on the rows' table, unaliased) of the rows that live: no expiry, or one
 * past `?` (now, in ms since the epoch, its binding after the filter's): a change or delete by filter
 * reaches no expired row.
 */
export const liveWhereSql = (where: string) => `(${where}) and (expires_at is null or expires_at > ?)`;

/**
 * The row count of the collection `c` (its alias) less its rows expired by `?` (now, ms since the epoch)
 * and not swept yet: the rows that live (docs/expiry.md). The expired ones are counted through the expiry
 * index, a range of the rows the sweeper has still to delete; a collection without a time to live is its
 * count alone.
 */
export const liveRowCountSql = (c: string) =>
  `${c}.row_count - case when ${c}.ttl_field is null then 0 else (select count(*) from rows x where x.collection_id = ${c}.id and x.expires_at <= ?) end`;

/**
 * The collections with a time to live after the id `?` that hold a row expired at `?` (ms since the
 * epoch), found through the expiry index, in id order, at most `?`: the sweeper's round.
 */
export const expiringCollectionsSql = `select c.id, c.account_id, c.name from collections c
  where c.id > ? and c.ttl_field is not null
    and exists (select 1 from rows r where r.collection_id = c.id and r.expires_at <= ?)
  order by c.id limit ?`;

/**
 * A sweep's rows: the ids of the collection `?`'s rows expired at `?` (ms since the epoch), the first `?`
 * to expire, found through the expiry index (../expiry/sweep.ts).
 */
export const expiredRowIdsSql = 'select id from rows where collection_id = ? and expires_at <= ? order by expires_at limit ?';

/** Whether the row `?` of the collection `?` has expired by `?` (ms since the epoch): a row when it has. */
export const rowExpiredSql = 'select id from rows where collection_id = ? and id = ? and expires_at <= ?';

/** A sweep's rows read again by their delete, inside its write (a condition on `rows`): still expired at `?`. */
export const stillExpiredWhere = 'expires_at <= ?';
