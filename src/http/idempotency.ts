// Idempotency-Key (openapi.yaml, IdempotencyKey; draft-ietf-httpapi-idempotency-key-header) on every
// POST, PATCH and DELETE under /v1 (idempotency, the stage of app.ts after the body). A request with a
// key whose answer is stored (and not expired) is answered with it again, marked
// `Idempotent-Replayed: true`, if it is the same request (method, path, query and body), else 422; one
// whose first request is still running is 409. Otherwise the request runs, and its write stores its
// answer in its own transaction (db/rows/idempotency.ts): the handler says how (answerOnce there).
import { hash as digest } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import type { Store } from '../db/open-store.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { type FoundAnswer, type OnceRequest, OnceTaken, onceInProgress } from '../idempotency/answers.ts';
import type { AuthState } from './authentication.ts';
import type { AdmissionState } from './metering.ts';
import { respond } from './responder.ts';
import { headerLines } from './target.ts';

/** What the Idempotency-Key stage (idempotency, below) leaves for the handler. */
export interface OnceState {
  /** The request's Idempotency-Key, when it carries one its write must store an answer for. */
  once?: OnceRequest;
}

/** The longest key, in characters (openapi.yaml, IdempotencyKey). */
const MAX_IDEMPOTENCY_KEY = 255;

/** The methods whose requests take a key: those that change something. */
const changing = new Set(['POST', 'PATCH', 'DELETE']);

/**
 * The operations whose write finds its key's stored answer itself, in the statement that would store
 * its own, and then writes nothing (an insert's: db/sqlite/sql/rows.ts, row_inserts, and db/postgres/sql/rows.ts,
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
    // request it sends is its own, so another key's stored answer is for another request (422). An end
    // user's answer is theirs alone: by their token's issuer and subject, or their address when anonymous.
    const { claims } = ctx.state;
    const user = claims === undefined ? '' : claims === null ? `address ${ctx.ip}\n` : `user ${JSON.stringify([claims.iss, claims.sub])}\n`;
    const sender = principal.collections || claims !== undefined ? `key ${principal.keyId}\n${user}` : '';
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
