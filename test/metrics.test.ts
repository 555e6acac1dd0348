// The Prometheus metrics (src/metrics.ts, docs/operations.md "Metrics"): served by a listener of their own
// when METRICS_PORT is set, read here by a text-format parser from a real server, on both backends.
import { expect } from 'chai';
import { configFromEnv } from '../src/config.ts';
import type { SqliteStore } from '../src/db/open-store.ts';
import { SNAPSHOT_CONNECTIONS } from '../src/db/sqlite/readers.ts';
import { describeEachBackend } from './support/backends.ts';
import type { Client } from './support/client.ts';
import { FeedClient, range, refusal } from './support/feed.ts';
import { labelValues, scrape, value } from './support/metrics.ts';
import { startTestServer, type TestServer } from './support/server.ts';

describe('metrics configuration', () => {
  it('is off by default, and listens on METRICS_PORT at METRICS_HOST, else HOST', () => {
    expect(configFromEnv({}).metricsPort).to.equal(undefined);
    expect(configFromEnv({ METRICS_PORT: '9464' })).to.include({ metricsPort: 9464, metricsHost: '127.0.0.1' });
    expect(configFromEnv({ METRICS_PORT: '0', HOST: '::1' })).to.include({ metricsPort: 0, metricsHost: '::1' });
    expect(configFromEnv({ METRICS_PORT: '0', HOST: '::1', METRICS_HOST: '0.0.0.0' }).metricsHost).to.equal('0.0.0.0');
    for (const port of ['-1', '65536', 'x']) expect(() => configFromEnv({ METRICS_PORT: port }), port).to.throw(/METRICS_PORT/);
  });
});

describeEachBackend('metrics', (backend) => {
  let server: TestServer;
  let client: Client;

  before(async () => {
    // Every ordered page reads a sort index, as large collections' do (below, the snapshot's waits).
    server = await startTestServer({ metricsPort: 0, sortIndexMinRows: 0 }, { backend });
    client = await server.client();
  });
  after(() => server.stop());

  it('are served on a listener of their own, and nowhere else', async () => {
    expect(server.metricsUrl).to.match(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(new URL(server.metricsUrl as string).port).not.to.equal(String(server.port));
    const elsewhere = await fetch(new URL('/', server.metricsUrl));
    expect(elsewhere.status).to.equal(404);
    expect((await client.get('/metrics')).status, 'not on the API').to.equal(404);
  });

  it('are none without METRICS_PORT', async () => {
    const plain = await startTestServer({}, { backend });
    try {
      expect(plain.metricsUrl).to.equal(undefined);
    } finally {
      await plain.stop();
    }
  });

  it("include Node's process metrics", async () => {
    const scraped = await scrape(server.metricsUrl as string);
    expect(scraped.types.get('process_cpu_seconds_total')).to.equal('counter');
    expect(scraped.types.get('nodejs_eventloop_lag_seconds')).to.equal('gauge');
    expect(value(scraped, 'process_resident_memory_bytes')).to.be.above(0);
  });

  it('count requests by operationId and status, and time them by operationId', async () => {
    await client.post('/v1/collections', { name: 'counted' });
    await client.post('/v1/collections/counted/rows', [{ n: 1 }]);
    const before = await scrape(server.metricsUrl as string);
    expect(before.types.get('rowbase_http_requests_total')).to.equal('counter');
    expect(before.types.get('rowbase_http_request_duration_seconds')).to.equal('histogram');
    for (let i = 0; i < 5; i++) expect((await client.get('/v1/collections/counted/rows/1')).status).to.equal(200);
    expect((await client.get('/v1/collections/counted/rows/999')).status).to.equal(404);
    expect((await client.get('/health')).status).to.equal(200);
    const after = await scrape(server.metricsUrl as string);
    const moved = (name: string, labels: Record<string, string>) => value(after, name, labels) - value(before, name, labels);
    expect(moved('rowbase_http_requests_total', { operation: 'getRow', status: '200' })).to.equal(5);
    expect(moved('rowbase_http_requests_total', { operation: 'getRow', status: '404' })).to.equal(1);
    expect(moved('rowbase_http_requests_total', { operation: 'getHealth', status: '200' })).to.equal(1);
    expect(moved('rowbase_http_request_duration_seconds_count', { operation: 'getRow' })).to.equal(6);
    expect(moved('rowbase_http_request_duration_seconds_sum', { operation: 'getRow' })).to.be.above(0);
    expect(value(after, 'rowbase_http_request_duration_seconds_bucket', { operation: 'getRow', le: '+Inf' })).to.equal(
      value(after, 'rowbase_http_request_duration_seconds_count', { operation: 'getRow' }),
    );
  });

  it('name a request by its operation, never by its path: unknown routes are one value, and no collection or key appears', async () => {
    const name = 'zanzibarCollection';
    await client.post('/v1/collections', { name });
    await client.get(`/v1/collections/${name}/rows?limit=1`);
    for (const path of [`/v1/${name}`, '/nowhere/at/all', `/v1/collections/${name}/rows/1/extra`]) {
      expect((await client.get(path)).status).to.equal(404);
    }
    expect((await server.anonymous().get(`/v1/collections/${name}`)).status).to.equal(401);
    expect((await client.request('PUT', `/v1/collections/${name}`)).status).to.equal(405);
    const scraped = await scrape(server.metricsUrl as string);
    expect(value(scraped, 'rowbase_http_requests_total', { operation: 'none', status: '404' })).to.be.at.least(3);
    expect(value(scraped, 'rowbase_http_requests_total', { operation: 'none', status: '405' })).to.be.at.least(1);
    expect(value(scraped, 'rowbase_http_requests_total', { operation: 'getCollection', status: '401' })).to.be.at.least(1);
    const operations = labelValues(scraped, 'rowbase_http_requests_total', 'operation');
    for (const operation of operations) expect(operation).to.match(/^(none|[a-z][A-Za-z]+)$/);
    expect(scraped.text).not.to.include(name);
    expect(scraped.text).not.to.include(client.key as string);
  });

  it('count the pages beside the API by their page, and requests to /ws that are no upgrade as openFeed', async () => {
    const before = await scrape(server.metricsUrl as string);
    expect((await client.get('/openapi.yaml')).status).to.equal(200);
    expect((await client.get('/ws?collection=x')).status).to.equal(400);
    const after = await scrape(server.metricsUrl as string);
    const moved = (labels: Record<string, string>) =>
      value(after, 'rowbase_http_requests_total', labels) - value(before, 'rowbase_http_requests_total', labels);
    expect(moved({ operation: 'getOpenApiDocument', status: '200' })).to.equal(1);
    expect(moved({ operation: 'openFeed', status: '400' })).to.equal(1);
  });

  it('count feed upgrades, sockets, messages sent and the lag, as the feed works', async () => {
    await client.post('/v1/collections', { name: 'followed' });
    const before = await scrape(server.metricsUrl as string);
    const feed = await FeedClient.open(server.url, client.key, { collection: 'followed' });
    expect((await refusal(server.url, client.key, { collection: 'nope' })).status).to.equal(404);
    await client.post(
      '/v1/collections/followed/rows',
      range(1, 3).map((n) => ({ n })),
    );
    await feed.seqReached(3);
    const during = await scrape(server.metricsUrl as string);
    const moved = (name: string, labels: Record<string, string> = {}) => value(during, name, labels) - value(before, name, labels);
    expect(moved('rowbase_http_requests_total', { operation: 'openFeed', status: '101' })).to.equal(1);
    expect(moved('rowbase_http_requests_total', { operation: 'openFeed', status: '404' })).to.equal(1);
    expect(moved('rowbase_feed_messages_sent_total'), 'ready and three inserts').to.equal(4);
    expect(value(during, 'rowbase_feed_sockets')).to.equal(1);
    expect(value(during, 'rowbase_feed_collections')).to.equal(1);
    expect(value(during, 'rowbase_feed_lag_events'), 'every event forwarded').to.equal(0);
    expect(during.types.get('rowbase_feed_slow_consumer_closes_total')).to.equal('counter');
    await feed.close();
    await waitFor(async () => value(await scrape(server.metricsUrl as string), 'rowbase_feed_sockets') === 0);
  });

  it('count the requests usage admits, and those it refuses by reason', async () => {
    await server.store.setPlan({ name: 'two-only', quota: 2, period: 'month', rate: null });
    const limited = await server.client(undefined, 'two-only');
    const before = await scrape(server.metricsUrl as string);
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await limited.get('/v1/usage')).status);
    expect(statuses).to.deep.equal([200, 200, 429, 429]);
    const after = await scrape(server.metricsUrl as string);
    const moved = (name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels);
    expect(moved('rowbase_usage_admitted_total')).to.equal(2);
    expect(moved('rowbase_usage_refused_total', { reason: 'quota_exceeded' })).to.equal(2);
    expect(moved('rowbase_usage_refused_total', { reason: 'rate_limited' })).to.equal(0);
  });

  it('time the waits for a database connection, by queue', async () => {
    const waited = async (queue: string) =>
      value(await scrape(server.metricsUrl as string), 'rowbase_db_pool_wait_seconds_count', { queue });
    const scraped = await scrape(server.metricsUrl as string);
    expect(scraped.types.get('rowbase_db_pool_wait_seconds')).to.equal('histogram');
    expect(labelValues(scraped, 'rowbase_db_pool_wait_seconds_count', 'queue').sort()).to.deep.equal(['knex', 'sqlite_snapshot']);

    // A wait made to happen: every connection of Knex's pool held (SQLite's writer, PostgreSQL's pool),
    // a query asked for, and the connections let go once the pool has heard it ask.
    const knexBefore = await waited('knex');
    const pool = server.store.knex.client.pool as unknown as KnexPool;
    const held = await Promise.all(range(1, pool.max).map(() => pool.acquire().promise));
    const asked = new Promise<void>((heard) => {
      const listener = () => {
        pool.removeListener('acquireRequest', listener);
        heard();
      };
      pool.on('acquireRequest', listener);
    });
    const query = server.store.ping();
    await asked;
    for (const connection of held) pool.release(connection);
    await query;
    expect(await waited('knex')).to.be.above(knexBefore);
    if (backend !== 'sqlite') return;

    // SQLite's connections of snapshots (a page with a filter through a relation, say), each taken by
    // one at a time, all held: a further snapshot asked for waits (each takes a connection, or its place
    // in the queue, as it is asked for).
    const snapshotBefore = await waited('sqlite_snapshot');
    const { readers } = server.store as SqliteStore;
    let letGo!: () => void;
    const holding = new Promise<void>((resolve) => {
      letGo = resolve;
    });
    const holders = range(1, SNAPSHOT_CONNECTIONS).map(() => readers.snapshot(() => holding));
    const waiting = readers.snapshot(async () => {});
    letGo();
    await Promise.all([...holders, waiting]);
    expect(await waited('sqlite_snapshot')).to.be.above(snapshotBefore);
  });
});

/** Tarn's pool, as Knex holds it, as far as holding its connections goes. */
interface KnexPool {
  max: number;
  acquire(): { promise: Promise<unknown> };
  release(connection: unknown): void;
  on(event: 'acquireRequest', listener: () => void): void;
  removeListener(event: 'acquireRequest', listener: () => void): void;
}

/** Polls `done` until it holds, for up to five seconds. */
async function waitFor(done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error('not within 5 s');
    await new Promise((resolve) => setImmediate(resolve));
  }
}
