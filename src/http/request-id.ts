// Every request has an id (openapi.yaml, the X-Request-Id header and Problem's `instance`; requestId):
// the one the client or a proxy in front sent in `X-Request-Id`, when it is a sane token, or a new one.
// It is answered on every response, refusals of the feed and of Node's parser included, carried by every
// log line about the request, and named in every problem body, so that one failing request can be
// followed from the client through the proxy's log to ours.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';

/**
 * What a sent `X-Request-Id` must be to be kept: 1 to 128 letters, digits and `.`, `_`, `:`, `-`, which
 * covers UUIDs, ULIDs, W3C trace ids and the ids proxies make. Anything else (empty, longer, two headers,
 * spaces, quotes, control characters) is replaced by a new id: it would go into log lines and a URN as it is.
 */
const SENT_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const ID = Symbol('rowbase request id');

interface Identified {
  [ID]?: string;
}

/** A new request id: a random UUID (RFC 9562, version 4). */
export const newRequestId = (): string => randomUUID();

/** The id of `request`: the `X-Request-Id` it sent if sane, else a new one; the same every time it is asked. */
export function requestIdOf(request: IncomingMessage): string {
  const identified = request as IncomingMessage & Identified;
  let id = identified[ID];
  if (id === undefined) {
    const sent = request.headers['x-request-id'];
    id = typeof sent === 'string' && SENT_ID.test(sent) ? sent : newRequestId();
    identified[ID] = id;
  }
  return id;
}

/** RFC 9457's `instance` of a problem answered to the request `id`. */
export const problemInstance = (id: string): string => `urn:rowbase:request:${id}`;

export interface RequestIdState {
  /** The request's id (requestIdOf): on its answer, its log lines and its problem's `instance`. */
  requestId: string;
}

/** The stage that gives each request its id, before anything can refuse it. */
export const requestId: Middleware<RequestIdState> = (ctx, next) => {
  ctx.state.requestId = requestIdOf(ctx.req);
  return next();
};
