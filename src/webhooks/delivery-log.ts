// The pruning of the webhooks' delivery log (GET /v1/webhooks/{id}/deliveries; docs/webhooks.md): its
// attempts past DELIVERY_LOG_MS go in batches, in each pass of the feed's pruner (src/pruner.ts), as the
// events past their retention do.
import { setImmediate as yieldToWriters } from 'node:timers/promises';
import type { Store } from '../db/open-store.ts';

/** How long the delivery log keeps an attempt: 7 days (docs/webhooks.md). */
const DELIVERY_LOG_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * Deletes the delivery log's attempts older than DELIVERY_LOG_MS, `batchSize` at a time, yielding to
 * writers between batches, until a batch deletes fewer or `stopped()` says the pass ends. Answers how
 * many went.
 */
export async function pruneDeliveryLog(store: Store, batchSize: number, stopped: () => boolean): Promise<number> {
  const before = new Date(Date.now() - DELIVERY_LOG_MS).toISOString();
  let deleted = 0;
  for (;;) {
    if (stopped()) return deleted;
    const batch = await store.pruneWebhookDeliveries(before, batchSize);
    deleted += batch;
    if (batch < batchSize) return deleted;
    await yieldToWriters();
  }
}
