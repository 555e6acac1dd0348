// Safe writes: preconditions on a row's version (its ETag, If-Match, If-None-Match), and writes that may be
// sent again (Idempotency-Key).
//
// Conditional requests on rows (RFC 9110 §13): a row's ETag is its version (openapi.yaml, ETag), and
// If-Match and If-None-Match name the versions a client holds. Read here from the request's headers;
// the data layer compares If-Match's versions with the row's in the write's own transaction.
//
// Idempotency-Key (openapi.yaml, IdempotencyKey; draft-ietf-httpapi-idempotency-key-header) on every
// POST, PATCH and DELETE under /v1. A request with a key whose answer is stored (and not expired) is
// answered with it again, marked `Idempotent-Replayed: true`, if it is the same request (method, path,
// query and body), else 422; one whose first request is still running is 409. Otherwise the request
// runs, and its write stores its answer in its own transaction (db/idempotency.ts): the handler says
// how (answerOnce there).
import { hash as digest } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import { type FoundAnswer, OnceTaken, onceInProgress } from '../db/idempotency.ts';
import type { Store } from '../db/store.ts';
import { ApiError, validationFailed } from '../errors.ts';
import type { OnceState } from '../handlers/types.ts';
import { respond } from './respond.ts';
import { type AdmissionState, type AuthState, headerLines } from './stages.ts';

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
  if (value === undefined) return undefined;
  if (value.trim() === '*') return '*';
  const tags: { weak: boolean; opaque: string }[] = [];
  for (let at = 0; at < value.length; ) {
    element.lastIndex = at;
    const match = element.exec(value);
    if (!match || element.lastIndex === at) throw malformed(name);
    if (match[2] !== undefined) tags.push({ weak: match[1] !== undefined, opaque: match[2] });
    at = element.lastIndex;
  }
  if (tags.length === 0) throw malformed(name);
  return tags;
}

const malformed = (name: string) =>
  validationFailed(
    `${name} must be "*" or a comma-separated list of entity-tags, each in double quotes, such as "12.34" (RFC 9110 §13.1).`,
    [{ in: 'header', name, message: 'is not "*" or a list of entity-tags' }],
  );

/**
 * The versions If-Match allows a write of the row at (RFC 9110 §13.1.1): its strong tags (a weak tag
 * never matches by the strong comparison If-Match uses); undefined for none sent, and for `*`, which
 * any row that exists matches (and for a row that does not, the answer is its 404, as without the
 * condition: §13.2.1).
 */
export function ifMatch(headers: IncomingHttpHeaders): string[] | undefined {
  const tags = tagList(headers, 'if-match');
  if (tags === undefined || tags === '*') return undefined;
  return tags.filter((tag) => !tag.weak).map((tag) => tag.opaque);
}

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

/** The longest key, in characters (openapi.yaml, IdempotencyKey). */
export const MAX_IDEMPOTENCY_KEY = 255;

/** The methods whose requests take a key: those that change something. */
const changing = new Set(['POST', 'PATCH', 'DELETE']);

/**
 * The operations whose write looks for its key's stored answer itself, before it changes anything, in
 * the statement or transaction that would store its own (an insert's: sqlite/sql.ts, row_inserts;
 * postgres/rows.ts): a retry of one is answered with what its write finds (OnceTaken, below), so no
 * read goes before it. An insert is checked before its write only against its own request (its body
 * and its size), which its retry sends again, so the retry reaches its write as the first did.
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
    const hash = requestHash(ctx.method, `${sender}${ctx.path}`, ctx.querystring, ctx.request.body);
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

/** The request as a retry must send it again: SHA-256 of its method, path, query and body (its JSON, as parsed). */
function requestHash(method: string, path: string, querystring: string, body: unknown): string {
  // crypto.hash(): one call, where a Hash object costs twice as much for a text this short.
  return digest('sha256', `${method}\n${path}\n${querystring}\n${body === undefined ? '' : JSON.stringify(body)}`, 'hex');
}
