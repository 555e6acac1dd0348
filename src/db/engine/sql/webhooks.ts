// The SQL of webhooks both dialects run (docs/webhooks.md): their settings, their streams and leases,
// and the delivery log. `enabled` is bound as 1 or 0 and compared, which both dialects store as their boolean.
const webhookColumns =
  'w.id, w.url, w.collections, w.events, w.filter, w.description, w.enabled, w.disabled_reason, w.created_at, w.updated_at';
/** Makes the account's webhook, unless it holds `?` already: then no row is answered. */
export const insertWebhookSql = `insert into webhooks (account_id, url, collections, events, filter, description, secret, enabled, created_at, updated_at)
  select ?, ?, ?, ?, ?, ?, ?, (? = 1), ?, ? where (select count(*) from webhooks where account_id = ?) < ? returning id`;
export const listWebhooksSql = `select ${webhookColumns} from webhooks w where w.account_id = ? order by w.id`;
/**
 * The account's webhook `?`, any id up to 2^53 − 1 (getWebhook): compared as a bigint, since `webhooks.id` is an
 * integer of 32 bits on PostgreSQL (migration 0016), which takes a larger binding for an error, not for no row.
 */
export const webhookSql = `select ${webhookColumns} from webhooks w where w.account_id = ? and w.id = cast(? as bigint)`;
/** A webhook's state: what it owes (the events after each stream's acknowledged seq), since when it fails, and what retention dropped. */
export const webhookStateSql = `select coalesce(sum(c.last_seq - s.acked_seq), 0) as pending, min(s.failing_since) as failing_since,
  coalesce(sum(s.dropped), 0) as dropped from webhook_streams s join collections c on c.id = s.collection_id where s.webhook_id = ?`;
export const lastWebhookDeliverySql = `select ${deliveryColumns()} from webhook_deliveries where webhook_id = ? order by id desc limit 1`;
export const updateWebhookSql = `update webhooks set url = ?, collections = ?, events = ?, filter = ?, description = ?, enabled = (? = 1),
  disabled_reason = ?, updated_at = ? where account_id = ? and id = ? returning id`;
export const setWebhookSecretSql = 'update webhooks set secret = ?, updated_at = ? where account_id = ? and id = ? returning secret';
export const deleteWebhookSql = 'delete from webhooks where account_id = ? and id = ? returning id';
export const deleteWebhookStreamsSql = 'delete from webhook_streams where webhook_id = ?';
export const deleteWebhookDeliveriesSql = 'delete from webhook_deliveries where webhook_id = ?';
/** The account's collections, with their latest seq: the streams a webhook starts at (from now on). */
export const accountCollectionSeqsSql = 'select id, name, last_seq from collections where account_id = ?';
export const webhookStreamIdsSql = 'select collection_id from webhook_streams where webhook_id = ?';
export const insertWebhookStreamSql = `insert into webhook_streams (webhook_id, collection_id, acked_seq, attempt, next_at)
  values (?, ?, ?, 0, ?) on conflict (webhook_id, collection_id) do nothing`;
export const deleteWebhookStreamSql = 'delete from webhook_streams where webhook_id = ? and collection_id = ?';
/** Re-enabled: each stream's next attempt is due now, its count of attempts starts over. */
export const resumeWebhookStreamsSql = 'update webhook_streams set attempt = 0, next_at = ?, failing_since = null where webhook_id = ?';
/** What a stream claimed needs to deliver: its webhook's settings and its collection's name, by the stream's key. */
export const streamDeliverySql = `select w.url, w.secret, w.events, w.filter, w.enabled, c.name as collection from webhook_streams s
  join webhooks w on w.id = s.webhook_id join collections c on c.id = s.collection_id where s.webhook_id = ? and s.collection_id = ?`;
/** An attempt failed: the next is due at `?`; the lease is let go. */
export const failWebhookStreamSql = `update webhook_streams set attempt = ?, next_at = ?, failing_since = coalesce(failing_since, ?),
  lease_owner = null, lease_until = null where webhook_id = ? and collection_id = ? and lease_owner = ?`;
/** Retention dropped events the stream owed: it moves past them, counting them. */
export const skipDroppedSql = `update webhook_streams set acked_seq = ?, dropped = dropped + ?
  where webhook_id = ? and collection_id = ? and lease_owner = ?`;
export const releaseWebhookStreamSql = `update webhook_streams set lease_owner = null, lease_until = null
  where webhook_id = ? and collection_id = ? and lease_owner = ?`;
export const disableWebhookSql = 'update webhooks set enabled = (? = 1), disabled_reason = ?, updated_at = ? where id = ?';
export const insertWebhookDeliverySql = `insert into webhook_deliveries (webhook_id, collection, seq, message_id, attempt, outcome, status,
  duration_ms, error, next_attempt_at, at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
/** A page of a webhook's deliveries, newest first, before the delivery `?` (its id). */
export const webhookDeliveriesSql = `select ${deliveryColumns()} from webhook_deliveries where webhook_id = ? and id < ? order by id desc limit ?`;
/**
 * The oldest seq of the collection `?` that a webhook still owes, within the backlog limit: retention
 * keeps the events after it (retention.ts).
 */
export const webhookFloorSql = 'select min(acked_seq) as floor from webhook_streams where collection_id = ?';

function deliveryColumns(): string {
  return 'id, collection, seq, message_id, attempt, outcome, status, duration_ms, error, next_attempt_at, at';
}
/** Whether any webhook is enabled: the worker claims nothing until one is. */
export const anyWebhookSql = 'select id from webhooks where enabled limit 1';
/** One attempt of the webhook's log, by id. */
export const webhookDeliverySql = 'select collection, seq, outcome from webhook_deliveries where webhook_id = ? and id = ?';
/** The next attempt of the stream of the account's collection `?` made due at `?`, while it has not acknowledged the seq `?`. */
export const retryWebhookStreamSql = `update webhook_streams set next_at = ? where webhook_id = ?
  and collection_id = (select id from collections where account_id = ? and name = ?) and acked_seq < ? returning webhook_id`;
/** Per webhook: the changes owed, when the oldest of those its streams are stuck on was made, and those retention dropped. */
export const webhookBacklogSql = `select w.id as webhook_id, coalesce(sum(c.last_seq - s.acked_seq), 0) as pending, min(e.at) as oldest,
  coalesce(sum(s.dropped), 0) as dropped from webhooks w left join webhook_streams s on s.webhook_id = w.id
  left join collections c on c.id = s.collection_id left join events e on e.collection_id = s.collection_id and e.seq = s.acked_seq + 1
  group by w.id order by w.id`;
/** Deletes up to `?` (the second) attempts of the delivery log made before `?`, oldest first. */
export const pruneWebhookDeliveriesSql = `delete from webhook_deliveries where id in
  (select id from webhook_deliveries where at < ? order by id limit ?) returning id`;
/** Every webhook's collections of its account that it has no stream of (they were made after it). */
export const streamsMissingSql = `select w.id, w.collections, c.id as collection_id, c.name from webhooks w
  join collections c on c.account_id = w.account_id
  where not exists (select 1 from webhook_streams s where s.webhook_id = w.id and s.collection_id = c.id)`;
/** streamsMissingSql of the collection `?` alone. */
export const collectionStreamsMissingSql = `${streamsMissingSql} and c.id = ?`;
