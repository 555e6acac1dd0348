// The feed's resume: a client back with `since` or Last-Event-ID gets every change it missed, in order.
import { once } from 'node:events';
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { FeedClient, range, refusal, seqs } from '../support/feed.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describeEachBackend('resuming the feed with since', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;
  const collection = async (rows = 0) => {
    const name = `c${++collections}`;
    await client.post('/v1/collections', { name });
    for (let n = 0; n < rows; n += 1000) {
      const batch = range(n + 1, Math.min(n + 1000, rows)).map((value) => ({ n: value }));
      await client.post(`/v1/collections/${name}/rows`, batch);
    }
    return name;
  };
  const open = (name: string, query: Record<string, string | number> = {}) =>
    FeedClient.open(server.url, client.key, { collection: name, ...query });

  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
  });
  after(() => server.stop());

  it('replays the events after since, of the chosen kinds, after ready and before live ones', async () => {
    const name = await collection(6);
    await client.patch(`/v1/collections/${name}/rows/1`, { n: 10 });
    await client.delete(`/v1/collections/${name}/rows/2`);
    const feed = await open(name, { since: 4, events: 'insert,delete' });
    expect(feed.ready.seq).to.equal(8);
    await client.post(`/v1/collections/${name}/rows`, [{ n: 7 }]);
    const messages = await feed.changesCount(4);
    expect(messages.map((message) => [message.type, seqs([message])[0]])).to.deep.equal([
      ['insert', 5],
      ['insert', 6],
      ['delete', 8],
      ['insert', 9],
    ]);
    await feed.close();
  });

  it('replays nothing for a since equal to the latest seq', async () => {
    const name = await collection(3);
    const feed = await open(name, { since: 3 });
    await client.post(`/v1/collections/${name}/rows`, [{ n: 4 }]);
    expect(seqs(await feed.changesCount(1))).to.deep.equal([4]);
    await feed.close();
  });

  it('replays more than a page, with writes committed meanwhile following in order', async function () {
    this.timeout(60_000);
    const name = await collection(1200);
    const writes = Promise.all(range(1, 20).map((n) => client.post(`/v1/collections/${name}/rows`, [{ n }])));
    const feed = await open(name, { since: 0 });
    await writes;
    expect(feed.ready.seq).to.be.within(1200, 1220);
    expect(seqs(await feed.seqReached(1220))).to.deep.equal(range(1, 1220));
    await feed.close();
  });

  it('replays at the pace of a reading client, never closing it as slow, however much there is', async () => {
    const paced = await startTestServer({ feedMaxBufferBytes: 64 * 1024 }, { backend });
    try {
      const owner = await paced.client();
      await owner.post('/v1/collections', { name: 'notes' });
      await owner.post(
        '/v1/collections/notes/rows',
        range(1, 60).map(() => ({ text: 'x'.repeat(16 * 1024) })),
      );
      const feed = await FeedClient.open(paced.url, owner.key, { collection: 'notes', since: 0 });
      expect(seqs(await feed.changesCount(60))).to.deep.equal(range(1, 60));
      expect(feed.closed).to.equal(undefined);
      await feed.close();
    } finally {
      await paced.stop();
    }
  });

  it('loses nothing and repeats nothing across a disconnect while writes continue', async function () {
    this.timeout(60_000);
    const name = await collection();
    const total = 60;
    const first = await open(name);
    let writing = true;
    const writer = (async () => {
      for (let n = 1; n <= total; n++) await client.post(`/v1/collections/${name}/rows`, [{ n }, { n: -n }]);
      writing = false;
    })();
    await first.changesCount(20);
    await first.close();
    const seen = first.changes;
    expect(writing, 'the writer is still writing when the client resumes').to.equal(true);
    const last = seqs(seen).at(-1) as number;
    const second = await open(name, { since: last });
    await writer;
    await second.seqReached(2 * total);
    expect(seqs([...seen, ...second.changes])).to.deep.equal(range(1, 2 * total));
    await second.close();
  });

  describe('while a replay is held up', () => {
    /** Holds every replay read (the tail's reads pass) until the returned function is called. */
    const holdReplays = (held: TestServer) => {
      const read = held.store.readEvents;
      let release = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      held.store.readEvents = async (collectionId, page) => {
        if (page.upTo !== undefined) await gate;
        return read(collectionId, page);
      };
      return release;
    };

    it('holds live events back until the replay is done, then sends them in order', async () => {
      const held = await startTestServer({}, { backend });
      try {
        const owner = await held.client();
        await owner.post('/v1/collections', { name: 'notes' });
        await owner.post(
          '/v1/collections/notes/rows',
          range(1, 3).map((n) => ({ n })),
        );
        const release = holdReplays(held);
        const feed = await FeedClient.open(held.url, owner.key, { collection: 'notes', since: 1 });
        await owner.post('/v1/collections/notes/rows', [{ n: 4 }, { n: 5 }]);
        await owner.patch('/v1/collections/notes/rows/1', { n: 10 });
        expect(feed.changes).to.deep.equal([]);
        release();
        expect(seqs(await feed.changesCount(5))).to.deep.equal([2, 3, 4, 5, 6]);
        await feed.close();
      } finally {
        await held.stop();
      }
    });

    /** Two rows in notes, then a feed client replaying them from since 0, its replay held until `release()`. */
    const replayingTwo = async (held: TestServer) => {
      const owner = await held.client();
      await owner.post('/v1/collections', { name: 'notes' });
      await owner.post('/v1/collections/notes/rows', [{ n: 1 }, { n: 2 }]);
      const release = holdReplays(held);
      const feed = await FeedClient.open(held.url, owner.key, { collection: 'notes', since: 0 });
      return { owner, feed, release };
    };

    it('lets held-back events go once they outgrow the buffer bound, and replays them from the log: every change, in order', async () => {
      const held = await startTestServer({ feedMaxBufferBytes: 4096 }, { backend });
      try {
        const { owner, feed, release } = await replayingTwo(held);
        for (const n of range(3, 12)) await owner.post('/v1/collections/notes/rows', [{ n, text: 'x'.repeat(1000) }]);
        release();
        await owner.post('/v1/collections/notes/rows', [{ n: 13 }]);
        expect(seqs(await feed.changesCount(13))).to.deep.equal(range(1, 13));
        expect(feed.closed, 'still open').to.equal(undefined);
        expect(held.feed.counts.slowConsumerCloses).to.equal(0);
        await feed.close();
      } finally {
        await held.stop();
      }
    });

    it('closes with 4008 a client whose replay takes nothing for a ping interval while live events are let go', async () => {
      const held = await startTestServer({ feedMaxBufferBytes: 4096, feedPingIntervalMs: 200 }, { backend });
      try {
        const { owner, feed, release } = await replayingTwo(held);
        await owner.post(
          '/v1/collections/notes/rows',
          range(1, 10).map(() => ({ text: 'x'.repeat(1000) })),
        );
        expect(await feed.closing()).to.deep.equal({ code: 4008, reason: 'slow consumer' });
        release();
      } finally {
        await held.stop();
      }
    });

    it('closes with 4410 gone when the events to replay were pruned after the upgrade was accepted', async () => {
      const held = await startTestServer({ eventsRetainCount: 2 }, { backend });
      try {
        const owner = await held.client();
        await owner.post('/v1/collections', { name: 'notes' });
        await owner.post(
          '/v1/collections/notes/rows',
          range(1, 5).map((n) => ({ n })),
        );
        const release = holdReplays(held);
        const feed = await FeedClient.open(held.url, owner.key, { collection: 'notes', since: 0 });
        expect(await held.feed.pruner.runOnce()).to.equal(3);
        release();
        expect(await feed.closing()).to.deep.equal({ code: 4410, reason: 'gone' });
        expect(feed.changes).to.deep.equal([]);
      } finally {
        await held.stop();
      }
    });
  });

  describe('past retention', () => {
    let small: TestServer;
    let owner: Client;
    before(async () => {
      small = await startTestServer({ eventsRetainCount: 5 }, { backend });
      owner = await small.client();
      await owner.post('/v1/collections', { name: 'notes' });
      await owner.post(
        '/v1/collections/notes/rows',
        range(1, 12).map((n) => ({ n })),
      );
    });
    after(() => small.stop());

    it('prunes down to the newest events, then refuses an older since with 410 gone', async () => {
      expect(await small.feed.pruner.runOnce()).to.equal(7);
      for (const since of [0, 3, 6]) {
        const answer = await refusal(small.url, owner.key, { collection: 'notes', since });
        expect(answer.status, `since=${since}`).to.equal(410);
        expect(answer.problem.code).to.equal('gone');
      }
    });

    it('still resumes from the oldest since whose following events are all retained', async () => {
      const feed = await FeedClient.open(small.url, owner.key, { collection: 'notes', since: 7 });
      expect(seqs(await feed.changesCount(5))).to.deep.equal(range(8, 12));
      await feed.close();
    });

    it('ends a pass under way when stopped, before its next batch, leaving the rest to the next pass', async () => {
      const stopped = await startTestServer({ eventsRetainCount: 5 }, { backend });
      try {
        const writer = await stopped.client();
        await writer.post('/v1/collections', { name: 'notes' });
        for (const from of [1, 1001]) {
          await writer.post(
            '/v1/collections/notes/rows',
            range(from, from + 999).map((n) => ({ n })),
          );
        }
        const pass = stopped.feed.pruner.runOnce();
        await stopped.feed.pruner.stop();
        // 1,995 events past retention are four batches: a pass that ran to its end would delete them all.
        expect(await pass).to.be.below(1995);
        const resumed = await FeedClient.open(stopped.url, writer.key, { collection: 'notes', since: 1000 });
        expect(seqs(await resumed.changesCount(3)).slice(0, 3)).to.deep.equal([1001, 1002, 1003]);
        await resumed.close();
      } finally {
        await stopped.stop();
      }
    });

    it('prunes every interval', async () => {
      const timed = await startTestServer({ eventsRetainCount: 2, eventsPruneIntervalMs: 20 }, { backend });
      try {
        const writer = await timed.client();
        await writer.post('/v1/collections', { name: 'notes' });
        await writer.post(
          '/v1/collections/notes/rows',
          range(1, 4).map((n) => ({ n })),
        );
        for (;;) {
          const [deleted] = await once(timed.feed.pruner, 'pass');
          if (deleted > 0) break;
        }
        const answer = await refusal(timed.url, writer.key, { collection: 'notes', since: 1 });
        expect(answer.status).to.equal(410);
      } finally {
        await timed.stop();
      }
    });
  });
});
