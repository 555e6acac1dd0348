// The pruner: the timer that keeps the database to its retention, deleting every collection's
// events past it, the answers of Idempotency-Keys past theirs, and the webhooks' delivery log past its
// (webhooks/delivery-log.ts), in small batches, so that writes never wait long.
import { setImmediate as yieldToWriters } from 'node:timers/promises';
import type { RetentionPolicy } from './db/events/retention.ts';
import type { Store } from './db/open-store.ts';
import type { Logger } from './log.ts';
import { Passes } from './periodic.ts';
import { pruneDeliveryLog } from './webhooks/delivery-log.ts';

const COLLECTIONS_PER_PAGE = 100;

/**
 * Prunes every collection's events past retention (db/events/retention.ts), the answers of Idempotency-Keys
 * past theirs (db/rows/idempotency.ts), and the webhooks' delivery log past its (webhooks/delivery-log.ts), every
 * `intervalMs`, one small batch at a time, so
 * writes never wait long. Each pass emits `pass` with how many events went (Passes). Several
 * processes on one database may each run one: deleting what another already deleted is harmless.
 * stop() ends a pass under way after its batch under way: a pass can have millions of events to delete
 * (a collection that took a burst of batch inserts), and a server shutting down does not wait for them;
 * the next pass, of whichever process, finds them.
 */
export class Pruner extends Passes {
  constructor(
    private readonly store: Store,
    private readonly policy: RetentionPolicy,
    intervalMs: number,
    private readonly log: Logger,
  ) {
    super(
      () => this.prune(),
      intervalMs,
      (error) => log.error({ err: error }, 'pruning events failed'),
    );
  }

  private async prune(): Promise<number> {
    let deleted = 0;
    for (let after = 0; ; ) {
      const collections = await this.store.collectionsAfter(after, COLLECTIONS_PER_PAGE, this.policy);
      if (collections.length === 0) break;
      for (const { id, lastSeq, past } of collections) {
        if (!past) continue;
        for (;;) {
          if (this.stopped) return deleted;
          const batch = await this.store.pruneEventBatch(id, lastSeq, this.policy);
          deleted += batch;
          if (batch < this.policy.batchSize) break;
          await yieldToWriters();
        }
      }
      after = collections[collections.length - 1].id;
    }
    if (deleted > 0) this.log.debug({ deleted }, 'pruned events');
    const answers = await this.pruneAnswers();
    if (answers > 0) this.log.debug({ answers }, 'pruned idempotency keys');
    const attempts = await pruneDeliveryLog(this.store, this.policy.batchSize, () => this.stopped);
    if (attempts > 0) this.log.debug({ attempts }, 'pruned webhook delivery log');
    return deleted;
  }

  /**
   * The stored answers of Idempotency-Keys past their retention (openapi.yaml, IdempotencyKey), in
   * batches as events are: a retry after it runs as a new request, so they are of no more use. Until a
   * batch deletes none: on SQLite a batch looks at the oldest answers only (db/sqlite/sql/rows.ts, pruneOnceSql),
   * and may delete fewer than it could where some of those have not expired. Those expired by the
   * pass's start, so that answers expiring meanwhile do not keep it going.
   */
  private async pruneAnswers(): Promise<number> {
    const now = new Date().toISOString();
    let deleted = 0;
    for (;;) {
      if (this.stopped) return deleted;
      const batch = await this.store.pruneOnceBatch(now, this.policy.batchSize);
      deleted += batch;
      if (batch === 0) return deleted;
      await yieldToWriters();
    }
  }
}
