import type { Middleware, ParameterizedContext } from 'koa';
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
    const admitted = meter.admit(ctx.state.principal.accountId);
    if (admitted instanceof Promise) {
      return admitted.then((admission) => {
        setRateLimitHeaders(ctx, admission);
        return next();
      });
    }
    setRateLimitHeaders(ctx, admitted);
    return next();
  };
}

/** The RateLimit-* headers, set on the response itself rather than through Koa's setter. */
function setRateLimitHeaders(ctx: ParameterizedContext<AuthState>, { limit, remaining, reset }: Admission): void {
  ctx.res.setHeader('RateLimit-Limit', String(limit));
  ctx.res.setHeader('RateLimit-Remaining', String(remaining));
  ctx.res.setHeader('RateLimit-Reset', String(reset));
}
