// The last stage: 404 or 405 for a request no operation takes (for `/ws`, the refusal of a request that is
// no WebSocket upgrade), else its input validated (validation.ts), the key's collections (404), its
// handler by operationId, and the one responder (responder.ts), in the order of openapi-backend's
// handleRequest.
import type { Middleware } from 'koa';
import { collectionNotFound } from '../errors.ts';
import { FEED_PATH, notAnUpgrade } from '../feed/upgrade.ts';
import type { Deps } from '../handlers/types.ts';
import type { AuthState } from './authentication.ts';
import type { OnceState } from './idempotency.ts';
import type { AdmissionState } from './metering.ts';
import type { Operations } from './operations.ts';
import { respond } from './responder.ts';
import type { RouteState } from './route.ts';
import { miss } from './route-table.ts';
import { validateRequest } from './validation.ts';

/** 404 or 405; else validation, the key's collections, the handler by operationId, and the one responder. */
export function handle(operations: Operations, deps: Deps): Middleware<RouteState & Partial<AuthState> & OnceState & AdmissionState> {
  return async (ctx) => {
    const { operation, params, miss: status } = ctx.state.route;
    if (!operation) {
      // `/ws` is the feed's (asyncapi.yaml; openapi.yaml's openFeed describes its refusals), and the
      // server hands the feed every WebSocket upgrade (server.ts): a request for it that reaches the
      // HTTP API is no upgrade, and is told so.
      throw ctx.path === FEED_PATH ? notAnUpgrade(ctx.method, ctx.req) : miss(operations.table, status, ctx.path);
    }
    const { handler, ofCollection, checks } = operations.bound(operation);
    const { principal } = ctx.state;
    const { querystring } = ctx;
    const query = operations.queryFor(querystring, checks.queryNames);
    const { body, mediaType } = ctx.request;
    const validated = validateRequest(checks, { params, query, querystring, body, mediaType });
    // A collection the key is not limited to does not exist for it: the 404 of one that does not.
    const collections = principal?.collections;
    if (ofCollection && collections && !collections.has(validated.path.collection_name as string)) {
      throw collectionNotFound(validated.path.collection_name as string);
    }
    const { once, admission, claims, credentials } = ctx.state;
    const input = {
      path: validated.path,
      query: validated.query,
      body: validated.body,
      mediaType,
      principal,
      headers: ctx.req.headers,
      once,
      admission,
      claims,
      credentials,
    };
    respond(ctx, await handler(input as never, deps));
  };
}
