// What a request sends for its operation, past its target and its key: its JSON body, its
// Idempotency-Key, and the versions of a row it holds.
//
// The JSON body (jsonBody), and how many bytes of request bodies the service works on at once
// (BodyBudget). A body, once parsed, is many times its bytes in objects, and its request holds them
// until answered: the rows of a batch insert wait for SQLite's one writer with it. Without a bound,
// memory grows with the clients' concurrency (many connections each inserting large batches). With it,
// the requests past the budget wait, their bodies read but not yet parsed, and are let in, in the order
// they came, as those before them are answered.
//
// A request takes its share once its whole body has arrived, never while it is still arriving, so that
// a slow client holds nothing of it; a body larger than the whole budget is let in alone. Requests
// without a body never wait.
//
// Idempotency-Key (openapi.yaml, IdempotencyKey; draft-ietf-httpapi-idempotency-key-header) on every
// POST, PATCH and DELETE under /v1 (idempotency). A request with a key whose answer is stored (and not
// expired) is answered with it again, marked `Idempotent-Replayed: true`, if it is the same request
// (method, path, query and body), else 422; one whose first request is still running is 409. Otherwise
// the request runs, and its write stores its answer in its own transaction (db/idempotency.ts): the
// handler says how (answerOnce there).
//
// Conditional requests on rows (RFC 9110 §13): a row's ETag is its version (openapi.yaml, ETag), and
// If-Match and If-None-Match name the versions a client holds. Read here from the request's headers
// (ifMatch, ifNoneMatch); the data layer compares If-Match's versions with the row's in the write's own
// transaction.
import { hash as digest } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { pipeline, type Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Context, Middleware } from 'koa';
import type { Operation } from 'openapi-backend';
import type { OpenAPIV3 } from 'openapi-types';
import getRawBody from 'raw-body';
import type { Config } from '../config.ts';
import type { Store } from '../db/engine/store.ts';
import { ApiError, type FieldError, validationFailed } from '../errors.ts';
import { type FoundAnswer, type OnceRequest, OnceTaken, onceInProgress } from '../idempotency/answers.ts';
import { type AdmissionState, type AuthState, headerLines, respond } from './stages.ts';

declare module 'koa' {
  interface Request {
    /** The JSON body, as jsonBody() read it. */
    body?: unknown;
    /** The body's media type, without parameters: `application/json`, or another its operation takes. */
    mediaType?: string;
  }
}

const methodsWithBody = new Set(['POST', 'PUT', 'PATCH']);

/** What a Content-Encoding is undone with; `identity` (or none) is read as it is. */
const decoders: Record<string, () => Transform> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/** JSON text as RFC 8259 §8.1 has it: UTF-8. A BOM is kept, and refused by JSON.parse, as it always was. */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The first character of an object or array: the only JSON texts a body may be. */
const objectOrArray = /^[ \t\n\r]*[[{]/;

/**
 * Reads a JSON body where the method carries one: anything but `application/json` (or another JSON
 * media type the operation's requestBody lists, as a PATCH of rows takes RFC 7396's and RFC 6902's) in UTF-8 is 415,
 * over `maxBodyBytes` 413 (once decompressed: gzip, deflate and br are read; any other encoding is 415),
 * and 400 for a body that is not what its Content-Encoding says, not UTF-8 (never read as U+FFFD), not
 * a JSON object or array, nested deeper than `maxJsonDepth`, or holding a number no double can hold
 * (`1e400` would be stored as null). Bodies of other methods are not read, nor bodies sent to a route
 * and method that openapi.yaml does not have (as the router's `route` stage found): routing answers
 * those with 404 or 405, whatever their body.
 */
export function jsonBody(config: Config, budget: BodyBudget): Middleware<{ route: { operation?: Operation } }> {
  return (ctx, next) => {
    const kind = bodyKind(ctx.req);
    const { operation } = ctx.state.route;
    if (kind === 'none' || !operation) return next();
    const read = readJsonBody(ctx, kind, operation, config, budget, next);
    // A PATCH's 415 names the media types it takes (RFC 5789 §2.2), whatever it refused.
    return operation.method === 'patch' ? read.catch((error) => Promise.reject(withAcceptPatch(error, operation))) : read;
  };
}

/** The body's media type (a 415 for one `operation` does not take) and its JSON, then the stages after. */
async function readJsonBody(
  ctx: Context,
  kind: 'json' | 'other',
  operation: Operation,
  config: Config,
  budget: BodyBudget,
  next: () => Promise<unknown>,
): Promise<unknown> {
  ctx.request.mediaType = kind === 'json' ? 'application/json' : checkMediaType(ctx, operation);
  return withJsonBody(ctx.req, config, budget, (body) => {
    ctx.request.body = body;
    return next();
  });
}

/** The 415 `error` with Accept-Patch naming the media types `operation` takes; any other error as it is. */
function withAcceptPatch(error: unknown, operation: Operation): unknown {
  if (!(error instanceof ApiError) || error.code !== 'unsupported_media_type') return error;
  const headers = { ...error.options.headers, 'Accept-Patch': mediaTypesOf(operation).join(', ') };
  return new ApiError(error.code, error.detail, { ...error.options, headers });
}

/**
 * Whether a request has a body to read, and of what type: `none` for a method that carries none, or
 * none sent; `json` for a Content-Type known good as it is; `other` for one to check (checkMediaType).
 */
export function bodyKind({ method, headers }: Pick<IncomingMessage, 'method' | 'headers'>): 'none' | 'json' | 'other' {
  if (!methodsWithBody.has(method as string) || !hasBody(headers)) return 'none';
  return plainJson.has(headers['content-type'] as string) ? 'json' : 'other';
}

/**
 * Reads the request's body as JSON, once its media type is known good (else 400, 413, or 415 for an
 * encoding not read), and answers what `use` makes of it. The body is parsed once its bytes
 * (decompressed) have their share of `budget`, which it holds until `use` is done, or the parse fails.
 */
async function withJsonBody<T>(
  request: IncomingMessage,
  config: Config,
  budget: BodyBudget,
  use: (body: unknown) => T | Promise<T>,
): Promise<T> {
  const bytes = await readBody(request, config.maxBodyBytes);
  const waiting = budget.take(bytes.length);
  if (waiting) await waiting;
  try {
    return await use(parseJson(bytes, config.maxJsonDepth));
  } finally {
    budget.give(bytes.length);
  }
}

/** A body's bytes as JSON: 400 for bytes that are not UTF-8, not a JSON object or array, or not of a shape we store. */
function parseJson(bytes: Buffer, maxJsonDepth: number): unknown {
  const text = decode(bytes);
  // Every top-level field name is the client's (openapi.yaml, Row), `__proto__` too: JSON.parse makes it an
  // own property like any other, and nothing copies a body by assignment (spread and JSON.stringify
  // define and read own properties).
  let body: unknown;
  try {
    if (!objectOrArray.test(text)) throw new SyntaxError('not an object or array');
    body = JSON.parse(text);
  } catch {
    throw validationFailed('The request body is not valid JSON.', [{ in: 'body', name: '', message: 'is not valid JSON' }]);
  }
  const problem = shapeProblem(body, maxJsonDepth);
  if (problem) throw validationFailed(`The request body ${problem}.`, [{ in: 'body', name: '', message: problem }]);
  return body;
}

/**
 * The Content-Types nearly every client sends, known good as they are: only another one is parsed
 * (type-is, content-type), which is work on every write.
 */
const plainJson = new Set([
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=utf-8',
  'application/json; charset=UTF-8',
]);

/**
 * Any other Content-Type: 415 unless it is one of the media types `operation` takes, with parameters,
 * in UTF-8; else the one it is.
 */
function checkMediaType(ctx: Context, operation: Operation): string {
  const accepted = mediaTypesOf(operation);
  const found = ctx.is(accepted);
  if (!found) {
    const types = accepted.length === 1 ? accepted[0] : `one of ${accepted.join(', ')}`;
    throw new ApiError('unsupported_media_type', `The request body must be ${types}.`);
  }
  const charset = ctx.request.charset.toLowerCase();
  if (charset !== '' && charset !== 'utf-8' && charset !== 'utf8') {
    throw new ApiError('unsupported_media_type', `The request body must be JSON in UTF-8, not ${charset}.`);
  }
  return found;
}

/** The media types of each operation's body, in the order openapi.yaml lists them: worked out once. */
const mediaTypes = new WeakMap<Operation, string[]>();
function mediaTypesOf(operation: Operation): string[] {
  let types = mediaTypes.get(operation);
  if (!types) {
    const listed = Object.keys((operation.requestBody as OpenAPIV3.RequestBodyObject | undefined)?.content ?? {});
    types = listed.length > 0 ? listed : ['application/json'];
    mediaTypes.set(operation, types);
  }
  return types;
}

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;
}

/**
 * The body's bytes, decompressed, at most `limit` of them (else raw-body's 413). Errors with a status
 * are raw-body's, or readPlain's made as raw-body makes them (413, an aborted or short body); a
 * decoder's own errors, which have none, mean a body that is not what its Content-Encoding says.
 */
async function readBody(request: IncomingMessage, limit: number): Promise<Buffer> {
  const encoding = (request.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity') return readPlain(request, limit);
  const decoder = decoders[encoding];
  if (!decoder)
    throw new ApiError('unsupported_media_type', `The request body's Content-Encoding ${encoding} is not one of gzip, deflate, br.`);
  try {
    // pipeline, not pipe: a request that ends early ends the decoder's read too, with an error.
    return await getRawBody(
      pipeline(request, decoder(), () => {}),
      { limit },
    );
  } catch (error) {
    if ((error as { status?: unknown }).status !== undefined) throw error;
    throw validationFailed(`The request body is not valid ${encoding}.`, [{ in: 'body', name: '', message: `is not valid ${encoding}` }]);
  }
}

/**
 * A body sent as it is, read as raw-body reads it, with its errors, for a fraction of its work: a
 * Content-Length over `limit` is refused before a byte is read, a body that grows past it as soon as it
 * does, and the request is then paused, as raw-body halts it. Node's parser ends the body at its Content-Length, or the request
 * is aborted: so no body can end short of what it announced, and the listeners can stay on the request
 * (which Node drops once answered) rather than be taken off one by one.
 */
function readPlain(request: IncomingMessage, limit: number): Promise<Buffer> {
  if (Number(request.headers['content-length']) > limit) return Promise.reject(tooLarge());
  if (!request.readable) return Promise.reject(bodyError(500, 'stream is not readable', 'stream.not.readable'));
  // The listeners are not named (`const onData = …`): tsx would name each again on every request (src/db/engine/grouping.ts, GroupedWrites.hold()).
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    request.on('data', (chunk: Buffer) => {
      if (received > limit) return; // refused already
      received += chunk.length;
      if (received <= limit) return void chunks.push(chunk);
      request.pause();
      reject(tooLarge());
    });
    // Once the promise is settled, another settlement does nothing.
    request.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received)));
    request.on('aborted', () => reject(bodyError(400, 'request aborted', 'request.aborted')));
    request.on('error', reject);
  });
}

/** An error as raw-body makes it (http-errors: `status` and `type`), for toApiError (stages.ts) to answer as it does raw-body's. */
const bodyError = (status: number, message: string, type: string) => Object.assign(new Error(message), { status, type });
const tooLarge = () => bodyError(413, 'request entity too large', 'entity.too.large');

function decode(bytes: Buffer): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw validationFailed('The request body is not valid UTF-8.', [{ in: 'body', name: '', message: 'is not valid UTF-8' }]);
  }
}

/**
 * What is wrong with the parsed body's shape, if anything: nesting deeper than `max`, or a number
 * JSON.parse read as ±Infinity. Walks without recursion, so no body can exhaust the stack, and with
 * nothing allocated per value (no `[value, depth]` pair, no `Object.values()` array): a batch's
 * body is walked once per request, and its garbage is the collector's work.
 */
function shapeProblem(value: unknown, max: number): string | undefined {
  // The objects still to walk, and the depth of each.
  const walk: Walk = { objects: [], depths: [] };
  let problem = visit(walk, value, 1);
  while (!problem && walk.objects.length > 0) {
    const item = walk.objects.pop() as Record<string, unknown>;
    const depth = walk.depths.pop() as number;
    if (depth > max) return `nests deeper than ${max} levels`;
    // An array by its values: for…in would make a string of each index.
    if (Array.isArray(item)) for (const child of item) problem ||= visit(walk, child, depth + 1);
    else for (const key in item) problem ||= visit(walk, item[key], depth + 1);
  }
  return problem;
}

type Walk = { objects: object[]; depths: number[] };

/**
 * Puts an object or array at `depth` on the walk, or answers what is wrong with any other value. Made
 * once, not per body: the sources are compiled with esbuild's keepNames (docs/development.md, Rules of the hot paths).
 */
function visit(walk: Walk, value: unknown, depth: number): string | undefined {
  if (typeof value === 'object' && value !== null) {
    walk.objects.push(value);
    walk.depths.push(depth);
    return undefined;
  }
  return typeof value === 'number' && !Number.isFinite(value) ? 'holds a number past ±1.8e308, which no double holds' : undefined;
}

/** A request waiting for its share, and how to let it in. */
interface Waiting {
  bytes: number;
  letIn(): void;
}

/** The bytes of request bodies being worked on, against `limit` (config.maxBodyBytesAtOnce). */
export class BodyBudget {
  private held = 0;
  private readonly waiting: Waiting[] = [];

  constructor(readonly limit: number) {}

  /**
   * Holds `bytes` of the budget for a body: at once (answers undefined) if they fit and no one waits
   * before it, else (answers a promise) once every request before it is in and they fit, or nothing
   * else is held. Each `take` is matched by one `give` of the same bytes.
   */
  take(bytes: number): Promise<void> | undefined {
    if (this.waiting.length === 0 && this.fits(bytes)) {
      this.held += bytes;
      return undefined;
    }
    return new Promise((letIn) => this.waiting.push({ bytes, letIn }));
  }

  /** Gives back what a `take` held, and lets in the requests that now fit, in the order they came. */
  give(bytes: number): void {
    this.held -= bytes;
    while (this.waiting.length > 0 && this.fits(this.waiting[0].bytes)) {
      const next = this.waiting.shift()!;
      this.held += next.bytes;
      next.letIn();
    }
  }

  /** Bytes held, and requests waiting for their share (for tests and metrics). */
  get usage(): { held: number; waiting: number } {
    return { held: this.held, waiting: this.waiting.length };
  }

  private fits(bytes: number): boolean {
    return this.held === 0 || this.held + bytes <= this.limit;
  }
}

/** What the Idempotency-Key stage (idempotency, below) leaves for the handler. */
export interface OnceState {
  /** The request's Idempotency-Key, when it carries one its write must store an answer for. */
  once?: OnceRequest;
}

/** The longest key, in characters (openapi.yaml, IdempotencyKey). */
export const MAX_IDEMPOTENCY_KEY = 255;

/** The methods whose requests take a key: those that change something. */
const changing = new Set(['POST', 'PATCH', 'DELETE']);

/**
 * The operations whose write finds its key's stored answer itself, in the statement that would store
 * its own, and then writes nothing (an insert's: sqlite/sql.ts, row_inserts, and postgres/sql.ts,
 * insertBatchWithAnswersSql, each meet it when storing their own, and take back all they wrote): a retry
 * of one is answered with what its write finds (OnceTaken, below), so no read goes before it. An
 * insert is checked before its write only against its own request (its body and its size), which its
 * retry sends again, so the retry reaches its write as the first did.
 */
const answerFoundByWrite = new Set(['insertRows']);

/**
 * The stage of app.ts after the body: keys, by account, of this instance's requests still running
 * (another instance's are held by the database: Dialect.holdOnce). `ttlMs`: how long an answer is kept.
 */
export function idempotency(
  store: Store,
  ttlMs: number,
): Middleware<{ route: { operation?: { operationId?: string } } } & Partial<AuthState> & AdmissionState & OnceState> {
  const running = new Set<string>();
  // The times of the requests of the latest millisecond, as ISO 8601: made once for all of them.
  const clock = { ms: 0, at: '', expiresAt: '' };
  return async (ctx, next) => {
    const { principal, route } = ctx.state;
    if (ctx.req.headers['idempotency-key'] === undefined || !principal || !route.operation || !changing.has(ctx.method)) return next();
    const key = keyOf(ctx.req);
    // A key limited to some collections is not shown the answers of the account's other keys: the
    // request it sends is its own, so another key's stored answer is for another request (422).
    const sender = principal.collections ? `key ${principal.keyId}\n` : '';
    const hash = requestHash(ctx.method, `${sender}${ctx.path}`, ctx.querystring, ctx.request.body, ctx.request.mediaType);
    const ms = Date.now();
    if (ms !== clock.ms) {
      clock.ms = ms;
      clock.at = new Date(ms).toISOString();
      clock.expiresAt = new Date(ms + ttlMs).toISOString();
    }
    const { at, expiresAt } = clock;
    const found = answerFoundByWrite.has(route.operation.operationId!) ? undefined : await store.findOnce(principal.accountId, key, at);
    if (found) return replay(ctx, found, hash);
    const flight = `${principal.accountId} ${key}`;
    if (running.has(flight)) throw onceInProgress();
    running.add(flight);
    try {
      ctx.state.once = { key, hash, at, expiresAt };
      await next();
    } catch (error) {
      // Another request with the key (of another process, or before it) stored its answer first: this one wrote nothing.
      if (!(error instanceof OnceTaken)) throw error;
      const taken = await store.findOnce(principal.accountId, key, new Date().toISOString());
      if (!taken) throw error;
      replay(ctx, taken, hash);
    } finally {
      running.delete(flight);
    }
  };
}

/** The stored answer again, with `Idempotent-Replayed: true`; 422 when it answered another request. */
function replay(ctx: Parameters<typeof respond>[0], found: FoundAnswer, hash: string): void {
  if (found.hash !== hash) {
    throw new ApiError(
      'idempotency_key_reused',
      'This Idempotency-Key was sent with another request (method, path, query or body): a key names one request. Send this one with a new key.',
    );
  }
  const headers = { ...found.headers, 'Idempotent-Replayed': 'true' };
  respond(ctx, { status: found.status, headers, body: found.body ?? undefined });
}

/**
 * The key sent: the draft makes it a Structured Field String (RFC 8941 §3.3.3, `"…"`), which is
 * unquoted; a bare value, as many clients send, is taken as it is. 1 to MAX_IDEMPOTENCY_KEY printable
 * ASCII characters, sent once; else 400.
 */
function keyOf(request: Pick<IncomingMessage, 'headers' | 'rawHeaders'>): string {
  if (headerLines(request.rawHeaders, 'idempotency-key') > 1) throw badKey('must be sent once');
  const sent = (request.headers['idempotency-key'] as string).trim();
  const quoted = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/.exec(sent);
  const key = quoted ? quoted[1].replace(/\\(["\\])/g, '$1') : sent;
  if (key === '') throw badKey('is empty');
  if (key.length > MAX_IDEMPOTENCY_KEY) throw badKey(`is longer than ${MAX_IDEMPOTENCY_KEY} characters`);
  if (!/^[\x20-\x7e]+$/.test(key)) throw badKey('holds a character that is not printable ASCII');
  return key;
}

const badKey = (message: string) =>
  validationFailed(`Idempotency-Key ${message}: send 1 to ${MAX_IDEMPOTENCY_KEY} printable ASCII characters, such as a UUID.`, [
    { in: 'header', name: 'idempotency-key', message },
  ]);

/**
 * The request as a retry must send it again: SHA-256 of its method, path, query and body (its JSON, as
 * parsed), and of its body's media type when that is not `application/json` (the same JSON sent as a
 * merge patch is another request; a plain JSON body's hash is what it always was).
 */
function requestHash(method: string, path: string, querystring: string, body: unknown, mediaType?: string): string {
  const text = body === undefined ? '' : JSON.stringify(body);
  const typed = mediaType === undefined || mediaType === 'application/json' ? text : `${mediaType}\n${text}`;
  // crypto.hash(): one call, where a Hash object costs twice as much for a text this short.
  return digest('sha256', `${method}\n${path}\n${querystring}\n${typed}`, 'hex');
}

/** The ETag of a row of `version` (../db/rows.ts, versionOf): a strong entity tag (RFC 9110 §8.8.3). */
export const etagOf = (version: string) => `"${version}"`;

/** An entity-tag list as sent: `*`, or each tag's opaque text and whether it is weak. */
type TagList = '*' | { weak: boolean; opaque: string }[];

/**
 * One element of an entity-tag list (RFC 9110 §8.8.3, §5.6.1): optional white space, an entity-tag
 * (`W/` for a weak one, then its opaque text in double quotes, of etagc: `!`, `#`-`~` and obs-text) or
 * nothing (an empty element, which a recipient may take), optional white space, then a comma or the end.
 */
const element = /[ \t]*(?:(W\/)?"([\x21\x23-\x7e\x80-\xff]*)")?[ \t]*(?:,|$)/y;

/**
 * The tags of an If-Match or If-None-Match value: `*` alone, or a comma-separated list of entity-tags.
 * Node joins the lines of a header sent more than once with `, `, which reads as one list. Undefined
 * when not sent; 400 when the value is neither.
 */
function tagList(headers: IncomingHttpHeaders, name: 'if-match' | 'if-none-match'): TagList | undefined {
  const value = headers[name];
  return value === undefined ? undefined : tagsOf(value, name, { in: 'header', name });
}

/** The tags of `value`, an If-Match or If-None-Match (`header`) sent at `place`; 400 naming it when malformed. */
function tagsOf(value: string, header: string, place: Omit<FieldError, 'message'>): TagList {
  const malformed = () =>
    validationFailed(
      `${header} must be "*" or a comma-separated list of entity-tags, each in double quotes, such as "12.34" (RFC 9110 §13.1).`,
      [{ ...place, message: 'is not "*" or a list of entity-tags' }],
    );
  if (value.trim() === '*') return '*';
  const tags: { weak: boolean; opaque: string }[] = [];
  for (let at = 0; at < value.length; ) {
    element.lastIndex = at;
    const match = element.exec(value);
    if (!match || element.lastIndex === at) throw malformed();
    if (match[2] !== undefined) tags.push({ weak: match[1] !== undefined, opaque: match[2] });
    at = element.lastIndex;
  }
  if (tags.length === 0) throw malformed();
  return tags;
}

/**
 * The versions If-Match allows a write of the row at (RFC 9110 §13.1.1): its strong tags (a weak tag
 * never matches by the strong comparison If-Match uses); undefined for none sent, and for `*`, which
 * any row that exists matches (and for a row that does not, the answer is its 404, as without the
 * condition: §13.2.1).
 */
export function ifMatch(headers: IncomingHttpHeaders): string[] | undefined {
  return strongTags(tagList(headers, 'if-match'));
}

/** ifMatch() of a value sent at `place` in a body (a batch's `if_match`, openapi.yaml BatchUpdate). */
export function ifMatchAt(value: string | undefined, place: Omit<FieldError, 'message'>): string[] | undefined {
  return strongTags(value === undefined ? undefined : tagsOf(value, 'if_match', place));
}

const strongTags = (tags: TagList | undefined) =>
  tags === undefined || tags === '*' ? undefined : tags.filter((tag) => !tag.weak).map((tag) => tag.opaque);

/**
 * If-None-Match (RFC 9110 §13.1.2): a test of whether it holds a tag that matches a row of `version`
 * by the weak comparison it uses (then a GET answers 304); `*` matches any row that exists. Read
 * before the row, so that a malformed value is a 400 whatever the row.
 */
export function ifNoneMatch(headers: IncomingHttpHeaders): (version: string) => boolean {
  const tags = tagList(headers, 'if-none-match');
  if (tags === undefined) return never;
  return (version) => tags === '*' || tags.some((tag) => tag.opaque === version);
}

const never = () => false;
