// Requests cheap to send and costly to serve: each must cost the service about what its size says,
// whatever its shape. A request whose cost grows with the square of its size holds the database (on
// SQLite, the one writer every account shares) for minutes; these tests would run into mocha's
// timeout long before such a request is answered.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Row = { id: number } & Record<string, unknown>;

describeEachBackend('costly requests', (backend) => {
  let server: TestServer;
  let client: Client;

  before(async () => {
    // Bodies of 4 MiB: room for patches large enough that a cost per field times the row never ends.
    server = await startTestServer({ maxBodyBytes: 4 * 1024 * 1024 }, { backend });
    client = await server.client();
  });
  after(() => server.stop());

  describe('PATCH …/rows/{id}', () => {
    it('sets 250,000 fields of a large row at the cost of one write of the row, not one per field', async () => {
      expect((await client.post('/v1/collections', { name: 'wide' })).status).to.equal(201);
      const stored = { text: 'x'.repeat(500_000) };
      expect((await client.post('/v1/collections/wide/rows', [stored])).status).to.equal(201);
      const patch = Object.fromEntries(Array.from({ length: 250_000 }, (_, i) => [`f${i}`, i]));
      const response = await client.patch<Row>('/v1/collections/wide/rows/1', patch);
      expect(response.status).to.equal(200);
      expect(response.text).to.equal(`{"id":1,${JSON.stringify({ ...stored, ...patch }).slice(1)}`);
      expect((await client.get('/v1/collections/wide/rows/1')).text).to.equal(response.text);
    });
  });
});
