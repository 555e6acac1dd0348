// Webhooks (openapi.yaml, the `webhooks` tag; docs/webhooks.md): their settings, and their progress
// through each collection's events, one row per webhook and collection (a stream): the event log is the
// outbox, and a delivery is the event after the stream's acknowledged seq, sent until acknowledged.
// Every attempt is a row of the delivery log. The worker (src/webhooks/) claims streams with a lease.
import { randomBytes } from 'node:crypto';
import { conflict } from '../../errors.ts';
import type { Dialect, SqlValue, WriteTx } from '../engine/dialect.ts';
import { Groups } from '../engine/grouping.ts';
import type { EventType } from '../events/events.ts';
import { beginOnce, type Once, recordOnce } from '../rows/idempotency.ts';
import { lockAccountSql } from '../sql/collections.ts';
import {
  accountCollectionSeqsSql,
  ackWebhookStreamSql,
  anyWebhookSql,
  collectionStreamsMissingSql,
  deleteWebhookDeliveriesSql,
  deleteWebhookSql,
  deleteWebhookStreamSql,
  deleteWebhookStreamsSql,
  disableWebhookSql,
  failWebhookStreamSql,
  insertWebhookDeliverySql,
  insertWebhookSql,
  insertWebhookStreamSql,
  lastWebhookDeliverySql,
  listWebhooksSql,
  pruneWebhookDeliveriesSql,
  releaseWebhookStreamSql,
  resumeWebhookStreamsSql,
  retryWebhookStreamSql,
  setWebhookSecretSql,
  skipDroppedSql,
  streamDeliverySql,
  streamsMissingSql,
  updateWebhookSql,
  webhookBacklogSql,
  webhookDeliveriesSql,
  webhookDeliverySql,
  webhookSql,
  webhookStateSql,
  webhookStreamIdsSql,
} from '../sql/webhooks.ts';

/** What a webhook's owner sets of it (openapi.yaml, NewWebhook). */
export interface WebhookSettings {
  url: string;
  /** The collections it delivers the changes of, by name, or null for every collection of its account. */
  collections: string[] | null;
  events: EventType[];
  /** The filter's JSON (the filter language), or null for every row. */
  filter: unknown;
  description: string | null;
}

/** A webhook as its account sees it (openapi.yaml, Webhook), with its id. */
export interface Webhook extends WebhookSettings {
  id: number;
  enabled: boolean;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
}

/** One attempt of a delivery (openapi.yaml, WebhookDelivery). */
export interface WebhookDelivery {
  id: number;
  collection: string;
  seq: number;
  /** The `webhook-id` header of the attempt: the same on every attempt of one change to one webhook. */
  webhook_id: string;
  attempt: number;
  outcome: 'delivered' | 'failed';
  status: number | null;
  duration_ms: number;
  error: string | null;
  next_attempt_at: string | null;
  at: string;
}

/** How a webhook's deliveries stand (openapi.yaml, WebhookState). */
export interface WebhookState {
  pending: number;
  failing_since: string | null;
  dropped: number;
  last_delivery: WebhookDelivery | null;
}

/** A secret of Standard Webhooks: `whsec_` and the base64 of 24 random bytes. */
const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

type WebhookRow = {
  id: number | string;
  url: string;
  collections: string | null;
  events: string;
  filter: string | null;
  description: string | null;
  enabled: boolean | number;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
};

const webhookOf = (row: WebhookRow): Webhook => ({
  id: Number(row.id),
  url: row.url,
  collections: row.collections === null ? null : (JSON.parse(row.collections) as string[]),
  events: JSON.parse(row.events) as EventType[],
  filter: row.filter === null ? null : JSON.parse(row.filter),
  description: row.description,
  enabled: Boolean(row.enabled),
  disabled_reason: row.disabled_reason,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

const settingsValues = (settings: WebhookSettings): SqlValue[] => [
  settings.url,
  settings.collections === null ? null : JSON.stringify(settings.collections),
  JSON.stringify(settings.events),
  settings.filter === null ? null : JSON.stringify(settings.filter),
  settings.description,
];

/**
 * Makes the account's webhook, unless it holds `max` already (409), with a stream of each of its
 * collections the webhook takes, from the collection's latest seq on: it delivers the changes made from
 * now. Exact under concurrency, as createAccountKey is: the account's row is held until commit. With an
 * Idempotency-Key, its answer is stored in the same transaction (idempotency.ts).
 */
export async function createWebhook(
  db: Dialect,
  accountId: number,
  settings: WebhookSettings,
  max: number,
  once?: Once<Webhook & { secret: string }>,
): Promise<Webhook & { secret: string }> {
  const made = await db.knex.transaction(async (trx) => {
    if (once) await beginOnce(db, trx, accountId, once);
    await db.run(trx, lockAccountSql, [accountId]);
    const now = new Date().toISOString();
    const secret = newSecret();
    const [inserted] = await db.run<{ id: number | string }>(trx, insertWebhookSql, [
      accountId,
      ...settingsValues(settings),
      secret,
      1,
      now,
      now,
      accountId,
      max,
    ]);
    if (!inserted) throw conflict(`The account holds ${max} webhooks, the most it may: delete one to make another.`);
    const id = Number(inserted.id);
    await startStreams(db, trx, accountId, id, settings.collections, now);
    const webhook = { id, ...settings, enabled: true, disabled_reason: null, created_at: now, updated_at: now, secret };
    if (once) await recordOnce(db, trx, accountId, once, webhook);
    return webhook;
  });
  db.changes.emit('webhooks');
  return made;
}

/** Gives the webhook a stream of each collection of the account it takes and has none of, from its latest seq; drops those it no longer takes. */
async function startStreams(db: Dialect, trx: WriteTx, accountId: number, webhookId: number, names: string[] | null, now: string) {
  const taken = names === null ? undefined : new Set(names);
  const collections = await db.run<{ id: number | string; name: string; last_seq: number | string }>(trx, accountCollectionSeqsSql, [
    accountId,
  ]);
  const streams = new Set(
    (await db.run<{ collection_id: number | string }>(trx, webhookStreamIdsSql, [webhookId])).map((s) => Number(s.collection_id)),
  );
  for (const { id, name, last_seq } of collections) {
    const takes = taken === undefined || taken.has(name);
    if (takes && !streams.has(Number(id))) await db.run(trx, insertWebhookStreamSql, [webhookId, Number(id), Number(last_seq), now]);
    if (!takes && streams.has(Number(id))) await db.run(trx, deleteWebhookStreamSql, [webhookId, Number(id)]);
  }
}

export async function listWebhooks({ query }: Dialect, accountId: number): Promise<Webhook[]> {
  return (await query<WebhookRow>(listWebhooksSql, [accountId])).map(webhookOf);
}

/** The account's webhook `id`, or undefined when it has none of that id. */
export async function getWebhook({ query }: Dialect, accountId: number, id: number): Promise<Webhook | undefined> {
  const [row] = await query<WebhookRow>(webhookSql, [accountId, id]);
  return row && webhookOf(row);
}

/** How the webhook's deliveries stand: what it owes, since when it fails, what was dropped, its last attempt. */
export async function webhookState({ query }: Dialect, id: number): Promise<WebhookState> {
  const [state] = await query<{ pending: number | string; failing_since: string | null; dropped: number | string }>(webhookStateSql, [id]);
  const [last] = await query<DeliveryRow>(lastWebhookDeliverySql, [id]);
  return {
    pending: Number(state?.pending ?? 0),
    failing_since: state?.failing_since ?? null,
    dropped: Number(state?.dropped ?? 0),
    last_delivery: last ? deliveryOf(last) : null,
  };
}

/**
 * Sets the webhook's settings and whether it is enabled; undefined when the account has no such
 * webhook. Collections it takes anew start at their latest seq; re-enabled, it resumes where it stopped.
 */
export async function updateWebhook(
  db: Dialect,
  accountId: number,
  id: number,
  change: (current: Webhook) => WebhookSettings & { enabled: boolean },
): Promise<Webhook | undefined> {
  let resumed = false;
  const updated = await db.knex.transaction(async (trx) => {
    const [row] = await db.run<WebhookRow>(trx, webhookSql, [accountId, id]);
    if (!row) return undefined;
    const current = webhookOf(row);
    const next = change(current);
    const now = new Date().toISOString();
    const reason = next.enabled ? null : current.enabled ? 'disabled by its account' : current.disabled_reason;
    await db.run(trx, updateWebhookSql, [...settingsValues(next), next.enabled ? 1 : 0, reason, now, accountId, id]);
    await startStreams(db, trx, accountId, id, next.collections, now);
    resumed = next.enabled && !current.enabled;
    if (resumed) await db.run(trx, resumeWebhookStreamsSql, [now, id]);
    const { url, collections, events, filter, description, enabled } = next;
    return { ...current, url, collections, events, filter, description, enabled, disabled_reason: reason, updated_at: now };
  });
  if (resumed) db.changes.emit('webhooks');
  return updated;
}

/** A new secret for the webhook, answered once; undefined when the account has no such webhook. With an Idempotency-Key, its answer stored. */
export async function rotateWebhookSecret(db: Dialect, accountId: number, id: number, once?: Once<string>): Promise<string | undefined> {
  return db.knex.transaction(async (trx) => {
    if (once) await beginOnce(db, trx, accountId, once);
    const [row] = await db.run<{ secret: string }>(trx, setWebhookSecretSql, [newSecret(), new Date().toISOString(), accountId, id]);
    // A webhook not found is a 404, which stores no answer.
    if (row && once) await recordOnce(db, trx, accountId, once, row.secret);
    return row?.secret;
  });
}

/** Deletes the webhook, its streams and its delivery log; false when the account has no such webhook. With an Idempotency-Key, its answer stored. */
export async function deleteWebhook(db: Dialect, accountId: number, id: number, once?: Once<boolean>): Promise<boolean> {
  return db.knex.transaction(async (trx) => {
    if (once) await beginOnce(db, trx, accountId, once);
    const deleted = await db.run(trx, deleteWebhookSql, [accountId, id]);
    if (deleted.length === 0) return false;
    await db.run(trx, deleteWebhookStreamsSql, [id]);
    await db.run(trx, deleteWebhookDeliveriesSql, [id]);
    if (once) await recordOnce(db, trx, accountId, once, true);
    return true;
  });
}

type DeliveryRow = Omit<WebhookDelivery, 'id' | 'seq' | 'webhook_id'> & { id: number | string; seq: number | string; message_id: string };

const deliveryOf = ({ id, seq, message_id, status, duration_ms, attempt, ...rest }: DeliveryRow): WebhookDelivery => ({
  ...rest,
  id: Number(id),
  seq: Number(seq),
  webhook_id: message_id,
  attempt: Number(attempt),
  status: status === null ? null : Number(status),
  duration_ms: Number(duration_ms),
});

/** A page of the webhook's attempts, newest first, those before the attempt `before` (its id). */
export async function listWebhookDeliveries({ query }: Dialect, id: number, before: number, limit: number): Promise<WebhookDelivery[]> {
  return (await query<DeliveryRow>(webhookDeliveriesSql, [id, before, limit])).map(deliveryOf);
}

// The worker's side (src/webhooks/worker.ts).

/** A stream the worker holds the lease of: where it stands. */
export interface ClaimedStream {
  webhookId: number;
  collectionId: number;
  ackedSeq: number;
  /** The attempts made of the event after `ackedSeq`. */
  attempt: number;
}

/**
 * Leases to `owner` until `leaseUntil` up to `limit` streams of enabled webhooks that owe events and
 * whose next attempt is due by `now`, unless another instance's lease on them runs.
 */
export async function claimStreams(
  { query, claimStreamsSql }: Dialect,
  owner: string,
  now: string,
  leaseUntil: string,
  limit: number,
): Promise<ClaimedStream[]> {
  const rows = await query<{
    webhook_id: number | string;
    collection_id: number | string;
    acked_seq: number | string;
    attempt: number | string;
  }>(claimStreamsSql, [now, now, limit, owner, leaseUntil]);
  return rows.map((row) => ({
    webhookId: Number(row.webhook_id),
    collectionId: Number(row.collection_id),
    ackedSeq: Number(row.acked_seq),
    attempt: Number(row.attempt),
  }));
}

/** What the worker needs to deliver a stream's events: its webhook's settings, secret and collection's name. */
export interface StreamTarget {
  url: string;
  secret: string;
  events: EventType[];
  filter: unknown;
  enabled: boolean;
  collection: string;
}

export async function streamTarget({ query }: Dialect, webhookId: number, collectionId: number): Promise<StreamTarget | undefined> {
  const [row] = await query<
    Omit<StreamTarget, 'events' | 'filter' | 'enabled'> & { events: string; filter: string | null; enabled: boolean | number }
  >(streamDeliverySql, [webhookId, collectionId]);
  if (!row) return undefined;
  return {
    ...row,
    events: JSON.parse(row.events),
    filter: row.filter === null ? null : JSON.parse(row.filter),
    enabled: Boolean(row.enabled),
  };
}

/** The attempt of a delivery to log (WebhookDelivery, less its id). */
export type Attempt = Omit<WebhookDelivery, 'id'>;

const attemptValues = (webhookId: number, a: Attempt): SqlValue[] => [
  webhookId,
  a.collection,
  a.seq,
  a.webhook_id,
  a.attempt,
  a.outcome,
  a.status,
  a.duration_ms,
  a.error,
  a.next_attempt_at,
  a.at,
];

/** An acknowledgement of a stream, waiting for its group (ackStream). */
interface Ack {
  stream: ClaimedStream;
  owner: string;
  seq: number;
  leaseUntil: string;
  attempt?: Attempt;
}

/**
 * The stream acknowledged up to `seq` (an attempt `delivered`, logged with it; or none, for changes the
 * webhook does not take), its lease renewed until `leaseUntil`; false when `owner` no longer holds it.
 * Answered once committed, in one transaction with the acknowledgements of other streams that waited
 * beside it (ackGroups).
 */
export function ackStream(
  db: Dialect,
  stream: ClaimedStream,
  owner: string,
  seq: number,
  leaseUntil: string,
  attempt?: Attempt,
): Promise<boolean> {
  return ackGroups(db).add('acks', { stream, owner, seq, leaseUntil, attempt });
}

const ackReturning = `${ackWebhookStreamSql} returning webhook_id`;

/**
 * The acknowledgements of each database's streams, committed in groups: those that come while a group
 * commits wait, and go together in the next, one transaction, each checked against its own lease. A
 * transaction of its own for each delivery spent most of its time beginning and committing (on SQLite,
 * whose one writer commits one transaction at a time; on PostgreSQL, each commit waits for its WAL flush).
 * Two groups under way at once: on PostgreSQL one runs its statements while the other waits for its
 * flush; on SQLite the second waits for the writer. A group that fails runs each acknowledgement again
 * alone (batches.ts).
 */
const acks = new WeakMap<Dialect, Groups<Ack, boolean>>();

function ackGroups(db: Dialect): Groups<Ack, boolean> {
  let groups = acks.get(db);
  if (!groups) {
    groups = new Groups({ run: (_key, group) => db.knex.transaction((trx) => ackIn(db, trx, group)), maxRunning: 2 });
    acks.set(db, groups);
  }
  return groups;
}

/** Each acknowledgement of `group` in `trx`, in order: whether its owner still held its stream. */
async function ackIn(db: Dialect, trx: WriteTx, group: Ack[]): Promise<boolean[]> {
  const held: boolean[] = [];
  for (const { stream, owner, seq, leaseUntil, attempt } of group) {
    const holds = (await db.run(trx, ackReturning, [seq, leaseUntil, stream.webhookId, stream.collectionId, owner])).length > 0;
    if (holds && attempt) await db.run(trx, insertWebhookDeliverySql, attemptValues(stream.webhookId, attempt));
    held.push(holds);
  }
  return held;
}

/**
 * An attempt failed: logged, the next one due at its `next_attempt_at`, the lease let go; with no next
 * attempt (past the schedule), the webhook is disabled for `reason` instead.
 */
export async function failStream(db: Dialect, stream: ClaimedStream, owner: string, attempt: Attempt, reason?: string): Promise<void> {
  await db.knex.transaction(async (trx) => {
    const next = attempt.next_attempt_at ?? attempt.at;
    const held = await db.run(trx, `${failWebhookStreamSql} returning webhook_id`, [
      attempt.attempt,
      next,
      attempt.at,
      stream.webhookId,
      stream.collectionId,
      owner,
    ]);
    if (held.length === 0) return;
    await db.run(trx, insertWebhookDeliverySql, attemptValues(stream.webhookId, attempt));
    if (reason !== undefined) await db.run(trx, disableWebhookSql, [0, reason, attempt.at, stream.webhookId]);
  });
}

/** The events after `ackedSeq` up to `seq` were pruned before delivery: the stream moves past them, counting them dropped. */
export async function skipDropped({ query }: Dialect, stream: ClaimedStream, owner: string, seq: number): Promise<void> {
  await query(skipDroppedSql, [seq, seq - stream.ackedSeq, stream.webhookId, stream.collectionId, owner]);
}

export async function releaseStream({ query }: Dialect, stream: ClaimedStream, owner: string): Promise<void> {
  await query(releaseWebhookStreamSql, [stream.webhookId, stream.collectionId, owner]);
}

/**
 * Gives each webhook of the collection's account that takes it and has no stream of it one, from its
 * first event: the collection was made after the webhook (or after its streams were last set). Answers
 * how many streams it started.
 */
export async function startCollectionStreams(db: Dialect, collectionId: number): Promise<number> {
  return startStreamsOf(db, collectionStreamsMissingSql, [collectionId]);
}

/**
 * startCollectionStreams() of every collection: when this instance begins to listen for changes (the
 * first webhook), it may have missed the first change of a collection made since.
 */
export async function startMissingStreams(db: Dialect): Promise<number> {
  return startStreamsOf(db, streamsMissingSql, []);
}

/** A stream from the first event of each collection `sql` finds a webhook without, that the webhook takes. */
async function startStreamsOf({ query }: Dialect, sql: string, params: SqlValue[]): Promise<number> {
  const missing = await query<{ id: number | string; collections: string | null; collection_id: number | string; name: string }>(
    sql,
    params,
  );
  const now = new Date().toISOString();
  let started = 0;
  for (const { id, collections, collection_id, name } of missing) {
    if (collections !== null && !(JSON.parse(collections) as string[]).includes(name)) continue;
    await query(insertWebhookStreamSql, [Number(id), Number(collection_id), 0, now]);
    started++;
  }
  return started;
}

/** Whether any webhook of any account is enabled. */
export async function anyWebhook({ query }: Dialect): Promise<boolean> {
  return (await query(anyWebhookSql, [])).length > 0;
}

/**
 * Makes the next attempt of the change the webhook's attempt `deliveryId` failed to deliver due now:
 * `retried`; `absent` when the webhook has no such attempt; `delivered` when the change has been
 * acknowledged since (or the attempt delivered it), or its collection is gone.
 */
export async function retryWebhookDelivery(
  { query, changes }: Dialect,
  accountId: number,
  webhookId: number,
  deliveryId: number,
): Promise<'retried' | 'absent' | 'delivered'> {
  const [attempt] = await query<{ collection: string; seq: number | string; outcome: string }>(webhookDeliverySql, [webhookId, deliveryId]);
  if (!attempt) return 'absent';
  if (attempt.outcome === 'delivered') return 'delivered';
  const due = await query(retryWebhookStreamSql, [new Date().toISOString(), webhookId, accountId, attempt.collection, Number(attempt.seq)]);
  if (due.length === 0) return 'delivered';
  changes.emit('webhooks');
  return 'retried';
}

/** How far behind a webhook is (metrics.ts): the changes it owes, the time of the oldest (ms since the epoch), what retention dropped. */
export interface WebhookBacklog {
  webhookId: number;
  pending: number;
  oldest: number | undefined;
  dropped: number;
}

/** The backlog of every webhook of every account, by id. */
export async function webhookBacklog({ query }: Dialect): Promise<WebhookBacklog[]> {
  const rows = await query<{ webhook_id: number | string; pending: number | string; oldest: string | null; dropped: number | string }>(
    webhookBacklogSql,
    [],
  );
  return rows.map((row) => ({
    webhookId: Number(row.webhook_id),
    pending: Number(row.pending),
    oldest: row.oldest ? Date.parse(row.oldest) : undefined,
    dropped: Number(row.dropped),
  }));
}

/** How long the delivery log keeps an attempt: 7 days (docs/webhooks.md). */
export const DELIVERY_LOG_MS = 7 * 24 * 60 * 60 * 1000;

/** Deletes up to `limit` attempts of the delivery log made before `before` (ISO 8601), oldest first; answers how many went. */
export async function pruneWebhookDeliveries({ query }: Dialect, before: string, limit: number): Promise<number> {
  return (await query(pruneWebhookDeliveriesSql, [before, limit])).length;
}
