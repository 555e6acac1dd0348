// The stage that answers a browser's CORS preflight under /v1 (cors.ts), before any key is asked for
// (a preflight carries none) or counted.
import type { Middleware } from 'koa';
import { isV1 } from './authentication.ts';
import { ALLOWED_HEADERS, API_METHODS, MAX_AGE } from './cors.ts';
import { writeResult } from './responder.ts';

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
