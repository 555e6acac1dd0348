// SQLite's SQL of webhooks: claiming the streams that are due, and acknowledging them in groups.
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

/**
 * `stream_acks (i, webhook_id, collection_id, owner, seq, lease_until, attempt)`: one acknowledgement of
 * a group (../../webhooks/streams.ts, ackStreamsSql), `i` only handed back. Its trigger moves the stream
 * on to `seq` and renews its lease, under the lease of `owner` alone, then logs the attempt `attempt`
 * (a JSON array of the delivery log's columns after webhook_id, or null for none) if the stream was
 * held: the two statements of an acknowledgement, as one statement a group, which needs no transaction
 * around it (docs/development.md, "SQLite's writes, one statement each"). TEMP, on the writer's
 * connection, as the row writes' views (rows.ts).
 */
export const streamAcksProcedure = `
  create temp view if not exists stream_acks (i, webhook_id, collection_id, owner, seq, lease_until, attempt) as
    select null, null, null, null, null, null, null where 0;
  create temp trigger if not exists stream_acks_write instead of insert on stream_acks begin
    update webhook_streams set acked_seq = new.seq, attempt = 0, failing_since = null, lease_until = new.lease_until
      where webhook_id = new.webhook_id and collection_id = new.collection_id and lease_owner = new.owner;
    insert into webhook_deliveries (webhook_id, collection, seq, message_id, attempt, outcome, status, duration_ms, error,
        next_attempt_at, at)
      select new.webhook_id, new.attempt ->> 0, new.attempt ->> 1, new.attempt ->> 2, new.attempt ->> 3, new.attempt ->> 4,
        new.attempt ->> 5, new.attempt ->> 6, new.attempt ->> 7, new.attempt ->> 8, new.attempt ->> 9
      from webhook_streams s where new.attempt is not null
        and s.webhook_id = new.webhook_id and s.collection_id = new.collection_id and s.lease_owner = new.owner;
  end;`;

/**
 * ackStreamsSql of the Dialect, on SQLite: `?` a JSON array of `[webhook id, collection id, owner, seq,
 * lease until, attempt]`, each acknowledgement through stream_acks; answers `i` (its place, from 0)
 * and `held` (1 when its owner held the stream) for each.
 */
export const ackStreamsSql = `insert into stream_acks
    select key, value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5 from json_each(?)
  returning i, exists (select 1 from webhook_streams s where s.webhook_id = stream_acks.webhook_id
    and s.collection_id = stream_acks.collection_id and s.lease_owner = stream_acks.owner) as held`;
