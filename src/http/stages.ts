// The small stages of the request path (app.ts), each a Koa middleware, and what the feed's upgrade
// checks (ws/upgrade.ts) read the same way: the responses under way (Responses), the request's id
// (requestId), the request target and Host (checkRequest), the key (authenticate), and the count
// toward the account's plan (meterUsage).
//
// Every request has an id (openapi.yaml, the X-Request-Id header and Problem's `instance`; requestId):
// the one the client or a proxy in front sent in `X-Request-Id`, when it is a sane
// token, or a new one. It is answered on every response, refusals of the feed and of Node's parser
// included, carried by every log line about the request, and named in every problem body, so that one
// failing request can be followed from the client through the proxy's log to ours.
//
// The request target as a URL, read the same way by the HTTP API (checkRequest) and the feed
// (ws/upgrade.ts). Node's parser lets through targets that are no URL (`http://[::1/health`,
// `//a:99999/ws`, `//%zz/ws`, `http://x:abc/health`): they are 400. Read any other way they do harm:
// `new URL` throws with the whole target, `api_key` and all, in the error's `input` (for the log), and
// Koa's url.parse throws, or prints the whole target to stderr (DEP0170, a port that is not a number).
// A URL's path is not the request's path, though: `new URL('//evil/ws', base)` reads a host `evil` and
// the path `/ws`, and resolves `/a/../ws` to `/ws`. The path is read from the target as it is (pathOf).

import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Middleware } from 'koa';
import type { Principal } from '../db/keys.ts';
import type { Store } from '../db/store.ts';
import { hostRepeated, hostRequired, unauthorized, validationFailed } from '../errors.ts';
import type { Admission, Meter } from '../usage/meter.ts';

/**
 * What a sent `X-Request-Id` must be to be kept: 1 to 128 letters, digits and `.`, `_`, `:`, `-`, which
 * covers UUIDs, ULIDs, W3C trace ids and the ids proxies make. Anything else (empty, longer, two headers,
 * spaces, quotes, control characters) is replaced by a new id: it would go into log lines and a URN as it is.
 */
export const SENT_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The responses under way, for a server that closes (server.ts, close): once it closes, every response
 * says `Connection: close` and ends its connection. Otherwise a keep-alive client holds the shutdown
 * open for keepAliveTimeout (5 s), or until its grace ends if it keeps sending. `track` is the first
 * stage of the HTTP API.
 */
export class Responses {
  private closing = false;
  private readonly unfinished = new Set<ServerResponse>();

  /** The stage that notes each response until it closes. */
  readonly track: Middleware = (ctx, next) => {
    const response = ctx.res;
    if (this.closing) response.shouldKeepAlive = false;
    this.unfinished.add(response);
    response.once('close', () => this.unfinished.delete(response));
    return next();
  };

  /** From now on every response, those under way included, ends its connection. */
  endConnections(): void {
    this.closing = true;
    for (const response of this.unfinished) response.shouldKeepAlive = false;
  }
}

const ID = Symbol('rowbase request id');

interface Identified {
  [ID]?: string;
}

/** A new request id: a random UUID (RFC 9562, version 4). */
export const newRequestId = (): string => randomUUID();

/** The id of `request`: the `X-Request-Id` it sent if sane, else a new one; the same every time it is asked. */
export function requestIdOf(request: IncomingMessage): string {
  const identified = request as IncomingMessage & Identified;
  let id = identified[ID];
  if (id === undefined) {
    const sent = request.headers['x-request-id'];
    id = typeof sent === 'string' && SENT_ID.test(sent) ? sent : newRequestId();
    identified[ID] = id;
  }
  return id;
}

/** RFC 9457's `instance` of a problem answered to the request `id`. */
export const problemInstance = (id: string): string => `urn:rowbase:request:${id}`;

export interface RequestIdState {
  /** The request's id (requestIdOf): on its answer, its log lines and its problem's `instance`. */
  requestId: string;
}

/** The stage that gives each request its id, before anything can refuse it. */
export const requestId: Middleware<RequestIdState> = (ctx, next) => {
  ctx.state.requestId = requestIdOf(ctx.req);
  return next();
};

const BASE = 'http://localhost';

/** `target` (a request's `url`; default `/`) resolved against http://localhost, or throws the 400 to refuse it with. */
export function targetOf(target = '/'): URL {
  checkTarget(target);
  return new URL(target, BASE);
}

/**
 * Throws the 400 for a target that is no URL. A path (`/…`, but not `//…`, which reads as a host) always
 * is one: the check costs nothing on the requests every client sends.
 */
export function checkTarget(target = '/'): void {
  if (target.startsWith('/') && !target.startsWith('//')) return;
  if (!URL.canParse(target, BASE)) {
    throw validationFailed('The request target is not a valid URL.', [{ in: 'path', name: '', message: 'is not a valid URL' }]);
  }
}

/**
 * The path of `target` as the HTTP API reads it (Koa's `ctx.path`): what comes before `?` (or `#`), after
 * the scheme and authority of an absolute-form target (RFC 9112 §3.2.2), never normalized. `//evil/ws` is
 * the path `//evil/ws`; `/./ws` is not `/ws`.
 */
export function pathOf(target = '/'): string {
  const authority = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/.exec(target)?.[0] ?? '';
  const path = /^[^?#]*/.exec(target.slice(authority.length))?.[0] ?? '';
  return path === '' ? '/' : path;
}

/**
 * The first stage of the HTTP API: a target that is no URL, an HTTP/1.1 request without Host (RFC 9112
 * §3.2; Node's own check, off in server.ts, answers with an empty body) and one with two Host lines are
 * 400, before anything reads them. Koa reads the path with url.parse, which throws for some targets
 * that are no URL (`GET http://[::1/health`) and prints others to stderr: checkTarget() comes first.
 */
export const checkRequest: Middleware = (ctx, next) => {
  checkTarget(ctx.url);
  if (contextPath(ctx) === undefined) throw validationFailed('The request target is not a valid URL.');
  if (ctx.req.headers.host === undefined && ctx.req.httpVersion === '1.1') {
    throw validationFailed('An HTTP/1.1 request needs a Host header.', [hostRequired]);
  }
  if (headerLines(ctx.req.rawHeaders, 'host') > 1) throw validationFailed('A request carries one Host header.', [hostRepeated]);
  return next();
};

/** Koa's reading of the request's path (`ctx.path`), or undefined when its target is no URL. */
export function contextPath(ctx: { path: string }): string | undefined {
  try {
    return ctx.path;
  } catch {
    return undefined;
  }
}

/**
 * How many lines of the header `name` (in lower case) a request carries, from its `rawHeaders` (names and
 * values in turn). For the headers a request may carry once, Node keeps the first line in `headers` and
 * drops the others (Host, Authorization), so that a second is seen only here.
 */
export function headerLines(rawHeaders: readonly string[], name: string): number {
  let lines = 0;
  for (let index = 0; index < rawHeaders.length; index += 2) {
    const sent = rawHeaders[index];
    if (sent.length === name.length && sent.toLowerCase() === name) lines++;
  }
  return lines;
}

export interface AuthState {
  principal: Principal;
}

/**
 * Every /v1 request needs a live key (interface spec §5), as `Authorization: Bearer <key>` or
 * `x-api-key: <key>`. Missing, malformed, conflicting, unknown and revoked keys all get the same 401.
 */
export function authenticate(store: Store): Middleware<AuthState> {
  return async (ctx, next) => {
    if (!isV1(ctx.path)) return next();
    ctx.state.principal = await principalOf(store, ctx.req);
    return next();
  };
}

/** The account of the request's key, or the 401 for a request without a live key. */
export async function principalOf(store: Store, request: Pick<IncomingMessage, 'headers' | 'rawHeaders'>): Promise<Principal> {
  const key = keyOf(request);
  const principal = key === undefined ? undefined : await store.findPrincipal(key);
  if (!principal) throw unauthorized();
  return principal;
}

const isV1 = (path: string) => path === '/v1' || path.startsWith('/v1/');

/**
 * The one key the request carries, or undefined when it carries none, a malformed one or two different
 * ones. Two Authorization lines are refused whatever they hold: Node keeps the first and drops the
 * second from `headers` (two x-api-key lines it joins with a comma, which is no key).
 */
export function keyOf({ headers, rawHeaders }: Pick<IncomingMessage, 'headers' | 'rawHeaders'>): string | undefined {
  const { authorization, 'x-api-key': headerKey } = headers;
  if (Array.isArray(headerKey) || Array.isArray(authorization)) return undefined;
  if (authorization !== undefined && headerLines(rawHeaders, 'authorization') > 1) return undefined;
  let bearer: string | undefined;
  if (authorization !== undefined) {
    bearer = /^Bearer +([^\s]+) *$/i.exec(authorization)?.[1];
    if (bearer === undefined) return undefined;
  }
  if (bearer !== undefined && headerKey !== undefined && bearer !== headerKey) return undefined;
  return bearer ?? (headerKey || undefined);
}

export interface AdmissionState {
  /** The request's admission, once counted: its RateLimit-* headers go on the answer (respond.ts). */
  admission?: Admission;
}

/**
 * Counts every authenticated request toward its account's plan before anything else can refuse it;
 * the responder puts the RateLimit-* headers on its answer, whatever the status. Over quota or rate: 429.
 * Not an async function: an admission decided at once (meter.admit) goes on without a promise.
 */
export function meterUsage(meter: Meter): Middleware<AuthState & AdmissionState> {
  return (ctx, next) => {
    if (ctx.state.principal === undefined) return next();
    const admitted = meter.admit(ctx.state.principal.accountId);
    if (!(admitted instanceof Promise)) {
      ctx.state.admission = admitted;
      return next();
    }
    return admitted.then((admission) => {
      ctx.state.admission = admission;
      return next();
    });
  };
}
