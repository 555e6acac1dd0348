// The stages of the request path (app.ts), each a Koa middleware, and how every answer leaves: the
// responses under way (Responses), the request's id (requestId), the request target and Host
// (checkRequest), the key (authenticate), the count toward the account's plan (meterUsage), the one
// responder (respond) and the one error mapper (problems). The feed's upgrade checks (ws/upgrade.ts)
// read the target and the key the same way.
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
//
// Every answer the service writes: a handler's, by the one responder (respond, writeResult), and every
// refusal, by the one problem writer (writeProblem), as RFC 9457 application/problem+json (openapi.yaml,
// Problem). Three places meet an error: the HTTP API's middleware (problems(), the outermost stage of
// app.ts), the feed's upgrade checks (ws/feed.ts), and the requests Node's parser refuses before any of
// ours runs (answerClientErrors). All three answer through writeProblem(), on a response or, where Node
// has let go of the connection, on its socket.

import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Context, Middleware } from 'koa';
import type { Principal } from '../db/accounts/keys.ts';
import type { Store } from '../db/engine/store.ts';
import { ApiError, hostRepeated, hostRequired, internal, unauthorized, validationFailed } from '../errors.ts';
import type { Logger } from '../log.ts';
import { type Admission, type Meter, rateLimitHeaders } from '../usage/meter.ts';

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
  /** The request's admission, once counted: its RateLimit-* headers go on the answer (below). */
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

/** What a handler returns (../handlers/types.ts), and every answer: the one responder writes it (respond, below). */
export interface Result {
  status: number;
  /** A string or Buffer is sent as it is; anything else as JSON. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Defaults to application/json when there is a body. */
  contentType?: string;
}

/** What a JSON body is sent as: Koa's reading of `application/json`, which the API has always sent. */
const JSON_TYPE = 'application/json; charset=utf-8';

/** What the responders note of the answer they wrote, for the access log and the metrics (observe.ts). */
export interface AnsweredState {
  /** The bytes of the body sent: 0 for none, and for HEAD. */
  sentBytes?: number;
}

/**
 * The one responder: writes a handler's result to the response itself (writeResult), with the
 * RateLimit-* headers of the request's admission, and leaves Koa's own responder out.
 */
export function respond(ctx: Context & { state: AdmissionState & AnsweredState }, result: Result): void {
  ctx.respond = false;
  ctx.state.sentBytes = writeResult(ctx.res, result, ctx.method === 'HEAD', ctx.state.admission);
}

/**
 * Writes a handler's result: its status, the request's id (X-Request-Id, requestIdOf), the
 * RateLimit-* headers of the request's `admission` (if it was counted), the result's headers, then its
 * body, if any, with its Content-Type (JSON unless it says) and Content-Length. A string or Buffer is
 * sent as it is, anything else as JSON. `head`: the answer to HEAD, which is GET's without the body
 * (RFC 9110 §9.3.2). The headers go to Node in one list (writeHead), not one setHeader each, which
 * would also keep each in an object by its name. Answers the bytes of the body sent.
 */
export function writeResult(response: ServerResponse, result: Result, head = false, admission?: Admission): number {
  const headers: string[] = admission ? rateLimitHeaders(admission) : [];
  headers.push('X-Request-Id', requestIdOf(response.req));
  if (result.headers) for (const name in result.headers) headers.push(name, result.headers[name]);
  if (result.body === undefined) {
    response.writeHead(result.status, headers);
    response.end();
    return 0;
  }
  const body = bodyOf(result);
  const bytes = Buffer.byteLength(body);
  headers.push('Content-Type', result.contentType ?? JSON_TYPE, 'Content-Length', String(bytes));
  response.writeHead(result.status, headers);
  if (head) {
    response.end();
    return 0;
  }
  response.end(body);
  return bytes;
}

/**
 * Writes a result as a whole HTTP/1.1 response on a socket that Node's server has let go of (an
 * upgrade it handed over, a request its parser refused), then closes the connection, as `ws` does with
 * its own refusals (abortHandshake). Answers the bytes of the body sent.
 */
function writeResultToSocket(socket: Duplex, result: Result, requestId: string): number {
  if (!socket.writable) {
    socket.destroy();
    return 0;
  }
  const body = bodyOf(result);
  const bytes = Buffer.byteLength(body);
  const headers: Record<string, string> = {
    Connection: 'close',
    'X-Request-Id': requestId,
    'Content-Type': result.contentType ?? JSON_TYPE,
    'Content-Length': String(bytes),
    ...result.headers,
  };
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  socket.once('finish', () => socket.destroy());
  socket.end(`HTTP/1.1 ${result.status} ${STATUS_CODES[result.status]}\r\n${head.join('')}\r\n${body}`);
  return bytes;
}

const bodyOf = ({ body }: Result): string | Buffer =>
  typeof body === 'string' || Buffer.isBuffer(body) ? body : body === undefined ? '' : JSON.stringify(body);

/**
 * The error mapper of the HTTP API: whatever a later stage throws leaves as a problem. Errors we did
 * not make become a bare 500 `internal`; their details go to the log only, with the request's id and
 * path, never its query (which may carry a key).
 */
export function problems(log: Logger): Middleware<AdmissionState & AnsweredState & RequestIdState> {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      const problem = toApiError(error);
      if (problem.status >= 500) {
        log.error({ requestId: ctx.state.requestId, err: error, method: ctx.method, path: contextPath(ctx) }, 'request failed');
      }
      ctx.respond = false;
      ctx.state.sentBytes = writeProblem(ctx.res, problem, { head: ctx.method === 'HEAD', admission: ctx.state.admission });
    }
  };
}

/**
 * Writes `problem` on `to`: a response of the HTTP server, with the RateLimit-* headers of the request's
 * `admission` once it was counted and without its body for HEAD (RFC 9110 §9.3.2); or a socket Node
 * has let go of (an upgrade, a request its parser refused), as a whole HTTP/1.1 response that closes
 * the connection, answered to `requestId` (default a new id: a request Node could not read has none).
 * A response whose head is already sent cannot become a problem: the client sees it cut short.
 * Answers the bytes of the body sent.
 */
export function writeProblem(
  to: ServerResponse | Duplex,
  problem: ApiError,
  { head = false, admission, requestId }: { head?: boolean; admission?: Admission; requestId?: string } = {},
): number {
  const id = to instanceof ServerResponse ? requestIdOf(to.req) : (requestId ?? newRequestId());
  const body = JSON.stringify(problem.toProblem(problemInstance(id)));
  const result = { status: problem.status, headers: problem.options.headers, body, contentType };
  if (!(to instanceof ServerResponse)) return writeResultToSocket(to, result, id);
  if (to.headersSent) {
    to.destroy();
    return 0;
  }
  return writeResult(to, result, head, admission);
}

const contentType = 'application/problem+json';

/**
 * Answers with a problem the requests Node's HTTP parser refuses before any of ours runs: framing it
 * cannot read (two Content-Lengths, an unknown method, a bare LF), headers past its 16 KiB, a request
 * that takes longer than the server's timeouts to arrive. Node would answer them with a bare status line.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // As Node's own handler: nothing is written once the connection's response under way has begun.
    const underWay = (socket as Duplex & { _httpMessage?: { headersSent: boolean } })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || underWay?.headersSent) return void socket.destroy();
    writeProblem(socket, clientErrorProblem(error));
  });
}

function clientErrorProblem({ code }: NodeJS.ErrnoException): ApiError {
  if (code === 'HPE_HEADER_OVERFLOW') return new ApiError('headers_too_large', 'The request headers are larger than 16 KiB.');
  if (code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') return new ApiError('payload_too_large', 'The request body has too many chunk extensions.');
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return new ApiError('request_timeout', 'The request did not arrive in time.');
  return validationFailed('The request is not valid HTTP/1.1.');
}

/**
 * Any error as the problem it is answered with. Ours are ApiErrors; the body reader's (raw-body's, and
 * ours made like them) carry an HTTP status; everything else is a bug, a bare 500.
 */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  // The client went away while sending its body: nobody will read the answer, and it is not our fault.
  const type = (error as { type?: unknown })?.type;
  if (type === 'request.aborted' || type === 'stream.not.readable') return validationFailed('The request body was not received whole.');
  const status = (error as { status?: unknown })?.status;
  if (status === 413) return new ApiError('payload_too_large', 'The request body is too large.');
  if (status === 415) return new ApiError('unsupported_media_type', 'The request body must be application/json in UTF-8.');
  if (typeof status === 'number' && status >= 400 && status < 500) return validationFailed('The request is malformed.');
  return internal();
}
