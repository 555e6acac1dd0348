// The tails this instance holds (tail.ts), one per collection some subscriber or long poll follows,
// woken when the store announces a commit of theirs (db/engine/wake-ups.ts).
import type { Store } from '../db/open-store.ts';
import type { Logger } from '../log.ts';
import { Tail } from './tail.ts';

/** Events read from the database at a time, by a tail or a replay: at most 500, and about 1 MiB of rows. */
export const PAGE = { limit: 500, maxChars: 1024 * 1024 };

export class Tails {
  private readonly tails = new Map<number, Tail>();
  /** The same tails by their account's id and collection's name (named()). */
  private readonly byName = new Map<string, Tail>();
  // Heard only while some collection has a tail: a write that no one follows costs the feed nothing.
  private readonly wake = (collectionId: number) => this.tails.get(collectionId)?.wake();
  private readonly wakeAll = () => {
    for (const tail of this.tails.values()) tail.wake();
  };

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
  ) {
    store.changes.on('all', this.wakeAll);
  }

  get size(): number {
    return this.tails.size;
  }

  values(): Tail[] {
    return [...this.tails.values()];
  }

  /** The tail that follows the collection for this instance, if one does. */
  following(collectionId: number): Tail | undefined {
    return this.tails.get(collectionId);
  }

  /** The tail that follows the account's collection of that name for this instance, if one does. */
  named(accountId: number, collection: string): Tail | undefined {
    return this.byName.get(`${accountId} ${collection}`);
  }

  /** The tail that follows the account's collection for this instance, made when none does. */
  of(accountId: number, collectionId: number, collection: string): Tail {
    const existing = this.tails.get(collectionId);
    if (existing) return existing;
    const { store } = this;
    const name = `${accountId} ${collection}`;
    const created: Tail = new Tail({
      collectionId,
      collection,
      latestSeq: () => store.latestSeq(collectionId),
      readEvents: (after) => store.readEvents(collectionId, { ...PAGE, after }),
      rules: () => store.findRules(accountId, collection),
      onEnd: () => {
        if (this.tails.get(collectionId) !== created) return;
        this.tails.delete(collectionId);
        // A collection made again by its name has a tail of its own under the name by now.
        if (this.byName.get(name) === created) this.byName.delete(name);
        if (this.tails.size === 0) store.changes.off('change', this.wake);
      },
      log: this.log,
    });
    if (this.tails.size === 0) store.changes.on('change', this.wake);
    this.tails.set(collectionId, created);
    this.byName.set(name, created);
    return created;
  }

  /** How many events this instance's tails are behind their collections' latest, added up (Feed.lag). */
  async lag(): Promise<number> {
    let behind = 0;
    for (const tail of this.values()) {
      const { collectionId, forwarded } = tail.position;
      if (forwarded === undefined) continue;
      const latest = await this.store.latestSeq(collectionId);
      if (latest !== undefined) behind += Math.max(0, latest - forwarded);
    }
    return behind;
  }

  /** Stops hearing the store's announcements, and the tails no one follows from lingering. */
  stop(): void {
    for (const tail of this.tails.values()) tail.stop();
    this.store.changes.off('change', this.wake);
    this.store.changes.off('all', this.wakeAll);
  }
}
