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
