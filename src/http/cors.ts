// CORS, for browsers (the Fetch standard, "CORS protocol"; openapi.yaml, `info`, "CORS"; docs/api.md,
// "HTTP"; docs/access.md). Three stages of app.ts: `preflight` answers a browser's preflight under /v1,
// before any key is asked for (a preflight carries none) or counted; `readableRefusals` lets a page read
// why its key, token or origin was refused; `allowOrigin`, once the key is known, lets a page of one of
// a publishable key's origins read the answer, and refuses the others.
// A secret key never gets CORS headers: a browser then cannot read its answers, and a secret key does
// not belong in a page.
import type { ServerResponse } from 'node:http';
import type { Middleware } from 'koa';
import type { Principal } from '../db/accounts/keys.ts';
import { ApiError } from '../errors.ts';
import { type AuthState, isV1 } from './authentication.ts';
import { writeResult } from './responder.ts';

/**
 * Every request header the API reads (openapi.yaml's header parameters, the key's two headers, a body's
 * type and encoding, and the request's id), which a page may then send. `prefer` is none of them yet,
 * and allowed so that a page sending it keeps working when one is.
 */
const ALLOWED_HEADERS = [
  'authorization',
  'x-api-key',
  'content-type',
  'content-encoding',
  'if-match',
  'if-none-match',
  'idempotency-key',
  'prefer',
  'x-request-id',
  'last-event-id',
].join(', ');

/** Every response header of openapi.yaml that a page may read, besides those the Fetch standard lets it read always. */
const EXPOSED_HEADERS = [
  'ETag',
  'Link',
  'Location',
  'Rowbase-Seq',
  'Rowbase-Total-Count',
  'Accept-Patch',
  'Allow',
  'WWW-Authenticate',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'Retry-After',
  'X-Request-Id',
  'Idempotent-Replayed',
  'Rowbase-Wait-Skipped',
].join(', ');

/** The methods of the API, allowed in a preflight to a path it does not have (whose request then answers 404). */
const API_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE';

/** How long a browser may keep a preflight's answer, in seconds. */
const MAX_AGE = '600';

/**
 * Answers a preflight (an OPTIONS request with `Origin` and `Access-Control-Request-Method`) to any path
 * under /v1 with 204, for any origin: it carries no key, so it is answered before one is asked for,
 * and not counted. What the page may then send is checked when it sends it (`allowOrigin`). Any other
 * request goes on. `methodsAt` names the methods openapi.yaml has at a path (none for a path it does
 * not have: the API's methods are allowed then).
 */
export function preflight(methodsAt: (path: string) => string[]): Middleware {
  return (ctx, next) => {
    const { origin, 'access-control-request-method': method } = ctx.req.headers;
    if (ctx.method !== 'OPTIONS' || origin === undefined || method === undefined || !isV1(ctx.path)) return next();
    const methods = methodsAt(ctx.path);
    ctx.respond = false;
    writeResult(ctx.res, {
      status: 204,
      headers: {
        'Access-Control-Allow-Origin': origin,
        'Access-Control-Allow-Methods': methods.length > 0 ? methods.join(', ') : API_METHODS,
        'Access-Control-Allow-Headers': ALLOWED_HEADERS,
        'Access-Control-Max-Age': MAX_AGE,
        Vary: 'Origin',
      },
    });
    return undefined;
  };
}

/**
 * A request under /v1 with `Origin` refused for what it authenticated with (401: no key, an unknown one,
 * a token that does not verify) or for its origin (`403 origin_not_allowed`): the page may read the
 * refusal, so that it can tell its user why, where it would otherwise see only a CORS error (and an
 * EventSource only that it failed). Such a problem holds nothing of the account's. The page is never
 * allowed credentials (no Access-Control-Allow-Credentials: the API reads no cookie).
 */
export const readableRefusals: Middleware = async (ctx, next) => {
  const { origin } = ctx.req.headers;
  if (origin === undefined || !isV1(ctx.path)) return next();
  try {
    await next();
  } catch (error) {
    if (error instanceof ApiError && (error.status === 401 || error.code === 'origin_not_allowed')) readableBy(ctx.res, origin);
    throw error;
  }
};

/** Lets a page of `origin` read the answer `response` is to be: its body and the headers of EXPOSED_HEADERS. */
function readableBy(response: ServerResponse, origin: string): void {
  response.setHeader('Access-Control-Allow-Origin', origin);
  response.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
  response.setHeader('Vary', 'Origin');
}

/**
 * A request with `Origin` and a publishable key: from one of the key's origins, every answer it gets,
 * success or problem, says that the page may read it; from another, `403 origin_not_allowed`, before
 * the request is counted, so that a page of another origin cannot spend the account's plan through its
 * visitors' browsers. A request without `Origin`, or with a secret key, goes on as it came. The headers
 * are set on the response here, and Node adds them to the one list the responder writes (writeHead).
 */
export const allowOrigin: Middleware<Partial<AuthState>> = (ctx, next) => {
  const { origin } = ctx.req.headers;
  const { principal } = ctx.state;
  if (origin === undefined || principal?.kind !== 'publishable') return next();
  if (!allows(principal, origin)) throw originNotAllowed(origin);
  readableBy(ctx.res, origin);
  return next();
};

/** Whether a page of `origin` may use the publishable key of `principal`: the key lists it. The feed's upgrade asks too (feed/upgrade.ts). */
export const allows = (principal: Principal, origin: string) => principal.origins?.has(origin) === true;

export const originNotAllowed = (origin: string) =>
  new ApiError('origin_not_allowed', `The key is not for pages of ${origin}: it lists the origins it may be used from.`, {
    headers: { Vary: 'Origin' },
  });
