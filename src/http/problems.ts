import type { ServerResponse } from 'node:http';
import type { Context, Middleware } from 'koa';
import { ApiError, hostRepeated, hostRequired, internal, validationFailed } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { Admission } from '../usage/meter.ts';
import { headerLines } from './header-lines.ts';
import { writeResult } from './respond.ts';
import { checkTarget } from './target.ts';
import type { AdmissionState } from './usage.ts';

/**
 * The one error mapper: whatever a later stage throws leaves as application/problem+json. Errors we
 * did not make become a bare 500 `internal`; their details go to the log only.
 */
export function problems(log: Logger): Middleware {
  return async (ctx, next) => {
    try {
      // Koa reads the path from the request target with url.parse, which throws for some targets that
      // are no URL (`GET http://[::1/health`) and prints others to stderr: a target is read as the feed
      // reads it first (checkTarget), and one that is no URL is the request's fault.
      checkTarget(ctx.url);
      if (pathOf(ctx) === undefined) throw validationFailed('The request target is not a valid URL.');
      // Node's own check (requireHostHeader, off in server.ts) answers with an empty body.
      if (ctx.req.headers.host === undefined && ctx.req.httpVersion === '1.1') {
        throw validationFailed('An HTTP/1.1 request needs a Host header.', [hostRequired]);
      }
      if (headerLines(ctx.req.rawHeaders, 'host') > 1) throw validationFailed('A request carries one Host header.', [hostRepeated]);
      await next();
    } catch (error) {
      ctx.respond = false;
      writeError(ctx.res, error, log, ctx.method, () => pathOf(ctx), (ctx.state as AdmissionState).admission);
    }
  };
}

/**
 * Writes whatever a stage threw as problem+json, on either path (Koa's, and the lane's): 5xx are
 * logged with their cause, which the client never sees, and the request's path, never its query.
 * `path` is asked only then: Koa reads it with url.parse, which prints some targets whole (DEP0170).
 */
export function writeError(
  response: ServerResponse,
  error: unknown,
  log: Logger,
  method: string,
  path: () => string | undefined,
  admission: Admission | undefined,
): void {
  const apiError = toApiError(error);
  if (apiError.status >= 500) log.error({ err: error, method, path: path() }, 'request failed');
  // A response under way cannot become a problem any more: the client sees it cut short.
  if (response.headersSent) return void response.destroy();
  const { status, options } = apiError;
  const body = JSON.stringify(apiError.toProblem());
  writeResult(response, { status, headers: options.headers, body, contentType: 'application/problem+json' }, method === 'HEAD', admission);
}

/** The request's path, never its query (which may carry a key); undefined when its target is no URL. */
function pathOf(ctx: Context): string | undefined {
  try {
    return ctx.path;
  } catch {
    return undefined;
  }
}

/** Koa and its body parser throw http-errors with a status; everything else is ours or a bug. */
function toApiError(error: unknown): ApiError {
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
