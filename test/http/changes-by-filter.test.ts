// Changes by filter (openapi.yaml, updateRows and deleteRows): all or none, one event a row, bounded.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { watchHealth } from '../support/watchdog.ts';

type Row = { id: number } & Record<string, unknown>;
type Problem = { code: string; errors?: { in: string; name: string; message: string }[] };

const MAX = 5;
const filter = (value: object) => `filter=${encodeURIComponent(JSON.stringify(value))}`;

describeEachBackend('changes by filter', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;
  async function collectionWith(rows: object[] = []): Promise<string> {
    const name = `f${++collections}`;
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    if (rows.length > 0) expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
    return name;
  }
  const rowsOf = async (name: string, query = '') => (await client.get<Row[]>(`/v1/collections/${name}/rows${query}`)).body;
  async function eventsOf(name: string) {
    const { id } = await server.store.knex('collections').where({ name }).first('id');
    return server.store.readEvents(Number(id), { after: 0, limit: 1000 });
  }

  before(async () => {
    // Sort indexes made for any collection, so that changes by filter keep them; rows up to 16 MiB in one body.
    server = await startTestServer(
      { maxRowsByFilter: MAX, sortIndexMinRows: 0, maxBodyBytes: 16 * 1024 * 1024, maxBodyBytesAtOnce: 16 * 1024 * 1024 },
      { backend },
    );
    client = await server.client();
  });
  after(() => server.stop());
  const watchdog = watchHealth(() => server);

  describe('PATCH …/rows?filter=', () => {
    it('patches every matching row, one update event each in id order with consecutive seqs, and answers how many', async () => {
      const name = await collectionWith([
        { n: 3, s: 'a' },
        { n: 1, s: 'b' },
        { n: 2, s: 'a' },
        { n: 4, s: 'c' },
      ]);
      const answer = await client.patch(`/v1/collections/${name}/rows?${filter({ s: 'a' })}`, { s: 'z', done: true });
      expect(answer.status).to.equal(200);
      expect(answer.body).to.deep.equal({ count: 2 });
      expect(await rowsOf(name)).to.deep.equal([
        { id: 1, n: 3, s: 'z', done: true },
        { id: 2, n: 1, s: 'b' },
        { id: 3, n: 2, s: 'z', done: true },
        { id: 4, n: 4, s: 'c' },
      ]);
      const updates = (await eventsOf(name)).filter((event) => event.type === 'update');
      expect(updates.map((event) => [event.seq, event.row.id])).to.deep.equal([
        [5, 1],
        [6, 3],
      ]);
      expect(updates[1].row).to.deep.equal({ id: 3, n: 2, s: 'z', done: true });
      // Each patched row has a new version: the seq of its event.
      const versions = await client.get<{ etag: string; row: Row }[]>(`/v1/collections/${name}/versioned-rows?${filter({ s: 'z' })}`);
      expect(versions.body.map(({ etag }) => etag.split('.')[1])).to.deep.equal(['5"', '6"']);
    });

    it('answers the rows as they now are with return=rows, and keeps the sort index of a field it sets', async () => {
      const name = await collectionWith([{ n: 3 }, { n: 1 }, { n: 2 }]);
      // A page ordered by n makes the sort index of n (sortIndexMinRows 0).
      expect((await rowsOf(name, '?order_by=n')).map((row) => row.id)).to.deep.equal([2, 3, 1]);
      const answer = await client.patch(`/v1/collections/${name}/rows?${filter({ n: { $gte: 2 } })}&return=rows`, { n: 0 });
      expect(answer.body).to.deep.equal({
        count: 2,
        rows: [
          { id: 1, n: 0 },
          { id: 3, n: 0 },
        ],
      });
      expect((await rowsOf(name, '?order_by=n')).map((row) => row.id)).to.deep.equal([1, 3, 2]);
      expect((await rowsOf(name, '?order_by=n&order=desc')).map((row) => row.id)).to.deep.equal([2, 3, 1]);
    });

    it('patches every row with filter={}, and none (count 0, no event) when nothing matches', async () => {
      const name = await collectionWith([{ n: 1 }, { n: 2 }]);
      expect((await client.patch(`/v1/collections/${name}/rows?filter=%7B%7D`, { all: 1 })).body).to.deep.equal({ count: 2 });
      const before = await eventsOf(name);
      expect((await client.patch(`/v1/collections/${name}/rows?${filter({ n: 9 })}`, { all: 2 })).body).to.deep.equal({ count: 0 });
      expect(await eventsOf(name)).to.deep.equal(before);
      expect(await rowsOf(name)).to.deep.equal([
        { id: 1, n: 1, all: 1 },
        { id: 2, n: 2, all: 1 },
      ]);
    });

    it('sets fields no JSON path spells, and more than a patch sets by path, alike', async () => {
      const name = await collectionWith([{ n: 1 }, { n: 2 }]);
      const many = Object.fromEntries(Array.from({ length: 20 }, (_, n) => [`f${n}`, n]));
      expect((await client.patch(`/v1/collections/${name}/rows?filter=%7B%7D`, { ...many, 'a"b': true })).body).to.deep.equal({ count: 2 });
      expect(await rowsOf(name)).to.deep.equal([
        { id: 1, n: 1, ...many, 'a"b': true },
        { id: 2, n: 2, ...many, 'a"b': true },
      ]);
    });

    it('changes at most the configured number of rows: past it 400 naming filter, and nothing written', async () => {
      const name = await collectionWith(Array.from({ length: MAX + 1 }, (_, n) => ({ n })));
      const before = await eventsOf(name);
      const refused = await client.patch<Problem>(`/v1/collections/${name}/rows?filter=%7B%7D`, { x: 1 });
      expect(refused.status).to.equal(400);
      expect(refused.body.code).to.equal('validation_failed');
      expect(refused.body.errors).to.deep.equal([{ in: 'query', name: 'filter', message: `matches more than ${MAX} rows` }]);
      expect(await eventsOf(name)).to.deep.equal(before);
      expect((await rowsOf(name)).every((row) => !('x' in row))).to.equal(true);
      const bounded = await client.patch(`/v1/collections/${name}/rows?${filter({ n: { $lt: MAX } })}`, { x: 1 });
      expect(bounded.body).to.deep.equal({ count: MAX });
    });

    it('is all or none: a row the patch makes too large stores nothing of the request', async () => {
      watchdog.excuse("SQLite's writer reads and writes a row of 15 MB");
      const big = 'b'.repeat(15 * 1024 * 1024 - 100);
      const name = await collectionWith([{ n: 1 }, { n: 2 }]);
      expect((await client.post(`/v1/collections/${name}/rows`, [{ big }])).status).to.equal(201);
      const before = await eventsOf(name);
      const refused = await client.patch<Problem>(`/v1/collections/${name}/rows?filter=%7B%7D`, { pad: 'p'.repeat(1000) });
      expect(refused.status).to.equal(413);
      expect(refused.body.code).to.equal('payload_too_large');
      expect(await eventsOf(name)).to.have.length(before.length);
      expect((await rowsOf(name, '?select=n,pad')).map((row) => row.pad)).to.deep.equal([undefined, undefined, undefined]);
    });

    it('requires a filter that parses', async () => {
      const name = await collectionWith([{ n: 1 }]);
      const missing = await client.patch<Problem>(`/v1/collections/${name}/rows`, { n: 2 });
      expect(missing.status).to.equal(400);
      expect(missing.body.errors?.map((error) => error.name)).to.deep.equal(['filter']);
      const broken = await client.patch<Problem>(`/v1/collections/${name}/rows?filter=%7B`, { n: 2 });
      expect(broken.status).to.equal(400);
      expect(broken.body.errors?.[0].name).to.equal('filter');
      expect(await rowsOf(name)).to.deep.equal([{ id: 1, n: 1 }]);
      expect((await client.patch<Problem>('/v1/collections/absent/rows?filter=%7B%7D', { n: 2 })).status).to.equal(404);
    });

    it('needs a write key', async () => {
      const name = await collectionWith([{ n: 1 }]);
      const { key } = await server.store.createKey('reader', undefined, { scope: 'read' });
      const reader = new (client.constructor as typeof Client)(server.url, key);
      expect((await reader.patch(`/v1/collections/${name}/rows?filter=%7B%7D`, { n: 2 })).status).to.equal(403);
    });
  });

  describe('DELETE …/rows?filter=', () => {
    it('deletes every matching row, one delete event each in id order carrying the row, and answers how many', async () => {
      const name = await collectionWith([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
      // The sort index of n, kept as rows go.
      await rowsOf(name, '?order_by=n');
      const answer = await client.delete(`/v1/collections/${name}/rows?${filter({ n: { $in: [1, 3, 4] } })}`);
      expect(answer.status).to.equal(200);
      expect(answer.body).to.deep.equal({ count: 3 });
      expect(await rowsOf(name, '?order_by=n')).to.deep.equal([{ id: 2, n: 2 }]);
      const deletes = (await eventsOf(name)).filter((event) => event.type === 'delete');
      expect(deletes.map((event) => [event.seq, event.row])).to.deep.equal([
        [5, { id: 1, n: 1 }],
        [6, { id: 3, n: 3 }],
        [7, { id: 4, n: 4 }],
      ]);
      const collection = await client.get<{ row_count: number; seq: number }>(`/v1/collections/${name}`);
      expect(collection.body).to.include({ row_count: 1, seq: 7 });
    });

    it('deletes at most the configured number of rows: past it 400 and nothing deleted', async () => {
      const name = await collectionWith(Array.from({ length: MAX + 1 }, (_, n) => ({ n })));
      const refused = await client.delete<Problem>(`/v1/collections/${name}/rows?filter=%7B%7D`);
      expect(refused.status).to.equal(400);
      expect(refused.body.errors?.[0]).to.deep.include({ in: 'query', name: 'filter' });
      expect(await rowsOf(name)).to.have.length(MAX + 1);
      expect((await eventsOf(name)).every((event) => event.type === 'insert')).to.equal(true);
      expect((await client.delete(`/v1/collections/${name}/rows?${filter({ id: { $gt: 1 } })}`)).body).to.deep.equal({ count: MAX });
      expect((await client.delete(`/v1/collections/${name}/rows?filter=%7B%7D`)).body).to.deep.equal({ count: 1 });
      expect(await rowsOf(name)).to.deep.equal([]);
    });

    it('requires a filter', async () => {
      const name = await collectionWith([{ n: 1 }]);
      expect((await client.delete(`/v1/collections/${name}/rows`)).status).to.equal(400);
      expect(await rowsOf(name)).to.have.length(1);
    });
  });
});
