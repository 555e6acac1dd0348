// Health, readiness and the served documents over HTTP.
import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import { createDatabase, describeEachBackend } from '../support/backends.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describeEachBackend('service routes', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({}, { backend });
  });
  after(() => server.stop());

  describe('GET /health', () => {
    it('answers ok and the service name without a key', async () => {
      const response = await server.anonymous().get('/health');
      expect(response.status).to.equal(200);
      expect(response.body).to.deep.equal({ ok: true, service: 'rowbase' });
    });

    // Probes add a query to get past caches; openapi.yaml marks the operation `x-rowbase-query: ignored`.
    for (const query of ['?x=1', '?t=1700000000&t=2', '?limit=abc', '?', '?%zz', '?__proto__[a]=1', `?${'a&'.repeat(1500)}`]) {
      it(`ignores its query string on GET and HEAD (${query.length > 20 ? `${query.slice(0, 12)}…` : query})`, async () => {
        const get = await server.anonymous().get(`/health${query}`);
        expect(get.status).to.equal(200);
        expect(get.body).to.deep.equal({ ok: true, service: 'rowbase' });
        const head = await server.anonymous().request('HEAD', `/health${query}`);
        expect(head.status).to.equal(200);
        expect(head.text).to.equal('');
      });
    }

    it('still refuses unknown query parameters elsewhere, keyless routes included', async () => {
      const client = await server.client();
      const keyless = ['/openapi.yaml?x=1', '/asyncapi.yaml?v=2', '/docs?x=1', '/docs/docs.js?v=1', '/docs/%zz'];
      for (const path of [...keyless, '/v1/usage?x=1', '/v1/collections?x=1']) {
        const response = await client.get(path);
        expect(response.status, path).to.equal(400);
        expect(response.body, path).to.include({ code: 'validation_failed' });
      }
    });
  });

  describe('HEAD', () => {
    it('answers as GET does, without the body, on every GET route', async () => {
      const client = await server.client();
      expect((await client.post('/v1/collections', { name: 'heads' })).status).to.equal(201);
      expect((await client.post('/v1/collections/heads/rows', [{ text: 'a' }])).status).to.equal(201);
      for (const [path, status] of [
        ['/health', 200],
        ['/openapi.yaml', 200],
        ['/v1/collections', 200],
        ['/v1/collections/heads', 200],
        ['/v1/collections/heads/rows?limit=1', 200],
        ['/v1/collections/heads/rows/1', 200],
        ['/v1/collections/heads/rows/2', 404],
        ['/v1/collections/heads/rows?limt=1', 400],
        ['/v1/usage', 200],
      ] as const) {
        const [get, head] = [await client.get(path), await client.request('HEAD', path)];
        expect(head.status, path).to.equal(status);
        expect(get.status, path).to.equal(status);
        expect(head.text, path).to.equal('');
        expect(head.headers.get('content-type'), path).to.equal(get.headers.get('content-type'));
      }
    });

    it('counts toward the plan under /v1, and needs a key there', async () => {
      const client = await server.client();
      const used = async () => ((await client.get<{ used: number }>('/v1/usage')).body as { used: number }).used;
      const before = await used();
      expect((await client.request('HEAD', '/v1/collections')).status).to.equal(200);
      expect(await used()).to.equal(before + 2);
      expect((await server.anonymous().request('HEAD', '/v1/collections')).status).to.equal(401);
    });

    it('is listed in Allow beside GET, and refused where GET is not', async () => {
      const client = await server.client();
      const response = await client.request('HEAD', '/v1/collections/heads/rows/1/extra');
      expect(response.status).to.equal(404);
      const put = await client.request('PUT', '/v1/collections');
      expect(put.status).to.equal(405);
      expect(put.headers.get('allow')?.split(', ')).to.include.members(['GET', 'HEAD', 'POST']);
    });
  });

  describe('GET /health/ready', () => {
    it('answers ok once the database has, without a key, ignoring its query string', async () => {
      for (const path of ['/health/ready', '/health/ready?t=1&t=2']) {
        const response = await server.anonymous().get(path);
        expect(response.status).to.equal(200);
        expect(response.body).to.deep.equal({ ok: true, service: 'rowbase' });
        const head = await server.anonymous().request('HEAD', path);
        expect(head.status).to.equal(200);
        expect(head.text).to.equal('');
      }
    });

    it('answers 503 after 2 s while the database holds no connection for it, where /health answers at once', async () => {
      // One connection (SQLite's writer; PostgreSQL's pool of one), held by a transaction meanwhile.
      const database = await createDatabase(backend);
      const url = backend === 'postgres' ? `${database.url}?pool_max=1` : database.url;
      const cut = await startTestServer({ databaseUrl: url }, { backend, database });
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let holding!: () => void;
      const taken = new Promise<void>((resolve) => {
        holding = resolve;
      });
      const transaction = cut.store.knex.transaction(async () => {
        holding();
        await held;
      });
      try {
        await taken;
        const started = performance.now();
        const [live, ready] = await Promise.all([
          cut
            .anonymous()
            .get('/health')
            .then((response) => ({ response, ms: performance.now() - started })),
          cut
            .anonymous()
            .get('/health/ready')
            .then((response) => ({ response, ms: performance.now() - started })),
        ]);
        expect(live.response.status).to.equal(200);
        expect(live.ms).to.be.below(1000);
        expect(ready.response.status).to.equal(503);
        expect(ready.response.body).to.include({ code: 'unavailable' });
        expect(ready.ms).to.be.within(1900, 4000);
        release();
        await transaction;
        expect((await cut.anonymous().get('/health/ready')).status).to.equal(200);
      } finally {
        release();
        await transaction.catch(() => {});
        await cut.stop();
      }
    });
  });

  describe('when the database cannot be reached', () => {
    it('answers 503 unavailable on /health, /health/ready and on /v1, and never a 500', async () => {
      const cut = await startTestServer({}, { backend });
      const client = await cut.client();
      try {
        await cut.store.close();
        const anonymous = cut.anonymous();
        for (const response of [
          await anonymous.get('/health'),
          await anonymous.get('/health/ready'),
          await client.get('/v1/collections'),
        ]) {
          expect(response.status).to.equal(503);
          expect(response.body).to.include({ code: 'unavailable' });
        }
      } finally {
        await cut.stop();
      }
    });
  });

  describe('GET /openapi.yaml', () => {
    it('serves the document the service is built from, without a key', async () => {
      const response = await server.anonymous().get('/openapi.yaml');
      expect(response.status).to.equal(200);
      expect(response.headers.get('content-type')).to.match(/^application\/yaml/);
      expect(response.text).to.match(/^openapi: 3\.0\.3/);
      expect(response.text).to.include('operationId: insertRows');
    });
  });

  describe('GET /asyncapi.yaml', () => {
    it('serves the AsyncAPI document of the real-time feed, without a key', async () => {
      const response = await server.anonymous().get('/asyncapi.yaml');
      expect(response.status).to.equal(200);
      expect(response.headers.get('content-type')).to.match(/^application\/yaml/);
      expect(response.text).to.match(/^asyncapi: 3\.0\.0/);
      expect(response.text).to.include('address: /ws');
    });
  });

  describe('GET /schemas/declaration.schema.json', () => {
    it('serves the JSON Schema of a declaration (docs/declarations.md), as the repository holds it, without a key', async () => {
      const response = await server.anonymous().get('/schemas/declaration.schema.json');
      expect(response.status).to.equal(200);
      expect(response.headers.get('content-type')).to.match(/^application\/schema\+json/);
      const held = JSON.parse(await readFile(new URL('../../schemas/declaration.schema.json', import.meta.url), 'utf8'));
      expect(JSON.parse(response.text)).to.deep.equal(held);
    });
  });
});
