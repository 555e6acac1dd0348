// One client of the feed (a socket or a changes stream): its filter, replay, buffer bound and liveness.
import { EventEmitter } from 'node:events';
import type { EventType, StoredEvent } from '../db/events/events.ts';
import { ApiError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { Filter } from '../query/filter.ts';
import type { CompiledRules } from '../rules/compile.ts';
import { Delivery } from './delivery.ts';
import { type CloseCode, closeCodes, collectionDeletedMessage, readyMessage } from './messages.ts';
import type { Sink } from './sinks.ts';
import { type EndUser, endUserView, type FeedView, NOTHING } from './view.ts';

/** What the feed's subscribers have done since the start, counted for the metrics (docs/operations.md). */
export interface FeedCounts {
  /** Messages written to sockets: `ready`, changes (live or replayed), `collection_deleted`. */
  messagesSent: number;
  /** Sockets closed with 4008 (slow consumer). */
  slowConsumerCloses: number;
}

export interface SubscriberOptions {
  collection: string;
  kinds: EventType[];
  /** Only the changes that touch the rows matching it (asyncapi.yaml, "Filtered subscriptions"); default: every change. */
  filter?: Filter;
  /** What the client sees of each change, as the upgrade found it: its filter, and its end user's rules (view.ts, feedView). */
  view: FeedView;
  /** With a publishable key, the end user whose rules the view follows as they change (useRules); absent with a secret key. */
  endUser?: EndUser;
  /** The collection's compiled rules now (Store.findRules: read at most half a second ago), asked for before each page of a replay. */
  rules(): Promise<CompiledRules>;
  /** Replay the retained events after this seq before going live. */
  since?: number;
  /** Bytes the client may fall behind by (not yet taken by its socket) before 4008, and the most a replay holds back. */
  maxBufferBytes: number;
  /** One page of the collection's events with `after` < seq ≤ `upTo`, in seq order. */
  readEvents(after: number, upTo: number): Promise<StoredEvent[]>;
  /** The collection's latest seq, or undefined once it is deleted. */
  latestSeq(): Promise<number | undefined>;
  /** The feed's counts, shared by its subscribers. */
  counts: FeedCounts;
  /** The log of the connection: its lines carry its request id. */
  log: Logger;
}

/**
 * One feed client: a feed socket, or a changes stream over HTTP (sinks.ts). Messages go straight to
 * its socket while it keeps up; a client that falls more than `maxBufferBytes` behind is closed with
 * 4008. During a replay, live messages are held back until the replay is done; once they outgrow
 * `maxBufferBytes` they are let go and the replay reads them from the log too, so a client that reads
 * catches up however fast others write. What the server holds for a client stays bounded whatever it does.
 */
export class Subscriber extends EventEmitter<{ end: [] }> {
  /** Settles when the socket has closed. */
  readonly closed: Promise<unknown>;
  /** Settles when the replay (if any) is over. */
  replaying: Promise<void> = Promise.resolve();
  private readonly kinds: Set<EventType>;
  /** The filter and the rules, compiled once: each change is tested against them for this client alone. */
  private view: FeedView;
  /** The rules `view` was made from: those of the upgrade, then the latest given to useRules(). */
  private rules: CompiledRules | undefined;
  private ended = false;
  /** During a replay, the live messages held back (none while they are let go). */
  private held: Buffer[] | undefined;
  private heldBytes = 0;
  /** The seq the replay reads up to: where the subscription went live, or the latest change let go since. */
  private replayTo = 0;
  /** Whether live messages are let go, to be read by the replay: they outgrew the bound. */
  private letGo = false;
  /** The seq the replay has reached, and what it had reached at the last heartbeat. */
  private replayed = 0;
  private replayedAtHeartbeat = 0;

  constructor(
    readonly sink: Sink,
    private readonly options: SubscriberOptions,
  ) {
    super();
    this.kinds = new Set(options.kinds);
    this.view = options.view;
    this.rules = options.endUser?.rules;
    this.closed = sink.closed;
    sink.onClose(() => this.end());
  }

  get open(): boolean {
    return !this.ended;
  }

  /** Whether the collection's rules hold this client: it subscribed with a publishable key. */
  get heldToRules(): boolean {
    return this.options.endUser !== undefined;
  }

  /**
   * The collection's compiled rules now: when they are others than the view was made from (changed, or
   * removed), the view is made again from them, for the messages from now on. Rules that would refuse
   * the upgrade now (no row readable, a filter naming a hidden field) close the socket with 4403; rules
   * that cannot be worked out for this client show it nothing, and are logged.
   */
  useRules(rules: CompiledRules): void {
    const { endUser } = this.options;
    if (!endUser || rules === this.rules || this.ended) return;
    this.rules = rules;
    try {
      this.view = endUserView(this.options.filter, endUser, rules, this.options.collection);
    } catch (error) {
      if (error instanceof ApiError) {
        this.options.log.info(
          { collection: this.options.collection, code: error.code, detail: error.detail },
          'feed refused by changed rules',
        );
        this.close(closeCodes.rulesChanged);
        return;
      }
      this.options.log.error({ err: error, collection: this.options.collection }, 'feed rules could not be worked out for a subscriber');
      this.view = NOTHING;
    }
  }

  /**
   * The subscription is live at `seq`: every later event reaches this client. Sends `ready`, then
   * replays the events after `since`, if asked, before the live ones held back meanwhile.
   */
  start(seq: number): void {
    if (this.ended) return;
    const { since } = this.options;
    // Its id (a server-sent event's) is where a client that has handled it resumes with no gap: the
    // replay's start, or the seq it is live from.
    const ready = JSON.stringify(readyMessage(this.options.collection, this.options.kinds, seq));
    this.send(this.sink.encoding.encode(ready, 'ready', since ?? seq));
    if (since === undefined || since >= seq) return;
    this.held = [];
    this.replayTo = seq;
    this.replaying = this.replay(since).catch((error) => {
      this.options.log.error({ err: error, collection: this.options.collection }, 'feed replay failed');
      this.close(closeCodes.internal);
    });
  }

  /**
   * Committed changes, in seq order (a page of them at most): those of the kinds the client chose, and
   * that touch its view, are sent, in one system call however many (the socket is corked meanwhile),
   * unless the client is already too far behind. What is corked is not behind yet, so the bound is
   * checked before the page, not within it: a client may fall behind by up to a page more than the
   * bound, whose frames are the same Buffers for every subscriber they are due to.
   */
  deliver(deliveries: readonly Delivery[]): void {
    if (this.ended) return;
    if (this.held) {
      for (const delivery of deliveries) this.hold(delivery);
      return;
    }
    if (this.sink.bufferedAmount > this.options.maxBufferBytes) {
      this.close(closeCodes.slowConsumer);
      return;
    }
    let sent = 0;
    this.sink.cork();
    for (const delivery of deliveries) {
      const frame = this.frameOf(delivery);
      if (!frame) continue;
      this.sink.write(frame);
      sent++;
    }
    this.sink.uncork();
    this.options.counts.messagesSent += sent;
  }

  /** Tells the client its collection is gone, then closes. */
  collectionDeleted(): void {
    if (this.ended) return;
    const deleted = JSON.stringify(collectionDeletedMessage(this.options.collection));
    this.sink.write(this.sink.encoding.encode(deleted, 'collection_deleted'));
    this.options.counts.messagesSent++;
    this.close(closeCodes.collectionDeleted);
  }

  /**
   * Called every ping interval: a feed client that did not answer the last ping is dropped (sinks.ts),
   * and so is one whose replay took nothing since the last while live messages were let go.
   */
  heartbeat(): void {
    if (this.letGo && this.replayed === this.replayedAtHeartbeat) {
      this.close(closeCodes.slowConsumer);
      return;
    }
    this.replayedAtHeartbeat = this.replayed;
    this.sink.heartbeat();
  }

  close(code: CloseCode): void {
    if (this.ended) return;
    if (code.code === closeCodes.slowConsumer.code) this.options.counts.slowConsumerCloses++;
    this.end();
    this.sink.close(code);
  }

  /**
   * What this client gets of a change: undefined for a kind it did not choose, or a change outside its
   * view. A rule that throws on the change denies this client this change alone, and is logged: the
   * others, and this client's next changes, are delivered as ever.
   */
  private frameOf(delivery: Delivery): Buffer | undefined {
    if (!this.kinds.has(delivery.type)) return undefined;
    try {
      return delivery.encodedFor(this.view, this.sink.encoding);
    } catch (error) {
      const { collection, log } = this.options;
      log.error({ err: error, collection, seq: delivery.event.seq }, 'feed rules failed on a change: not sent to this subscriber');
      return undefined;
    }
  }

  /**
   * Keeps a live message back while the replay runs; once those held outgrow the bound, lets them all
   * go, and this one and the next, for the replay to read from the log.
   */
  private hold(delivery: Delivery): void {
    if (!this.held) return;
    if (this.letGo) {
      this.replayTo = delivery.event.seq;
      return;
    }
    const frame = this.frameOf(delivery);
    if (!frame) return;
    this.held.push(frame);
    this.heldBytes += frame.length;
    if (this.heldBytes > this.options.maxBufferBytes) {
      this.held = [];
      this.heldBytes = 0;
      this.letGo = true;
      this.replayTo = delivery.event.seq;
    }
  }

  /** Sends unless the client is already too far behind; `written` runs once the socket has taken it (or will not). */
  private send(frame: Buffer, written?: () => void): void {
    if (this.sink.bufferedAmount > this.options.maxBufferBytes) {
      this.close(closeCodes.slowConsumer);
      written?.();
      return;
    }
    this.options.counts.messagesSent++;
    if (!this.sink.write(frame, written && (() => written()))) written?.();
  }

  /**
   * Replays the events with `since` < seq <= `replayTo`, as this client would have got them live
   * (frameOf()), a page at a time, at the pace the socket takes them: whenever half the buffer bound is
   * waiting, it waits for the socket to take the last message sent. So a client that reads, however much
   * it has to catch up on, is never closed as slow, and a replay holds at most a page in memory. Live
   * messages let go meanwhile move `replayTo` on; once it is reached with none let go, the held ones
   * follow. Retained events have no gaps: one found here means they were pruned since the upgrade was
   * checked, and the client is told so (4410).
   */
  private async replay(since: number): Promise<void> {
    let after = since;
    let written: Promise<void> | undefined;
    for (;;) {
      while (!this.ended && after < this.replayTo) {
        if (this.heldToRules) {
          // Rules that cannot be read now (a database that does not answer, which the read below meets too) change nothing.
          const rules = await this.options.rules().catch(() => undefined);
          if (rules) this.useRules(rules);
          if (this.ended) return;
        }
        const events = await this.options.readEvents(after, this.replayTo);
        for (const event of events) {
          if (event.seq !== after + 1) break;
          after = event.seq;
          this.replayed = after;
          const frame = this.frameOf(new Delivery(this.options.collection, event));
          if (!frame) continue;
          if (this.sink.bufferedAmount > this.options.maxBufferBytes / 2) await written;
          if (this.ended) return;
          written = new Promise((resolve) => this.send(frame, resolve));
        }
        if (after !== events.at(-1)?.seq) {
          // Gone with the collection, deleted meanwhile (the tail tells the others the same), or pruned.
          if ((await this.options.latestSeq()) === undefined) this.collectionDeleted();
          else this.close(closeCodes.gone);
          return;
        }
      }
      if (this.ended) return;
      // Every change let go is replayed: the next ones are held, unless they outgrow the bound again
      // while the socket takes the last replayed.
      this.letGo = false;
      await written;
      if (this.ended) return;
      if (!this.letGo) break;
    }
    const held = this.held ?? [];
    this.held = undefined;
    this.heldBytes = 0;
    for (const frame of held) this.send(frame);
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.held = undefined;
    this.emit('end');
  }
}
