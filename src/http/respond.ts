// Every answer the service writes: a handler's, by the one responder (respond, writeResult), and every
// refusal, by the one problem writer (writeProblem), as RFC 9457 application/problem+json (openapi.yaml,
// Problem). Three places meet an error: the HTTP API's
// middleware (problems(), the outermost stage of app.ts), the feed's upgrade checks (ws/feed.ts), and
// the requests Node's parser refuses before any of ours runs (answerClientErrors). All three answer
// through writeProblem(), on a response or, where Node has let go of the connection, on its socket.
import { type Server, ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Context, Middleware } from 'koa';
import { ApiError, internal, validationFailed } from '../errors.ts';
import type { Result } from '../handlers/types.ts';
import type { Logger } from '../log.ts';
import { type Admission, rateLimitHeaders } from '../usage/meter.ts';
import { type AdmissionState, contextPath, newRequestId, problemInstance, type RequestIdState, requestIdOf } from './stages.ts';

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
 * Writes a handler's result: its status, the request's id (X-Request-Id, stages.ts), the
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
