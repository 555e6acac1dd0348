import Koa from 'koa';
import type { Deps } from './handlers/types.ts';
import { authenticate } from './http/auth.ts';
import { jsonBody } from './http/body.ts';
import { feedPath } from './http/feed-path.ts';
import { problems } from './http/problems.ts';
import type { Router } from './http/routes.ts';
import { meterUsage } from './http/usage.ts';
import type { Logger } from './log.ts';

/**
 * The request path, in order: problems (the one error mapper, outermost) → feedPath (`/ws`, which is
 * no WebSocket upgrade when it gets here: 400) → authenticate (/v1 only) → meterUsage → router.route
 * (match the operation, once) → jsonBody (only for a matched operation) → router.handle (404/405,
 * security, validation, handler by operationId, respond).
 * Authentication and metering come before the body, so a request without a key never makes us read
 * its body, and a request refused for its body still counts. The hot operations' plain requests take
 * the lane (http/lane.ts) instead: the same stages, without Koa.
 */
export function createApp(deps: Deps, router: Router, log: Logger): Koa {
  const app = new Koa();
  app.silent = true; // every error is handled, and logged, by problems()
  app.use(problems(log));
  app.use(feedPath);
  app.use(authenticate(deps.store));
  if (deps.config.metering) app.use(meterUsage(deps.meter));
  app.use(router.route);
  app.use(jsonBody(deps.config, deps.bodies));
  app.use(router.handle);
  return app;
}
