// The events table and the wake-ups after commit: each change's event written with it, announced once committed, read in order.
import { expect } from 'chai';
import { describeEachBackend } from '../../support/backends.ts';
import type { Client } from '../../support/client.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

describeEachBackend('events (data layer)', (backend) => {
  let server: TestServer;
  let client: Client;
  let accountId: number;
  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client('events');
    accountId = (await server.store.findPrincipal(client.key as string))?.accountId as number;
  });
  after(() => server.stop());

  const changesDuring = async (write: () => Promise<unknown>) => {
    const heard: number[] = [];
    const listener = (collectionId: number) => heard.push(collectionId);
    server.store.changes.on('change', listener);
    try {
      await write();
    } finally {
      server.store.changes.off('change', listener);
    }
    return heard;
  };

  describe('wake-ups', () => {
    it('announce each committed change of a collection once, by the time the write returns', async () => {
      await client.post('/v1/collections', { name: 'woken' });
      const { collectionId } = await server.store.feedStart(accountId, 'woken');
      expect(await changesDuring(() => client.post('/v1/collections/woken/rows', [{ n: 1 }, { n: 2 }]))).to.deep.equal([collectionId]);
      expect(await changesDuring(() => client.patch('/v1/collections/woken/rows/1', { n: 3 }))).to.deep.equal([collectionId]);
      expect(await changesDuring(() => client.delete('/v1/collections/woken/rows/1'))).to.deep.equal([collectionId]);
      expect(await changesDuring(() => client.delete('/v1/collections/woken'))).to.deep.equal([collectionId]);
    });

    it('announce nothing for a write that fails and rolls back', async () => {
      await client.post('/v1/collections', { name: 'quiet' });
      const { collectionId } = await server.store.feedStart(accountId, 'quiet');
      // Only this collection's wake-ups: on PostgreSQL, NOTIFYs of earlier writes may still be arriving.
      const quiet = async (write: () => Promise<unknown>) => (await changesDuring(write)).filter((id) => id === collectionId);
      // The second item carries an id: the whole batch is refused.
      expect(await quiet(() => client.post('/v1/collections/quiet/rows', [{ n: 1 }, { id: 5 }]))).to.deep.equal([]);
      expect(await quiet(() => client.patch('/v1/collections/quiet/rows/99', { n: 1 }))).to.deep.equal([]);
    });
  });

  describe('writing', () => {
    // Every kind of JSON a row can hold, and strings PostgreSQL text cannot hold raw (NUL) or that
    // look like the separators a batch is sent with (line breaks, quotes, backslashes, braces).
    const varied = (n: number): Record<string, unknown> => {
      switch (n % 6) {
        case 0:
          return {};
        case 1:
          return { nul: `a\u0000b${n}`, 'key\u0000': '\u0000', line: 'one\ntwo\r\n', tab: '\t', quote: '"\\{},' };
        case 2:
          return { emoji: '👩🏽‍💻', combining: 'e\u0301', rtl: 'שלום', lone: '\ud800', separators: '\u2028\u2029' };
        case 3:
          return { nested: { a: [1, { b: [null, true, false] }], deep: { deeper: { deepest: n } } } };
        case 4:
          return { number: -1.5e-7, big: 2 ** 53 - 1, zero: 0, empty: '', list: [] };
        default:
          return { '': 'empty key', '{"id":1}': '{}', n };
      }
    };

    it('stores a batch of 1000 rows (the largest allowed) with one event each, with consecutive seq', async () => {
      await client.post('/v1/collections', { name: 'large' });
      const response = await client.post<{ id: number }[]>(
        '/v1/collections/large/rows',
        Array.from({ length: 1000 }, (_, n) => ({ n })),
      );
      expect(response.status).to.equal(201);
      const { collectionId, lastSeq } = await server.store.feedStart(accountId, 'large');
      expect(lastSeq).to.equal(1000);
      const events = await server.store.readEvents(collectionId, { after: 0, limit: 2000 });
      expect(events.map((event) => event.seq)).to.deep.equal(Array.from({ length: 1000 }, (_, n) => n + 1));
      expect(events.map((event) => event.row)).to.deep.equal(response.body);
    });

    it('stores 1000 rows exactly, with consecutive ids and one event each, contiguous, carrying the row', async () => {
      await client.post('/v1/collections', { name: 'varied' });
      await client.post('/v1/collections/varied/rows', [{ first: true }]);
      const items = Array.from({ length: 1000 }, (_, n) => varied(n));
      const response = await client.post<{ id: number }[]>('/v1/collections/varied/rows', items);
      expect(response.status).to.equal(201);
      const expected = items.map((fields, n) => ({ id: n + 2, ...fields }));
      expect(response.body).to.deep.equal(expected);
      expect((await client.get('/v1/collections/varied/rows?offset=1&limit=1000')).body).to.deep.equal(expected);
      for (const id of [2, 3, 4, 1001])
        expect((await client.get(`/v1/collections/varied/rows/${id}`)).body).to.deep.equal(expected[id - 2]);

      const { collectionId, lastSeq } = await server.store.feedStart(accountId, 'varied');
      expect(lastSeq).to.equal(1001);
      const events = await server.store.readEvents(collectionId, { after: 1, limit: 2000 });
      expect(events.map((event) => event.seq)).to.deep.equal(expected.map((row) => row.id));
      expect(events.map((event) => event.row)).to.deep.equal(expected);
      expect(new Set(events.map((event) => event.type))).to.deep.equal(new Set(['insert']));
      // One time for the whole batch, taken once the collection was held: not before the earlier batch's.
      const [before] = await server.store.readEvents(collectionId, { after: 0, limit: 1 });
      expect(new Set(events.map((event) => event.at)).size).to.equal(1);
      expect(events[0].at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(events[0].at >= before.at).to.equal(true);
      expect(Date.parse(events[0].at)).to.be.closeTo(Date.now(), 60_000);
    });

    it('writes nothing, and wakes no one, for a batch into a missing collection', async () => {
      const counts = async () => {
        const [rows] = await server.store.knex('rows').count({ n: '*' });
        const [events] = await server.store.knex('events').count({ n: '*' });
        return [Number(rows.n), Number(events.n)];
      };
      const before = await counts();
      const heard = await changesDuring(async () => {
        const response = await client.post(
          '/v1/collections/nowhere/rows',
          Array.from({ length: 1000 }, (_, n) => ({ n })),
        );
        expect(response.status).to.equal(404);
        expect(response.body).to.include({ code: 'not_found' });
      });
      expect(heard).to.deep.equal([]);
      expect(await counts()).to.deep.equal(before);
    });
  });

  describe('reading', () => {
    it('stops a page before the rows read pass maxChars, but always reads one event', async () => {
      await client.post('/v1/collections', { name: 'paged' });
      await client.post(
        '/v1/collections/paged/rows',
        Array.from({ length: 10 }, () => ({ text: 'x'.repeat(100) })),
      );
      const { collectionId } = await server.store.feedStart(accountId, 'paged');
      const page = (after: number, maxChars: number) =>
        server.store.readEvents(collectionId, { after, limit: 100, maxChars }).then((events) => events.map((event) => event.seq));
      expect(await page(0, 400), 'rows of about 120 characters each').to.deep.equal([1, 2, 3]);
      expect(await page(3, 10)).to.deep.equal([4]);
      expect(await page(8, 10_000)).to.deep.equal([9, 10]);
      expect(await page(10, 10_000)).to.deep.equal([]);
      const bounded = (after: number, upTo: number, limit: number) =>
        server.store.readEvents(collectionId, { after, upTo, limit, maxChars: 10_000 }).then((events) => events.map((event) => event.seq));
      expect(await bounded(0, 10, 2), 'the limit before the characters').to.deep.equal([1, 2]);
      expect(await bounded(4, 6, 100), 'no event past upTo').to.deep.equal([5, 6]);
    });
  });

  describe('retention', () => {
    const retained = async (collectionId: number) =>
      (await server.store.readEvents(collectionId, { after: 0, limit: 1000 })).map((event) => event.seq);

    it('keeps the newest events by count, pruning in batches', async () => {
      await client.post('/v1/collections', { name: 'counted' });
      await client.post(
        '/v1/collections/counted/rows',
        Array.from({ length: 12 }, (_, n) => ({ n })),
      );
      const { collectionId, lastSeq } = await server.store.feedStart(accountId, 'counted');
      const policy = { keepCount: 5, keepMs: 60_000, batchSize: 3 };
      const batches = [];
      for (let deleted = -1; deleted !== 0; ) {
        deleted = await server.store.pruneEventBatch(collectionId, lastSeq, policy);
        batches.push(deleted);
      }
      expect(batches).to.deep.equal([3, 3, 1, 0]);
      expect(await retained(collectionId)).to.deep.equal([8, 9, 10, 11, 12]);
      expect((await server.store.feedStart(accountId, 'counted')).resumableFrom).to.equal(7);
    });

    it('tells a pass which collections have events past retention, by count or by age', async () => {
      const idOf = async (name: string, rows: number) => {
        await client.post('/v1/collections', { name });
        if (rows > 0)
          await client.post(
            `/v1/collections/${name}/rows`,
            Array.from({ length: rows }, (_, n) => ({ n })),
          );
        return (await server.store.feedStart(accountId, name)).collectionId;
      };
      const ids = [await idOf('within', 2), await idOf('beyond', 6), await idOf('eventless', 0)];
      const policy = { keepCount: 5, keepMs: 60_000, batchSize: 100 };
      const past = async (now?: number) => {
        const page = await server.store.collectionsAfter(ids[0] - 1, 1000, policy, now);
        return ids.map((id) => page.find((collection) => collection.id === id)?.past);
      };
      expect(await past()).to.deep.equal([false, true, false]);
      expect(await past(Date.now() + 61_000)).to.deep.equal([true, true, false]);
    });

    it('prunes events older than the age limit, whatever the count', async () => {
      await client.post('/v1/collections', { name: 'aged' });
      await client.post('/v1/collections/aged/rows', [{ n: 1 }, { n: 2 }]);
      const { collectionId, lastSeq } = await server.store.feedStart(accountId, 'aged');
      const policy = { keepCount: 100, keepMs: 60_000, batchSize: 100 };
      expect(await server.store.pruneEventBatch(collectionId, lastSeq, policy)).to.equal(0);
      expect(await server.store.pruneEventBatch(collectionId, lastSeq, policy, Date.now() + 61_000)).to.equal(2);
      expect(await retained(collectionId)).to.deep.equal([]);
      expect((await server.store.feedStart(accountId, 'aged')).resumableFrom).to.equal(2);
    });
  });
});
