import type { Context } from 'koa';
import type { Result } from '../handlers/types.ts';

/** The one responder: writes a handler's result to the response. */
export function respond(ctx: Context, result: Result): void {
  ctx.status = result.status;
  if (result.headers) ctx.set(result.headers);
  if (result.body === undefined) return;
  // The type first: a string body set without one is given text/plain, to be replaced at once.
  ctx.type = result.contentType ?? 'application/json';
  ctx.body = typeof result.body === 'string' || Buffer.isBuffer(result.body) ? result.body : JSON.stringify(result.body);
}
