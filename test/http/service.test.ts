import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
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

  describe('when the database cannot be reached', () => {
    it('answers 503 unavailable on /health and on /v1, and never a 500', async () => {
      const cut = await startTestServer({}, { backend });
      const client = await cut.client();
      try {
        await cut.store.close();
        for (const response of [await cut.anonymous().get('/health'), await client.get('/v1/collections')]) {
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
});
