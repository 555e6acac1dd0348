// A real `ws` client of the feed for tests. It checks every message it receives against the schemas of
// asyncapi.yaml, read here independently of the server, and every refused upgrade against its Problem
// schema: a test that meets an invalid message fails in its next wait. Waits end at an event (enough
// messages, a close) or at a deadline, never after a fixed delay.
import type { IncomingHttpHeaders } from 'node:http';
import { fromFile, Parser } from '@asyncapi/parser';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import WebSocket from 'ws';
import type { components, FeedMessage } from '../../generated/asyncapi.ts';
import { checkResponse } from './contract.ts';
import { Waits } from './waits.ts';

export type Problem = components['schemas']['Problem'];
export type { FeedMessage };

const { document, diagnostics } = await fromFile(new Parser(), new URL('../../asyncapi.yaml', import.meta.url).pathname).parse();
if (!document) throw new Error(`asyncapi.yaml does not parse: ${diagnostics.map((d) => d.message).join('; ')}`);
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats.default(ajv);
const messageSchemas = new Map<string, ValidateFunction>();
for (const message of document.channels().get('feed')?.messages() ?? []) {
  messageSchemas.set(message.name() as string, ajv.compile(message.payload()?.json() as object));
}
const problemSchema = ajv.compile<Problem>(document.components().schemas().get('Problem')?.json() as object);
const deliverySchemas = new Map<string, { headers: ValidateFunction; payload: ValidateFunction }>();
for (const message of document.channels().get('webhook')?.messages() ?? []) {
  deliverySchemas.set(message.name() as string, {
    headers: ajv.compile(message.headers()?.json() as object),
    payload: ajv.compile(message.payload()?.json() as object),
  });
}

/** A message's JSON, or why it is none. */
function parsed(text: string): { message: { type?: unknown } } | { problem: string } {
  try {
    return { message: JSON.parse(text) };
  } catch {
    return { problem: `not JSON: ${text.slice(0, 200)}` };
  }
}

/** Why a message breaks asyncapi.yaml, or undefined when it does not. */
export function messageProblem(text: string): string | undefined {
  const read = parsed(text);
  if ('problem' in read) return read.problem;
  const { message } = read;
  const validate = messageSchemas.get(String(message?.type));
  if (!validate) return `no message of asyncapi.yaml has type ${JSON.stringify(message?.type)}`;
  if (!validate(message)) return `${ajv.errorsText(validate.errors)}: ${text.slice(0, 200)}`;
  return undefined;
}

/** Why a request the service sent a webhook breaks asyncapi.yaml (the `webhook` channel), or undefined when it does not. */
export function deliveryProblem(headers: IncomingHttpHeaders, text: string): string | undefined {
  const read = parsed(text);
  if ('problem' in read) return read.problem;
  const { message } = read;
  const schemas = deliverySchemas.get(String(message?.type));
  if (!schemas) return `no message of the webhook channel has type ${JSON.stringify(message?.type)}`;
  if (!schemas.headers(headers)) return `headers: ${ajv.errorsText(schemas.headers.errors)}: ${JSON.stringify(headers)}`;
  if (!schemas.payload(message)) return `${ajv.errorsText(schemas.payload.errors)}: ${text.slice(0, 200)}`;
  return undefined;
}

/** The seq of each message (undefined for those without one). */
export const seqs = (messages: FeedMessage[]) => messages.map((message) => ('seq' in message ? message.seq : undefined));
/** The integers from `from` to `to`, both included. */
export const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => from + index);

/** A row as the feed carries it. */
export type FeedRow = { id: number } & Record<string, unknown>;

/**
 * Applies a change message to `view`, the rows a client holds by id, as asyncapi.yaml ("Filtered
 * subscriptions") tells a client to: an insert, or an update without `matches`, puts the row; an update
 * with `"matches": false`, or a delete, removes it. Other messages change nothing.
 */
export function applyToView(view: Map<number, FeedRow>, message: FeedMessage): void {
  if (message.type === 'insert' || (message.type === 'update' && message.matches === undefined)) view.set(message.row.id, message.row);
  else if (message.type === 'update' || message.type === 'delete') view.delete(message.row.id);
}

export type Query = Record<string, string | number | undefined>;

export interface OpenOptions {
  /** Where the key goes: the `api_key` query parameter (default), a Bearer header or an x-api-key header. */
  via?: 'query' | 'bearer' | 'header';
  headers?: Record<string, string>;
}

export interface Closed {
  code: number;
  reason: string;
}

export interface Refusal {
  status: number;
  headers: IncomingHttpHeaders;
  problem: Problem;
}

const DEADLINE_MS = 10_000;

export function feedUrl(base: string, key: string | undefined, query: Query, via: OpenOptions['via'] = 'query'): string {
  const params = new URLSearchParams();
  if (key !== undefined && via === 'query') params.set('api_key', key);
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value));
  return `${base.replace(/^http/, 'ws')}/ws?${params}`;
}

function connect(base: string, key: string | undefined, query: Query, options: OpenOptions): WebSocket {
  const headers = { ...options.headers };
  if (key !== undefined && options.via === 'bearer') headers.authorization = `Bearer ${key}`;
  if (key !== undefined && options.via === 'header') headers['x-api-key'] = key;
  return new WebSocket(feedUrl(base, key, query, options.via), { headers });
}

export class FeedClient {
  readonly messages: FeedMessage[] = [];
  closed: Closed | undefined;
  private readonly invalid: string[] = [];
  private readonly waits = new Waits();

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const text = data.toString();
      const problem = messageProblem(text);
      if (problem) this.invalid.push(problem);
      else this.messages.push(JSON.parse(text));
      this.changed();
    });
    socket.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.changed();
    });
    socket.on('error', () => {});
  }

  /** Opens a feed and waits for its `ready`. */
  static async open(base: string, key: string | undefined, query: Query, options: OpenOptions = {}): Promise<FeedClient> {
    const socket = connect(base, key, query, options);
    const client = new FeedClient(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('unexpected-response', (_request, response) => reject(new Error(`upgrade refused with ${response.statusCode}`)));
      socket.once('error', reject);
    });
    await client.until(() => client.messages.length > 0, 'ready');
    return client;
  }

  /** The `ready` message, always the first. */
  get ready(): Extract<FeedMessage, { type: 'ready' }> {
    const [first] = this.messages;
    if (first?.type !== 'ready') throw new Error(`the first message is not ready: ${JSON.stringify(first)}`);
    return first;
  }

  /** Every message after `ready`. */
  get changes(): FeedMessage[] {
    return this.messages.slice(1);
  }

  /** Waits until `count` messages have come after `ready`; fails if the socket closes first. */
  async changesCount(count: number, deadlineMs = DEADLINE_MS): Promise<FeedMessage[]> {
    await this.until(() => this.changes.length >= count, `${count} messages after ready`, deadlineMs);
    return this.changes;
  }

  /** Waits until a message with `seq` (or a later one) has come. */
  async seqReached(seq: number, deadlineMs = DEADLINE_MS): Promise<FeedMessage[]> {
    await this.until(() => this.changes.some((message) => 'seq' in message && message.seq >= seq), `seq ${seq}`, deadlineMs);
    return this.changes;
  }

  /** Waits for the server to close the socket. */
  async closing(deadlineMs = DEADLINE_MS): Promise<Closed> {
    await this.until(() => this.closed !== undefined, 'the close', deadlineMs, true);
    return this.closed as Closed;
  }

  /** Closes from the client side and fails if any message was invalid. */
  async close(): Promise<void> {
    if (!this.closed) {
      this.socket.close();
      await this.until(() => this.closed !== undefined, 'the close', DEADLINE_MS, true);
    }
    this.checkValid();
  }

  checkValid(): void {
    if (this.invalid.length > 0) throw new Error(`the server sent messages asyncapi.yaml does not allow:\n${this.invalid.join('\n')}`);
  }

  /** Resolves once `done()` holds; rejects on an invalid message, on a close (unless waiting for one) or at the deadline. */
  until(done: () => boolean, what: string, deadlineMs = DEADLINE_MS, closeIsFine = false): Promise<void> {
    return this.waits.until({
      done,
      what,
      deadlineMs,
      check: () => this.checkValid(),
      ended: () =>
        this.closed && !closeIsFine
          ? new Error(
              `closed with ${this.closed.code} ${this.closed.reason} while waiting for ${what}; got ${this.messages.length} messages`,
            )
          : undefined,
      progress: () => `got ${this.messages.length} messages`,
    });
  }

  private changed(): void {
    this.waits.changed();
  }
}

/**
 * The problem body of a refused upgrade, checked as asyncapi.yaml says: `application/problem+json`, a
 * `Problem`, and the status of the response. Throws on anything else.
 */
export function refusalProblem(status: number, contentType: string | null | undefined, text: string): Problem {
  if (contentType !== 'application/problem+json') throw new Error(`${status} refusal has content type ${contentType}: ${text}`);
  const problem = JSON.parse(text);
  if (!problemSchema(problem)) throw new Error(`${status} refusal body breaks Problem: ${ajv.errorsText(problemSchema.errors)}`);
  if (problem.status !== status) throw new Error(`problem status ${problem.status} differs from ${status}`);
  return problem;
}

/**
 * Asks for a feed that the server must refuse, and returns the refusal, its problem body checked against
 * asyncapi.yaml, and the whole answer against openapi.yaml's openFeed.
 */
export function refusal(base: string, key: string | undefined, query: Query, options: OpenOptions = {}): Promise<Refusal> {
  return refusalOf(connect(base, key, query, options));
}

/** The refusal of the upgrade `socket` asks for (a `ws` client), checked as refusal() checks it. */
export function refusalOf(socket: WebSocket): Promise<Refusal> {
  return new Promise((resolve, reject) => {
    socket.on('open', () => {
      socket.terminate();
      reject(new Error('the upgrade was accepted'));
    });
    socket.on('error', reject);
    socket.on('unexpected-response', (request, response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => {
        text += chunk;
      });
      response.on('end', () => {
        request.destroy();
        const status = response.statusCode ?? 0;
        try {
          const problem = refusalProblem(status, response.headers['content-type'], text);
          // openapi.yaml describes the same refusals, as the answers of openFeed.
          const headers = new Headers();
          for (const [name, value] of Object.entries(response.headers)) if (typeof value === 'string') headers.set(name, value);
          checkResponse({ method: 'GET', path: '/ws', status, headers, text });
          resolve({ status, headers: response.headers, problem });
        } catch (error) {
          reject(error);
        }
      });
    });
  });
}
