import Koa from 'koa';
import type { Deps } from './handlers/types.ts';
import { authenticate } from './http/auth.ts';
import { jsonBody } from './http/body.ts';
import { problems } from './http/problems.ts';
import { createRouter } from './http/routes.ts';
import type { Logger } from './log.ts';

/**
 * The request path, in order: problems (the one error mapper, outermost) → authenticate (/v1 only) →
 * jsonBody → router (openapi-backend: route by operationId, validate, handler, respond).
 * Authentication comes before the body, so a request without a key never makes us read its body.
 */
export async function createApp(deps: Deps, log: Logger): Promise<Koa> {
  const app = new Koa();
  app.silent = true; // every error is handled, and logged, by problems()
  app.use(problems(log));
  app.use(authenticate(deps.store));
  app.use(jsonBody(deps.config));
  app.use(await createRouter(deps));
  return app;
}
