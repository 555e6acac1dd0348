// A collection's tail: reads its events after the last one forwarded and hands each to who follows it.
import type { StoredEvent } from '../db/events/events.ts';
import { ApiError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { CompiledRules } from '../rules/compile.ts';
import { Delivery } from './delivery.ts';
import { closeCodes } from './messages.ts';
import type { Subscriber } from './subscriber.ts';
import type { Waiter } from './waiter.ts';

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
  private readonly subscribers = new Set<Follower>();
  private readonly joining = new Set<Follower>();
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

  /** Makes `subscriber` live as soon as the tail has caught up with what is committed now. */
  join(subscriber: Follower): void {
    this.joining.add(subscriber);
    subscriber.once('end', () => this.leave(subscriber));
    this.wake();
  }

  /** Something was committed: read it (after the read under way, if any). */
  wake(): void {
    this.again = true;
    if (!this.reading) this.idle = this.run();
  }

  private leave(subscriber: Follower): void {
    this.subscribers.delete(subscriber);
    this.joining.delete(subscriber);
    if (this.subscribers.size === 0 && this.joining.size === 0) this.end(() => {});
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
        break;
      }
      const deliveries: Delivery[] = [];
      for (const event of events) {
        if (event.seq !== this.cursor + deliveries.length + 1) break;
        deliveries.push(new Delivery(this.options.collection, event));
      }
      await this.giveRules();
      for (const subscriber of this.subscribers) subscriber.deliver(deliveries);
      this.cursor += deliveries.length;
    }
    for (const subscriber of this.joining) {
      this.subscribers.add(subscriber);
      subscriber.start(this.cursor);
    }
    this.joining.clear();
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
    const everyone = [...this.subscribers, ...this.joining];
    this.subscribers.clear();
    this.joining.clear();
    for (const subscriber of everyone) farewell(subscriber);
    this.options.onEnd();
  }
}
