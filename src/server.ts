// The service: its store, feed, workers and HTTP server started together, and closed in order.
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, isIPv6, type Socket } from 'node:net';
import { createApp, requestListener } from './app.ts';
import type { Config } from './config.ts';
import { AccountContracts } from './contract/served.ts';
import { openStore, type Store } from './db/open-store.ts';
import { expectationFailed, noTunnel } from './errors.ts';
import { createFeed, type Feed, type FeedOptions } from './feed/feed.ts';
import { BodyBudget } from './http/body-budget.ts';
import { answerClientErrors } from './http/client-errors.ts';
import { isIdleLent } from './http/connections.ts';
import { endUserOf } from './http/metering.ts';
import { accessLog, type Observer } from './http/observe.ts';
import { bindOperations } from './http/operations.ts';
import { serveWithoutUpgrade, wantsWebSocket } from './http/other-upgrades.ts';
import { writeProblem } from './http/problems.ts';
import { requestIdOf } from './http/request-id.ts';
import { Responses } from './http/responses.ts';
import { createLogger, type Logger } from './log.ts';
import type { Metrics } from './metrics.ts';
import { root } from './root.ts';
import { SearchFills } from './search-fills.ts';
import { TokenVerifier } from './tokens/verifier.ts';
import { Meter } from './usage/meter.ts';
import { WebhookWorker } from './webhooks/worker.ts';

export interface RunningServer {
  /** Base URL, e.g. http://127.0.0.1:8080 */
  url: string;
  port: number;
  server: Server;
  store: Store;
  meter: Meter;
  /** The real-time feed on `GET /ws`. */
  feed: Feed;
  /** The delivery of the webhooks' changes (docs/webhooks.md). */
  webhooks: WebhookWorker;
  /** The bytes of request bodies worked on at once (http/body-budget.ts, BodyBudget). */
  bodies: BodyBudget;
  /** With METRICS_PORT: the URL of the metrics (`http://host:port/metrics`), served by a listener of their own. */
  metricsUrl?: string;
  /**
   * Stops accepting, closes feed sockets with 1001, lets requests under way finish (each step up to
   * `graceMs`), writes pending usage counts, then closes the database.
   */
  close(graceMs?: number): Promise<void>;
}

export interface ServerOptions {
  /** Milliseconds since the epoch, for plan periods and rates. Default `Date.now`. */
  clock?: () => number;
}

export async function startServer(
  config: Config,
  log: Logger = createLogger(config.logLevel),
  options: ServerOptions = {},
): Promise<RunningServer> {
  const store = await openStore(config.databaseUrl, {
    sortIndexes: { minRows: config.sortIndexMinRows, max: config.sortIndexMax },
    log,
    followOthers: true,
    queryTimeoutMs: config.queryTimeoutMs,
  });
  // Search indexes whose making an earlier process left half-way: made, beside the requests.
  const searchFills = new SearchFills(store, log);
  searchFills.runOnce().catch((error) => log.error({ err: error }, 'making search indexes failed'));
  const [openapi, asyncapi] = await Promise.all(['openapi.yaml', 'asyncapi.yaml'].map((name) => readFile(new URL(name, root), 'utf8')));
  const meter = new Meter(store, log, { clock: options.clock });
  const bodies = new BodyBudget(config.maxBodyBytesAtOnce);
  const tokens = new TokenVerifier({ allowPrivate: config.webhooksAllowPrivate });
  // Told of every answer, the HTTP API's and the feed's upgrades' (filled before the first request).
  const observers: Observer[] = [];
  // Every upgrade with a valid key counts toward the plan like a /v1 request, whatever its outcome, and a
  // publishable key's toward its end user's rate (by the token's subject, or by address); over quota or
  // rate it is refused 429 and not counted.
  const admit: FeedOptions['admit'] = config.metering
    ? async (principal, request, claims) =>
        void (await meter.admit(principal.accountId, 1, endUserOf(principal, claims, request, config.trustedProxies)))
    : undefined;
  const feed = createFeed({ store, config, log, tokens, admit, observers });
  const deps = {
    feed,
    store,
    config,
    meter,
    bodies,
    documents: { openapi, asyncapi },
    contracts: new AccountContracts({ openapi, asyncapi }),
    tokens,
  };
  if (config.logRequests) observers.push(accessLog(log));
  // A request without Host is refused by the app with a problem body (checkRequest), not by Node with an empty one.
  const server = createServer({ requireHostHeader: false });
  answerClientErrors(server);
  // Two requests Node answers itself unless told otherwise, neither with a problem: an Expect other than
  // 100-continue (a bare 417) and CONNECT (the connection closed, no answer at all).
  server.on('checkExpectation', (request, response) => {
    writeProblem(response, expectationFailed(), { head: request.method === 'HEAD' });
  });
  server.on('connect', (request, socket) => writeProblem(socket, noTunnel(), { requestId: requestIdOf(request) }));
  const webhooks = new WebhookWorker({ store, config, log });
  // Only with METRICS_PORT: the metrics and prom-client, loaded then (docs/performance.md, "Memory").
  const metrics: Metrics | undefined =
    config.metricsPort === undefined ? undefined : new (await import('./metrics.ts')).Metrics({ store, meter, feed, webhooks });
  if (metrics) observers.push(metrics);
  const responses = new Responses();
  server.on('request', requestListener(createApp(deps, bindOperations(), log, responses, observers)));
  // Node hands the 'upgrade' listener every request with an Upgrade header: only WebSocket goes to the feed.
  server.on('upgrade', (request, socket, head) => {
    if (wantsWebSocket(request)) feed.handleUpgrade(request, socket, head);
    else serveWithoutUpgrade(server, request, socket, head);
  });
  // Every open connection, so that a stop ends those that have sent nothing yet (below).
  const connections = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    // A connection handed back to the server (connections.ts, other-upgrades.ts) is listed already.
    if (connections.has(socket)) return;
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  let metricsServer: Server | undefined;
  let closing: Promise<void> | undefined;
  const close = (graceMs = 10_000) => {
    closing ??= (async () => {
      const drained = new Promise<void>((resolve) => server.close(() => resolve()));
      responses.endConnections();
      server.closeIdleConnections();
      // Node leaves a connection that has sent nothing (a browser's or a client pool's preconnect), which
      // would hold the stop for its whole grace, and does not see one a long poll lent and its answer left
      // idle (connections.ts): nothing is under way on either.
      for (const socket of connections) if (socket.bytesRead === 0 || isIdleLent(socket)) socket.destroy();
      // Feed sockets are connections of the server too: drained waits for them.
      await feed.close(graceMs);
      const timer = setTimeout(() => server.closeAllConnections(), graceMs);
      await drained;
      clearTimeout(timer);
      if (metricsServer) {
        const stopped = once(metricsServer, 'close');
        metricsServer.close();
        metricsServer.closeAllConnections();
        await stopped;
      }
      metrics?.close();
      await webhooks.stop();
      await searchFills.stop();
      await meter.close();
      await store.close();
      await tokens.close();
    })();
    return closing;
  };
  server.listen(config.port, config.host);
  let metricsUrl: string | undefined;
  try {
    await once(server, 'listening');
    if (metrics) {
      ({ server: metricsServer, url: metricsUrl } = await metrics.serve(config.metricsHost, config.metricsPort as number));
      log.info({ url: metricsUrl }, 'metrics are served');
    }
  } catch (error) {
    // A HOST that is no address of this machine, a PORT in use: undo the start, or the open database,
    // the listener and the timers keep the process alive after it has said why it cannot serve.
    await close(0);
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  // An IPv6 address goes in brackets (RFC 3986, 3.2.2): http://[::1]:8080, not http://::1:8080.
  const host = isIPv6(config.host) ? `[${config.host}]` : config.host;
  return { url: `http://${host}:${port}`, port, server, store, meter, feed, webhooks, bodies, metricsUrl, close };
}
