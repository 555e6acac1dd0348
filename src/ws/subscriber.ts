import { EventEmitter, once } from 'node:events';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { EventType, StoredEvent } from '../db/events/events.ts';
import type { Logger } from '../log.ts';
import { compileFilter, type RowTest } from '../query/evaluate.ts';
import type { Filter } from '../query/filter.ts';
import { Delivery } from './delivery.ts';
import { textFrame, writeFrame } from './frames.ts';
import { type CloseCode, closeCodes, collectionDeletedMessage, readyMessage } from './messages.ts';

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
  /** Replay the retained events after this seq before going live. */
  since?: number;
  /** Bytes the client may fall behind by (not yet taken by its socket, or held back) before 4008. */
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
 * One feed client. Messages go straight to its socket while it keeps up; during a replay, live messages
 * are held back until the replay is done. Either way a client that falls more than `maxBufferBytes`
 * behind is closed with 4008, so what the server holds for it stays bounded whatever it does.
 */
export class Subscriber extends EventEmitter<{ end: [] }> {
  /** Settles when the socket has closed. */
  readonly closed: Promise<unknown>;
  /** Settles when the replay (if any) is over. */
  replaying: Promise<void> = Promise.resolve();
  private readonly kinds: Set<EventType>;
  /** The filter, compiled once: each change is tested against it for this client alone. */
  private readonly test: RowTest | undefined;
  private ended = false;
  private alive = true;
  private held: Buffer[] | undefined;
  private heldBytes = 0;

  /** `connection`: the socket `socket` was upgraded from, which frames made once are written to (frames.ts). */
  constructor(
    readonly socket: WebSocket,
    private readonly connection: Duplex,
    private readonly options: SubscriberOptions,
  ) {
    super();
    this.kinds = new Set(options.kinds);
    this.test = options.filter && compileFilter(options.filter);
    this.closed = once(socket, 'close').catch(() => {});
    socket.on('pong', () => {
      this.alive = true;
    });
    // Clients send nothing (asyncapi.yaml): what they send anyway is ignored, and `ws` closes with 1009
    // on anything over its maxPayload.
    socket.on('message', () => {});
    socket.on('error', (error) => options.log.debug({ err: error }, 'feed socket error'));
    socket.on('close', () => this.end());
  }

  get open(): boolean {
    return !this.ended;
  }

  /**
   * The subscription is live at `seq`: every later event reaches this client. Sends `ready`, then
   * replays the events after `since`, if asked, before the live ones held back meanwhile.
   */
  start(seq: number): void {
    if (this.ended) return;
    this.send(textFrame(JSON.stringify(readyMessage(this.options.collection, this.options.kinds, seq))));
    const { since } = this.options;
    if (since === undefined || since >= seq) return;
    this.held = [];
    this.replaying = this.replay(since, seq).catch((error) => {
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
    if (this.socket.bufferedAmount > this.options.maxBufferBytes) {
      this.close(closeCodes.slowConsumer);
      return;
    }
    let sent = 0;
    this.connection.cork();
    for (const delivery of deliveries) {
      const frame = this.frameOf(delivery);
      if (!frame) continue;
      writeFrame(this.socket, this.connection, frame);
      sent++;
    }
    this.connection.uncork();
    this.options.counts.messagesSent += sent;
  }

  /** Tells the client its collection is gone, then closes. */
  collectionDeleted(): void {
    if (this.ended) return;
    this.socket.send(JSON.stringify(collectionDeletedMessage(this.options.collection)));
    this.options.counts.messagesSent++;
    this.close(closeCodes.collectionDeleted);
  }

  /** Called every ping interval: a client that did not answer the last ping is dropped. */
  heartbeat(): void {
    if (!this.alive) {
      this.socket.terminate();
      return;
    }
    this.alive = false;
    this.socket.ping();
  }

  close({ code, reason }: CloseCode): void {
    if (this.ended) return;
    if (code === closeCodes.slowConsumer.code) this.options.counts.slowConsumerCloses++;
    this.end();
    this.socket.close(code, reason);
  }

  /** What this client gets of a change: undefined for a kind it did not choose, or a change outside its view. */
  private frameOf(delivery: Delivery): Buffer | undefined {
    return this.kinds.has(delivery.type) ? delivery.frameFor(this.test) : undefined;
  }

  /** Keeps a live message back while the replay runs. */
  private hold(delivery: Delivery): void {
    if (!this.held) return;
    const frame = this.frameOf(delivery);
    if (!frame) return;
    this.held.push(frame);
    this.heldBytes += frame.length;
    if (this.heldBytes + this.socket.bufferedAmount > this.options.maxBufferBytes) this.close(closeCodes.slowConsumer);
  }

  /** Sends unless the client is already too far behind; `written` runs once the socket has taken it (or will not). */
  private send(frame: Buffer, written?: () => void): void {
    if (this.socket.bufferedAmount > this.options.maxBufferBytes) {
      this.close(closeCodes.slowConsumer);
      written?.();
      return;
    }
    this.options.counts.messagesSent++;
    if (!writeFrame(this.socket, this.connection, frame, written && (() => written()))) written?.();
  }

  /**
   * Replays the events with `since` < seq ≤ `upTo`, as this client would have got them live (frameOf()),
   * a page at a time, at the pace the socket takes them: whenever half the buffer bound is waiting, it
   * waits for the socket to take the last message sent. So a client that reads, however much it has to
   * catch up on, is never closed as slow, and a replay holds at most a page in memory. Retained events have no gaps: one found here means they were pruned
   * since the upgrade was checked, and the client is told so (4410).
   */
  private async replay(since: number, upTo: number): Promise<void> {
    let after = since;
    let written: Promise<void> | undefined;
    while (!this.ended && after < upTo) {
      const events = await this.options.readEvents(after, upTo);
      for (const event of events) {
        if (event.seq !== after + 1) break;
        after = event.seq;
        const frame = this.frameOf(new Delivery(this.options.collection, event));
        if (!frame) continue;
        if (this.socket.bufferedAmount > this.options.maxBufferBytes / 2) await written;
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
    await written;
    if (this.ended) return;
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
