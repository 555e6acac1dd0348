// The one responder: every answer the service writes, a handler's (respond, writeResult) and every
// refusal's (problems.ts, writeProblem), with the request's id and the RateLimit-* headers of its
// admission; on a response of the HTTP server, or on a socket Node has let go of (writeResultToSocket).
import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Context } from 'koa';
import { type Admission, rateLimitHeaders } from '../usage/meter.ts';
import { lendConnection, takeOverConnection } from './connections.ts';
import type { AdmissionState } from './metering.ts';
import { requestIdOf } from './request-id.ts';

/** What a handler returns (../handlers/types.ts), and every answer: the one responder writes it (respond). */
export interface Result {
  status: number;
  /** A string or Buffer is sent as it is; anything else as JSON. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Defaults to application/json when there is a body. */
  contentType?: string;
  /** A body written as it comes, after the head (a changes stream), instead of `body`. */
  stream?: StreamedBody;
  /** An answer known only later (a long poll that waits): the request's stages end now, and it is written once known. */
  later?: LaterAnswer;
}

/**
 * An answer known only later (feed/feed.ts, waitForPage): what is needed to work it out is handed over,
 * and the request's stages end, so that what they made of the request is not kept while it waits.
 */
export interface LaterAnswer {
  /** Works the answer out and writes it with `write` once known; never when the client has gone (`response` closed). */
  start(response: ServerResponse, write: (result: Result) => void): void;
}

/** A body written as it comes: a changes stream (feed/feed.ts, openStream). */
export interface StreamedBody {
  /** Writes the body to `response`, whose head is written, until one side ends it. */
  start(response: ServerResponse): void;
  /** The body will not be written (an answer to HEAD): lets go of what was taken for it. */
  drop(): void;
}

/** What a JSON body is sent as: Koa's reading of `application/json`, which the API has always sent. */
const JSON_TYPE = 'application/json; charset=utf-8';

/** What the responders note of the answer they wrote, for the access log and the metrics (observe.ts). */
export interface AnsweredState {
  /** The bytes of the body sent: 0 for none, and for HEAD. */
  sentBytes?: number;
  /** An answer given later (Result.later): settles with the bytes of its body once written, or with 0 once its client has gone. */
  answering?: Promise<number>;
}

/**
 * The one responder: writes a handler's result to the response itself (writeResult), with the
 * RateLimit-* headers of the request's admission, and leaves Koa's own responder out.
 */
export function respond(ctx: Context & { state: AdmissionState & AnsweredState }, result: Result): void {
  ctx.respond = false;
  const head = ctx.method === 'HEAD';
  const { admission } = ctx.state;
  if (result.later) {
    // Noted with the status it stands for (observe.ts) should its client go before it is written.
    ctx.res.statusCode = result.status;
    ctx.state.answering = answerLater(ctx.res, result.later, head, admission);
    return;
  }
  ctx.state.sentBytes = writeResult(ctx.res, result, head, admission);
}

/**
 * Starts an answer given later (Result.later), written as respond() writes any: settles as
 * AnsweredState.answering says. While it waits, its connection is lent (connections.ts): no HTTP parser
 * is held for it, as none is for a feed socket.
 */
function answerLater(response: ServerResponse, later: LaterAnswer, head: boolean, admission: Admission | undefined): Promise<number> {
  return new Promise((resolve) => {
    response.once('close', () => resolve(0));
    lendConnection(response);
    later.start(response, (result) => resolve(writeResult(response, result, head, admission)));
  });
}

/**
 * Writes a handler's result: its status, the request's id (X-Request-Id, requestIdOf), the
 * RateLimit-* headers of the request's `admission` (if it was counted), the result's headers, then its
 * body, if any, with its Content-Type (JSON unless it says) and Content-Length. A string or Buffer is
 * sent as it is, anything else as JSON. `head`: the answer to HEAD, which is GET's without the body
 * (RFC 9110 §9.3.2). The headers go to Node in one list (writeHead), not one setHeader each, which
 * would also keep each in an object by its name. Answers the bytes of the body sent.
 */
export function writeResult(response: ServerResponse, result: Result, head = false, admission?: Admission): number {
  const headers: string[] = admission ? rateLimitHeaders(admission) : [];
  headers.push('X-Request-Id', requestIdOf(response.req));
  if (result.headers) for (const name in result.headers) headers.push(name, result.headers[name]);
  if (result.stream) {
    // A stream is its connection's last answer: the connection, taken over, ends with it (connections.ts).
    headers.push('Content-Type', result.contentType as string, 'Connection', 'close');
    response.writeHead(result.status, headers);
    if (head) {
      result.stream.drop();
      response.end();
    } else {
      response.flushHeaders();
      takeOverConnection(response);
      result.stream.start(response);
    }
    return 0;
  }
  if (result.body === undefined) {
    response.writeHead(result.status, headers);
    response.end();
    return 0;
  }
  const body = bodyOf(result);
  const bytes = Buffer.byteLength(body);
  headers.push('Content-Type', result.contentType ?? JSON_TYPE, 'Content-Length', String(bytes));
  response.writeHead(result.status, headers);
  if (head) {
    response.end();
    return 0;
  }
  response.end(body);
  return bytes;
}

/**
 * Writes a result as a whole HTTP/1.1 response on a socket that Node's server has let go of (an
 * upgrade it handed over, a request its parser refused), then closes the connection, as `ws` does with
 * its own refusals (abortHandshake). Answers the bytes of the body sent.
 */
export function writeResultToSocket(socket: Duplex, result: Result, requestId: string): number {
  if (!socket.writable) {
    socket.destroy();
    return 0;
  }
  const body = bodyOf(result);
  const bytes = Buffer.byteLength(body);
  const headers: Record<string, string> = {
    Connection: 'close',
    'X-Request-Id': requestId,
    'Content-Type': result.contentType ?? JSON_TYPE,
    'Content-Length': String(bytes),
    ...result.headers,
  };
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  socket.once('finish', () => socket.destroy());
  socket.end(`HTTP/1.1 ${result.status} ${STATUS_CODES[result.status]}\r\n${head.join('')}\r\n${body}`);
  return bytes;
}

const bodyOf = ({ body }: Result): string | Buffer =>
  typeof body === 'string' || Buffer.isBuffer(body) ? body : body === undefined ? '' : JSON.stringify(body);
