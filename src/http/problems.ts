// The one error mapper and the one problem writer: every refusal leaves as RFC 9457
// application/problem+json (openapi.yaml, Problem). Three places meet an error: the HTTP API's
// middleware (problems(), the outermost stage of app.ts after the request's id), the feed's upgrade
// checks (feed/feed.ts), and the requests Node's parser refuses before any of ours runs
// (client-errors.ts). All three answer through writeProblem(), on a response or, where Node has let go
// of the connection, on its socket.
import { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Middleware } from 'koa';
import { ApiError, internal, validationFailed } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { Admission } from '../usage/meter.ts';
import type { AdmissionState } from './metering.ts';
import { newRequestId, problemInstance, type RequestIdState, requestIdOf } from './request-id.ts';
import { type AnsweredState, type Result, writeResult, writeResultToSocket } from './responder.ts';
import { contextPath } from './target.ts';

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
  const result = problemResult(problem, id);
  if (!(to instanceof ServerResponse)) return writeResultToSocket(to, result, id);
  if (to.headersSent) {
    to.destroy();
    return 0;
  }
  return writeResult(to, result, head, admission);
}

const contentType = 'application/problem+json';

/** `problem` as the result the responder writes, answered to the request `id` (an answer given later writes it so: feed/feed.ts, waitForPage). */
export function problemResult(problem: ApiError, id: string): Result {
  const body = JSON.stringify(problem.toProblem(problemInstance(id)));
  return { status: problem.status, headers: problem.options.headers, body, contentType };
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
