import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { FeedClient, range, seqs } from '../support/feed.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describeEachBackend('the feed', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;
  /** A new collection of `client`'s account, with `rows` rows in it. */
  const collection = async (rows = 0) => {
    const name = `c${++collections}`;
    await client.post('/v1/collections', { name });
    if (rows > 0)
      await client.post(
        `/v1/collections/${name}/rows`,
        range(1, rows).map((n) => ({ n })),
      );
    return name;
  };
  const open = (name: string, query: Record<string, string | number> = {}) =>
    FeedClient.open(server.url, client.key, { collection: name, ...query });

  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
  });
  after(() => server.stop());

  describe('ready', () => {
    it('carries seq 0 for a collection without changes', async () => {
      const name = await collection();
      const feed = await open(name);
      expect(feed.ready).to.deep.equal({ type: 'ready', collection: name, events: ['insert', 'update', 'delete'], seq: 0 });
      await feed.close();
    });

    it("carries the collection's latest seq", async () => {
      const name = await collection(3);
      await client.patch(`/v1/collections/${name}/rows/2`, { n: 20 });
      const feed = await open(name);
      expect(feed.ready.seq).to.equal(4);
      await feed.close();
    });

    it('lists the chosen kinds in the order insert, update, delete', async () => {
      const name = await collection();
      const feed = await open(name, { events: 'delete,insert,delete' });
      expect(feed.ready.events).to.deep.equal(['insert', 'delete']);
      await feed.close();
    });

    it('is followed by every event committed after it, and no earlier one', async () => {
      const name = await collection(2);
      const feed = await open(name);
      await client.post(`/v1/collections/${name}/rows`, [{ n: 3 }]);
      const [message] = await feed.changesCount(1);
      expect(message).to.include({ type: 'insert', seq: 3 });
      await feed.close();
    });
  });

  describe('change messages', () => {
    it('give a batch of n rows n insert messages with consecutive seq, in request order', async () => {
      const name = await collection(1);
      const feed = await open(name);
      const inserted = await client.post<{ id: number }[]>(
        `/v1/collections/${name}/rows`,
        range(1, 25).map((n) => ({ text: `row ${n}` })),
      );
      const messages = await feed.changesCount(25);
      expect(seqs(messages)).to.deep.equal(range(2, 26));
      expect(messages.map((message) => message.type)).to.deep.equal(Array(25).fill('insert'));
      expect(messages.map((message) => ('row' in message ? message.row : undefined))).to.deep.equal(inserted.body);
      await feed.close();
    });

    it('carry the whole row after an update, and the row as it was for a delete', async () => {
      const name = await collection();
      const feed = await open(name);
      await client.post(`/v1/collections/${name}/rows`, [{ text: 'hello', tags: ['a'], nested: { x: 1 } }]);
      await client.patch(`/v1/collections/${name}/rows/1`, { text: 'hello again', nested: { y: 2 } });
      await client.delete(`/v1/collections/${name}/rows/1`);
      const messages = await feed.changesCount(3);
      const after = { id: 1, text: 'hello again', tags: ['a'], nested: { y: 2 } };
      expect(messages.map(({ type, ...rest }) => ({ type, row: 'row' in rest ? rest.row : undefined }))).to.deep.equal([
        { type: 'insert', row: { id: 1, text: 'hello', tags: ['a'], nested: { x: 1 } } },
        { type: 'update', row: after },
        { type: 'delete', row: after },
      ]);
      for (const message of messages) {
        expect(message).to.include({ collection: name });
        expect('at' in message && Date.parse(message.at)).to.be.closeTo(Date.now(), 60_000);
      }
      await feed.close();
    });

    it('come in seq order with no gap while writes run concurrently', async () => {
      const name = await collection();
      const feed = await open(name);
      await Promise.all(range(1, 40).map((n) => client.post(`/v1/collections/${name}/rows`, [{ n }, { n: -n }])));
      expect(seqs(await feed.changesCount(80))).to.deep.equal(range(1, 80));
      await feed.close();
    });

    it('are only of the chosen kinds', async () => {
      const name = await collection();
      const updates = await open(name, { events: 'update' });
      const insertsAndDeletes = await open(name, { events: 'insert,delete' });
      await client.post(`/v1/collections/${name}/rows`, [{ n: 1 }, { n: 2 }]);
      await client.patch(`/v1/collections/${name}/rows/1`, { n: 10 });
      await client.delete(`/v1/collections/${name}/rows/2`);
      await client.patch(`/v1/collections/${name}/rows/1`, { n: 11 });
      // Messages come in seq order, so once the last one is in, nothing else can still come before it.
      const updated = await updates.changesCount(2);
      expect(updated.map((message) => [message.type, 'seq' in message && message.seq])).to.deep.equal([
        ['update', 3],
        ['update', 5],
      ]);
      const others = await insertsAndDeletes.changesCount(3);
      expect(others.map((message) => [message.type, 'seq' in message && message.seq])).to.deep.equal([
        ['insert', 1],
        ['insert', 2],
        ['delete', 4],
      ]);
      await updates.close();
      await insertsAndDeletes.close();
    });
  });

  describe('tenancy', () => {
    it("never sends one account's events to another account's socket", async () => {
      const stranger = await server.client();
      await stranger.post('/v1/collections', { name: 'shared-name' });
      await client.post('/v1/collections', { name: 'shared-name' });
      const theirs = await FeedClient.open(server.url, stranger.key, { collection: 'shared-name' });
      const ours = await open('shared-name');
      await client.post(
        '/v1/collections/shared-name/rows',
        range(1, 10).map((n) => ({ secret: n })),
      );
      await ours.changesCount(10);
      await stranger.post('/v1/collections/shared-name/rows', [{ mine: true }]);
      const [only] = await theirs.changesCount(1);
      expect(only).to.deep.include({ type: 'insert', seq: 1, row: { id: 1, mine: true } });
      expect(theirs.changes).to.have.length(1);
      await theirs.close();
      await ours.close();
    });
  });

  describe('deleting the collection', () => {
    it('sends collection_deleted, then closes with 4404', async () => {
      const name = await collection(2);
      const feed = await open(name);
      expect((await client.delete(`/v1/collections/${name}`)).status).to.equal(204);
      const closed = await feed.closing();
      expect(feed.changes).to.deep.equal([{ type: 'collection_deleted', collection: name }]);
      expect(closed).to.deep.equal({ code: 4404, reason: 'collection deleted' });
      feed.checkValid();
    });

    it('lets a new collection of the same name start a fresh feed', async () => {
      const name = await collection(2);
      const old = await open(name);
      await client.delete(`/v1/collections/${name}`);
      await old.closing();
      await client.post('/v1/collections', { name });
      const fresh = await open(name);
      expect(fresh.ready.seq).to.equal(0);
      await client.post(`/v1/collections/${name}/rows`, [{ n: 1 }]);
      expect(seqs(await fresh.changesCount(1))).to.deep.equal([1]);
      await fresh.close();
    });
  });

  describe('fan-out', () => {
    it('delivers every event to each of 500 sockets on one collection', async function () {
      this.timeout(60_000);
      const name = await collection(1);
      const feeds = await Promise.all(range(1, 500).map(() => open(name)));
      expect(server.feed.connections).to.be.at.least(500);
      await client.post(
        `/v1/collections/${name}/rows`,
        range(1, 5).map((n) => ({ n })),
      );
      await client.patch(`/v1/collections/${name}/rows/1`, { n: 100 });
      await client.delete(`/v1/collections/${name}/rows/2`);
      for (const feed of feeds) {
        expect(feed.ready.seq).to.equal(1);
        expect(seqs(await feed.changesCount(7))).to.deep.equal(range(2, 8));
      }
      await Promise.all(feeds.map((feed) => feed.close()));
    });
  });

  describe('client messages', () => {
    it('are ignored, and one over 1 KiB closes the socket with 1009', async () => {
      const name = await collection();
      const feed = await open(name);
      feed.socket.send('hello');
      await client.post(`/v1/collections/${name}/rows`, [{ n: 1 }]);
      expect(seqs(await feed.changesCount(1))).to.deep.equal([1]);
      feed.socket.send('x'.repeat(2048));
      expect((await feed.closing()).code).to.equal(1009);
    });
  });
});
