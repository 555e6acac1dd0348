// Wake-ups after commit: the feed's, the webhooks' worker's.
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';

/**
 * Wake-ups for the real-time feed: "collection N has committed changes" (new events, or it is gone),
 * and "anything may have changed" (`all`: after a lost connection to the database, catch up from the
 * log). A wake-up carries no events: the events table is the source of truth, and whoever is woken
 * reads it from there. In one process the wake-up is in-process, once the transaction has committed.
 * With several processes on one PostgreSQL database, every change is also a `pg_notify` inside its
 * transaction (PostgreSQL delivers it on commit, never on rollback), which every instance LISTENs for.
 * `webhooks`, in-process only, says that a webhook's deliveries may be due now (one was made or enabled
 * again, or an attempt is to be retried): this instance's worker looks at once, other instances at their
 * next poll (webhooks/worker.ts).
 */
export class WakeUps extends EventEmitter<{ change: [collectionId: number]; all: []; webhooks: [] }> {
  /** Tells this process's NOTIFYs from other instances': it hears its own changes in-process already. */
  readonly instance = randomUUID();
}

/**
 * Tells this process's listeners of the change to the collection once the write `trx` has committed
 * (and nothing if it rolls back); other instances hear it through the database, where it tells them.
 */
export function announceOnCommit(changes: WakeUps, trx: { executionPromise: Promise<unknown> }, collectionId: number): void {
  trx.executionPromise.then(
    () => changes.emit('change', collectionId),
    () => {},
  );
}
