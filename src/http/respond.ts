import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Context } from 'koa';
import type { Result } from '../handlers/types.ts';
import { type Admission, rateLimitHeaders } from '../usage/meter.ts';
import type { AdmissionState } from './usage.ts';

/** What a JSON body is sent as: Koa's reading of `application/json`, which the API has always sent. */
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The one responder: writes a handler's result to the response itself (writeResult), with the
 * RateLimit-* headers of the request's admission, and leaves Koa's own responder out.
 */
export function respond(ctx: Context & { state: AdmissionState }, result: Result): void {
  ctx.respond = false;
  writeResult(ctx.res, result, ctx.method === 'HEAD', ctx.state.admission);
}

/**
 * Writes a handler's result: its status, the RateLimit-* headers of the request's `admission` (if it
 * was counted), the result's headers, then its body, if any, with its Content-Type (JSON unless it
 * says) and Content-Length. A string or Buffer is sent as it is, anything else as JSON. `head`: the
 * answer to HEAD, which is GET's without the body (RFC 9110 §9.3.2). The headers go to Node in one
 * list (writeHead), not one setHeader each, which would also keep each in an object by its name.
 */
export function writeResult(response: ServerResponse, result: Result, head = false, admission?: Admission): void {
  const headers: string[] = admission ? rateLimitHeaders(admission) : [];
  if (result.headers) for (const name in result.headers) headers.push(name, result.headers[name]);
  if (result.body === undefined) {
    response.writeHead(result.status, headers);
    return void response.end();
  }
  const body = bodyOf(result);
  headers.push('Content-Type', result.contentType ?? JSON_TYPE, 'Content-Length', String(Buffer.byteLength(body)));
  response.writeHead(result.status, headers);
  if (head) response.end();
  else response.end(body);
}

/**
 * Writes a result as a whole HTTP/1.1 response on a socket that Node's server has let go of (an
 * upgrade it handed over, a request its parser refused), then closes the connection, as `ws` does with
 * its own refusals (abortHandshake).
 */
export function writeResultToSocket(socket: Duplex, result: Result): void {
  if (!socket.writable) return void socket.destroy();
  const body = bodyOf(result);
  const headers: Record<string, string> = {
    Connection: 'close',
    'Content-Type': result.contentType ?? JSON_TYPE,
    'Content-Length': String(Buffer.byteLength(body)),
    ...result.headers,
  };
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  socket.once('finish', () => socket.destroy());
  socket.end(`HTTP/1.1 ${result.status} ${STATUS_CODES[result.status]}\r\n${head.join('')}\r\n${body}`);
}

const bodyOf = ({ body }: Result): string | Buffer =>
  typeof body === 'string' || Buffer.isBuffer(body) ? body : body === undefined ? '' : JSON.stringify(body);
