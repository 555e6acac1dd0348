// Webhooks' settings (openapi.yaml, the `webhooks` tag; docs/webhooks.md): making, listing, changing and
// deleting them, their secrets, and how their deliveries stand. A webhook's progress through each
// collection's events is its streams (streams.ts); every attempt is a row of the delivery log (deliveries.ts).

import { randomBytes } from 'node:crypto';
import { conflict } from '../../errors.ts';
import type { Once } from '../../idempotency/answers.ts';
import { assignable } from '../../rows.ts';
import { type AfterCommit, afterCommit } from '../engine/after-commit.ts';
import type { Dialect, SqlValue, WriteTx } from '../engine/dialect.ts';
import { lockAccountSql } from '../engine/sql/collections.ts';
import {
  accountCollectionSeqsSql,
  anyWebhookSql,
  deleteWebhookDeliveriesSql,
  deleteWebhookSql,
  deleteWebhookStreamSql,
  deleteWebhookStreamsSql,
  insertWebhookSql,
  insertWebhookStreamSql,
  lastWebhookDeliverySql,
  listWebhooksSql,
  resumeWebhookStreamsSql,
  setWebhookSecretSql,
  updateWebhookSql,
  webhookSql,
  webhookStateSql,
  webhookStreamIdsSql,
} from '../engine/sql/webhooks.ts';
import type { EventType } from '../events/events.ts';
import { beginOnce, recordOnce } from '../rows/idempotency.ts';
import { type DeliveryRow, deliveryOf, type WebhookDelivery } from './deliveries.ts';

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

/** How a webhook's deliveries stand (openapi.yaml, WebhookState). */
export interface WebhookState {
  pending: number;
  failing_since: string | null;
  dropped: number;
  last_delivery: WebhookDelivery | null;
}

/** A secret of Standard Webhooks: `whsec_` and the base64 of 24 random bytes. */
const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

export type WebhookRow = {
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

export const webhookOf = (row: WebhookRow): Webhook => ({
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
  let after: AfterCommit = [];
  const made = await db.knex.transaction(async (trx) => {
    after = [];
    if (once) await beginOnce(db, trx, accountId, once);
    const webhook = await createWebhookIn(db, trx, after, accountId, settings, max);
    if (once) await recordOnce(db, trx, accountId, once, webhook);
    return webhook;
  });
  await afterCommit(after);
  return made;
}

/**
 * createWebhook() inside the write `trx`, which then holds the account's row: enabled unless `enabled`
 * is false, with `secret` (default a new one); the worker is woken after the commit (`after`).
 */
export async function createWebhookIn(
  db: Dialect,
  trx: WriteTx,
  after: AfterCommit,
  accountId: number,
  settings: WebhookSettings,
  max: number,
  enabled = true,
  secret = newSecret(),
): Promise<Webhook & { secret: string }> {
  await db.run(trx, lockAccountSql, [accountId]);
  const now = new Date().toISOString();
  const [inserted] = await db.run<{ id: number | string }>(trx, insertWebhookSql, [
    accountId,
    ...settingsValues(settings),
    secret,
    enabled ? 1 : 0,
    now,
    now,
    accountId,
    max,
  ]);
  if (!inserted) throw conflict(`The account holds ${max} webhooks, the most it may: delete one to make another.`);
  const id = Number(inserted.id);
  await startStreams(db, trx, accountId, id, settings.collections, now);
  after.push(() => db.changes.emit('webhooks'));
  const reason = enabled ? null : 'disabled by its account';
  return { id, ...settings, enabled, disabled_reason: reason, created_at: now, updated_at: now, secret };
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

/**
 * The account's webhook `id`, or undefined when it has none of that id (an id no webhook is given among
 * them, as ../../rows.ts's assignable says, is not looked for).
 */
export async function getWebhook({ query }: Dialect, accountId: number, id: number): Promise<Webhook | undefined> {
  if (!assignable(id)) return undefined;
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
  let after: AfterCommit = [];
  const updated = await db.knex.transaction(async (trx) => {
    after = [];
    return updateWebhookIn(db, trx, after, accountId, id, change);
  });
  await afterCommit(after);
  return updated;
}

/** updateWebhook() inside the write `trx`, its secret set to `secret` if given; a webhook resumed wakes the worker after the commit (`after`). */
export async function updateWebhookIn(
  db: Dialect,
  trx: WriteTx,
  after: AfterCommit,
  accountId: number,
  id: number,
  change: (current: Webhook) => WebhookSettings & { enabled: boolean },
  secret?: string,
): Promise<Webhook | undefined> {
  const [row] = await db.run<WebhookRow>(trx, webhookSql, [accountId, id]);
  if (!row) return undefined;
  const current = webhookOf(row);
  const next = change(current);
  const now = new Date().toISOString();
  const reason = next.enabled ? null : current.enabled ? 'disabled by its account' : current.disabled_reason;
  await db.run(trx, updateWebhookSql, [...settingsValues(next), next.enabled ? 1 : 0, reason, now, accountId, id]);
  if (secret !== undefined) await db.run(trx, setWebhookSecretSql, [secret, now, accountId, id]);
  await startStreams(db, trx, accountId, id, next.collections, now);
  if (next.enabled && !current.enabled) {
    await db.run(trx, resumeWebhookStreamsSql, [now, id]);
    after.push(() => db.changes.emit('webhooks'));
  }
  const { url, collections, events, filter, description, enabled } = next;
  return { ...current, url, collections, events, filter, description, enabled, disabled_reason: reason, updated_at: now };
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
    if (!(await deleteWebhookIn(db, trx, accountId, id))) return false;
    if (once) await recordOnce(db, trx, accountId, once, true);
    return true;
  });
}

/** deleteWebhook() inside the write `trx`: false when the account has no such webhook. */
export async function deleteWebhookIn(db: Dialect, trx: WriteTx, accountId: number, id: number): Promise<boolean> {
  const deleted = await db.run(trx, deleteWebhookSql, [accountId, id]);
  if (deleted.length === 0) return false;
  await db.run(trx, deleteWebhookStreamsSql, [id]);
  await db.run(trx, deleteWebhookDeliveriesSql, [id]);
  return true;
}

/** Whether any webhook of any account is enabled. */
export async function anyWebhook({ query }: Dialect): Promise<boolean> {
  return (await query(anyWebhookSql, [])).length > 0;
}
