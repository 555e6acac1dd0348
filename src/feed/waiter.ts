// A long poll of the changes over HTTP (handlers/feed.ts) waiting for its collection's next change:
// it follows the collection's tail as a feed socket does, woken by the same commits, and costs nothing
// while nothing changes.
import { EventEmitter } from 'node:events';
import type { EventType } from '../db/events/events.ts';
import type { Result } from '../http/responder.ts';
import type { Delivery } from './delivery.ts';
import type { FeedView } from './view.ts';

/** What a long poll waits for: a change of the account's collection after seq `after` that `kinds` and `view` let through. */
export interface ChangeWait {
  accountId: number;
  collectionId: number;
  collection: string;
  after: number;
  kinds: readonly EventType[];
  view: FeedView;
}

/**
 * A long poll that waits, handed to the feed by its request (Feed.waitForPage, handlers/feed.ts): what
 * it waits for first, until when, and how it answers.
 */
export interface PollWait {
  readonly change: ChangeWait;
  /** When it answers whatever it found (ms since the epoch). */
  readonly deadline: number;
  /** Gives its account's place back (once, however often called). */
  release(): void;
  /**
   * Its answer once woken after `after`: a result, or, while it still has nothing to show and is not
   * `final` (its time has passed, or the feed closes), the seq to wait after again.
   */
  answer(after: number, final: boolean): Promise<Result | number>;
}

/** One long poll, a follower of its collection's tail (tail.ts) until it is woken. */
export class Waiter extends EventEmitter<{ end: [] }> {
  /** Its view is the one its request was checked with: it waits a minute at most. */
  readonly heldToRules = false;
  /** Settles once it is woken, for whatever reason. */
  readonly woken: Promise<void>;
  private readonly kinds: ReadonlySet<EventType>;
  private wake: () => void = () => {};
  private ended = false;
  /** Wakes it at its deadline. */
  private readonly timer: NodeJS.Timeout;

  /** `deadline`: when it wakes anyway (ms since the epoch). */
  constructor(
    readonly wait: ChangeWait,
    deadline: number,
  ) {
    super();
    this.kinds = new Set(wait.kinds);
    this.woken = new Promise((resolve) => {
      this.wake = resolve;
    });
    this.timer = setTimeout(() => this.close(), Math.max(0, deadline - Date.now()));
  }

  /** The tail is live at `seq`: something was committed after `after` already when it is past it. */
  start(seq: number): void {
    if (seq > this.wait.after) this.close();
  }

  deliver(deliveries: readonly Delivery[]): void {
    if (deliveries.some((delivery) => this.shows(delivery))) this.close();
  }

  collectionDeleted(): void {
    this.close();
  }

  useRules(): void {}

  /** Wakes it, and leaves the tail. */
  close(): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.timer);
    this.wake();
    this.emit('end');
  }

  /** Whether the long poll's page would show the change; a rule that throws on it wakes it, and the page answers for it. */
  private shows(delivery: Delivery): boolean {
    if (!this.kinds.has(delivery.type) || delivery.event.seq <= this.wait.after) return false;
    try {
      return delivery.textFor(this.wait.view) !== undefined;
    } catch {
      return true;
    }
  }
}
