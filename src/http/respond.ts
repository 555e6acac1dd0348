import type { ServerResponse } from 'node:http';
import type { Context } from 'koa';
import type { Result } from '../handlers/types.ts';
import { type Admission, rateLimitHeaders } from '../usage/meter.ts';
import type { AdmissionState } from './usage.ts';

/** What a JSON body is sent as: Koa's reading of `application/json`, which the API has always sent. */
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The one responder of the Koa path: writes a handler's result to the response itself, as the lane
 * does (lane.ts), so that both paths answer alike byte for byte.
 */
export function respond(ctx: Context & { state: AdmissionState }, result: Result): void {
  ctx.respond = false;
  writeResult(ctx.res, result, ctx.method === 'HEAD', ctx.state.admission);
}

/**
 * Writes a handler's result: its status, the RateLimit-* headers of the request's `admission` (if it
 * was counted), the result's headers, then its body, if any, with its Content-Type (JSON unless it
 * says) and Content-Length. A string or Buffer is sent as it is, anything else as JSON. `head`: the
 * answer to HEAD, which is GET's without the body (RFC 9110 §9.3.2).
 *
 * The headers go to Node in one list (writeHead), not one setHeader each, which also keeps each header
 * in an object by its name in lower case, read back when the head is written: patch went from about
 * 172,000 to 163,000 instructions a request on the main thread (bench/instructions.ts).
 */
export function writeResult(response: ServerResponse, result: Result, head = false, admission?: Admission): void {
  const headers: string[] = admission ? rateLimitHeaders(admission) : [];
  if (result.headers) for (const name in result.headers) headers.push(name, result.headers[name]);
  if (result.body === undefined) {
    response.writeHead(result.status, headers);
    return void response.end();
  }
  const body = typeof result.body === 'string' || Buffer.isBuffer(result.body) ? result.body : JSON.stringify(result.body);
  headers.push('Content-Type', result.contentType ?? JSON_TYPE, 'Content-Length', String(Buffer.byteLength(body)));
  response.writeHead(result.status, headers);
  if (head) response.end();
  else response.end(body);
}
