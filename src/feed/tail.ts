// A collection's tail: reads its events after the last one forwarded and hands each to who follows it.
import type { FeedStart, StoredEvent } from '../db/events/events.ts';
import { ApiError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { CompiledRules } from '../rules/compile.ts';
import { Delivery } from './delivery.ts';
import { closeCodes } from './messages.ts';
import type { Subscriber } from './subscriber.ts';
import type { Waiter } from './waiter.ts';

/**
 * How long a tail no one follows is kept, reading what is committed, before it ends: a long poll, which
 * leaves it once woken, asks again within a round trip, and finds it live, with the changes it holds
 * (changesAfter), where a new tail would read before anything.
 */
const LINGER_MS = 2000;

/**
 * The deliveries a tail keeps for its long polls (changesAfter), besides the page it forwarded last:
 * two of the pages tails.ts reads (PAGE), in events and in the characters of their rows. A poll some
 * changes behind, as its client was busy, is answered from them, where one read of its own per poll
 * held up the others (docs/performance.md, "Idle long polls and streams").
 */
const RECENT = { events: 1000, chars: 2 * 1024 * 1024 };

/** Who follows a tail: a feed socket or changes stream (Subscriber), or a long poll (Waiter). */
type Follower = Pick<Subscriber | Waiter, 'deliver' | 'start' | 'collectionDeleted' | 'close' | 'useRules' | 'heldToRules' | 'once'>;

export interface TailOptions {
  collectionId: number;
  collection: string;
  /** The collection's latest seq, or undefined once it is deleted. */
  latestSeq(): Promise<number | undefined>;
  /** One page of the collection's events after `after`, in seq order. */
  readEvents(after: number): Promise<StoredEvent[]>;
  /** The collection's compiled rules now (Store.findRules: read at most half a second ago). */
  rules(): Promise<CompiledRules>;
  /** The tail has no one left to serve, or its collection is gone: forget it. */
  onEnd(): void;
  log: Logger;
}

/**
 * Follows one collection's events for this process's subscribers (feed sockets and changes streams) and
 * long polls (waiter.ts). Woken after each commit (see db/changes.ts), it reads the events after the
 * last one it forwarded from the events table, the source of truth, and hands every subscriber each message, serialized and framed once (delivery.ts:
 * once for each of a change's messages, which filtered subscribers may differ in). One read at a time,
 * so messages leave in seq order; and subscribers join only between reads, at the seq forwarded last,
 * so each gets every later event exactly once. Before each page, the subscribers held to the
 * collection's rules are given the rules as they are now (one read for all of them, kept half a second
 * by the store): a change of the rules reaches the messages of every instance within a second.
 */
export class Tail {
  /** The last seq forwarded; undefined until the first read. */
  private cursor: number | undefined;
  /** The collection's latest seq as the last read found it. */
  private latest = 0;
  /** The deliveries forwarded last, ending at `cursor`: what long polls are answered from (changesAfter), as RECENT bounds them. */
  private recent: Delivery[] = [];
  /** The characters of their rows (StoredEvent.chars). */
  private recentChars = 0;
  private readonly subscribers = new Set<Follower>();
  private readonly joining = new Set<Follower>();
  /** While no one follows it: the timer that ends it (LINGER_MS). */
  private lingering: NodeJS.Timeout | undefined;
  private reading = false;
  private again = false;
  private ended = false;
  /** Settles when no read is under way. */
  idle: Promise<void> = Promise.resolve();

  constructor(private readonly options: TailOptions) {}

  /** The collection this tail follows, and the last seq it forwarded (undefined until its first read). */
  get position(): { collectionId: number; forwarded: number | undefined } {
    return { collectionId: this.options.collectionId, forwarded: this.cursor };
  }

  /**
   * The deliveries after `after`, when this tail has forwarded every change up to the latest seq it read
   * and to `atLeast` (the latest a caller read itself), still holds them (RECENT),
   * and they are `limit` at most: a long poll's page without a read (handlers/feed.ts). None when `after`
   * is the seq forwarded last. Undefined when it cannot tell: the caller reads the events table.
   */
  changesAfter(after: number, limit: number, atLeast: number): readonly Delivery[] | undefined {
    const { cursor, recent } = this;
    if (cursor === undefined || this.ended || cursor < this.latest || cursor < atLeast) return undefined;
    if (after >= cursor) return [];
    const from = recent.length - (cursor - after);
    if (from < 0 || cursor - after > limit) return undefined;
    return recent.slice(from);
  }

  /**
   * Where a long poll after `since` (undefined: the latest) starts, known without a read of its own
   * (Store.feedStart), or undefined when this tail cannot tell. A read under way, or asked for, is
   * waited for first (one read for every poll that asks meanwhile): a commit of this process wakes the
   * tail before the client that made it hears back, so that once the tail has read what it was told
   * of, the seq it forwarded last is the collection's latest as far as this instance knows. It tells
   * when it holds every event after `since` (RECENT), which were retained a
   * moment ago at least; a later seq, or an earlier one, is read.
   */
  async startAfter(since: number | undefined): Promise<FeedStart | undefined> {
    if (this.reading || this.again) await this.idle;
    const { cursor } = this;
    if (cursor === undefined || this.ended || cursor < this.latest) return undefined;
    const oldestHeld = cursor - this.recent.length;
    if (since !== undefined && (since > cursor || since < oldestHeld)) return undefined;
    return { collectionId: this.options.collectionId, lastSeq: cursor, resumableFrom: oldestHeld };
  }

  /** Makes `subscriber` live as soon as the tail has caught up with what is committed now. */
  join(subscriber: Follower): void {
    this.stay();
    this.joining.add(subscriber);
    subscriber.once('end', () => this.leave(subscriber));
    this.wake();
  }

  /**
   * Makes `follower` live now, at the seq forwarded last, without a read, when no read is under way: a
   * long poll (waiter.ts), which needs no `ready` and ignores what it waits past. A commit since the last
   * read wakes this tail after it (db/engine/wake-ups.ts), whose read then reaches the follower too.
   */
  follow(follower: Follower): void {
    if (this.cursor === undefined || this.reading || this.ended) {
      this.join(follower);
      return;
    }
    this.stay();
    this.subscribers.add(follower);
    follower.once('end', () => this.leave(follower));
    follower.start(this.cursor);
  }

  /** Something was committed: read it (after the read under way, if any). */
  wake(): void {
    this.again = true;
    if (!this.reading) this.idle = this.run();
  }

  /** With no one left to follow it, it lingers a moment (LINGER_MS) for a long poll that asks again, then ends. */
  private leave(subscriber: Follower): void {
    this.subscribers.delete(subscriber);
    this.joining.delete(subscriber);
    this.linger();
  }

  /**
   * While no one follows it, it is kept LINGER_MS from now, reading what is committed (its first read
   * made now, if it made none): a long poll asks again within a round trip, and finds it live
   * (startAfter, changesAfter), also one that did not wait, as it had changes to answer at once.
   */
  linger(): void {
    if (this.subscribers.size > 0 || this.joining.size > 0 || this.ended) return;
    this.stay();
    this.lingering = setTimeout(() => this.end(() => {}), LINGER_MS);
    this.lingering.unref();
    if (this.cursor === undefined && !this.reading) this.wake();
  }

  /** Followed again, or ending: it no longer lingers. */
  private stay(): void {
    clearTimeout(this.lingering);
    this.lingering = undefined;
  }

  /** Stops lingering, for good: the feed closes. */
  stop(): void {
    this.stay();
  }

  private async run(): Promise<void> {
    this.reading = true;
    try {
      while (this.again && !this.ended) {
        this.again = false;
        await this.catchUp();
      }
    } catch (error) {
      if (this.ended) return; // nobody left to tell: the feed is closing, or everyone left
      this.options.log.error({ err: error, collection: this.options.collection }, 'feed could not read events');
      this.end((subscriber) => subscriber.close(closeCodes.internal));
    } finally {
      this.reading = false;
    }
  }

  private async catchUp(): Promise<void> {
    const latest = await this.options.latestSeq();
    if (latest === undefined) {
      this.end((subscriber) => subscriber.collectionDeleted());
      return;
    }
    this.latest = latest;
    this.cursor ??= latest; // the first read: nobody has been told a seq yet
    while (this.cursor < latest && !this.ended) {
      const events = await this.options.readEvents(this.cursor);
      if (events[0]?.seq !== this.cursor + 1) {
        // Deleted with its collection since `latest` was read: the subscribers are told that instead.
        if ((await this.options.latestSeq()) === undefined) {
          this.end((subscriber) => subscriber.collectionDeleted());
          return;
        }
        // Pruned before they could be forwarded (a retention far too small for the write rate): the
        // subscribers cannot get them, so they are told to re-read; joiners have been promised nothing.
        this.options.log.warn({ collection: this.options.collection, after: this.cursor }, 'feed events pruned before delivery');
        for (const subscriber of this.subscribers) subscriber.close(closeCodes.gone);
        this.cursor = latest;
        this.recent = [];
        this.recentChars = 0;
        break;
      }
      const deliveries: Delivery[] = [];
      for (const event of events) {
        if (event.seq !== this.cursor + deliveries.length + 1) break;
        deliveries.push(new Delivery(this.options.collection, event));
      }
      await this.giveRules();
      // Kept and counted forwarded before they are handed out: a long poll they wake reads its page from them.
      this.keep(deliveries);
      this.cursor += deliveries.length;
      for (const subscriber of this.subscribers) subscriber.deliver(deliveries);
    }
    for (const subscriber of this.joining) {
      this.subscribers.add(subscriber);
      subscriber.start(this.cursor);
    }
    this.joining.clear();
  }

  /**
   * Keeps the deliveries forwarded last, ending with `deliveries`: those of the last page, and older ones
   * as RECENT bounds them, as many as woken long polls and those that ask again some changes behind
   * need. Older ones, and a page's after a gap, are read from the events table.
   */
  private keep(deliveries: Delivery[]): void {
    const recent = [...this.recent, ...deliveries];
    for (const delivery of deliveries) this.recentChars += delivery.event.chars ?? 0;
    let dropped = 0;
    while (recent.length - dropped > deliveries.length && (recent.length - dropped > RECENT.events || this.recentChars > RECENT.chars)) {
      this.recentChars -= recent[dropped].event.chars ?? 0;
      dropped++;
    }
    this.recent = dropped === 0 ? recent : recent.slice(dropped);
  }

  /**
   * Gives the subscribers held to rules the collection's rules now. Rules that cannot be read change
   * nothing: a collection deleted meanwhile is told by the next read, a database that does not answer
   * is logged.
   */
  private async giveRules(): Promise<void> {
    let held = false;
    for (const subscriber of this.subscribers) held ||= subscriber.heldToRules;
    if (!held) return;
    let rules: CompiledRules;
    try {
      rules = await this.options.rules();
    } catch (error) {
      if (!(error instanceof ApiError && error.code === 'not_found')) {
        this.options.log.warn({ err: error, collection: this.options.collection }, 'feed could not read the rules');
      }
      return;
    }
    for (const subscriber of this.subscribers) subscriber.useRules(rules);
  }

  /** Stops following, after doing `farewell` to every subscriber. */
  private end(farewell: (subscriber: Follower) => void): void {
    if (this.ended) return;
    this.ended = true;
    this.stay();
    const everyone = [...this.subscribers, ...this.joining];
    this.subscribers.clear();
    this.joining.clear();
    for (const subscriber of everyone) farewell(subscriber);
    this.options.onEnd();
  }
}
