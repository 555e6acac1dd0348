import type { Middleware } from 'koa';
import { FEED_PATH, notAnUpgrade } from '../ws/upgrade.ts';

/**
 * `/ws` is the feed's (asyncapi.yaml), and the server hands the feed every WebSocket upgrade
 * (server.ts): a request for it that reaches the HTTP API is no upgrade, and is told so, rather than
 * that there is no such route.
 */
export const feedPath: Middleware = (ctx, next) => {
  if (ctx.path !== FEED_PATH) return next();
  throw notAnUpgrade(ctx.method, ctx.req);
};
