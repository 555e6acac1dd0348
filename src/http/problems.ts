// The one problem writer: every refusal the service makes, whoever makes it, leaves as RFC 9457
// application/problem+json (openapi.yaml, Problem). Three places meet an error: the HTTP API's
// middleware (problems(), the outermost stage of app.ts), the feed's upgrade checks (ws/feed.ts), and
// the requests Node's parser refuses before any of ours runs (answerClientErrors). All three answer
// through writeProblem(), on a response or, where Node has let go of the connection, on its socket.
import { type Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Middleware } from 'koa';
import { ApiError, internal, validationFailed } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { Admission } from '../usage/meter.ts';
import { writeResult, writeResultToSocket } from './respond.ts';
import { contextPath } from './target.ts';
import type { AdmissionState } from './usage.ts';

/**
 * The error mapper of the HTTP API: whatever a later stage throws leaves as a problem. Errors we did
 * not make become a bare 500 `internal`; their details go to the log only, with the request's path,
 * never its query (which may carry a key).
 */
export function problems(log: Logger): Middleware<AdmissionState> {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      const problem = toApiError(error);
      if (problem.status >= 500) log.error({ err: error, method: ctx.method, path: contextPath(ctx) }, 'request failed');
      ctx.respond = false;
      writeProblem(ctx.res, problem, { head: ctx.method === 'HEAD', admission: ctx.state.admission });
    }
  };
}

/**
 * Writes `problem` on `to`: a response of the HTTP server, with the RateLimit-* headers of the request's
 * `admission` once it was counted and without its body for HEAD (RFC 9110 §9.3.2); or a socket Node
 * has let go of (an upgrade, a request its parser refused), as a whole HTTP/1.1 response that closes
 * the connection. A response whose head is already sent cannot become a problem: the client sees it
 * cut short.
 */
export function writeProblem(
  to: ServerResponse | Duplex,
  problem: ApiError,
  { head = false, admission }: { head?: boolean; admission?: Admission } = {},
): void {
  const result = { status: problem.status, headers: problem.options.headers, body: JSON.stringify(problem.toProblem()), contentType };
  if (!(to instanceof ServerResponse)) return void writeResultToSocket(to, result);
  if (to.headersSent) return void to.destroy();
  writeResult(to, result, head, admission);
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
