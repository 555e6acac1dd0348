// The Prometheus metrics of one server (docs/operations.md, "Metrics"), kept only when METRICS_PORT is
// set and served on a listener of their own, apart from the API: `GET /metrics` in the text format.
// Each server has a registry of its own (prom-client's Registry), so that several in one process do not
// mix their counts. Label values are bounded: an operationId (or `none`), a status, a reason, a queue;
// never a collection, a row, an account or a key.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, collectDefaultMetrics, Gauge, Histogram, type Metric, Registry } from 'prom-client';
import type { Store } from './db/open-store.ts';
import type { WebhookBacklog } from './db/webhooks/streams.ts';
import type { Feed } from './feed/feed.ts';
import type { Answer, Observer } from './http/observe.ts';
import type { Meter } from './usage/meter.ts';
import type { WebhookWorker } from './webhooks/worker.ts';

/** Request durations, in seconds: a row read takes well under a millisecond, a large batch or page up to seconds. */
const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Waits for a database connection, in seconds. */
const WAIT_BUCKETS = [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5];

export interface MetricsSources {
  store: Store;
  meter: Meter;
  feed: Feed;
  webhooks: WebhookWorker;
}

/** What one operation's answers came to: how many of each status, and their durations. */
interface Tally {
  statuses: Map<number, number>;
  /** Answers by the first of REQUEST_BUCKETS they took no longer than (the last: longer than all). */
  buckets: number[];
  seconds: number;
  count: number;
}

/** The metrics of one server: an Observer of its requests, and the registry that is served. */
export class Metrics implements Observer {
  readonly registry = new Registry();
  /**
   * Each operation's answers, counted in plain numbers and read at each scrape. A prom-client child
   * would hash its labels into a new string on every call, a good part of what a row read costs.
   */
  private readonly tallies = new Map<string, Tally>();
  private readonly stopWaits: () => void;
  /** Reads what several metrics of a scrape show, once, before the registry collects them. */
  private readonly readBeforeScrape: () => Promise<void>;

  constructor({ store, meter, feed, webhooks }: MetricsSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    const tallies = this.tallies;
    new Counter({
      name: 'rowbase_http_requests_total',
      help: 'Requests answered, by operationId (none: no route matched) and HTTP status; feed upgrades as openFeed, 101 when accepted.',
      labelNames: ['operation', 'status'],
      registers,
      collect() {
        this.reset();
        for (const [operation, { statuses }] of tallies) {
          for (const [status, count] of statuses) this.inc({ operation, status: String(status) }, count);
        }
      },
    });
    this.registry.registerMetric(
      durationsMetric('rowbase_http_request_duration_seconds', 'Time from a request read to its answer written, by operationId.', tallies),
    );
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
      help: "Requests and feed upgrades refused with 429 by their plan or their end user's rate, by reason (quota_exceeded, rate_limited, end_user_rate_limited).",
      labelNames: ['reason'],
      registers,
      collect() {
        this.reset();
        this.inc({ reason: 'quota_exceeded' }, meter.counts.quota_exceeded);
        this.inc({ reason: 'rate_limited' }, meter.counts.rate_limited);
        this.inc({ reason: 'end_user_rate_limited' }, meter.counts.end_user_rate_limited);
      },
    });
    new Counter({
      name: 'rowbase_webhook_deliveries_total',
      help: 'Attempts of webhook deliveries this instance made, by outcome (delivered: a 2xx in time; failed: anything else).',
      labelNames: ['outcome'],
      registers,
      collect() {
        this.reset();
        this.inc({ outcome: 'delivered' }, webhooks.counts.delivered);
        this.inc({ outcome: 'failed' }, webhooks.counts.failed);
      },
    });
    counterOf(
      registers,
      'rowbase_webhook_disabled_total',
      'Webhooks this instance disabled, their deliveries failed past the retry schedule.',
      () => webhooks.counts.disabled,
    );
    // One series per webhook, at most ROWBASE_MAX_WEBHOOKS_PER_ACCOUNT an account, of one read a scrape.
    let backlogs: WebhookBacklog[] = [];
    this.readBeforeScrape = async () => {
      backlogs = await store.webhookBacklog();
    };
    new Gauge({
      name: 'rowbase_webhook_pending_changes',
      help: 'Changes of its collections a webhook has yet to deliver, by webhook id (of every kind, matching its filter or not).',
      labelNames: ['webhook'],
      registers,
      collect() {
        this.reset();
        for (const { webhookId, pending } of backlogs) this.set({ webhook: String(webhookId) }, pending);
      },
    });
    new Gauge({
      name: 'rowbase_webhook_lag_seconds',
      help: 'How long ago the oldest change a webhook has yet to deliver was made, by webhook id (0 when it owes none).',
      labelNames: ['webhook'],
      registers,
      collect() {
        this.reset();
        const now = Date.now();
        for (const { webhookId, oldest } of backlogs) {
          this.set({ webhook: String(webhookId) }, oldest === undefined ? 0 : Math.max(0, (now - oldest) / 1000));
        }
      },
    });
    new Counter({
      name: 'rowbase_webhook_dropped_changes_total',
      help: 'Changes a webhook owed that retention pruned past its backlog limit, never delivered, by webhook id.',
      labelNames: ['webhook'],
      registers,
      collect() {
        this.reset();
        for (const { webhookId, dropped } of backlogs) this.inc({ webhook: String(webhookId) }, dropped);
      },
    });
    const waits = new Histogram({
      name: 'rowbase_db_pool_wait_seconds',
      help: "Waits for a database connection that found none free, by queue: knex (Knex's pool: PostgreSQL's connections, SQLite's writer), sqlite_snapshot (SQLite's connections for reads in one snapshot, four).",
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
    let tally = this.tallies.get(operation);
    if (!tally) {
      tally = { statuses: new Map(), buckets: new Array(REQUEST_BUCKETS.length + 1).fill(0), seconds: 0, count: 0 };
      this.tallies.set(operation, tally);
    }
    tally.statuses.set(status, (tally.statuses.get(status) ?? 0) + 1);
    let bucket = 0;
    while (bucket < REQUEST_BUCKETS.length && seconds > REQUEST_BUCKETS[bucket]) bucket++;
    tally.buckets[bucket]++;
    tally.seconds += seconds;
    tally.count++;
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
        await this.readBeforeScrape();
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

/**
 * The request durations as a Prometheus histogram of `tallies`, by operation: what prom-client's Histogram
 * exports (`_bucket` with `le`, cumulative, `_sum`, `_count`), made at each scrape from plain counts.
 * prom-client's registry takes any metric that answers get() so.
 */
function durationsMetric(name: string, help: string, tallies: Map<string, Tally>): Metric {
  const get = async () => {
    const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
    for (const [operation, { buckets, seconds, count }] of tallies) {
      let cumulative = 0;
      for (let index = 0; index < REQUEST_BUCKETS.length; index++) {
        cumulative += buckets[index];
        values.push({ metricName: `${name}_bucket`, labels: { operation, le: REQUEST_BUCKETS[index] }, value: cumulative });
      }
      values.push({ metricName: `${name}_bucket`, labels: { operation, le: '+Inf' }, value: count });
      values.push({ metricName: `${name}_sum`, labels: { operation }, value: seconds });
      values.push({ metricName: `${name}_count`, labels: { operation }, value: count });
    }
    return { name, help, type: 'histogram', aggregator: 'sum', values };
  };
  return { name, help, type: 'histogram', aggregator: 'sum', get } as unknown as Metric;
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
