// The stage that matches each request to its operation of openapi.yaml, once (operations.ts): later
// stages read `ctx.state.route`; a miss is answered 404 or 405 by handle.ts, after the key.
import type { Middleware } from 'koa';
import type { Operations } from './operations.ts';
import type { Match } from './route-table.ts';

export interface RouteState {
  /** The request's operation in openapi.yaml, or why there is none (answered 404 or 405 by `handle`). */
  route: Match;
}

/** Matches the request to its operation, once: later stages read `ctx.state.route`. */
export function route(operations: Operations): Middleware<RouteState> {
  return (ctx, next) => {
    ctx.state.route = operations.table.match(ctx.method, ctx.path);
    return next();
  };
}
