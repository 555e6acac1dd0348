// The Koa app that answers every HTTP request: its stages in order, each in the file of http/ named after it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import Koa, { type Context, type Middleware } from 'koa';
import type { Deps } from './handlers/types.ts';
import { allowOrigin } from './http/allow-origin.ts';
import { authenticate } from './http/authentication.ts';
import { authorize } from './http/authorize.ts';
import { jsonBody } from './http/body.ts';
import { handle } from './http/handle.ts';
import { idempotency } from './http/idempotency.ts';
import { meterUsage } from './http/metering.ts';
import { type Observer, observe } from './http/observe.ts';
import type { Operations } from './http/operations.ts';
import { preflight } from './http/preflight.ts';
import { problems } from './http/problems.ts';
import { readableRefusals } from './http/readable-refusals.ts';
import { requestId } from './http/request-id.ts';
import type { Responses } from './http/responses.ts';
import { route } from './http/route.ts';
import { checkRequest } from './http/target.ts';
import type { Logger } from './log.ts';

/**
 * Every HTTP request the service answers, one stage after another, each in the file of http/ named
 * after it:
 *
 *   responses.track  notes the response under way: once the server closes, it ends its connection (responses.ts)
 *   requestId     the request's id: its X-Request-Id if sane, else a new one, on its answer and log lines (request-id.ts)
 *   observe       (with metrics or LOG_REQUESTS=on) tells the metrics and the access log of the answer (observe.ts)
 *   problems      the one error mapper: whatever a later stage throws leaves as problem+json (problems.ts)
 *   checkRequest  the request target and Host (400; target.ts)
 *   route         the operation of openapi.yaml at the method and path, matched once (route.ts, from the
 *                 operations bound at start: operations.ts)
 *   preflight     a browser's CORS preflight under /v1, answered 204 with no key and not counted (preflight.ts)
 *   readableRefusals  a page may read a refusal of its key, token (401) or origin (403) (readable-refusals.ts)
 *   authenticate  the key of a /v1 request, and beside a publishable key the end user's token (401;
 *                 authentication.ts); in the query too where the operation takes it there (the changes)
 *   allowOrigin   a publishable key's Origin: CORS headers on the answer, or 403 if not its own (allow-origin.ts)
 *   meterUsage    counts the request toward its account's plan, and a publishable key's toward its end
 *                 user's rate (429 past either; metering.ts)
 *   authorize     the operation's security (401) and the scope it needs of the key (403; authorize.ts)
 *   jsonBody      the JSON body of a matched operation (400, 413, 415; body.ts, within body-budget.ts)
 *   idempotency   a write's Idempotency-Key: its stored answer replayed (422 for another request, 409
 *                 while its first request runs), or the key handed to the write, which stores its
 *                 answer (idempotency.ts)
 *   handle        404 or 405 (for `/ws`, the refusal of a request that is no WebSocket upgrade; the
 *                 feed takes the upgrades: server.ts), validation, the key's collections (404), its
 *                 handler by operationId, and the one responder (handle.ts, validation.ts, responder.ts)
 *
 * A replay comes after the count: replays count toward the plan as requests. The key, the count and the scope come before the body: a request without a key, or one its key may
 * not make, never makes us read its body, and a request refused for its scope or its body still counts.
 * A route that does not exist is answered after the key, so that it tells nothing to a client without one.
 */
export function createApp(deps: Deps, operations: Operations, log: Logger, responses: Responses, observers: readonly Observer[] = []): Koa {
  const app = new Koa();
  app.silent = true; // every error is handled, and logged, by problems()
  app.use(responses.track);
  app.use(requestId);
  if (observers.length > 0) app.use(observe(observers));
  app.use(problems(log));
  app.use(checkRequest);
  app.use(route(operations));
  app.use(preflight(operations.methodsAt));
  app.use(readableRefusals);
  app.use(authenticate(deps.store, deps.tokens));
  app.use(allowOrigin);
  if (deps.config.metering) app.use(meterUsage(deps.meter, deps.config.trustedProxies));
  app.use(authorize(operations));
  app.use(jsonBody(deps.config, deps.bodies));
  app.use(idempotency(deps.store, deps.config.idempotencyKeyMs));
  app.use(handle(operations, deps));
  return app;
}

/**
 * The HTTP server's request listener for `app`: Koa's own (app.callback()) but for its on-finished
 * listener, which held every request's context, what its stages made of it, until its response
 * finished: a changes stream's, or a waiting long poll's, for as long as it lasts (docs/performance.md,
 * "Changes over plain HTTP"). That listener had nothing else to do: every answer is written by the one
 * responder, which leaves Koa's responder out (ctx.respond = false), and every error is answered by
 * problems(); it only told the app of a connection's error, which no one hears (app.silent).
 */
export function requestListener(app: Koa): (request: IncomingMessage, response: ServerResponse) => void {
  // What ctx.onerror tells of an error no stage answered (Koa's own, app.callback()).
  if (!app.listenerCount('error')) app.on('error', app.onerror);
  const stages = app.middleware;
  return (request, response) => {
    const ctx = app.createContext(request, response);
    response.statusCode = 404;
    run(stages, ctx, 0).catch((error) => ctx.onerror(error));
  };
}

/** Runs the stages from `index` on, each handed the next as `next` (as koa-compose does). */
function run(stages: readonly Middleware[], ctx: Context, index: number): Promise<void> {
  const stage = stages[index];
  if (stage === undefined) return Promise.resolve();
  try {
    return Promise.resolve(stage(ctx, () => run(stages, ctx, index + 1)));
  } catch (error) {
    return Promise.reject(error);
  }
}
