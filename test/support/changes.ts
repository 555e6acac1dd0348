// Clients of the changes over plain HTTP (openapi.yaml, getChanges) for tests: the stream's head is
// checked against openapi.yaml, each message against asyncapi.yaml's feed messages, as FeedClient does.
// EventStream reads server-sent events as an EventSource does (WHATWG HTML, "Server-sent events": the
// fields, `retry`, reconnecting with Last-Event-ID once the server ends the stream, stopping at an answer
// that is not 200); no EventSource package is installed here (the lead was asked to add `eventsource`).
// Both read through node:http, so that a test can stop reading (pause()) as a slow client would.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { checkResponse } from './contract.ts';
import { type FeedMessage, messageProblem } from './feed.ts';

const DEADLINE_MS = 20_000;

/** A server-sent event as an EventSource dispatches it. */
export interface ServerSentEvent {
  type: string;
  data: string;
  lastEventId: string;
}

interface StreamOptions {
  /** `text/event-stream` or `application/jsonl`. */
  accept: string;
  key: string;
  headers?: Record<string, string>;
}

/** What ended a connection of a stream: its status when it was no 200 (its problem's text), or the server ending it. */
interface Ended {
  status: number;
  text: string;
}

/** One or more connections to a changes stream, read as they come. */
abstract class StreamClient {
  readonly messages: FeedMessage[] = [];
  /** Every connection's answer that was no 200, and every 200 that ended. */
  readonly ends: Ended[] = [];
  protected readonly invalid: string[] = [];
  private readonly listeners = new Set<() => void>();
  protected response: IncomingMessage | undefined;
  protected stopped = false;

  constructor(
    readonly url: string,
    protected readonly options: StreamOptions,
  ) {}

  /** The current response's headers. */
  get headers(): IncomingMessage['headers'] {
    return this.response?.headers ?? {};
  }

  /** Stops reading the current response, as a slow client does: once its buffer is full, its connection is read no more. */
  pause(): void {
    this.response?.pause();
  }

  resume(): void {
    this.response?.resume();
  }

  /** Change messages (not `ready` nor `collection_deleted`), in the order they came. */
  get changes(): Extract<FeedMessage, { seq: number; row: unknown }>[] {
    return this.messages.filter((message) => message.type !== 'ready' && message.type !== 'collection_deleted') as never;
  }

  /** Opens a connection (`headers` added to the request's); resolves once its head is read. */
  protected connect(headers: Record<string, string>): Promise<IncomingMessage> {
    const url = new URL(this.url);
    const request = httpRequest({
      host: url.hostname,
      port: url.port,
      path: url.pathname + url.search,
      headers: { accept: this.options.accept, authorization: `Bearer ${this.options.key}`, ...this.options.headers, ...headers },
    });
    request.end();
    return new Promise((resolve, reject) => {
      request.once('error', reject);
      request.once('response', (response) => {
        // A connection the server drops (a slow reader) ends in an error here: the close below tells it.
        request.on('error', () => {});
        response.on('error', () => {});
        this.response = response;
        const contentHeaders = new Headers();
        for (const [name, value] of Object.entries(response.headers)) {
          if (value !== undefined) contentHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
        }
        response.setEncoding('utf8');
        if (response.statusCode !== 200) {
          let text = '';
          response.on('data', (chunk: string) => {
            text += chunk;
          });
          response.on('end', () => {
            checkResponse({ method: 'GET', path: url.pathname, status: response.statusCode ?? 0, headers: contentHeaders, text });
            this.ends.push({ status: response.statusCode ?? 0, text });
            this.changed();
          });
        } else {
          // The head, against openapi.yaml: the stream's body is a string there; its messages are checked one by one.
          checkResponse({ method: 'GET', path: url.pathname, status: 200, headers: contentHeaders, text: '' });
          response.on('data', (chunk: string) => this.read(chunk));
          response.once('close', () => {
            this.ends.push({ status: 200, text: '' });
            this.changed();
            this.ended();
          });
        }
        resolve(response);
      });
    });
  }

  protected abstract read(chunk: string): void;

  /** The server ended a 200: an EventSource reconnects. */
  protected ended(): void {}

  protected take(text: string): void {
    const problem = messageProblem(text);
    if (problem) this.invalid.push(problem);
    else this.messages.push(JSON.parse(text));
    this.changed();
  }

  /** Stops reading and reconnecting. */
  close(): void {
    this.stopped = true;
    this.response?.destroy();
    this.checkValid();
  }

  checkValid(): void {
    if (this.invalid.length > 0) throw new Error(`the server sent messages asyncapi.yaml does not allow:\n${this.invalid.join('\n')}`);
  }

  /** Resolves once `done()` holds; rejects on an invalid message or at the deadline. */
  until(done: () => boolean, what: string, deadlineMs = DEADLINE_MS): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        try {
          this.checkValid();
        } catch (error) {
          finish();
          reject(error);
          return;
        }
        if (done()) {
          finish();
          resolve();
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`no ${what} within ${deadlineMs} ms; got ${this.messages.length} messages, ends ${JSON.stringify(this.ends)}`));
      }, deadlineMs);
      const finish = () => {
        clearTimeout(timer);
        this.listeners.delete(check);
      };
      this.listeners.add(check);
      check();
    });
  }

  /** Waits until a change with `seq` (or a later one) has come. */
  seqReached(seq: number, deadlineMs = DEADLINE_MS): Promise<void> {
    return this.until(() => this.changes.some((message) => message.seq >= seq), `seq ${seq}`, deadlineMs);
  }

  protected changed(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

/** Server-sent events, read and resumed as an EventSource does. */
export class EventStream extends StreamClient {
  readonly events: ServerSentEvent[] = [];
  /** The connections made: the first, and each reconnection. */
  connections = 0;
  /** Comments received (heartbeats, the reason of a close). */
  readonly comments: string[] = [];
  retryMs = 3000;
  private lastEventId = '';
  private buffer = '';
  private pending = { type: '', data: [] as string[], id: undefined as string | undefined };

  private constructor(url: string, options: Omit<StreamOptions, 'accept'>) {
    super(url, { ...options, accept: 'text/event-stream' });
  }

  /** Opens the stream; resolves once the first connection's head is read. */
  static async open(url: string, key: string, headers: Record<string, string> = {}): Promise<EventStream> {
    const stream = new EventStream(url, { key, headers });
    await stream.reconnect();
    return stream;
  }

  get status(): number | undefined {
    return this.response?.statusCode;
  }

  private async reconnect(): Promise<void> {
    if (this.stopped) return;
    this.connections++;
    this.buffer = '';
    const response = await this.connect(this.lastEventId === '' ? {} : { 'last-event-id': this.lastEventId });
    // An answer that is no 200 fails the EventSource: it does not reconnect.
    if (response.statusCode !== 200) this.stopped = true;
  }

  protected ended(): void {
    if (this.stopped) return;
    setTimeout(() => {
      this.reconnect().catch(() => {
        this.stopped = true;
      });
    }, this.retryMs).unref();
  }

  /** The event stream interpretation of the WHATWG's parser: lines, then fields; an empty line dispatches. */
  protected read(chunk: string): void {
    this.buffer += chunk;
    const lines = this.buffer.split(/\r\n|\r|\n/);
    this.buffer = lines.pop() as string;
    for (const line of lines) {
      if (line === '') {
        this.dispatch();
        continue;
      }
      if (line.startsWith(':')) {
        this.comments.push(line.slice(1).trim());
        this.changed();
        continue;
      }
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') this.pending.type = value;
      else if (field === 'data') this.pending.data.push(value);
      else if (field === 'id' && !value.includes('\0')) this.pending.id = value;
      else if (field === 'retry' && /^[0-9]+$/.test(value)) this.retryMs = Number(value);
    }
  }

  private dispatch(): void {
    const { type, data, id } = this.pending;
    this.pending = { type: '', data: [], id: undefined };
    if (id !== undefined) this.lastEventId = id;
    if (data.length === 0) return;
    const text = data.join('\n');
    this.events.push({ type: type || 'message', data: text, lastEventId: this.lastEventId });
    const problem = messageProblem(text);
    if (!problem && JSON.parse(text).type !== (type || 'message')) {
      this.invalid.push(`event ${type} carries a message of type ${JSON.parse(text).type}`);
    }
    this.take(text);
  }
}

/** JSON Lines, one connection. */
export class LineStream extends StreamClient {
  private buffer = '';

  static async open(url: string, key: string, headers: Record<string, string> = {}): Promise<LineStream> {
    const stream = new LineStream(url, { key, headers, accept: 'application/jsonl' });
    await stream.connect({});
    return stream;
  }

  protected read(chunk: string): void {
    this.buffer += chunk;
    const lines = this.buffer.split('\n');
    this.buffer = lines.pop() as string;
    for (const line of lines) this.take(line);
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
