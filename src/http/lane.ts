// The lane: the request path of the hot operations, without Koa. Koa's path (app.ts) costs a context of
// three objects, a promise and a bound `next` for each of its seven stages, and its own responder, on
// every request. Beside the same stages called one after another, measured side by side, get-row ran
// 1.17 × as fast, list 1.20 × and patch 1.09 × (BENCHMARKS.md). A request the lane can take goes
// straight through those stages (auth.ts, usage.ts, body.ts, routes.ts, and the one responder of
// respond.ts) on Node's own request and response; any other goes to Koa, which answers it as it always
// has. Both paths write every answer, and every problem, with the same functions, so they answer alike
// byte for byte (test/http/lane.test.ts). What only Koa's path does is what the lane's requests never need:
//   - a target that is no plain path under /v1/ (absolute-form, `//…`, `#`, whitespace), which
//     problems() checks and Koa's parser reads apart;
//   - a request without Host, or with two Host lines, which problems() refuses; HEAD, whose answer has no body;
//   - no operation at the path and method (404, 405), which Koa's path answers after the key;
//   - a body of another Content-Type than the usual JSON ones, which Koa's type-is reads.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Operation } from 'openapi-backend';
import type { Deps } from '../handlers/types.ts';
import type { Logger } from '../log.ts';
import type { Admission } from '../usage/meter.ts';
import { principalOf } from './auth.ts';
import { bodyKind, withJsonBody } from './body.ts';
import { headerLines } from './header-lines.ts';
import { writeError } from './problems.ts';
import { writeResult } from './respond.ts';
import type { Router } from './routes.ts';

/** A target the lane reads itself: a path under /v1/ with its query, as Koa's parser reads it without change. */
const plainTarget = /^\/v1\/[^\s#]*$/;

export interface Lane {
  /** Node's request listener: the lane's requests, and Koa's `callback()` for the others. */
  listener: RequestListener;
  /** Requests the lane has taken. */
  readonly stats: { served: number };
}

/** `koa`: the listener of every request the lane does not take. */
export function createLane({ store, meter, config, bodies }: Deps, router: Router, log: Logger, koa: RequestListener): Lane {
  const stats = { served: 0 };

  /**
   * The stages of Koa's path for a matched operation, in its order: key, metering, body, operation; and
   * its answer, or its problem, with the RateLimit-* headers once the request is counted.
   */
  async function serve(request: IncomingMessage, response: ServerResponse, operation: Operation, parts: Parts): Promise<void> {
    // Named, not spread (`{ ...parts, body, principal }`), as in router.serve.
    const { method, path, params, querystring } = parts;
    let admission: Admission | undefined;
    try {
      const principal = await principalOf(store, request);
      if (config.metering) {
        const admitted = meter.admit(principal.accountId);
        admission = admitted instanceof Promise ? await admitted : admitted;
      }
      const serveWith = (body: unknown) => router.serve(operation, { method, path, params, querystring, body, principal });
      const result = await (parts.withBody ? withJsonBody(request, config, bodies, serveWith) : serveWith(undefined));
      writeResult(response, result, false, admission);
    } catch (error) {
      writeError(response, error, log, method, () => path, admission);
    }
  }

  const listener: RequestListener = (request, response) => {
    const { url = '', method = '' } = request;
    if (!plainTarget.test(url) || headerLines(request.rawHeaders, 'host') !== 1 || method === 'HEAD') return koa(request, response);
    const kind = bodyKind(request);
    if (kind === 'other') return koa(request, response);
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    const { operation, params } = router.match(method, path);
    if (!operation) return koa(request, response);
    stats.served++;
    const parts = { method, path, params, querystring: query === -1 ? '' : url.slice(query + 1), withBody: kind === 'json' };
    void serve(request, response, operation, parts);
  };
  return { listener, stats };
}

interface Parts {
  method: string;
  path: string;
  params: Record<string, string>;
  querystring: string;
  withBody: boolean;
}
