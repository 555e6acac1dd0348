// The stage that enforces the operation's `security` (401), whether it takes a publishable key (403) and
// the scope it needs of the key (403; `x-rowbase-scope`), before its input is read: a request its key may
// not make is refused whatever its body.
import type { Middleware } from 'koa';
import type { Principal } from '../db/accounts/keys.ts';
import { forbidden, secretKeyNeeded, unauthorized } from '../errors.ts';
import type { AuthState } from './authentication.ts';
import type { Operations } from './operations.ts';
import type { RouteState } from './route.ts';

/**
 * authenticate() has already checked the key; these let each operation's `security` be enforced as
 * declared, so an operation that needs a key can never run without an account.
 */
const securityHandlers: Record<string, (principal: Principal | undefined) => boolean> = {
  bearerKey: (principal) => principal !== undefined,
  headerKey: (principal) => principal !== undefined,
  queryKey: (principal) => principal !== undefined,
  // Optional beside a publishable key (an anonymous caller sends none); when sent, authenticate() verified it.
  endUserToken: (principal) => principal !== undefined,
};

export function authorize(operations: Operations): Middleware<RouteState & Partial<AuthState>> {
  return (ctx, next) => {
    const { operation } = ctx.state.route;
    if (!operation) return next(); // answered by handle
    const { security, scope, publishable } = operations.bound(operation);
    const { principal } = ctx.state;
    // As openapi-backend: no requirement, or one whose every scheme's handler says yes.
    if (security.length > 0 && !security.some((schemes) => schemes.every((scheme) => securityHandlers[scheme]?.(principal)))) {
      throw unauthorized();
    }
    if (publishable && !publishable.takes && principal?.kind === 'publishable') throw secretKeyNeeded(publishable.named);
    if (scope && !scope.granted.has((principal as Principal).scope)) {
      throw forbidden(`The key's scope is ${(principal as Principal).scope}; ${scope.needs}.`);
    }
    return next();
  };
}
