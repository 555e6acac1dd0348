import { EventEmitter, once } from 'node:events';
import type { WebSocket } from 'ws';
import type { EventType, StoredEvent } from '../db/events.ts';
import type { Logger } from '../log.ts';
import { type CloseCode, changeMessage, closeCodes, collectionDeletedMessage, readyMessage } from './messages.ts';

export interface SubscriberOptions {
  collection: string;
  kinds: EventType[];
  /** Replay the retained events after this seq before going live. */
  since?: number;
  /** Bytes the client may fall behind by (not yet taken by its socket, or held back) before 4008. */
  maxBufferBytes: number;
  /** One page of the collection's events with `after` < seq ≤ `upTo`, in seq order. */
  readEvents(after: number, upTo: number): Promise<StoredEvent[]>;
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
  private ended = false;
  private alive = true;
  private held: string[] | undefined;
  private heldBytes = 0;

  constructor(
    readonly socket: WebSocket,
    private readonly options: SubscriberOptions,
  ) {
    super();
    this.kinds = new Set(options.kinds);
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
    this.send(JSON.stringify(readyMessage(this.options.collection, this.options.kinds, seq)));
    const { since } = this.options;
    if (since === undefined || since >= seq) return;
    this.held = [];
    this.replaying = this.replay(since, seq).catch((error) => {
      this.options.log.error({ err: error, collection: this.options.collection }, 'feed replay failed');
      this.close(closeCodes.internal);
    });
  }

  /** A committed change, its message already serialized: sent if it is of a kind the client chose. */
  deliver(type: EventType, text: string): void {
    if (this.ended || !this.kinds.has(type)) return;
    if (!this.held) {
      this.send(text);
      return;
    }
    this.held.push(text);
    this.heldBytes += Buffer.byteLength(text);
    if (this.heldBytes + this.socket.bufferedAmount > this.options.maxBufferBytes) this.close(closeCodes.slowConsumer);
  }

  /** Tells the client its collection is gone, then closes. */
  collectionDeleted(): void {
    if (this.ended) return;
    this.socket.send(JSON.stringify(collectionDeletedMessage(this.options.collection)));
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
    this.end();
    this.socket.close(code, reason);
  }

  /** Sends unless the client is already too far behind; `written` runs once the socket has taken it. */
  private send(text: string, written?: () => void): void {
    if (this.socket.bufferedAmount > this.options.maxBufferBytes) {
      this.close(closeCodes.slowConsumer);
      written?.();
      return;
    }
    this.socket.send(text, written ? () => written() : undefined);
  }

  /**
   * Replays the events with `since` < seq ≤ `upTo` a page at a time, at the pace the socket takes them:
   * whenever half the buffer bound is waiting, it waits for the socket to take the last message sent.
   * So a client that reads, however much it has to catch up on, is never closed as slow, and a replay
   * holds at most a page in memory. Retained events have no gaps: one found here means they were pruned
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
        if (!this.kinds.has(event.type)) continue;
        if (this.socket.bufferedAmount > this.options.maxBufferBytes / 2) await written;
        if (this.ended) return;
        const text = JSON.stringify(changeMessage(this.options.collection, event));
        written = new Promise((resolve) => this.send(text, resolve));
      }
      if (after !== events.at(-1)?.seq) {
        this.close(closeCodes.gone);
        return;
      }
    }
    await written;
    if (this.ended) return;
    const held = this.held ?? [];
    this.held = undefined;
    this.heldBytes = 0;
    for (const text of held) this.send(text);
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.held = undefined;
    this.emit('end');
  }
}
