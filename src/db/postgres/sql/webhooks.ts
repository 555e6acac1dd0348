// PostgreSQL's SQL of webhooks: claiming the streams that are due, and acknowledging them in groups.

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

/**
 * ackStreamsSql of the Dialect: `?` a JSON array of `[webhook id, collection id, owner, seq, lease
 * until, attempt]`, each moving its stream on to `seq` and renewing its lease, under the lease of
 * `owner` alone, and logging the attempt `attempt` (a JSON array of the delivery log's columns after
 * webhook_id, or null for none) of each stream it held: the two statements of an acknowledgement, for
 * a whole group, as one statement that commits on its own. Answers `i` (the place, from 0) and `held`
 * of each acknowledgement whose owner held its stream.
 *
 * Committed without waiting for its WAL flush (synchronous_commit off, for this statement's transaction
 * alone): visible at once and kept through a crash of the service (kill -9), but a crash of PostgreSQL
 * or of its host may lose the last few hundred ms of acknowledgements, whose changes are then sent
 * again, in order, with the same webhook-id: the durability SQLite's writer has (synchronous=NORMAL),
 * and at least once holds. A stream's next change waits for this commit; a flush each put a disk's
 * sync in the way of every stream's every delivery.
 */
export const ackStreamsSql = `with acks as (
    select (a ->> 0)::integer as webhook_id, (a ->> 1)::integer as collection_id, a ->> 2 as owner, (a ->> 3)::bigint as seq,
      a ->> 4 as lease_until, a -> 5 as attempt, i - 1 as i
    from json_array_elements(?::json) with ordinality as x(a, i), (select set_config('synchronous_commit', 'off', true)) as unflushed
  ), acked as (
    update webhook_streams s set acked_seq = acks.seq, attempt = 0, failing_since = null, lease_until = acks.lease_until
      from acks where s.webhook_id = acks.webhook_id and s.collection_id = acks.collection_id and s.lease_owner = acks.owner
      returning acks.i
  ), logged as (
    insert into webhook_deliveries (webhook_id, collection, seq, message_id, attempt, outcome, status, duration_ms, error,
        next_attempt_at, at)
      select k.webhook_id, k.attempt ->> 0, (k.attempt ->> 1)::bigint, k.attempt ->> 2, (k.attempt ->> 3)::integer,
        k.attempt ->> 4, (k.attempt ->> 5)::integer, (k.attempt ->> 6)::integer, k.attempt ->> 7, k.attempt ->> 8, k.attempt ->> 9
      from acks k join acked using (i)
      where json_typeof(k.attempt) = 'array'
      order by k.i
  )
  select i, true as held from acked`;
