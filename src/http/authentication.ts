// The key of a request (authenticate, the stage of app.ts after the route): every /v1 request needs a
// live one, and the account it belongs to is the request's principal; beside a publishable key, the
// end user's token, verified against the account's issuers (docs/access.md). The feed's upgrade checks
// (ws/upgrade.ts) read the key and the token the same way (keyOf, endUserTokenOf).
import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import type { Principal } from '../db/accounts/keys.ts';
import type { Store } from '../db/open-store.ts';
import { unauthorized } from '../errors.ts';
import type { Claims, TokenVerifier } from '../tokens/verifier.ts';
import { headerLines } from './target.ts';

export interface AuthState {
  principal: Principal;
  /**
   * With a publishable key, the claims of the end user's verified token, or null for an anonymous
   * caller (no token); undefined with a secret key, which rules never bind.
   */
  claims?: Claims | null;
}

/** What a publishable key starts with (openapi.yaml, KeyKind). */
const PUBLISHABLE = 'rb_pub_';

/**
 * Every /v1 request needs a live key (interface spec §5), as `Authorization: Bearer <key>` or
 * `x-api-key: <key>`. Missing, malformed, conflicting, unknown and revoked keys all get the same 401.
 * A publishable key in `x-api-key` may come with the end user's token in `Authorization: Bearer`: a
 * token that does not verify is 401 `invalid_token`, saying why.
 */
export function authenticate(store: Store, tokens: TokenVerifier): Middleware<AuthState> {
  return async (ctx, next) => {
    if (!isV1(ctx.path)) return next();
    const { key, token } = credentialsOf(ctx.req);
    const principal = key === undefined ? undefined : await store.findPrincipal(key);
    if (!principal) throw unauthorized();
    ctx.state.principal = principal;
    if (ctx.state.principal.kind === 'publishable') {
      ctx.state.claims =
        token === undefined ? null : await tokens.verifyToken(token, await store.findIssuers(ctx.state.principal.accountId));
    }
    return next();
  };
}

/**
 * The key a request carries (undefined when none, a malformed one or two different ones: keyOf) and,
 * beside a publishable key in `x-api-key`, the end user's token in its Authorization (endUserTokenOf).
 */
export function credentialsOf(request: Pick<IncomingMessage, 'headers' | 'rawHeaders'>): { key?: string; token?: string } {
  const token = endUserTokenOf(request);
  return { key: keyOf(token === undefined ? request : withoutAuthorization(request)), token };
}

/**
 * The end user's token: the one `Authorization: Bearer` value of a request whose `x-api-key` is a
 * publishable key, when it is no key of ours (rowbase's keys all start `rb_`); else undefined.
 */
export function endUserTokenOf({ headers, rawHeaders }: Pick<IncomingMessage, 'headers' | 'rawHeaders'>): string | undefined {
  const { authorization, 'x-api-key': headerKey } = headers;
  if (typeof headerKey !== 'string' || !headerKey.startsWith(PUBLISHABLE) || typeof authorization !== 'string') return undefined;
  if (headerLines(rawHeaders, 'authorization') > 1) return undefined;
  const bearer = /^Bearer +([^\s]+) *$/i.exec(authorization)?.[1];
  return bearer === undefined || bearer.startsWith('rb_') ? undefined : bearer;
}

/** The request as keyOf() reads it once its Authorization is the end user's token: without it. */
export const withoutAuthorization = ({ headers, rawHeaders }: Pick<IncomingMessage, 'headers' | 'rawHeaders'>) => ({
  headers: { ...headers, authorization: undefined },
  rawHeaders,
});

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
