// The feed's liveness: pings, dead peers terminated, and the sockets of a revoked key closed.
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { expect } from 'chai';
import WebSocket from 'ws';
import { openStore } from '../../src/db/open-store.ts';
import { describeEachBackend } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { FeedClient, feedUrl, range, refusal, seqs } from '../support/feed.ts';
import { scrape, value } from '../support/metrics.ts';
import { pollUntil } from '../support/process.ts';
import { expiringKey, startTestServer, TEST_PLAN, withTestServer } from '../support/server.ts';

const tcpOf = (feed: FeedClient) => (feed.socket as unknown as { _socket: Socket })._socket;

describeEachBackend('feed connections', (backend) => {
  describe('liveness', () => {
    it('pings, keeps a peer that answers, and terminates one that does not', async () => {
      // A peer has one interval to answer: long enough that a pause of the one event loop this test
      // shares with the server (a garbage collection, a loaded CI host) does not drop the peer that answers.
      await withTestServer({ feedPingIntervalMs: 250 }, { backend }, async (server) => {
        const client = await server.client();
        await client.post('/v1/collections', { name: 'notes' });
        const answering = await FeedClient.open(server.url, client.key, { collection: 'notes' });
        const silent = new WebSocket(feedUrl(server.url, client.key, { collection: 'notes' }), { autoPong: false });
        const [code] = await once(silent, 'close');
        expect(code, 'a terminated peer sees no close frame').to.equal(1006);
        for (let pings = 0; pings < 3; pings++) await once(answering.socket, 'ping');
        expect(answering.closed).to.equal(undefined);
        await client.post('/v1/collections/notes/rows', [{ n: 1 }]);
        expect(seqs(await answering.changesCount(1))).to.deep.equal([1]);
        await answering.close();
      });
    });
  });

  // contract.md: a revoked key stops working within a second, on every instance; a key revoked because
  // it leaked must not go on streaming its account's changes to whoever holds it.
  describe('a key revoked while subscribed', () => {
    it('has its sockets closed with 4401 within a second, however revoked, and other keys of the account go on', async () => {
      await withTestServer({}, { backend }, async (server) => {
        const revokedHere = await server.store.createKey('revoking', TEST_PLAN);
        const revokedElsewhere = await server.store.createKey('revoking', TEST_PLAN);
        const kept = new Client(server.url, (await server.store.createKey('revoking', TEST_PLAN)).key);
        await kept.post('/v1/collections', { name: 'notes' });
        const feeds = await Promise.all(
          [revokedHere.key, revokedHere.key, revokedElsewhere.key, kept.key].map((key) =>
            FeedClient.open(server.url, key, { collection: 'notes' }),
          ),
        );
        await server.store.revokeKey(revokedHere.prefix);
        // Another instance, or the CLI: a store of its own on the same database.
        const other = await openStore(server.databaseUrl);
        try {
          await other.revokeKey(revokedElsewhere.prefix);
        } finally {
          await other.close();
        }
        const revokedAt = Date.now();
        const closes = await Promise.all(feeds.slice(0, 3).map((feed) => feed.closing(2000)));
        expect(Date.now() - revokedAt).to.be.below(1000);
        for (const closed of closes) expect(closed).to.deep.equal({ code: 4401, reason: 'key revoked' });
        await kept.post('/v1/collections/notes/rows', [{ n: 1 }]);
        expect(seqs(await feeds[3].changesCount(1))).to.deep.equal([1]);
        for (const feed of feeds.slice(0, 3)) expect(feed.changes, 'nothing after the revocation').to.deep.equal([]);
        await feeds[3].close();
      });
    });
  });

  describe('a key that expires while subscribed', () => {
    it('has its sockets closed with 4401 within a second of its expiry, and is refused from then on as an unknown key', async () => {
      await withTestServer({}, { backend }, async (server) => {
        // Time to open the feed and see one change before the key expires, on a loaded host.
        const { owner, key, expiresAt } = await expiringKey(server);
        const feed = await FeedClient.open(server.url, key, { collection: 'notes' });
        await owner.post('/v1/collections/notes/rows', [{ n: 1 }]);
        expect(seqs(await feed.changesCount(1))).to.deep.equal([1]);

        const closed = await feed.closing(4000);
        const closedAt = Date.now();
        expect(closed).to.deep.equal({ code: 4401, reason: 'key expired' });
        expect(closedAt).to.be.at.least(expiresAt);
        expect(closedAt - expiresAt).to.be.below(1000);
        // One request id for both: each refusal names its own (the problem's instance).
        const same = { headers: { 'x-request-id': 'same' } };
        const [expired, unknown] = await Promise.all([key, 'rb_unknown'].map((k) => refusal(server.url, k, { collection: 'notes' }, same)));
        expect(expired.status).to.equal(401);
        expect(expired.problem).to.deep.equal(unknown.problem);
        expect((await owner.get('/v1/collections/notes')).status, 'other keys of the account go on').to.equal(200);
      });
    });
  });

  // contract.md: server memory stays bounded whatever the clients do; without a bound, one key could
  // hold as many sockets as its plan has requests.
  describe('sockets of one account', () => {
    it('are at most feedMaxSocketsPerAccount on an instance: more are refused 429, not counted, until one closes', async () => {
      await withTestServer({ feedMaxSocketsPerAccount: 2 }, { backend }, async (server) => {
        const client = await server.client('capped');
        const otherKey = await server.client('capped');
        const stranger = await server.client();
        await client.post('/v1/collections', { name: 'notes' });
        await stranger.post('/v1/collections', { name: 'notes' });
        const first = await FeedClient.open(server.url, client.key, { collection: 'notes' });
        const second = await FeedClient.open(server.url, otherKey.key, { collection: 'notes' });
        const usedBefore = (await client.get<{ used: number }>('/v1/usage')).body.used;
        for (const key of [client.key, otherKey.key]) {
          const refused = await refusal(server.url, key, { collection: 'notes' });
          expect([refused.status, refused.problem.code]).to.deep.equal([429, 'too_many_connections']);
        }
        expect((await client.get<{ used: number }>('/v1/usage')).body.used - usedBefore, 'only the two reads of usage').to.equal(1);
        const strangers = await FeedClient.open(server.url, stranger.key, { collection: 'notes' });
        await first.close();
        await pollUntil(async () => {
          const feed = await FeedClient.open(server.url, client.key, { collection: 'notes' }).catch(() => undefined);
          await feed?.close();
          return feed !== undefined;
        }, 5000);
        await Promise.all([second.close(), strangers.close()]);
      });
    });
  });

  describe('a client that stops reading', () => {
    it('is closed with 4008 slow consumer, while a fast one on the same collection gets everything', async function () {
      this.timeout(120_000);
      await withTestServer({ feedMaxBufferBytes: 64 * 1024, metricsPort: 0 }, { backend }, async (server) => {
        const client = await server.client();
        await client.post('/v1/collections', { name: 'notes' });
        const fast = await FeedClient.open(server.url, client.key, { collection: 'notes' });
        const slow = await FeedClient.open(server.url, client.key, { collection: 'notes' });
        tcpOf(slow).pause();
        // Fill the slow client's kernel buffers first (a few MB on loopback), then the server's bound.
        const text = 'x'.repeat(8 * 1024);
        let last = 0;
        for (let batch = 0; server.feed.connections > 1; batch++) {
          if (batch === 200) throw new Error('the slow client was never closed');
          const rows = await client.post<{ id: number }[]>(
            '/v1/collections/notes/rows',
            range(1, 100).map(() => ({ text })),
          );
          last = rows.body.at(-1)?.id as number;
          await fast.seqReached(last, 30_000);
        }
        expect(seqs(fast.changes)).to.deep.equal(range(1, last));
        tcpOf(slow).resume();
        expect(await slow.closing(30_000)).to.deep.equal({ code: 4008, reason: 'slow consumer' });
        const got = seqs(slow.changes);
        expect(got, 'what the slow client got is a gap-free prefix').to.deep.equal(range(1, got.length));
        expect(got.length).to.be.below(last);
        slow.checkValid();
        expect(value(await scrape(server.metricsUrl as string), 'rowbase_feed_slow_consumer_closes_total'), 'the metric').to.equal(1);
        await fast.close();
      });
    });
  });

  describe('when events cannot be delivered', () => {
    it('closes with 1011 internal error when the events cannot be read', async () => {
      await withTestServer({}, { backend }, async (server) => {
        const client = await server.client();
        await client.post('/v1/collections', { name: 'notes' });
        const feed = await FeedClient.open(server.url, client.key, { collection: 'notes' });
        server.store.latestSeq = () => Promise.reject(new Error('the disk is on fire'));
        expect((await client.post('/v1/collections/notes/rows', [{ n: 1 }])).status, 'the write itself succeeds').to.equal(201);
        expect(await feed.closing()).to.deep.equal({ code: 1011, reason: 'internal error' });
      });
    });

    it('closes with 4410 gone when events were pruned before they could be forwarded', async () => {
      await withTestServer({ eventsRetainCount: 2 }, { backend }, async (server) => {
        const client = await server.client();
        await client.post('/v1/collections', { name: 'notes' });
        const feed = await FeedClient.open(server.url, client.key, { collection: 'notes' });
        // Hold the live reads back while five events are written and all but two pruned.
        const read = server.store.readEvents;
        let release = () => {};
        const gate = new Promise<void>((resolve) => {
          release = resolve;
        });
        server.store.readEvents = async (...args) => {
          await gate;
          return read(...args);
        };
        await client.post(
          '/v1/collections/notes/rows',
          range(1, 5).map((n) => ({ n })),
        );
        expect(await server.feed.pruner.runOnce()).to.equal(3);
        release();
        expect(await feed.closing()).to.deep.equal({ code: 4410, reason: 'gone' });
        expect(feed.changes).to.deep.equal([]);
      });
    });
  });

  describe('shutting down', () => {
    it('closes every socket with 1001 before the database closes', async () => {
      const server = await startTestServer({}, { backend });
      const client = await server.client();
      await client.post('/v1/collections', { name: 'notes' });
      const feeds = await Promise.all(range(1, 3).map(() => FeedClient.open(server.url, client.key, { collection: 'notes' })));
      // When the database closes, every client has had its close frame (a client is CLOSING from then on).
      let statesAtDatabaseClose: number[] = [];
      const closeDatabase = server.store.close;
      server.store.close = () => {
        statesAtDatabaseClose = feeds.map((feed) => feed.socket.readyState);
        return closeDatabase();
      };
      const closing = server.close();
      for (const feed of feeds) expect(await feed.closing()).to.deep.equal({ code: 1001, reason: 'server shutting down' });
      await closing;
      expect(statesAtDatabaseClose).to.have.length(3);
      expect(statesAtDatabaseClose.every((state) => state === WebSocket.CLOSING || state === WebSocket.CLOSED)).to.equal(true);
      await server.stop();
    });

    it('refuses with 503 an upgrade that was still being checked', async () => {
      const server = await startTestServer({}, { backend });
      const client = await server.client();
      await client.post('/v1/collections', { name: 'notes' });
      const feedStart = server.store.feedStart;
      let release = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let checking = () => {};
      const checked = new Promise<void>((resolve) => {
        checking = resolve;
      });
      server.store.feedStart = async (...args) => {
        checking();
        await gate;
        return feedStart(...args);
      };
      const answer = refusal(server.url, client.key, { collection: 'notes' });
      await checked;
      const closing = server.close();
      release();
      const { status, problem } = await answer;
      expect([status, problem.code]).to.deep.equal([503, 'unavailable']);
      await closing;
      await server.stop();
    });
  });
});
