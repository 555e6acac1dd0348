// Rows that expire (openapi.yaml, the `expiry` tag; docs/expiry.md): a collection's time to live set,
// read and removed; the sweeper deleting each expired row once, with a delete event marked expired on the
// change log and the feed, and its relations' on_delete followed; expired rows gone from reads at once.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { ChangesPage } from '../support/changes.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Problem = { code: string; errors?: { in: string; name: string; message: string }[] };
type Row = { id: number; [field: string]: unknown };

const past = '2001-01-01T00:00:00Z';
/** The row a change carries. */
const rowOf = (change: ChangesPage['changes'][number]) => ('row' in change ? change.row : {}) as Row;
/** Why a change happened: a delete's reason. */
const reasonOf = (change: ChangesPage['changes'][number]) => ('reason' in change ? change.reason : undefined);
const future = '2999-01-01T00:00:00.5+02:00';

describeEachBackend('rows that expire', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;
  async function collection(ttl = true): Promise<string> {
    const name = `e${++collections}`;
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    if (ttl) expect((await client.put(`/v1/collections/${name}/ttl`, { field: 'expires_at' })).status).to.equal(200);
    return name;
  }
  /** The collection's whole change log, page after page. */
  async function changes(name: string): Promise<ChangesPage['changes']> {
    const all: ChangesPage['changes'] = [];
    for (let since = 0; ; ) {
      const page = (await client.get<ChangesPage>(`/v1/collections/${name}/changes?since=${since}&limit=1000`)).body;
      all.push(...page.changes);
      if (page.caught_up) return all;
      since = page.next_since;
    }
  }

  before(async () => {
    // A sweep only when a test asks for one (runOnce).
    server = await startTestServer({ expirySweepIntervalMs: 3_600_000 }, { backend });
    client = await server.client();
  });
  after(() => server.stop());

  describe('PUT, GET and DELETE …/ttl', () => {
    it('sets the field, answers it (on the collection too), and removes it', async () => {
      const name = await collection(false);
      expect((await client.get<Problem>(`/v1/collections/${name}/ttl`)).status).to.equal(404);
      const put = await client.put(`/v1/collections/${name}/ttl`, { field: 'expires_at' });
      expect(put.status).to.equal(200);
      expect(put.body).to.deep.equal({ field: 'expires_at' });
      expect((await client.get(`/v1/collections/${name}/ttl`)).body).to.deep.equal({ field: 'expires_at' });
      expect((await client.get<{ ttl: unknown }>(`/v1/collections/${name}`)).body.ttl).to.deep.equal({ field: 'expires_at' });
      expect((await client.delete(`/v1/collections/${name}/ttl`)).status).to.equal(204);
      expect((await client.get(`/v1/collections/${name}/ttl`)).status).to.equal(404);
      expect((await client.delete(`/v1/collections/${name}/ttl`)).status).to.equal(404);
      expect((await client.get<{ ttl?: unknown }>(`/v1/collections/${name}`)).body.ttl).to.equal(undefined);
      expect((await client.put('/v1/collections/none/ttl', { field: 'expires_at' })).status).to.equal(404);
    });

    const refusals: [string, object, object][] = [
      ['a field that is no plain name', {}, { field: 'a.b' }],
      ['the id', {}, { field: 'id' }],
      ['a field the schema types as a number', { type: 'object', properties: { expires_at: { type: 'number' } } }, { field: 'expires_at' }],
      [
        'a string the schema does not say is a date-time',
        { type: 'object', properties: { expires_at: { type: 'string' } } },
        { field: 'expires_at' },
      ],
      [
        'a field a schema that forbids others does not name',
        { type: 'object', additionalProperties: false, properties: { a: {} } },
        { field: 'expires_at' },
      ],
    ];
    for (const [what, schema, body] of refusals)
      it(`refuses ${what} with a 400`, async () => {
        const name = await collection(false);
        if (Object.keys(schema).length > 0) expect((await client.put(`/v1/collections/${name}/schema`, schema)).status).to.equal(200);
        const put = await client.put<Problem>(`/v1/collections/${name}/ttl`, body);
        expect(put.status, put.text).to.equal(400);
        expect(put.body.code).to.equal('validation_failed');
      });

    it('takes a field the schema types as a date-time string (or null)', async () => {
      const name = await collection(false);
      const schema = {
        type: 'object',
        additionalProperties: false,
        properties: { expires_at: { type: ['string', 'null'], format: 'date-time' } },
      };
      expect((await client.put(`/v1/collections/${name}/schema`, schema)).status).to.equal(200);
      expect((await client.put(`/v1/collections/${name}/ttl`, { field: 'expires_at' })).status).to.equal(200);
    });

    it('refuses a relation that restricts deletes of rows that expire, both ways', async () => {
      const parents = await collection();
      const children = await collection(false);
      const restrict = await client.put<Problem>(`/v1/collections/${children}/relations/parent`, {
        field: 'parent_id',
        collection: parents,
      });
      expect(restrict.status, restrict.text).to.equal(400);
      expect(restrict.body.errors?.[0].name).to.equal('/on_delete');
      const others = await collection(false);
      expect((await client.put(`/v1/collections/${children}/relations/other`, { field: 'other_id', collection: others })).status).to.equal(
        200,
      );
      const ttl = await client.put<Problem>(`/v1/collections/${others}/ttl`, { field: 'expires_at' });
      expect(ttl.status, ttl.text).to.equal(409);
    });
  });

  describe('gone at once, before a sweep', () => {
    it('answers 404 to a read, a patch of any format and a delete of an expired row; a change or delete by filter passes it by', async () => {
      const name = await collection();
      const rows = `/v1/collections/${name}/rows`;
      await client.post(rows, [
        { n: 1, expires_at: past },
        { n: 2, expires_at: future },
      ]);
      expect((await client.get(`${rows}/1`)).status).to.equal(404);
      expect((await client.get(`${rows}/2`)).status).to.equal(200);
      expect((await client.patch(`${rows}/1`, { n: 10 })).status).to.equal(404);
      const jsonPatch = [{ op: 'replace', path: '/n', value: 10 }];
      const patched = await client.request('PATCH', `${rows}/1`, {
        raw: JSON.stringify(jsonPatch),
        headers: { 'content-type': 'application/json-patch+json' },
      });
      expect(patched.status).to.equal(404);
      expect((await client.delete(`${rows}/1`)).status).to.equal(404);
      const byFilter = await client.patch<Row[]>(`${rows}?filter=${encodeURIComponent('{"n":{"$gte":1}}')}`, { seen: true });
      expect(byFilter.status).to.equal(200);
      const deleted = await client.delete<Row[]>(`${rows}?filter=${encodeURIComponent('{"n":1}')}`);
      expect(deleted.status).to.equal(200);
      expect((await changes(name)).map((change) => [change.type, rowOf(change).id])).to.deep.equal([
        ['insert', 1],
        ['insert', 2],
        ['update', 2],
      ]);
      // The sweeper still deletes it, once, with its event.
      expect(await server.feed.sweeper.runOnce()).to.equal(1);
    });
  });

  describe('the sweeper', () => {
    it('deletes each expired row once, with a delete event marked expired; other rows stay', async () => {
      const name = await collection();
      const rows = [
        { n: 1, expires_at: past },
        { n: 2, expires_at: future },
        { n: 3, expires_at: null },
        { n: 4 },
        { n: 5, expires_at: 'soon' },
        { n: 6, expires_at: 12 },
        { n: 7, expires_at: '2001-02-30T00:00:00Z' },
        { n: 8, expires_at: '2001-01-01t00:00:00.123456z' },
        { n: 9, expires_at: '2001-01-01T03:00:00+01:00' },
      ];
      expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
      await server.feed.sweeper.runOnce();
      await server.feed.sweeper.runOnce();
      const left = (await client.get<Row[]>(`/v1/collections/${name}/rows`)).body.map((row) => row.n);
      expect(left).to.deep.equal([2, 3, 4, 5, 6, 7]);
      const deletes = (await changes(name)).filter((change) => change.type === 'delete');
      expect(deletes.map((change) => [rowOf(change).n, reasonOf(change)])).to.deep.equal([
        [1, 'expired'],
        [8, 'expired'],
        [9, 'expired'],
      ]);
    });

    it('expires rows stored before the time to live was set, and rows patched into the past', async () => {
      const name = await collection(false);
      const rows = `/v1/collections/${name}/rows`;
      await client.post(rows, [{ expires_at: past }, { expires_at: future }, { expires_at: '2001-02-01T00:00:00Z' }]);
      // Row 3 expired when it was stored, with no time to live: it lives until one is set.
      expect((await client.patch(`${rows}/3`, { expires_at: future })).status).to.equal(200);
      expect((await client.put(`/v1/collections/${name}/ttl`, { field: 'expires_at' })).status).to.equal(200);
      expect((await client.patch(`${rows}/2`, { expires_at: past })).status).to.equal(200);
      await server.feed.sweeper.runOnce();
      expect((await client.get<Row[]>(rows)).body.map((row) => row.id)).to.deep.equal([3]);
    });

    it("applies a relation's cascade and set_null to an expired row, as to any delete", async () => {
      const carts = await collection();
      const items = await collection(false);
      const notes = await collection(false);
      expect(
        (await client.put(`/v1/collections/${items}/relations/cart`, { field: 'cart_id', collection: carts, on_delete: 'cascade' })).status,
      ).to.equal(200);
      expect(
        (await client.put(`/v1/collections/${notes}/relations/cart`, { field: 'cart_id', collection: carts, on_delete: 'set_null' }))
          .status,
      ).to.equal(200);
      await client.post(`/v1/collections/${carts}/rows`, [{ expires_at: past }, { expires_at: future }]);
      await client.post(`/v1/collections/${items}/rows`, [{ cart_id: 1 }, { cart_id: 2 }, { cart_id: 1 }]);
      await client.post(`/v1/collections/${notes}/rows`, [{ cart_id: 1 }]);
      await server.feed.sweeper.runOnce();
      expect((await client.get<Row[]>(`/v1/collections/${items}/rows`)).body.map((row) => row.id)).to.deep.equal([2]);
      expect((await client.get<Row[]>(`/v1/collections/${notes}/rows`)).body).to.deep.equal([{ id: 1, cart_id: null }]);
      const cascaded = (await changes(items)).filter((change) => change.type === 'delete');
      expect(cascaded.map((change) => [rowOf(change).id, reasonOf(change)])).to.deep.equal([
        [1, undefined],
        [3, undefined],
      ]);
    });

    it('sweeps what a removed time to live left no more', async () => {
      const name = await collection();
      await client.post(`/v1/collections/${name}/rows`, [{ expires_at: past }]);
      expect((await client.delete(`/v1/collections/${name}/ttl`)).status).to.equal(204);
      await server.feed.sweeper.runOnce();
      expect((await client.get<Row[]>(`/v1/collections/${name}/rows`)).body).to.have.length(1);
    });

    it('deletes many rows in batches, each once', async () => {
      const name = await collection();
      const many = Array.from({ length: 450 }, (_, n) => ({ n, expires_at: n % 3 === 0 ? future : past }));
      expect((await client.post(`/v1/collections/${name}/rows`, many)).status).to.equal(201);
      expect(await server.feed.sweeper.runOnce()).to.be.at.least(300);
      expect((await client.get<Row[]>(`/v1/collections/${name}/rows?limit=1000`)).body).to.have.length(150);
      const deletes = (await changes(name)).filter((change) => change.type === 'delete');
      expect(new Set(deletes.map((change) => rowOf(change).id)).size).to.equal(300);
      expect(deletes).to.have.length(300);
    });
  });
});
