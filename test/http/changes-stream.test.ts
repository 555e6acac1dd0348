// The changes over plain HTTP as streams (openapi.yaml, getChanges; docs/feed.md, "Changes over plain
// HTTP"): server-sent events read and resumed by a real EventSource (the `eventsource` package; the
// bytes it reads read again with eventsource-parser, test/support/changes.ts) and JSON Lines, each item
// checked against openapi.yaml and each message against asyncapi.yaml; catch-up then live with no gap
// and no duplicate under concurrent writers, across a close by the server; bounded per account like feed
// sockets, and so are waiting long polls; ended by a revoked key, a deleted collection and a shutdown.
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { expect } from 'chai';
import { type BackendName, describeEachBackend } from '../support/backends.ts';
import { EventStream, eventually, LineStream, type ChangesPage as Page } from '../support/changes.ts';
import { Client } from '../support/client.ts';
import { range, seqs } from '../support/feed.ts';
import { expiringKey, startTestServer, TEST_PLAN, type TestServer, withTestServer } from '../support/server.ts';

const changesUrl = (server: TestServer, collection: string, query: Record<string, string | number> = {}) =>
  `${server.url}/v1/collections/${collection}/changes?${new URLSearchParams(Object.entries(query).map(([name, value]) => [name, String(value)]))}`;

/**
 * Writers that insert and update rows of `collection` at once, each on its own, until stop(): `text`
 * in every row. Answers the seq of the last change they made.
 */
function writers(client: Client, collection: string, count: number, text: string) {
  let stopped = false;
  const rows = `/v1/collections/${collection}/rows`;
  const loops = range(1, count).map(async (writer) => {
    let last = 0;
    for (let round = 0; !stopped; round++) {
      const inserted = await client.post<{ id: number }[]>(
        rows,
        range(1, 20).map((n) => ({ writer, round, n, text })),
      );
      expect(inserted.status, inserted.text).to.equal(201);
      const id = inserted.body[0].id;
      const patched = await client.patch(`${rows}/${id}`, { patched: true });
      expect(patched.status, patched.text).to.equal(200);
      last = Math.max(last, id);
    }
    return last;
  });
  return {
    async stop(): Promise<void> {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

/**
 * The collection's latest seq, from its last page of changes, read from `since` (a seq already seen:
 * under the writers, reading every page from the first took seconds, and the writers wrote on meanwhile).
 */
async function latestSeq(client: Client, collection: string, from: number): Promise<number> {
  let since = from;
  for (;;) {
    const page = await client.get<{ next_since: number; caught_up: boolean }>(
      `/v1/collections/${collection}/changes?since=${since}&limit=1000`,
    );
    since = page.body.next_since;
    if (page.body.caught_up) return since;
  }
}

describeEachBackend('changes over plain HTTP: streams', (backend) => {
  describe('server-sent events', () => {
    it('catch up, go live, and resume with Last-Event-ID after the server drops a slow reader, with no gap and no duplicate under concurrent writers', async function () {
      this.timeout(180_000);
      await withTestServer({ feedMaxBufferBytes: 64 * 1024 }, { backend }, async (server) => {
        const client = await server.client();
        await client.post('/v1/collections', { name: 'notes' });
        await client.post(
          '/v1/collections/notes/rows',
          range(1, 50).map((n) => ({ n })),
        );
        const stream = await EventStream.open(changesUrl(server, 'notes', { since: 10 }), client.key as string);
        expect(stream.status).to.equal(200);
        await stream.seqReached(50);
        expect(stream.messages[0]).to.deep.include({ type: 'ready', seq: 50 });
        expect(stream.events[0].lastEventId, "ready's id: where the replay starts").to.equal('10');
        expect(seqs(stream.changes)).to.deep.equal(range(11, 50));
        expect(stream.events[1]).to.include({ type: 'insert', lastEventId: '11' });
        // Live: writers at once, and a reader that stops reading until the server drops it.
        const writing = writers(client, 'notes', 3, 'x'.repeat(8 * 1024));
        stream.pause();
        await eventually(() => server.feed.counts.slowConsumerCloses > 0, 'the server to drop the stream', 120_000);
        stream.resume();
        await stream.until(() => stream.connections > 1, 'a reconnection', 30_000);
        // Written after the reconnection too.
        await stream.seqReached((await latestSeq(client, 'notes', lastSeq(stream))) + 40, 60_000);
        await writing.stop();
        const latest = await latestSeq(client, 'notes', lastSeq(stream));
        await stream.seqReached(latest, 60_000);
        const got = seqs(stream.changes);
        expect(got.length, 'no duplicate').to.equal(new Set(got).size);
        expect(got, 'no gap').to.deep.equal(range(11, latest));
        expect(stream.ends[0]).to.deep.equal({ status: 200, text: '' });
        expect(stream.connections).to.be.at.least(2);
        for (const event of stream.events.slice(1)) {
          const message = JSON.parse(event.data);
          if (message.type !== 'ready') expect(event.lastEventId).to.equal(String(message.seq));
        }
        stream.close();
      });
    });

    it('without since nor Last-Event-ID, replay nothing and go live from the latest seq, as a feed socket does; a page without since reads from the first', async () => {
      await withTestServer({}, { backend }, async (server) => {
        const client = await server.client();
        await client.post('/v1/collections', { name: 'notes' });
        await client.post(
          '/v1/collections/notes/rows',
          range(1, 5).map((n) => ({ n })),
        );
        const events = await EventStream.open(changesUrl(server, 'notes'), client.key as string);
        const streams = [events, await LineStream.open(changesUrl(server, 'notes'), client.key as string)];
        for (const stream of streams) await stream.until(() => stream.messages.length > 0, 'the ready');
        for (const stream of streams) expect(stream.messages[0]).to.deep.include({ type: 'ready', seq: 5 });
        expect(events.events[0].lastEventId, "ready's id: where it resumes").to.equal('5');
        expect((await client.post('/v1/collections/notes/rows', [{ n: 6 }])).status).to.equal(201);
        for (const stream of streams) {
          await stream.seqReached(6);
          expect(seqs(stream.changes), 'the live change alone').to.deep.equal([6]);
          stream.close();
        }
        const page = await client.get('/v1/collections/notes/changes');
        expect(seqs((page.body as Page).changes)).to.deep.equal(range(1, 6));
      });
    });

    it('send a heartbeat comment, X-Accel-Buffering: no, no-store and a retry hint', async () => {
      await withTestServer({ feedPingIntervalMs: 100 }, { backend }, async (server) => {
        const client = await server.client();
        await client.post('/v1/collections', { name: 'notes' });
        const stream = await EventStream.open(changesUrl(server, 'notes'), client.key as string);
        const { headers } = stream;
        expect(headers.get('x-accel-buffering')).to.equal('no');
        expect(headers.get('cache-control')).to.equal('no-store');
        expect(headers.get('content-type')).to.equal('text/event-stream; charset=utf-8');
        // Heartbeats run from the stream's start: under load one may come before its ready, which reads the database.
        await stream.until(() => stream.comments.includes('heartbeat') && stream.messages.length > 0, 'a heartbeat and the ready');
        expect(stream.retryMs).to.equal(1000);
        expect(stream.messages).to.deep.equal([{ type: 'ready', collection: 'notes', events: ['insert', 'update', 'delete'], seq: 0 }]);
        stream.close();
      });
    });
  });

  describe('JSON Lines', () => {
    it('catch up and go live with no gap and no duplicate under concurrent writers, and resume from since', async function () {
      this.timeout(120_000);
      await withTestServer({}, { backend }, async (server) => {
        const client = await server.client();
        await client.post('/v1/collections', { name: 'notes' });
        await client.post(
          '/v1/collections/notes/rows',
          range(1, 30).map((n) => ({ n })),
        );
        const first = await LineStream.open(changesUrl(server, 'notes', { since: 0, events: 'insert,update' }), client.key as string);
        await first.seqReached(30);
        const writing = writers(client, 'notes', 3, 'y');
        await first.until(() => first.changes.length > 100, 'live changes');
        first.close();
        const resumeFrom = first.changes.at(-1)?.seq as number;
        const second = await LineStream.open(
          changesUrl(server, 'notes', { since: resumeFrom, events: 'insert,update' }),
          client.key as string,
        );
        await second.until(() => second.changes.length > 50, 'live changes again');
        await writing.stop();
        const latest = await latestSeq(client, 'notes', lastSeq(second));
        await second.seqReached(latest);
        const got = [...seqs(first.changes), ...seqs(second.changes)];
        expect(got, 'no gap, no duplicate').to.deep.equal(range(1, latest));
        expect(second.messages[0]).to.deep.include({ type: 'ready' });
        second.close();
      });
    });
  });

  describe('bounds', () => {
    it('count with feed sockets toward the account’s places: one more is 429, a HEAD takes none for long', async () => {
      await withPlaces(backend, 2, async ({ client, key, url }) => {
        for (let i = 0; i < 3; i++) {
          const head = await client.request('HEAD', '/v1/collections/notes/changes', { headers: { accept: 'text/event-stream' } });
          expect(head.status).to.equal(200);
          expect(head.headers.get('content-type')).to.equal('text/event-stream; charset=utf-8');
        }
        const streams = [await EventStream.open(url, key), await LineStream.open(url, key)];
        await Promise.all(streams.map((stream) => stream.until(() => stream.messages.length > 0, 'ready')));
        const third = await EventStream.open(url, key);
        expect(third.status).to.equal(429);
        await third.until(() => third.ends.length > 0, 'the refusal');
        expect(JSON.parse(third.ends[0].text).code).to.equal('too_many_connections');
        // A page is no stream: it takes no place.
        expect((await client.get(`/v1/collections/notes/changes`)).status).to.equal(200);
        streams[0].close();
        const again = await waitForPlace(url, key);
        expect(again.status).to.equal(200);
        again.close();
        streams[1].close();
      });
    });

    it('hold one of them for a waiting long poll: a stream beyond is 429, a poll beyond answers at once, saying it did not wait', async () => {
      await withPlaces(backend, 2, async ({ server, client, key, url }) => {
        const stream = await EventStream.open(url, key);
        await stream.until(() => stream.messages.length > 0, 'ready');
        const waiting = client.get<Page>('/v1/collections/notes/changes?wait=30');
        await eventually(() => server.feed.waitingPolls === 1, 'the poll to wait');
        const refused = await EventStream.open(url, key);
        expect(refused.status, 'the poll holds the second place').to.equal(429);
        refused.close();
        const startedAt = Date.now();
        const skipped = await client.get<Page>('/v1/collections/notes/changes?wait=30');
        expect(Date.now() - startedAt, 'answered without waiting').to.be.below(5000);
        expect(skipped.status).to.equal(200);
        expect(skipped.headers.get('rowbase-wait-skipped')).to.equal('too_many_connections');
        expect(skipped.body).to.deep.equal({ changes: [], next_since: 0, caught_up: true });
        expect(server.feed.waitingPolls).to.equal(1);
        // A change wakes the waiting poll, which gives its place back before it answers.
        expect((await client.post('/v1/collections/notes/rows', [{ n: 1 }])).status).to.equal(201);
        const woken = await waiting;
        expect(seqs(woken.body.changes)).to.deep.equal([1]);
        expect(woken.headers.has('rowbase-wait-skipped')).to.equal(false);
        const next = await EventStream.open(url, key);
        expect(next.status, 'the place the poll gave back').to.equal(200);
        next.close();
        stream.close();
      });
    });

    it('give a long poll’s place back as soon as its client goes away: the next stream takes it', async () => {
      await withPlaces(backend, 1, async ({ server, key, url }) => {
        // A connection of its own, which the client closes: no answer comes, so there is none to check.
        const poll = httpRequest(changesUrl(server, 'notes', { wait: 60 }), { headers: { authorization: `Bearer ${key}` } });
        const answered = new Promise<boolean>((resolve) => {
          poll.once('response', () => resolve(true));
          poll.once('close', () => resolve(false));
        });
        poll.on('error', () => {});
        poll.end();
        await eventually(() => server.feed.waitingPolls === 1, 'the poll to wait');
        const refused = await EventStream.open(url, key);
        expect(refused.status, 'the poll holds the one place').to.equal(429);
        refused.close();
        const goneAt = Date.now();
        poll.destroy();
        expect(await answered, 'the poll went before its answer').to.equal(false);
        await eventually(() => server.feed.waitingPolls === 0, 'the poll to stop waiting', 5000);
        const stream = await EventStream.open(url, key);
        expect(stream.status, 'the place the poll gave back').to.equal(200);
        expect(Date.now() - goneAt, 'long before its 60 s').to.be.below(5000);
        await stream.until(() => stream.messages.length > 0, 'ready');
        stream.close();
      });
    });
  });

  describe('the connection', () => {
    it('is the stream’s alone, as an upgraded socket is: Connection: close, what the client sends after its request is ignored, and its half-close ends the stream, giving its place back', async () => {
      await withPlaces(backend, 1, async ({ server, client, key, url }) => {
        const { hostname, port } = new URL(server.url);
        const socket = connect(Number(port), hostname);
        let received = '';
        socket.setEncoding('latin1');
        socket.on('data', (text: string) => {
          received += text;
        });
        const closed = once(socket, 'close');
        const path = new URL(url).pathname;
        socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${key}\r\n\r\n`);
        await eventually(() => received.includes('event: ready'), 'the ready');
        const head = received.slice(0, received.indexOf('\r\n\r\n')).toLowerCase();
        expect(head).to.match(/^http\/1\.1 200 /);
        expect(head).to.include('\r\nconnection: close');
        // A request after it on the same connection is never read as one: the stream goes on.
        socket.write(`GET /v1/collections HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${key}\r\n\r\n`);
        expect((await client.post('/v1/collections/notes/rows', [{ n: 1 }])).status).to.equal(201);
        await eventually(() => received.includes('event: insert'), 'the insert');
        expect(received.match(/HTTP\/1\.1/g)).to.have.length(1);
        const refused = await EventStream.open(url, key);
        expect(refused.status, 'the stream holds the one place').to.equal(429);
        refused.close();
        socket.end();
        await closed;
        const next = await waitForPlace(url, key);
        expect(next.status, 'the place the stream gave back').to.equal(200);
        next.close();
      });
    });
  });

  describe('the end of a stream', () => {
    it('comes when its key is revoked, and an EventSource then stops at the 401', async () => {
      await withTestServer({}, { backend }, async (server) => {
        const revoked = await server.store.createKey('revoking', TEST_PLAN);
        const owner = new Client(server.url, revoked.key);
        await owner.post('/v1/collections', { name: 'notes' });
        const stream = await EventStream.open(changesUrl(server, 'notes'), revoked.key);
        await stream.until(() => stream.messages.length > 0, 'ready');
        await server.store.revokeKey(revoked.prefix);
        await stream.until(() => stream.ends.some((end) => end.status === 401), 'the 401 of the reconnection', 10_000);
        expect(stream.comments).to.include('closed 4401 key revoked');
        await eventually(() => stream.failed, 'the EventSource to give up');
        expect(stream.connections).to.equal(2);
        stream.close();
      });
    });

    it('comes within a second of its key’s expiry', async () => {
      await withTestServer({}, { backend }, async (server) => {
        const { key, expiresAt } = await expiringKey(server);
        const stream = await LineStream.open(changesUrl(server, 'notes'), key);
        await stream.until(() => stream.messages.length > 0, 'ready');
        await stream.until(() => stream.ends.length > 0, 'the end', 5000);
        expect(Date.now()).to.be.at.least(expiresAt);
        expect(Date.now() - expiresAt).to.be.below(1500);
        stream.close();
      });
    });

    it('comes after collection_deleted when the collection is deleted', async () => {
      await withTestServer({}, { backend }, async (server) => {
        const client = await server.client();
        await client.post('/v1/collections', { name: 'notes' });
        const stream = await LineStream.open(changesUrl(server, 'notes'), client.key as string);
        await stream.until(() => stream.messages.length > 0, 'ready');
        expect((await client.delete('/v1/collections/notes')).status).to.equal(204);
        await stream.until(() => stream.ends.length > 0, 'the end');
        expect(stream.messages.at(-1)).to.deep.equal({ type: 'collection_deleted', collection: 'notes' });
        stream.close();
      });
    });

    it('comes when the server shuts down', async () => {
      const server = await startTestServer({}, { backend });
      const client = await server.client();
      await client.post('/v1/collections', { name: 'notes' });
      const stream = await EventStream.open(changesUrl(server, 'notes'), client.key as string);
      await stream.until(() => stream.messages.length > 0, 'ready');
      await server.stop();
      await stream.until(() => stream.ends.length > 0, 'the end');
      expect(stream.comments).to.include('closed 1001 server shutting down');
      stream.close();
    });
  });
});

/** The seq of the last change a stream has read. */
const lastSeq = (stream: EventStream | LineStream) => stream.changes.at(-1)?.seq ?? 0;

/**
 * Runs `test` on a server whose accounts hold at most `places` feed sockets, streams and waiting polls,
 * with a client of an account that has the collection `notes`, its key, and the URL of its changes.
 */
function withPlaces(
  backend: BackendName,
  places: number,
  test: (context: { server: TestServer; client: Client; key: string; url: string }) => Promise<void>,
): Promise<void> {
  return withTestServer({ feedMaxSocketsPerAccount: places }, { backend }, async (server) => {
    const client = await server.client();
    await client.post('/v1/collections', { name: 'notes' });
    await test({ server, client, key: client.key as string, url: changesUrl(server, 'notes') });
  });
}

/** Opens a stream once the account has a place again (a closed stream gives it back when its connection closes). */
async function waitForPlace(url: string, key: string): Promise<EventStream> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const stream = await EventStream.open(url, key);
    if (stream.status === 200) return stream;
    stream.close();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('no place came free');
}
