// The stage that, once the key is known, lets a page of one of a publishable key's origins read the
// answer, and refuses a page of any other origin (403 origin_not_allowed) before the request is counted.
import type { Middleware } from 'koa';
import type { AuthState } from './authentication.ts';
import { allows, originNotAllowed, readableBy } from './cors.ts';

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
