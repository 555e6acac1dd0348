// The key of a request (authenticate, the stage of app.ts after the route): every /v1 request needs a
// live one, and the account it belongs to is the request's principal. The feed's upgrade checks
// (ws/upgrade.ts) read the key the same way (keyOf, principalOf).
import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import type { Principal } from '../db/accounts/keys.ts';
import type { Store } from '../db/engine/store.ts';
import { unauthorized } from '../errors.ts';
import { headerLines } from './target.ts';

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
async function principalOf(store: Store, request: Pick<IncomingMessage, 'headers' | 'rawHeaders'>): Promise<Principal> {
  const key = keyOf(request);
  const principal = key === undefined ? undefined : await store.findPrincipal(key);
  if (!principal) throw unauthorized();
  return principal;
}

/** Whether `path` is under `/v1`, where every request needs a key. */
export const isV1 = (path: string) => path === '/v1' || path.startsWith('/v1/');

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
