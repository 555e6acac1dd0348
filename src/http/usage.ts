import type { Middleware } from 'koa';
import { type Meter, rateLimitHeaders } from '../usage/meter.ts';
import type { AuthState } from './auth.ts';

/**
 * Counts every authenticated request toward its account's plan before anything else can refuse it,
 * and puts the RateLimit-* headers on its response, whatever the status. Over quota or rate: 429.
 */
export function meterUsage(meter: Meter): Middleware<AuthState> {
  return async (ctx, next) => {
    if (ctx.state.principal === undefined) return next();
    ctx.set(rateLimitHeaders(await meter.admit(ctx.state.principal.accountId)));
    return next();
  };
}
