// Clients of the changes streams over plain HTTP (openapi.yaml, getChanges) for tests, each connection's
// head checked against openapi.yaml, each item against the stream's item (`x-rowbase-item-schema`) and each
// message against asyncapi.yaml's feed messages, as FeedClient does.
//
// EventStream is a real EventSource (the `eventsource` package, WHATWG HTML "Server-sent events"): it
// reconnects with Last-Event-ID once the server ends a stream, honours `retry`, and stops at an answer
// that is no 200. Its `fetch` is ours: it sets the key, checks each answer, and reads the bytes the
// EventSource is handed with eventsource-parser too, for what an EventSource does not show (comments,
// `retry`, each event's fields to check). Both streams read through that one body, which a test can stop
// reading (pause()) as a slow client does: the EventSource then reads nothing, and the server's buffer fills.
import { EventSource } from 'eventsource';
import { createParser } from 'eventsource-parser';
import { checkResponse, checkStreamItem, type StreamItem } from './contract.ts';
import { type FeedMessage, messageProblem } from './feed.ts';
import { Waits } from './waits.ts';

const DEADLINE_MS = 20_000;

/** A page of changes (openapi.yaml's ChangesPage), its messages as asyncapi.yaml types them. */
export interface ChangesPage {
  changes: FeedMessage[];
  next_since: number;
  caught_up: boolean;
}

/** A server-sent event as the EventSource dispatched it. */
export interface ServerSentEvent {
  type: string;
  data: string;
  lastEventId: string;
}

/** What ended a connection of a stream: its status when it was no 200 (its problem's text), or the server ending a 200. */
interface Ended {
  status: number;
  text: string;
}

/** The types of the feed's messages (asyncapi.yaml), each an event's type. */
const MESSAGE_TYPES = ['ready', 'insert', 'update', 'delete', 'collection_deleted'];

/** One or more connections to a changes stream, read as they come. */
abstract class StreamClient {
  readonly messages: FeedMessage[] = [];
  /** Every connection's answer that was no 200, and every 200 that ended. */
  readonly ends: Ended[] = [];
  /** The connections made: the first, and each reconnection. */
  connections = 0;
  protected readonly invalid: string[] = [];
  private readonly waits = new Waits();
  private response: Response | undefined;
  /** Settles while reading may go on; a pending promise while paused. */
  private reading: Promise<void> = Promise.resolve();
  private release: () => void = () => {};
  protected readonly path: string;

  constructor(
    readonly url: string,
    private readonly accept: string,
    private readonly requestHeaders: Record<string, string>,
  ) {
    this.path = new URL(url).pathname;
  }

  /** The current response's status. */
  get status(): number | undefined {
    return this.response?.status;
  }

  /** The current response's headers. */
  get headers(): Headers {
    return this.response?.headers ?? new Headers();
  }

  /** Stops reading the current response, as a slow client does: once its buffers are full, its connection is read no more. */
  pause(): void {
    this.reading = new Promise((resolve) => {
      this.release = resolve;
    });
  }

  resume(): void {
    this.release();
    this.reading = Promise.resolve();
  }

  /** Change messages (not `ready` nor `collection_deleted`), in the order they came. */
  get changes(): Extract<FeedMessage, { seq: number; row: unknown }>[] {
    return this.messages.filter((message) => message.type !== 'ready' && message.type !== 'collection_deleted') as never;
  }

  /**
   * fetch for one connection (`init` the request's, its headers joined to the key and the Accept): the
   * answer checked against openapi.yaml, and a 200's body handed on as it is read, `inspect` told of each
   * piece of it, and read no further while paused. What ends a connection is in `ends`.
   */
  protected async fetchConnection(url: string | URL | Request, init: RequestInit, inspect: (text: string) => void): Promise<Response> {
    this.connections++;
    const headers = new Headers(init.headers);
    headers.set('accept', this.accept);
    for (const [name, value] of Object.entries(this.requestHeaders)) headers.set(name, value);
    const response = await fetch(url, { ...init, headers });
    this.response = response;
    this.changed();
    const { status } = response;
    if (status !== 200 || !response.body) {
      const text = await response.text();
      checkResponse({ method: 'GET', path: this.path, status, headers: response.headers, text });
      this.ended({ status, text });
      return new Response(text, { status, headers: response.headers });
    }
    // The head, against openapi.yaml: the stream's body is a string there; its items are checked one by one.
    checkResponse({ method: 'GET', path: this.path, status, headers: response.headers, text: '' });
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    const body = new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          await this.reading;
          try {
            const { done, value } = await reader.read();
            if (done) {
              this.ended({ status, text: '' });
              controller.close();
              return;
            }
            inspect(decoder.decode(value, { stream: true }));
            controller.enqueue(value);
          } catch (error) {
            // The server dropped the connection (a slow reader), or the client closed it.
            this.ended({ status, text: '' });
            controller.error(error);
          }
        },
        cancel: (reason) => reader.cancel(reason),
      },
      // Nothing read ahead: a paused client reads nothing.
      { highWaterMark: 0 },
    );
    return new Response(body, { status, headers: response.headers });
  }

  private ended(end: Ended): void {
    this.ends.push(end);
    this.changed();
  }

  /** A message's JSON: checked against asyncapi.yaml, then kept. */
  protected take(text: string): void {
    const problem = messageProblem(text);
    if (problem) this.invalid.push(problem);
    else this.messages.push(JSON.parse(text));
    this.changed();
  }

  /** `check` run, what it throws kept as invalid (and failing the next wait). */
  protected checked(check: () => void): void {
    try {
      check();
    } catch (error) {
      this.invalid.push((error as Error).message);
      this.changed();
    }
  }

  /** Stops reading and reconnecting, closes the stream's connections, and fails if anything the server sent was invalid. */
  close(): void {
    this.stop();
    this.checkValid();
  }

  /** Stops reading and reconnecting. */
  protected abstract stop(): void;

  checkValid(): void {
    if (this.invalid.length > 0) throw new Error(`the server sent what the contract does not allow:\n${this.invalid.join('\n')}`);
  }

  /** Resolves once `done()` holds; rejects on an invalid message or at the deadline. */
  until(done: () => boolean, what: string, deadlineMs = DEADLINE_MS): Promise<void> {
    return this.waits.until({
      done,
      what,
      deadlineMs,
      check: () => this.checkValid(),
      progress: () => `got ${this.messages.length} messages, ends ${JSON.stringify(this.ends)}`,
    });
  }

  /** Waits until a change with `seq` (or a later one) has come. */
  seqReached(seq: number, deadlineMs = DEADLINE_MS): Promise<void> {
    return this.until(() => this.changes.some((message) => message.seq >= seq), `seq ${seq}`, deadlineMs);
  }

  protected changed(): void {
    this.waits.changed();
  }
}

/** Server-sent events, read and resumed by an EventSource. */
export class EventStream extends StreamClient {
  /** The events the EventSource dispatched. */
  readonly events: ServerSentEvent[] = [];
  /** Comments received (heartbeats, the reason of a close), read off the wire. */
  readonly comments: string[] = [];
  /** The last `retry` the server sent, read off the wire (the EventSource's own default until then). */
  retryMs = 3000;
  private readonly source: EventSource;

  private constructor(url: string, headers: Record<string, string>) {
    super(url, 'text/event-stream', headers);
    this.source = new EventSource(url, {
      fetch: (input, init) => {
        // Each connection's bytes, parsed afresh, as the EventSource parses them.
        const parser = createParser({
          onEvent: ({ id, event, data }) => {
            const item = { ...(id !== undefined && { id }), ...(event !== undefined && { event }), data };
            this.checked(() => checkStreamItem(this.path, 'text/event-stream', item as StreamItem));
          },
          onComment: (comment) => {
            this.comments.push(comment.trim());
            this.changed();
          },
          onRetry: (retry) => {
            this.retryMs = retry;
          },
        });
        return this.fetchConnection(input, init, (text) => parser.feed(text));
      },
    });
    for (const type of [...MESSAGE_TYPES, 'message']) {
      this.source.addEventListener(type, (event) => this.dispatched(event));
    }
  }

  /** Opens the stream with the key (and `headers`, which may replace it); resolves once the first connection's head is read. */
  static async open(url: string, key: string, headers: Record<string, string> = {}): Promise<EventStream> {
    const stream = new EventStream(url, { authorization: `Bearer ${key}`, ...headers });
    await stream.until(() => stream.status !== undefined, 'the head');
    return stream;
  }

  /** Whether the EventSource has given up: an answer that is no 200 fails it for good. */
  get failed(): boolean {
    return this.source.readyState === this.source.CLOSED;
  }

  private dispatched({ type, data, lastEventId }: MessageEvent<string>): void {
    this.events.push({ type, data, lastEventId });
    const problem = messageProblem(data);
    if (!problem && JSON.parse(data).type !== type) this.invalid.push(`event ${type} carries a message of type ${JSON.parse(data).type}`);
    this.take(data);
  }

  protected stop(): void {
    this.source.close();
  }
}

/** JSON Lines, one connection. */
export class LineStream extends StreamClient {
  private readonly aborted = new AbortController();
  private buffer = '';

  private constructor(url: string, headers: Record<string, string>) {
    super(url, 'application/jsonl', headers);
  }

  static async open(url: string, key: string, headers: Record<string, string> = {}): Promise<LineStream> {
    const stream = new LineStream(url, { authorization: `Bearer ${key}`, ...headers });
    const response = await stream.fetchConnection(url, { signal: stream.aborted.signal }, (text) => stream.read(text));
    if (response.body) stream.drain(response.body);
    return stream;
  }

  /** Reads the body to its end, as the fetch hands it on (which a pause holds). */
  private async drain(body: ReadableStream<Uint8Array>): Promise<void> {
    try {
      for await (const _ of body);
    } catch {
      // Ended by the server or by close(): fetchConnection told `ends`.
    }
  }

  private read(text: string): void {
    this.buffer += text;
    const lines = this.buffer.split('\n');
    this.buffer = lines.pop() as string;
    for (const line of lines) {
      this.checked(() => checkStreamItem(this.path, 'application/jsonl', line));
      this.take(line);
    }
  }

  protected stop(): void {
    this.aborted.abort();
  }
}

/** Resolves once `done()` holds, looked at every 5 ms (for what the server holds, which no message tells); rejects at the deadline. */
export async function eventually(done: () => boolean, what: string, deadlineMs = DEADLINE_MS): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`no ${what} within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
