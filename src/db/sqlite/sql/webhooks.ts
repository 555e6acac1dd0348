// SQLite's SQL of webhooks: claiming the streams that are due.
/**
 * claimStreamsSql of the Dialect, on SQLite: as PostgreSQL's, on its one writer, which nothing runs
 * beside: the bindings are when the next attempt is due by, when a lease has expired by, how many, the
 * instance and its lease's end.
 */
export const claimStreamsSql = `with due as (select s.rowid as stream from webhook_streams s
    join webhooks w on w.id = s.webhook_id join collections c on c.id = s.collection_id
    where w.enabled and c.last_seq > s.acked_seq and s.next_at <= ? and (s.lease_until is null or s.lease_until < ?)
    order by s.next_at limit ?)
  update webhook_streams set lease_owner = ?, lease_until = ? where rowid in (select stream from due)
  returning webhook_id, collection_id, acked_seq, attempt`;
