import type { ServerResponse } from 'node:http';
import type { Middleware } from 'koa';
import type { Admission, Meter } from '../usage/meter.ts';
import type { AuthState } from './auth.ts';

/**
 * Counts every authenticated request toward its account's plan before anything else can refuse it,
 * and puts the RateLimit-* headers on its response, whatever the status. Over quota or rate: 429.
 * Not an async function: an admission decided at once (meter.admit) goes on without a promise.
 */
export function meterUsage(meter: Meter): Middleware<AuthState> {
  return (ctx, next) => {
    if (ctx.state.principal === undefined) return next();
    const admitted = admit(meter, ctx.state.principal.accountId, ctx.res);
    return admitted ? admitted.then(next) : next();
  };
}

/**
 * Counts a request of the account, or throws its 429, and sets the RateLimit-* headers on `response`.
 * A promise only when the account's meter had to be read first: most requests go on at once.
 */
export function admit(meter: Meter, accountId: number, response: ServerResponse): Promise<void> | undefined {
  const admitted = meter.admit(accountId);
  if (!(admitted instanceof Promise)) return setRateLimitHeaders(response, admitted);
  return admitted.then((admission) => setRateLimitHeaders(response, admission));
}

function setRateLimitHeaders(response: ServerResponse, { limit, remaining, reset }: Admission): undefined {
  response.setHeader('RateLimit-Limit', String(limit));
  response.setHeader('RateLimit-Remaining', String(remaining));
  response.setHeader('RateLimit-Reset', String(reset));
}
