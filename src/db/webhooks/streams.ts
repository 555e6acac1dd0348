// Webhooks' streams, one row per webhook and collection: the event log is the outbox, and a delivery is
// the event after the stream's acknowledged seq, sent until acknowledged. The worker (src/webhooks/)
// claims streams with a lease, acknowledges, fails or releases them here.

import type { Dialect, SqlValue } from '../engine/dialect.ts';
import { Groups } from '../engine/grouping.ts';
import {
  collectionStreamsMissingSql,
  disableWebhookSql,
  failWebhookStreamSql,
  insertWebhookDeliverySql,
  insertWebhookStreamSql,
  releaseWebhookStreamSql,
  skipDroppedSql,
  streamDeliverySql,
  streamsMissingSql,
  webhookBacklogSql,
} from '../engine/sql/webhooks.ts';
import type { EventType } from '../events/events.ts';
import { type Attempt, attemptValues } from './deliveries.ts';

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
 * Answered once committed, in one statement with the acknowledgements of other streams that waited
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

/**
 * The acknowledgements of each database's streams, committed in groups: those that come while a group
 * commits wait, and go together in the next, one statement that commits on its own (the dialect's
 * ackStreamsSql), each checked against its own lease. A transaction of its own for each delivery spent
 * most of its time beginning and committing (on SQLite, whose one writer commits one transaction at a
 * time; on PostgreSQL, each commit waits for its WAL flush), and a group as a transaction of two
 * statements an acknowledgement spent a round trip (on SQLite, a hand-off to the driver's thread) on
 * each. Two groups under way at once: on PostgreSQL one runs while the other waits for its flush; on
 * SQLite the second waits for the writer. A group that fails runs each acknowledgement again alone
 * (../engine/grouping.ts).
 */
const acks = new WeakMap<Dialect, Groups<Ack, boolean>>();

function ackGroups(db: Dialect): Groups<Ack, boolean> {
  let groups = acks.get(db);
  if (!groups) {
    groups = new Groups({ run: (_key, group) => ackAll(db, group), maxRunning: 2 });
    acks.set(db, groups);
  }
  return groups;
}

/** Each acknowledgement of `group`, in one statement: whether its owner still held its stream. */
async function ackAll(db: Dialect, group: Ack[]): Promise<boolean[]> {
  const values = group.map(({ stream, owner, seq, leaseUntil, attempt }) => [
    stream.webhookId,
    stream.collectionId,
    owner,
    seq,
    leaseUntil,
    attempt ? attemptValues(stream.webhookId, attempt).slice(1) : null,
  ]);
  const held = group.map(() => false);
  for (const row of await db.queryKept<{ i: number | string; held: boolean | number }>(db.ackStreamsSql, [JSON.stringify(values)])) {
    if (row.held) held[Number(row.i)] = true;
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
