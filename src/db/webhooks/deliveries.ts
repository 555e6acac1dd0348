// Webhooks' delivery log (openapi.yaml, WebhookDelivery; docs/webhooks.md): every attempt, listed, retried,
// and pruned after DELIVERY_LOG_MS (webhooks/delivery-log.ts).
import { assignable } from '../../rows.ts';
import type { Dialect, SqlValue } from '../engine/dialect.ts';
import { pruneWebhookDeliveriesSql, retryWebhookStreamSql, webhookDeliveriesSql, webhookDeliverySql } from '../engine/sql/webhooks.ts';

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

export type DeliveryRow = Omit<WebhookDelivery, 'id' | 'seq' | 'webhook_id'> & {
  id: number | string;
  seq: number | string;
  message_id: string;
};

export const deliveryOf = ({ id, seq, message_id, status, duration_ms, attempt, ...rest }: DeliveryRow): WebhookDelivery => ({
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

/** The attempt of a delivery to log (WebhookDelivery, less its id). */
export type Attempt = Omit<WebhookDelivery, 'id'>;

export const attemptValues = (webhookId: number, a: Attempt): SqlValue[] => [
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

/**
 * Makes the next attempt of the change the webhook's attempt `deliveryId` failed to deliver due now:
 * `retried`; `absent` when the webhook has no such attempt (an id no attempt is given among them, as
 * ../../rows.ts's assignable says); `delivered` when the change has been acknowledged since (or the
 * attempt delivered it), or its collection is gone.
 */
export async function retryWebhookDelivery(
  { query, changes }: Dialect,
  accountId: number,
  webhookId: number,
  deliveryId: number,
): Promise<'retried' | 'absent' | 'delivered'> {
  if (!assignable(deliveryId)) return 'absent';
  const [attempt] = await query<{ collection: string; seq: number | string; outcome: string }>(webhookDeliverySql, [webhookId, deliveryId]);
  if (!attempt) return 'absent';
  if (attempt.outcome === 'delivered') return 'delivered';
  const due = await query(retryWebhookStreamSql, [new Date().toISOString(), webhookId, accountId, attempt.collection, Number(attempt.seq)]);
  if (due.length === 0) return 'delivered';
  changes.emit('webhooks');
  return 'retried';
}

/** Deletes up to `limit` attempts of the delivery log made before `before` (ISO 8601), oldest first; answers how many went. */
export async function pruneWebhookDeliveries({ query }: Dialect, before: string, limit: number): Promise<number> {
  return (await query(pruneWebhookDeliveriesSql, [before, limit])).length;
}
