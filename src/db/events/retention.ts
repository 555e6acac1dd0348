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

/**
 * One page of collections, by id, with their latest seq and whether their oldest event is past retention
 * by `now`: what a pruning pass walks through, reading the events of those past it only.
 */
export async function collectionsAfter(
  { query }: Dialect,
  afterId: number,
  limit: number,
  policy: RetentionPolicy,
  now = Date.now(),
): Promise<{ id: number; lastSeq: number; past: boolean }[]> {
  type Row = { id: number | string; last_seq: number | string; oldest_seq: number | string | null; oldest_at: string | null };
  const rows = await query<Row>(collectionsAfterSql, [afterId, limit]);
  const cutoff = cutoffOf(policy, now);
  return rows.map(({ id, last_seq, oldest_seq, oldest_at }) => {
    const lastSeq = Number(last_seq);
    const past = oldest_seq !== null && oldest_at !== null && isPast({ seq: oldest_seq, at: oldest_at }, lastSeq, policy, cutoff);
    return { id: Number(id), lastSeq, past };
  });
}

/**
 * Deletes the longest run of the collection's oldest events (at most `batchSize`) that are past
 * retention, and returns how many went; fewer than `batchSize` means the collection is done. Its oldest
 * event is read first: past by count alone, the run ends at a seq reckoned from it (what is retained runs
 * without a gap); past by age, the oldest events are read to find where it ends.
 */
export async function pruneEventBatch(
  { query }: Dialect,
  collectionId: number,
  lastSeq: number,
  policy: RetentionPolicy,
  now = Date.now(),
) {
  const cutoff = cutoffOf(policy, now);
  const [first] = await query<OldEvent>(oldestEventsSql, [collectionId, 1]);
  if (first === undefined || !isPast(first, lastSeq, policy, cutoff)) return 0;
  // What the webhooks of the collection still owe stays, up to the backlog.
  const [{ floor } = { floor: null }] = await query<{ floor: number | string | null }>(webhookFloorSql, [collectionId]);
  const owedAfter =
    floor === null ? Number.POSITIVE_INFINITY : Math.max(Number(floor), lastSeq - (policy.webhookBacklog ?? WEBHOOK_BACKLOG));
  if (first.at < cutoff) {
    const oldest = await query<OldEvent>(oldestEventsSql, [collectionId, policy.batchSize]);
    const kept = oldest.findIndex((event) => !isPast(event, lastSeq, policy, cutoff) || Number(event.seq) > owedAfter);
    const past = kept === -1 ? oldest.length : kept;
    if (past > 0) await query(pruneEventsSql, [collectionId, Number(oldest[past - 1].seq)]);
    return past;
  }
  const firstSeq = Number(first.seq);
  const last = Math.min(firstSeq + policy.batchSize - 1, lastSeq - policy.keepCount, owedAfter);
  if (last < firstSeq) return 0;
  await query(pruneEventsSql, [collectionId, last]);
  return last - firstSeq + 1;
}

/** One of a collection's oldest events, as oldestEventsSql reads it. */
type OldEvent = { seq: number | string; at: string };

/** When an event must have been written since to be kept by age. */
function cutoffOf(policy: RetentionPolicy, now: number): string {
  return new Date(now - policy.keepMs).toISOString();
}

/** Whether the event, of a collection whose latest seq is `lastSeq`, is past retention by count or by age (`cutoff`). */
function isPast(event: OldEvent, lastSeq: number, policy: RetentionPolicy, cutoff: string): boolean {
  return Number(event.seq) <= lastSeq - policy.keepCount || event.at < cutoff;
}
