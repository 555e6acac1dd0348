// What is noted of each request once it is answered, by the HTTP API (the `observe` stage of app.ts) and
// the feed's upgrades (feed/feed.ts) alike: the metrics (metrics.ts) and the access log (LOG_REQUESTS=on,
// docs/operations.md). Neither reads the request's path or query as sent, its headers or its body: an
// answer is named by its operation and route template, never by a collection, a row or a key.
import type { ServerResponse } from 'node:http';
import type { Middleware } from 'koa';
import { FEED_PATH } from '../feed/upgrade.ts';
import type { Logger } from '../log.ts';
import type { AuthState } from './authentication.ts';
import type { RequestIdState } from './request-id.ts';
import type { AnsweredState } from './responder.ts';
import type { RouteState } from './route.ts';
import { contextPath } from './target.ts';

/** One answered request. */
export interface Answer {
  requestId: string;
  method: string;
  /** Its operationId (openapi.yaml, or a page's), or NO_OPERATION when no route matched. */
  operation: string;
  /** Its operation's path template (`/v1/collections/{collection_name}/rows/{row_id}`), or undefined when no route matched. */
  route: string | undefined;
  status: number;
  /** From the request's first stage to its answer written. */
  seconds: number;
  /** The bytes of the body sent (0 for none, and for HEAD). */
  bytes: number;
  /** The account of its key, once known. */
  accountId: number | undefined;
}

export interface Observer {
  answered(answer: Answer): void;
}

/** The operation of a request that matched no route: one value, whatever path it asked for. */
const NO_OPERATION = 'none';

/** The feed's operation (openapi.yaml, `GET /ws`): its upgrades, and the requests to `/ws` that are none. */
export const FEED_OPERATION = 'openFeed';

/**
 * The stage that tells `observers` of each request once it is answered. It sits outside problems(), so
 * that a refusal is noted with the status it was answered with. Only in the app when something observes.
 */
export function observe(observers: readonly Observer[]): Middleware<RequestIdState & AnsweredState & Partial<RouteState & AuthState>> {
  return async (ctx, next) => {
    const startedAt = performance.now();
    await next();
    const operation = ctx.state.route?.operation;
    const feed = operation === undefined && contextPath(ctx) === FEED_PATH;
    const answer: Answer = {
      requestId: ctx.state.requestId,
      method: ctx.method,
      operation: operation?.operationId ?? (feed ? FEED_OPERATION : NO_OPERATION),
      route: operation?.path ?? (feed ? FEED_PATH : undefined),
      status: ctx.res.statusCode,
      seconds: (performance.now() - startedAt) / 1000,
      bytes: ctx.state.sentBytes ?? 0,
      accountId: ctx.state.principal?.accountId,
    };
    const { answering } = ctx.state;
    if (answering === undefined) tell(observers, answer);
    else tellLater(observers, answer, answering, ctx.res, startedAt);
  };
}

function tell(observers: readonly Observer[], answer: Answer): void {
  for (const observer of observers) observer.answered(answer);
}

/**
 * Tells `observers` of an answer given later (a long poll that waits) once it is written, with its
 * status, bytes and time then: out of the stage, so that nothing of the request's context is held meanwhile.
 */
function tellLater(
  observers: readonly Observer[],
  answer: Answer,
  answering: Promise<number>,
  response: ServerResponse,
  startedAt: number,
): void {
  answering.then((bytes) => {
    const seconds = (performance.now() - startedAt) / 1000;
    tell(observers, { ...answer, status: response.statusCode, bytes, seconds });
  });
}

/**
 * The access log: one line per answered request, at `info`, with its id, method, route template,
 * operation, status, duration, body bytes and account. Never its path as sent, query, headers or body,
 * which may carry a key or a client's data.
 */
export function accessLog(log: Logger): Observer {
  return {
    answered({ requestId, method, route, operation, status, seconds, bytes, accountId }) {
      const durationMs = Math.round(seconds * 1e6) / 1000;
      log.info({ requestId, method, route: route ?? null, operation, status, durationMs, bytes, accountId: accountId ?? null }, 'request');
    },
  };
}
