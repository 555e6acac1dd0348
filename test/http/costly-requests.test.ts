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
    // Sort indexes from the first row, so that pages read through them are tried too.
    server = await startTestServer({ maxBodyBytes: 4 * 1024 * 1024, sortIndexMinRows: 0 }, { backend });
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
    it('refuses with 413 a patch that would make its row weigh more than 15 MiB, storing nothing of it, by any path', async () => {
      // Patches add fields: without a bound a row grew by a body with each, until answering it ended the process.
      expect((await client.post('/v1/collections', { name: 'growing' })).status).to.equal(201);
      expect((await client.post('/v1/collections/growing/rows', [{}])).status).to.equal(201);
      const field = 'x'.repeat(3_500_000);
      for (let n = 1; n <= 4; n++)
        expect((await client.patch(`/v1/collections/growing/rows/1`, { [`f${n}`]: field })).status).to.equal(200);
      const stored = (await client.get('/v1/collections/growing/rows/1')).text;
      const many = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`g${i}`, 'y'.repeat(100_000)]));
      // Set by path; in Node (a name no JSON path spells; more fields than a path takes); then two at once.
      const patches = [{ f5: field }, { 'say "hi"': field }, many];
      for (const patch of patches) {
        const refused = await client.patch('/v1/collections/growing/rows/1', patch);
        expect(refused.status).to.equal(413);
        expect(refused.body).to.include({ code: 'payload_too_large' });
      }
      const together = await Promise.all([
        client.patch('/v1/collections/growing/rows/1', { f6: field }),
        client.patch('/v1/collections/growing/rows/1', { small: 1 }),
      ]);
      expect(together.map((response) => response.status)).to.deep.equal([413, 200]);
      expect((await client.get('/v1/collections/growing/rows/1')).text).to.equal(`${stored.slice(0, -1)},"small":1}`);
      // Replacing a field keeps the row's weight: that is still allowed.
      expect((await client.patch(`/v1/collections/growing/rows/1`, { f1: 'short' })).status).to.equal(200);
    });
  });

  describe('GET …/rows', () => {
    // A page is made whole in memory: a thousand rows of 1 MiB made a string longer than V8 can hold,
    // and the driver's failure ended the process, on both backends. 16 MiB is the most a page weighs.
    const big = (n: number) => ({ n, text: 'x'.repeat(3_500_000) });

    it('refuses with 400 a page whose rows weigh more than 16 MiB, in any order, and answers the pages that fit', async () => {
      expect((await client.post('/v1/collections', { name: 'heavy' })).status).to.equal(201);
      for (let n = 1; n <= 5; n++) expect((await client.post('/v1/collections/heavy/rows', [big(n)])).status).to.equal(201);
      for (const query of ['', '&order=desc', '&order_by=n', '&order_by=n&order=desc']) {
        const tooLarge = await client.get(`/v1/collections/heavy/rows?limit=5${query}`);
        expect(tooLarge.status, query).to.equal(400);
        expect(tooLarge.body).to.deep.include({ code: 'validation_failed' });
        expect((tooLarge.body as { errors: { in: string; name: string }[] }).errors).to.deep.equal([
          { in: 'query', name: 'limit', message: 'asks for rows that add up to more than 16777216 bytes; ask for fewer' },
        ]);
        const fits = await client.get<Row[]>(`/v1/collections/heavy/rows?limit=4${query}`);
        expect(fits.status, query).to.equal(200);
        expect(fits.body).to.have.length(4);
      }
      expect((await fetch(`${server.url}/health`)).status).to.equal(200);
    });
  });
});
