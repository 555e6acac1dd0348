// The bound on a read's time (openapi.yaml, `query_timeout`; config.ts, queryTimeoutMs): a page that
// filters a large collection longer than the server allows is stopped and answered 503 query_timeout,
// never a hung request, and the server goes on answering everything else, the same kind of page too.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const TIMEOUT_MS = 100;
const ROWS = 40_000;

/**
 * A filter no index serves, that reads every row's nested fields many times over: 32 conditions, each
 * on a path into an object and an array every row has, none of which holds.
 */
const slowFilter = {
  $or: Array.from({ length: 16 }, (_, n) => ({ 'deep.list': { $contains: { k: `absent-${n}` } }, 'deep.name': { $prefix: `z${n}` } })),
};

describeEachBackend('the bound on a read’s time', (backend) => {
  let server: TestServer;
  let client: Client;
  before(async function () {
    this.timeout(120_000);
    server = await startTestServer({ queryTimeoutMs: TIMEOUT_MS }, { backend });
    client = await server.client();
    for (const name of ['large', 'small']) expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    const row = (n: number) => ({ n, deep: { name: `row ${n}`, list: Array.from({ length: 8 }, (_, k) => ({ k: `v${k}`, n })) } });
    for (let first = 0; first < ROWS; first += 1000) {
      const batch = Array.from({ length: 1000 }, (_, n) => row(first + n));
      expect((await client.post('/v1/collections/large/rows', batch)).status).to.equal(201);
    }
    expect((await client.post('/v1/collections/small/rows', [row(1), row(2), row(3)])).status).to.equal(201);
  });
  after(() => server?.stop());

  const filtered = (name: string) =>
    client.get(`/v1/collections/${name}/rows?count=exact&filter=${encodeURIComponent(JSON.stringify(slowFilter))}`);

  it('answers 503 query_timeout for a list that takes longer, soon after the bound', async () => {
    const started = performance.now();
    const response = await filtered('large');
    const took = performance.now() - started;
    expect(response.status, response.text).to.equal(503);
    expect(response.body).to.deep.include({ code: 'query_timeout', status: 503, type: 'urn:rowbase:problem:query_timeout' });
    // Stopped, not run to its end: a run to the end reads every row's lists 32 times.
    expect(took).to.be.below(5000);
  });

  it('answers 503 query_timeout for the query operation alike', async () => {
    const response = await client.post('/v1/collections/large/query', { filter: slowFilter, count: 'exact' });
    expect(response.status, response.text).to.equal(503);
    expect((response.body as { code: string }).code).to.equal('query_timeout');
  });

  it('answers 503 query_timeout for an aggregate alike, posted or got', async () => {
    const body = { filter: slowFilter, group_by: ['n'], aggregates: { rows: { count: {} } } };
    const posted = await client.post('/v1/collections/large/aggregate', body);
    expect(posted.status, posted.text).to.equal(503);
    expect((posted.body as { code: string }).code).to.equal('query_timeout');
    const got = await client.get(`/v1/collections/large/aggregate?filter=${encodeURIComponent(JSON.stringify(slowFilter))}`);
    expect(got.status, got.text).to.equal(503);
    const small = await client.post<{ groups: unknown[] }>('/v1/collections/small/aggregate', body);
    expect(small.status, small.text).to.equal(200);
    expect(small.body.groups).to.deep.equal([]);
  });

  it('goes on answering: the same filter on a small collection, pages by id, and writes', async () => {
    await Promise.all([filtered('large'), filtered('large')]);
    const small = await filtered('small');
    expect(small.status, small.text).to.equal(200);
    expect(small.headers.get('rowbase-total-count')).to.equal('0');
    const byId = await client.get<{ id: number }[]>('/v1/collections/large/rows?limit=2&offset=100');
    expect(byId.body.map((row) => row.id)).to.deep.equal([101, 102]);
    expect((await client.post('/v1/collections/small/rows', [{ n: 4 }])).status).to.equal(201);
    expect((await client.get('/health')).status).to.equal(200);
  });
});
