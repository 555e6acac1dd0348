// The count of each authenticated request toward its account's plan (meterUsage, the stage of app.ts
// after the key): its admission, whose RateLimit-* headers every answer carries (responder.ts), or 429.
import type { Middleware } from 'koa';
import type { Admission, Meter } from '../usage/meter.ts';
import type { AuthState } from './authentication.ts';

export interface AdmissionState {
  /** The request's admission, once counted: its RateLimit-* headers go on the answer (responder.ts). */
  admission?: Admission;
}

/**
 * Counts every authenticated request toward its account's plan before anything else can refuse it;
 * the responder puts the RateLimit-* headers on its answer, whatever the status. Over quota or rate: 429.
 * Not an async function: an admission decided at once (meter.admit) goes on without a promise.
 */
export function meterUsage(meter: Meter): Middleware<AuthState & AdmissionState> {
  return (ctx, next) => {
    if (ctx.state.principal === undefined) return next();
    const admitted = meter.admit(ctx.state.principal.accountId);
    if (!(admitted instanceof Promise)) {
      ctx.state.admission = admitted;
      return next();
    }
    return admitted.then((admission) => {
      ctx.state.admission = admission;
      return next();
    });
  };
}
