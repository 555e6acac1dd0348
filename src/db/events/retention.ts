// Event retention: each collection keeps its newest events, by count and by age, for feed clients to
// resume from (asyncapi.yaml, "Resuming"). Pruning runs in small batches, each its own short statement,
// so writers wait for at most one batch; and it only ever removes a collection's oldest events, so what
// is retained always runs without a gap up to the latest seq.
import type { Dialect } from '../engine/dialect.ts';
import { collectionsAfterSql, oldestEventsSql, pruneEventsSql } from '../engine/sql/events.ts';
import { webhookFloorSql } from '../engine/sql/webhooks.ts';

export interface RetentionPolicy {
  /** Events kept per collection, newest first. */
  keepCount: number;
  /** Events older than this many milliseconds go, whatever the count. */
  keepMs: number;
  /** The most events one statement deletes. */
  batchSize: number;
  /**
   * The most events of a collection kept for a webhook that still owes them (docs/webhooks.md,
   * "Backlog"), whatever the count and age above: past it, the oldest go. Default WEBHOOK_BACKLOG.
   */
  webhookBacklog?: number;
}

/** The events of a collection a webhook may owe that retention keeps for it: 100,000. */
const WEBHOOK_BACKLOG = 100_000;

/** One page of collections, by id, with their latest seq: what a pruning pass walks through. */
export async function collectionsAfter({ query }: Dialect, afterId: number, limit: number): Promise<{ id: number; lastSeq: number }[]> {
  const rows = await query<{ id: number | string; last_seq: number | string }>(collectionsAfterSql, [afterId, limit]);
  return rows.map((row) => ({ id: Number(row.id), lastSeq: Number(row.last_seq) }));
}

/**
 * Deletes the longest run of the collection's oldest events (at most `batchSize`) that are past
 * retention, and returns how many went; fewer than `batchSize` means the collection is done.
 */
export async function pruneEventBatch(
  { query }: Dialect,
  collectionId: number,
  lastSeq: number,
  policy: RetentionPolicy,
  now = Date.now(),
) {
  const pastCount = lastSeq - policy.keepCount;
  const cutoff = new Date(now - policy.keepMs).toISOString();
  const oldest = await query<{ seq: number | string; at: string }>(oldestEventsSql, [collectionId, policy.batchSize]);
  // What the webhooks of the collection still owe stays, up to the backlog.
  const [{ floor } = { floor: null }] = await query<{ floor: number | string | null }>(webhookFloorSql, [collectionId]);
  const owedAfter =
    floor === null ? Number.POSITIVE_INFINITY : Math.max(Number(floor), lastSeq - (policy.webhookBacklog ?? WEBHOOK_BACKLOG));
  let past = 0;
  for (const event of oldest) {
    if ((Number(event.seq) > pastCount && event.at >= cutoff) || Number(event.seq) > owedAfter) break;
    past++;
  }
  if (past === 0) return 0;
  await query(pruneEventsSql, [collectionId, Number(oldest[past - 1].seq)]);
  return past;
}
