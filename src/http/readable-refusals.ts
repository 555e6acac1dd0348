// The stage that lets a page read why its key, token (401) or origin (403) was refused (cors.ts), where
// it would otherwise see only a CORS error.
import type { Middleware } from 'koa';
import { ApiError } from '../errors.ts';
import { isV1 } from './authentication.ts';
import { readableBy } from './cors.ts';

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
