// The count of each authenticated request toward its account's plan (meterUsage, the stage of app.ts
// after the key): its admission, whose RateLimit-* headers every answer carries (responder.ts), or 429.
// A publishable key's request counts toward its end user's rate too (endUserOf), if the key sets one.
import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import type { Principal } from '../db/accounts/keys.ts';
import type { Claims } from '../tokens/verifier.ts';
import type { EndUser } from '../usage/end-users.ts';
import type { Admission, Meter } from '../usage/meter.ts';
import type { AuthState } from './authentication.ts';
import { addressBlock, clientAddress } from './client-address.ts';

export interface AdmissionState {
  /** The request's admission, once counted: its RateLimit-* headers go on the answer (responder.ts). */
  admission?: Admission;
}

/**
 * Counts every authenticated request toward its account's plan, and toward its end user's rate,
 * before anything else can refuse it; the responder puts the RateLimit-* headers on its answer,
 * whatever the status. Over quota or rate: 429. `trustedProxies`: as clientAddress() takes it.
 * Not an async function: an admission decided at once (meter.admit) goes on without a promise.
 */
export function meterUsage(meter: Meter, trustedProxies: number): Middleware<AuthState & AdmissionState> {
  return (ctx, next) => {
    const { principal, claims } = ctx.state;
    if (principal === undefined) return next();
    const admitted = meter.admit(principal.accountId, 1, endUserOf(principal, claims, ctx.req, trustedProxies));
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

/**
 * The end user a request of a publishable key with a rate per end user counts for (docs/access.md, "A
 * rate per end user"), or undefined for any other key: with a verified token whose `sub` is a string,
 * its issuer and subject; else (no token, `claims` null, or a token without `sub`) the client's address,
 * an IPv6 address by its /64.
 */
export function endUserOf(
  principal: Principal,
  claims: Claims | null | undefined,
  request: Pick<IncomingMessage, 'headers' | 'socket'>,
  trustedProxies: number,
): EndUser | undefined {
  if (principal.kind !== 'publishable' || principal.endUserRate === null) return undefined;
  const { keyId, endUserRate: rate } = principal;
  const sub = claims?.sub;
  if (typeof sub === 'string') return { keyId, rate, by: 'token', id: JSON.stringify([claims?.iss, sub]) };
  return { keyId, rate, by: 'address', id: addressBlock(clientAddress(request, trustedProxies)) };
}
