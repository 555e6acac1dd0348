// The request target as a URL, read the same way by the HTTP API (checkRequest, the stage of app.ts that
// checks the target and Host) and the feed (feed/upgrade.ts). Node's parser lets through targets that are
// no URL (`http://[::1/health`, `//a:99999/ws`, `//%zz/ws`, `http://x:abc/health`): they are 400. Read
// any other way they do harm: `new URL` throws with the whole target, `api_key` and all, in the error's
// `input` (for the log), and Koa's url.parse throws, or prints the whole target to stderr (DEP0170, a
// port that is not a number). A URL's path is not the request's path, though: `new URL('//evil/ws', base)`
// reads a host `evil` and the path `/ws`, and resolves `/a/../ws` to `/ws`. The path is read from the
// target as it is (pathOf). And how many lines of a header a request carries (headerLines), which the
// Host check, the key and Idempotency-Key read.
import type { Middleware } from 'koa';
import { hostRepeated, hostRequired, validationFailed } from '../errors.ts';

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
function checkTarget(target = '/'): void {
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
