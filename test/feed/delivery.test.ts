// The feed's delivery: which message each subscriber gets, framed once, on raw sockets.
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { expect } from 'chai';
import { parse } from 'yaml';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { FeedClient, range, seqs } from '../support/feed.ts';
import { head, websocketHeaders } from '../support/raw.ts';
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

    // Written by hand: no WebSocket client sends these. `ws` closes with the code RFC 6455 §7.4.1 gives.
    const frame = (first: number, payload: Buffer, masked = true) =>
      Buffer.concat([Buffer.from([first, (masked ? 0x80 : 0) | payload.length]), masked ? Buffer.alloc(4) : Buffer.alloc(0), payload]);
    const scenarios: { name: string; bytes: Buffer; code: number }[] = [
      { name: 'an unmasked frame', bytes: frame(0x81, Buffer.from('hi'), false), code: 1002 },
      { name: 'a reserved opcode', bytes: frame(0x83, Buffer.from('x')), code: 1002 },
      { name: 'a reserved bit (no extension was agreed)', bytes: frame(0xc1, Buffer.from('x')), code: 1002 },
      { name: 'a continuation with nothing to continue', bytes: frame(0x80, Buffer.from('x')), code: 1002 },
      { name: 'a close with a code no endpoint may send', bytes: frame(0x88, Buffer.from([0x00, 0x01])), code: 1002 },
      { name: 'text that is not UTF-8', bytes: frame(0x81, Buffer.from([0xff, 0xfe])), code: 1007 },
      {
        name: 'a message over 1 KiB in fragments',
        bytes: Buffer.concat([frame(0x01, Buffer.alloc(100, 97)), ...Array.from({ length: 11 }, () => frame(0x00, Buffer.alloc(100, 97)))]),
        code: 1009,
      },
    ];
    for (const { name: what, bytes, code } of scenarios) {
      it(`close the socket with ${code}, listed in asyncapi.yaml, for ${what}`, async () => {
        const name = await collection();
        const { sent, closed } = await rawFeed(server.url, client.key as string, name);
        sent(bytes);
        expect(await closed).to.equal(code);
        expect(documentedCloseCodes).to.include(code);
        const feed = await open(name);
        await feed.close();
      });
    }
  });
});

const asyncapi = parse(await readFile(new URL('../../asyncapi.yaml', import.meta.url), 'utf8'));
const documentedCloseCodes = asyncapi.channels.feed['x-close-codes'].map(({ code }: { code: number }) => code);

/**
 * A feed socket on a raw connection, past its handshake: `sent` writes bytes as they are, `closed` is
 * the code of the close frame the server sends (undefined if it sends none) once the connection ends.
 */
async function rawFeed(base: string, key: string, collection: string) {
  const { hostname, port } = new URL(base);
  const socket = connect(Number(port), hostname);
  await once(socket, 'connect');
  socket.write(head(`GET /ws?collection=${collection}&api_key=${key} HTTP/1.1`, websocketHeaders));
  let received = Buffer.alloc(0);
  socket.on('data', (chunk) => {
    received = Buffer.concat([received, chunk]);
  });
  socket.on('error', () => {});
  const closed = once(socket, 'close').then(() => closeCodeOf(received.subarray(received.indexOf('\r\n\r\n') + 4)));
  // The ready message says the subscription is live.
  while (!received.includes('"type":"ready"')) await once(socket, 'data');
  return { sent: (bytes: Buffer) => socket.write(bytes), closed };
}

/** The code of the first close frame among the (unmasked, server) frames in `frames`. */
function closeCodeOf(frames: Buffer): number | undefined {
  for (let at = 0; at + 2 <= frames.length; ) {
    let length = frames[at + 1] & 0x7f;
    let start = at + 2;
    if (length === 126) {
      length = frames.readUInt16BE(at + 2);
      start += 2;
    } else if (length === 127) {
      length = Number(frames.readBigUInt64BE(at + 2));
      start += 8;
    }
    if ((frames[at] & 0x0f) === 0x8) return length >= 2 ? frames.readUInt16BE(start) : undefined;
    at = start + length;
  }
  return undefined;
}
