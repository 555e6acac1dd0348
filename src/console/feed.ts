// A live subscription to one collection's feed (asyncapi.yaml) that resumes without a gap: every message
// moves `since` on, and a dropped connection opens again with it, after a pause that grows while the
// feed stays unreachable. What ends a subscription for good is said to the caller: the collection was
// deleted (4404), the key no longer works (4401), or events it still needed were pruned (4410), after
// which the rows must be read again. A browser is not told why an upgrade was refused (the socket closes
// with 1006 whatever the status): such a refusal is tried again, as a dropped connection is.
import type { Api, Row } from './api.ts';

type ChangeKind = 'insert' | 'update' | 'delete';

export interface Change {
  type: ChangeKind;
  seq: number;
  at: string;
  row: Row;
  /** false on an update of a row that no longer matches the subscription's filter: it leaves the view. */
  matches?: false;
}

export type FeedState = 'connecting' | 'live' | 'retrying' | 'ended';

export interface FeedEvents {
  change(change: Change): void;
  state(state: FeedState, reason?: string): void;
}

/** Close codes after which opening again cannot help (asyncapi.yaml, x-close-codes). */
const final: Record<number, string> = {
  4401: 'The key no longer works: sign in again.',
  4404: 'The collection was deleted.',
  4410: 'Changes this view still needed were pruned: reload the rows.',
};

export class Feed {
  private socket?: WebSocket;
  private retryTimer?: ReturnType<typeof setTimeout>;
  private failures = 0;
  private stopped = false;

  /**
   * Follows the rows of `collection` that `filter` keeps (all without one), from after `since` (a page's
   * Rowbase-Seq, so that no change is missed).
   */
  constructor(
    private readonly api: Api,
    private readonly collection: string,
    private since: number,
    private readonly filter: string | undefined,
    private readonly events: FeedEvents,
  ) {
    this.open();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.socket?.close(1000);
  }

  private open(): void {
    this.events.state(this.failures === 0 ? 'connecting' : 'retrying');
    const socket = new WebSocket(this.api.feedUrl(this.collection, this.since, this.filter));
    this.socket = socket;
    let opened = false;
    socket.onmessage = ({ data }) => {
      const message = JSON.parse(String(data)) as { type: string };
      if (message.type === 'ready') {
        opened = true;
        this.failures = 0;
        this.events.state('live');
      } else if (message.type === 'insert' || message.type === 'update' || message.type === 'delete') {
        const change = message as Change;
        this.since = change.seq;
        this.events.change(change);
      }
    };
    socket.onclose = ({ code }) => {
      if (this.stopped) return;
      const reason = final[code];
      if (reason) return this.end(reason);
      if (!opened) this.failures += 1;
      this.retryTimer = setTimeout(() => this.open(), Math.min(500 * 2 ** this.failures, 10_000));
      this.events.state('retrying');
    };
  }

  private end(reason: string): void {
    this.stopped = true;
    this.events.state('ended', reason);
  }
}
