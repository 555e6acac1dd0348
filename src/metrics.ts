// The Prometheus metrics of one server (docs/operations.md, "Metrics"), kept only when METRICS_PORT is
// set and served on a listener of their own, apart from the API: `GET /metrics` in the text format.
// Each server has a registry of its own (prom-client's Registry), so that several in one process do not
// mix their counts. Label values are bounded: an operationId (or `none`), a status, a reason, a queue;
// never a collection, a row, an account or a key.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Store } from './db/store.ts';
import type { Answer, Observer } from './http/observe.ts';
import type { Meter } from './usage/meter.ts';
import type { Feed } from './ws/feed.ts';

/** Request durations, in seconds: a row read takes well under a millisecond, a large batch or page up to seconds. */
const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Waits for a database connection, in seconds. */
const WAIT_BUCKETS = [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5];

export interface MetricsSources {
  store: Store;
  meter: Meter;
  feed: Feed;
}

/** The metrics of one server: an Observer of its requests, and the registry that is served. */
export class Metrics implements Observer {
  readonly registry = new Registry();
  private readonly requests: Counter<'operation' | 'status'>;
  private readonly durations: Histogram<'operation'>;
  /**
   * Each label set's child, made once: prom-client hashes a label object on every call otherwise, and a
   * request should cost an increment and an observation, no more.
   */
  private readonly requestCounters = new Map<string, Map<number, Counter.Internal>>();
  private readonly durationHistograms = new Map<string, Histogram.Internal<'operation'>>();
  private readonly stopWaits: () => void;

  constructor({ store, meter, feed }: MetricsSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.requests = new Counter({
      name: 'rowbase_http_requests_total',
      help: 'Requests answered, by operationId (none: no route matched) and HTTP status; feed upgrades as openFeed, 101 when accepted.',
      labelNames: ['operation', 'status'],
      registers,
    });
    this.durations = new Histogram({
      name: 'rowbase_http_request_duration_seconds',
      help: 'Time from a request read to its answer written, by operationId.',
      labelNames: ['operation'],
      buckets: REQUEST_BUCKETS,
      registers,
    });
    new Gauge({
      name: 'rowbase_feed_sockets',
      help: 'Feed sockets open.',
      registers,
      collect() {
        this.set(feed.connections);
      },
    });
    new Gauge({
      name: 'rowbase_feed_collections',
      help: 'Collections this instance follows for its feed sockets.',
      registers,
      collect() {
        this.set(feed.collections);
      },
    });
    new Gauge({
      name: 'rowbase_feed_lag_events',
      help: "Events committed that this instance has yet to forward: over the collections it follows, the database's latest seq minus the last seq forwarded.",
      registers,
      async collect() {
        this.set(await feed.lag());
      },
    });
    counterOf(
      registers,
      'rowbase_feed_messages_sent_total',
      'Feed messages written to sockets (ready, changes live or replayed, collection_deleted).',
      () => feed.counts.messagesSent,
    );
    counterOf(
      registers,
      'rowbase_feed_slow_consumer_closes_total',
      'Feed sockets closed with 4008 (slow consumer).',
      () => feed.counts.slowConsumerCloses,
    );
    counterOf(
      registers,
      'rowbase_usage_admitted_total',
      "Requests and feed upgrades counted toward their account's plan.",
      () => meter.counts.admitted,
    );
    new Counter({
      name: 'rowbase_usage_refused_total',
      help: 'Requests and feed upgrades refused with 429 by their plan, by reason (quota_exceeded, rate_limited).',
      labelNames: ['reason'],
      registers,
      collect() {
        this.reset();
        this.inc({ reason: 'quota_exceeded' }, meter.counts.quota_exceeded);
        this.inc({ reason: 'rate_limited' }, meter.counts.rate_limited);
      },
    });
    const waits = new Histogram({
      name: 'rowbase_db_pool_wait_seconds',
      help: "Waits for a database connection that found none free, by queue: knex (Knex's pool: PostgreSQL's connections, SQLite's writer), sqlite_snapshot (SQLite's connection for reads in one snapshot).",
      labelNames: ['queue'],
      buckets: WAIT_BUCKETS,
      registers,
    });
    // Both queues appear from the start, at zero, so that a rate over them is defined before the first wait.
    for (const queue of ['knex', 'sqlite_snapshot']) waits.zero({ queue });
    const byQueue = { knex: waits.labels('knex'), sqlite_snapshot: waits.labels('sqlite_snapshot') };
    const waited = (queue: keyof typeof byQueue, seconds: number) => byQueue[queue].observe(seconds);
    store.waits.on('wait', waited);
    this.stopWaits = () => store.waits.off('wait', waited);
  }

  answered({ operation, status, seconds }: Answer): void {
    let byStatus = this.requestCounters.get(operation);
    if (!byStatus) {
      byStatus = new Map();
      this.requestCounters.set(operation, byStatus);
    }
    let requests = byStatus.get(status);
    if (!requests) {
      requests = this.requests.labels(operation, String(status));
      byStatus.set(status, requests);
    }
    requests.inc();
    let durations = this.durationHistograms.get(operation);
    if (!durations) {
      durations = this.durations.labels(operation);
      this.durationHistograms.set(operation, durations);
    }
    durations.observe(seconds);
  }

  /**
   * Serves the metrics on `host`:`port` (0: a free port), `GET /metrics` in Prometheus's text format;
   * every other request is a 404. Answers the listener, and its URL.
   */
  async serve(host: string, port: number): Promise<{ server: Server; url: string }> {
    const server = createServer(async (request, response) => {
      const path = (request.url ?? '/').split('?')[0];
      if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
        response.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
        return void response.end('The metrics are at GET /metrics.\n');
      }
      try {
        const text = await this.registry.metrics();
        response.writeHead(200, { 'Content-Type': this.registry.contentType, 'Content-Length': Buffer.byteLength(text) });
        response.end(request.method === 'HEAD' ? undefined : text);
      } catch {
        // A collector could not read (the database did not answer for the feed's lag): try the next scrape.
        response.writeHead(503, { 'Content-Type': 'text/plain; charset=utf-8' });
        response.end('The metrics could not be collected.\n');
      }
    });
    server.listen(port, host);
    await once(server, 'listening');
    const { port: bound } = server.address() as AddressInfo;
    const shown = host.includes(':') ? `[${host}]` : host;
    return { server, url: `http://${shown}:${bound}/metrics` };
  }

  /** Stops listening for the store's waits. */
  close(): void {
    this.stopWaits();
  }
}

/** A counter whose value is `read` at each scrape: what another part counts as a plain number. */
function counterOf(registers: Registry[], name: string, help: string, read: () => number): void {
  new Counter({
    name,
    help,
    registers,
    collect() {
      this.reset();
      this.inc(read());
    },
  });
}
