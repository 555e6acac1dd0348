// The SQL of rows that expire both dialects run (openapi.yaml, the `expiry` tag; docs/expiry.md): a
// collection's time to live is the name of its rows' field (`ttl_field`, null for none); each row's
// expiry, in ms since the epoch, is `rows.expires_at`, which every write of a row's text sets from that
// field in its own statement (sqlite/sql/expiry.ts, postgres/sql/expiry.ts: rowExpiry, refreshExpiriesSql),
// indexed where it is not null.

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

/** A sweep's rows read again by their delete, inside its write (a condition on `rows`): still expired at `?`. */
export const stillExpiredWhere = 'expires_at <= ?';
