import type { ServerResponse } from 'node:http';
import type { Context } from 'koa';
import type { Result } from '../handlers/types.ts';

/** What a JSON body is sent as: Koa's reading of `application/json`, which the API has always sent. */
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The one responder of the Koa path: writes a handler's result to the response itself, as the lane
 * does (lane.ts), so that both paths answer alike byte for byte.
 */
export function respond(ctx: Context, result: Result): void {
  ctx.respond = false;
  writeResult(ctx.res, result, ctx.method === 'HEAD');
}

/**
 * Writes a handler's result: its status and headers, then its body, if any, with its Content-Type
 * (JSON unless it says) and Content-Length. A string or Buffer is sent as it is, anything else as JSON.
 * `head`: the answer to HEAD, which is GET's without the body (RFC 9110 §9.3.2).
 */
export function writeResult(response: ServerResponse, result: Result, head = false): void {
  response.statusCode = result.status;
  if (result.headers) for (const name in result.headers) response.setHeader(name, result.headers[name]);
  if (result.body === undefined) return void response.end();
  const body = typeof result.body === 'string' || Buffer.isBuffer(result.body) ? result.body : JSON.stringify(result.body);
  response.setHeader('Content-Type', result.contentType ?? JSON_TYPE);
  response.setHeader('Content-Length', Buffer.byteLength(body));
  if (head) response.end();
  else response.end(body);
}
