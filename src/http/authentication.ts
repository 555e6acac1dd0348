// The key of a request (authenticate, the stage of app.ts after the route): every /v1 request needs a
// live one, and the account it belongs to is the request's principal; beside a publishable key, the
// end user's token, verified against the account's issuers (docs/access.md). The operations a browser
// calls without setting headers (the feed's upgrade, feed/upgrade.ts, and the changes, openapi.yaml's
// `queryKey`) take them in the query too, read the same way here (keyIn, tokenIn).
import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import type { Principal } from '../db/accounts/keys.ts';
import type { Store } from '../db/open-store.ts';
import { invalidToken, unauthorized } from '../errors.ts';
import type { Claims, TokenVerifier } from '../tokens/verifier.ts';
import { headerLines } from './target.ts';

export interface AuthState {
  principal: Principal;
  /**
   * With a publishable key, the claims of the end user's verified token, or null for an anonymous
   * caller (no token); undefined with a secret key, which rules never bind.
   */
  claims?: Claims | null;
  /** What the request authenticated with: its key, and the end user's token whose claims are `claims`. */
  credentials: Credentials;
}

export interface Credentials {
  key: string;
  /** Beside a publishable key, the end user's token as sent; undefined for an anonymous caller and with a secret key. */
  token?: string;
}

/** The operation a request matched, as authenticate() reads it: its security requirements (openapi.yaml). */
type MatchedState = { route?: { operation?: { security?: object[] } } };

/** What a publishable key starts with (openapi.yaml, KeyKind). */
const PUBLISHABLE = 'rb_pub_';

/**
 * Every /v1 request needs a live key (interface spec §5), as `Authorization: Bearer <key>` or
 * `x-api-key: <key>`, or in `api_key` where the operation takes it in the query (`queryKey` among its
 * security). Missing, malformed, conflicting, unknown and revoked keys all get the same 401. A
 * publishable key may come with the end user's token in `Authorization: Bearer` (beside the key in
 * `x-api-key`), or in `access_token` where the key may be in the query: a token that does not verify is
 * 401 `invalid_token`, saying why.
 */
export function authenticate(store: Store, tokens: TokenVerifier): Middleware<AuthState & MatchedState> {
  return async (ctx, next) => {
    if (!isV1(ctx.path)) return next();
    const query = takesQueryKey(ctx.state.route?.operation) ? new URLSearchParams(ctx.querystring) : undefined;
    // Read once, for the key beside it and as the token.
    const sentToken = endUserTokenOf(ctx.req);
    const key = keyIn(ctx.req, query, sentToken);
    const principal = key === undefined ? undefined : await store.findPrincipal(key);
    if (!principal || key === undefined) throw unauthorized();
    ctx.state.principal = principal;
    ctx.state.credentials = { key };
    if (principal.kind === 'publishable') {
      const token = tokenIn(ctx.req, query, sentToken);
      ctx.state.credentials.token = token;
      ctx.state.claims = token === undefined ? null : await tokens.verifyToken(token, await store.findIssuers(principal.accountId));
    }
    return next();
  };
}

/** Whether an operation takes the key in the query: openapi.yaml names `queryKey` among its security (the feed, the changes). */
const takesQueryKey = (operation: { security?: object[] } | undefined) =>
  operation?.security?.some((requirement) => 'queryKey' in requirement) === true;

/**
 * The one key of a request: in its headers (keyOf, without the Authorization that holds the end user's
 * token), and with `query`, in its `api_key` too. Given in two places, the keys must be equal; none, a
 * malformed header, two different keys, a repeated or empty `api_key`: undefined (401). `sentToken`: the
 * request's endUserTokenOf(), when read already.
 */
export function keyIn(
  request: Pick<IncomingMessage, 'headers' | 'rawHeaders'>,
  query?: URLSearchParams,
  sentToken = endUserTokenOf(request),
): string | undefined {
  const byAuthorization = sentToken === undefined;
  const fromHeaders = keyOf(request, byAuthorization);
  if (query === undefined) return fromHeaders;
  const { authorization, 'x-api-key': headerKey } = request.headers;
  if (((byAuthorization && authorization !== undefined) || headerKey !== undefined) && fromHeaders === undefined) return undefined;
  const fromQuery = query.getAll('api_key');
  if (fromQuery.length > 1 || fromQuery[0] === '') return undefined;
  if (fromQuery.length === 1 && fromHeaders !== undefined && fromQuery[0] !== fromHeaders) return undefined;
  return fromQuery[0] ?? fromHeaders;
}

/**
 * Beside a publishable key, the end user's token: `Authorization: Bearer` beside the key in `x-api-key`
 * (endUserTokenOf, or `fromHeader` when read already), and with `query`, its `access_token` too
 * (browsers set no headers on a WebSocket or an EventSource); undefined for an anonymous caller. Given
 * twice, empty, or in both places differently, it is no token: 401 invalid_token.
 */
export function tokenIn(
  request: Pick<IncomingMessage, 'headers' | 'rawHeaders'>,
  query?: URLSearchParams,
  fromHeader = endUserTokenOf(request),
): string | undefined {
  const fromQuery = query?.getAll('access_token') ?? [];
  if (fromQuery.length > 1) throw invalidToken('access_token is given more than once.');
  if (fromQuery[0] === '') throw invalidToken('access_token is empty.');
  if (fromQuery.length === 1 && fromHeader !== undefined && fromQuery[0] !== fromHeader) {
    throw invalidToken('The token in access_token differs from the one in Authorization.');
  }
  return fromQuery[0] ?? fromHeader;
}

/**
 * The end user's token: the one `Authorization: Bearer` value of a request whose `x-api-key` is a
 * publishable key, when it is no key of ours (rowbase's keys all start `rb_`); else undefined.
 */
function endUserTokenOf({ headers, rawHeaders }: Pick<IncomingMessage, 'headers' | 'rawHeaders'>): string | undefined {
  const { authorization, 'x-api-key': headerKey } = headers;
  if (typeof headerKey !== 'string' || !headerKey.startsWith(PUBLISHABLE) || typeof authorization !== 'string') return undefined;
  if (headerLines(rawHeaders, 'authorization') > 1) return undefined;
  const bearer = /^Bearer +([^\s]+) *$/i.exec(authorization)?.[1];
  return bearer === undefined || bearer.startsWith('rb_') ? undefined : bearer;
}

/** Whether `path` is under `/v1`, where every request needs a key. */
export const isV1 = (path: string) => path === '/v1' || path.startsWith('/v1/');

/**
 * The one key the request carries, or undefined when it carries none, a malformed one or two different
 * ones; `byAuthorization` false: in `x-api-key` alone, the Authorization being the end user's token. Two
 * Authorization lines are refused whatever they hold: Node keeps the first and drops the second from
 * `headers` (two x-api-key lines it joins with a comma, which is no key).
 */
function keyOf({ headers, rawHeaders }: Pick<IncomingMessage, 'headers' | 'rawHeaders'>, byAuthorization: boolean): string | undefined {
  const { 'x-api-key': headerKey } = headers;
  const authorization = byAuthorization ? headers.authorization : undefined;
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
