// PostgreSQL's SQL of webhooks: claiming the streams that are due.

/**
 * claimStreamsSql of the Dialect: leases up to `?` (the third binding) streams of enabled webhooks that
 * owe events, whose next attempt is due by the first and whose lease is free or expired by the second,
 * to the instance of the fourth until the fifth. Rows another instance is claiming are skipped, not
 * waited for (FOR UPDATE SKIP LOCKED), and the lease is checked again on the row once it is locked.
 */
export const claimStreamsSql = `with due as (select s.webhook_id, s.collection_id from webhook_streams s
    join webhooks w on w.id = s.webhook_id join collections c on c.id = s.collection_id
    where w.enabled and c.last_seq > s.acked_seq and s.next_at <= ? and (s.lease_until is null or s.lease_until < ?)
    order by s.next_at limit ? for update of s skip locked)
  update webhook_streams s set lease_owner = ?, lease_until = ? from due
  where s.webhook_id = due.webhook_id and s.collection_id = due.collection_id
  returning s.webhook_id, s.collection_id, s.acked_seq, s.attempt`;
