// The sweeper: the timer that deletes the rows past their expiry (docs/expiry.md), each collection's in
// small batches beside the writes, each deletion a delete event marked `"reason": "expired"`.
import { setImmediate as yieldToWriters } from 'node:timers/promises';
import type { Store } from './db/open-store.ts';
import type { Logger } from './log.ts';
import { Passes } from './periodic.ts';

/** Collections read at once, each with a row expired. */
const COLLECTIONS_PER_PAGE = 100;

/**
 * Deletes, every `intervalMs`, the rows of every collection with a time to live that expired by the
 * pass's start (the process's expiry now, which the database keeps once a pass finds a row to delete:
 * db/expiry/clock.ts), a batch at a time (db/expiry/sweep.ts), yielding to the writes between batches; each
 * pass emits `pass` with how many rows went (Passes), and stop() ends one after its batch under way. Several processes on one database may each run one: each
 * batch holds its collection, and finds its rows again inside, so each row is deleted once.
 */
export class Sweeper extends Passes {
  constructor(
    private readonly store: Store,
    intervalMs: number,
    private readonly log: Logger,
  ) {
    super(
      () => this.sweep(),
      intervalMs,
      (error) => log.error({ err: error }, 'sweeping expired rows failed'),
    );
  }

  /** Stops as Passes does, then has the database keep this process's expiry now, for the next to start (docs/expiry.md). */
  override async stop(): Promise<void> {
    await super.stop();
    await this.store.keepExpiryNow().catch((error) => this.log.error({ err: error }, 'keeping the expiry now failed'));
  }

  private async sweep(): Promise<number> {
    // The later of this process's expiry now and the one the database keeps, which another instance may have raised.
    let now = await this.store.readKeptExpiryNow();
    let kept = false;
    let deleted = 0;
    for (let after = 0; ; ) {
      const collections = await this.store.expiringCollections(after, now, COLLECTIONS_PER_PAGE);
      if (collections.length === 0) break;
      // Kept by the database before any row goes (a process restarted on a clock set back reads rows by
      // it); a pass that finds no expired row writes nothing.
      if (!kept) [now, kept] = [await this.store.keepExpiryNow(), true];
      for (const collection of collections) {
        try {
          for (;;) {
            if (this.stopped) return deleted;
            const batch = await this.store.sweepExpiredBatch(collection, now, this.store.sweepBatchRows);
            deleted += batch;
            if (batch < this.store.sweepBatchRows) break;
            await yieldToWriters();
          }
        } catch (error) {
          // A collection whose expired rows cannot go (a cascade past its bound): the others still do.
          this.log.error({ err: error, collection: collection.name }, 'sweeping a collection failed');
        }
      }
      after = collections[collections.length - 1].id;
    }
    if (deleted > 0) this.log.debug({ deleted }, 'swept expired rows');
    return deleted;
  }
}
