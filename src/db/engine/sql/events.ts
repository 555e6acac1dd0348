// The SQL of events both dialects run: the feed's reads, and retention. How each writes a change's
// events is its own (Dialect.insertEventsSql: sqlite/sql/events.ts, postgres/sql/events.ts).
/** Where a feed can start, in one statement, so in one snapshot: the collection, its latest seq, its oldest retained event. */
export const feedStartSql = `select id, last_seq, (select min(seq) from events where collection_id = collections.id) as oldest
  from collections where account_id = ? and name = ?`;
export const latestSeqSql = 'select last_seq from collections where id = ?';
/**
 * A page of a collection's events after a seq, up to a seq, cut before the event that takes the characters of
 * their rows (the row before an update counted too) past a bound, the first always kept: one statement, the
 * running sum a window over the page's order, which both databases stream, stopping at the limit.
 */
export const boundedEventsSql = `select seq, type, row, previous, at, reason from (
  select seq, type, row, previous, at, reason, row_number() over page as n,
    sum(length(row) + coalesce(length(previous), 0)) over page as chars
  from events where collection_id = ? and seq > ? and seq <= ?
  window page as (order by seq rows between unbounded preceding and current row) order by seq limit ?) p
  where n = 1 or chars <= ? order by seq`;
export const eventsSql =
  'select seq, type, row, previous, at, reason from events where collection_id = ? and seq > ? and seq <= ? order by seq limit ?';

/** A page of collections after the id `?`, `?` of them, each with its latest seq and its oldest event's seq and time (or nulls). */
export const collectionsAfterSql = `select id, last_seq,
  (select seq from events where collection_id = collections.id order by seq limit 1) as oldest_seq,
  (select at from events where collection_id = collections.id order by seq limit 1) as oldest_at
  from collections where id > ? order by id limit ?`;
export const oldestEventsSql = 'select seq, at from events where collection_id = ? order by seq limit ?';
export const pruneEventsSql = 'delete from events where collection_id = ? and seq <= ?';
