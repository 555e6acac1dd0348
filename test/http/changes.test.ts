// The changes over plain HTTP as pages and long polls (openapi.yaml, getChanges; docs/feed.md, "Changes
// over plain HTTP"): the whole log paged equals what a feed socket gets, pages are cached but the last,
// a long poll is woken by a change (on another instance too, on PostgreSQL), pruned history is 410, and
// bad input is refused.
import type { Socket } from 'node:net';
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import { EventStream, eventually, type ChangesPage as Page } from '../support/changes.ts';
import { Client } from '../support/client.ts';
import { checkResponse } from '../support/contract.ts';
import { appKey, EndUser, tokenOf } from '../support/end-users.ts';
import { FeedClient, type FeedMessage, range, seqs } from '../support/feed.ts';
import { head, RawConnection } from '../support/raw.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const changesOf = (collection: string, query: Record<string, string | number> = {}) =>
  `/v1/collections/${collection}/changes?${new URLSearchParams(Object.entries(query).map(([name, value]) => [name, String(value)]))}`;

/** Every page from `since` until caught up, by `limit`. */
async function pageAll(client: Client, collection: string, query: Record<string, string | number> = {}): Promise<FeedMessage[]> {
  const messages: FeedMessage[] = [];
  let since = Number(query.since ?? 0);
  for (let pages = 0; pages < 10_000; pages++) {
    const page = await client.get<Page>(changesOf(collection, { ...query, since }));
    expect(page.status, page.text).to.equal(200);
    messages.push(...page.body.changes);
    expect(page.body.next_since).to.be.at.least(since);
    since = page.body.next_since;
    if (page.body.caught_up) return messages;
  }
  throw new Error('never caught up');
}

/** Inserts, updates and deletes rows of `collection`, some in batches: a log of every kind of event. */
async function writeLog(client: Client, collection: string): Promise<void> {
  const rows = `/v1/collections/${collection}/rows`;
  await client.post(
    rows,
    range(1, 30).map((n) => ({ n, status: n % 3 === 0 ? 'open' : 'closed' })),
  );
  for (const id of range(1, 12))
    expect((await client.patch(`${rows}/${id}`, { status: id % 2 === 0 ? 'open' : 'closed' })).status).to.equal(200);
  for (const id of range(20, 25)) expect((await client.delete(`${rows}/${id}`)).status).to.equal(204);
  await client.post(
    rows,
    range(31, 40).map((n) => ({ n, status: 'open' })),
  );
}

describeEachBackend('changes over plain HTTP: pages and long polls', (backend) => {
  let server: TestServer;
  let client: Client;
  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
    expect((await client.post('/v1/collections', { name: 'notes' })).status).to.equal(201);
    await writeLog(client, 'notes');
  });
  after(() => server.stop());

  describe('paging the whole log', () => {
    const queries: Record<string, string>[] = [{}, { events: 'update,delete' }, { filter: JSON.stringify({ status: 'open' }) }];
    for (const query of queries) {
      it(`equals the feed's messages (${JSON.stringify(query)})`, async () => {
        const feed = await FeedClient.open(server.url, client.key, { collection: 'notes', since: 0, ...query });
        const latest = feed.ready.seq;
        try {
          await feed.until(
            () => feed.changes.some((message) => 'seq' in message && message.seq === latest) || feed.changes.length > 0,
            'the replay',
          );
          for (const limit of [1, 7, 1000]) {
            const paged = await pageAll(client, 'notes', { ...query, limit });
            // The feed's replay ends at ready.seq; wait for every message of it that paging found.
            await feed.until(() => feed.changes.length >= paged.length, `${paged.length} messages`);
            expect(paged, `limit ${limit}`).to.deep.equal(feed.changes.slice(0, paged.length));
            expect(feed.changes.length).to.equal(paged.length);
          }
        } finally {
          await feed.close();
        }
      });
      // A message is made of its rows' texts as stored, unparsed (feed/messages.ts, changeMessageJson):
      // the same text as the message's JSON.stringify, updates' previous rows and "matches" included.
      it(`writes each page as JSON.stringify writes it (${JSON.stringify(query)})`, async () => {
        for (let since = 0; ; ) {
          const page = await client.get<Page>(changesOf('notes', { ...query, since, limit: 7 }));
          expect(page.status, page.text).to.equal(200);
          expect(page.text).to.equal(JSON.stringify(page.body));
          if (page.body.caught_up) break;
          since = page.body.next_since;
        }
      });
    }

    it('answers nothing after the latest seq, caught up, and refuses a since ahead of it', async () => {
      const last = await client.get<Page>(changesOf('notes', { since: 0, limit: 1000 }));
      const latest = last.body.next_since;
      const empty = await client.get<Page>(changesOf('notes', { since: latest }));
      expect(empty.body).to.deep.equal({ changes: [], next_since: latest, caught_up: true });
      const ahead = await client.get<{ errors: { name: string }[] }>(changesOf('notes', { since: latest + 1 }));
      expect(ahead.status).to.equal(400);
      expect(ahead.body.errors[0].name).to.equal('since');
    });
  });

  describe('a change of many rows', () => {
    it('numbers its events in order, each with its row as written, and an update its row before', async () => {
      // More events than one statement writes (db/events/events.ts, EVENTS_PER_STATEMENT), each text
      // with the characters a list of texts could be split or cut at.
      const text = (n: number) => `line\nnext, "quoted" \\ back\ttab \u2028 \u{1f600} é ${n}`;
      const written = range(1, 1100).map((n) => ({ n, text: text(n) }));
      const rows = '/v1/collections/many/rows';
      expect((await client.post('/v1/collections', { name: 'many' })).status).to.equal(201);
      for (const part of [written.slice(0, 1000), written.slice(1000)]) expect((await client.post(rows, part)).status).to.equal(201);
      const all = encodeURIComponent(JSON.stringify({ n: { $gte: 1 } }));
      const patched = await client.patch(`${rows}?filter=${all}`, { seen: true });
      expect(patched.status, patched.text).to.equal(200);
      expect((await client.delete(`${rows}?filter=${all}`)).status).to.equal(200);

      const messages = await pageAll(client, 'many', { limit: 1000 });
      expect(seqs(messages)).to.deep.equal(range(1, 3300));
      const asWritten = written.map((row, index) => ({ id: index + 1, ...row }));
      const seen = asWritten.map((row) => ({ ...row, seen: true }));
      const expected = [
        ...asWritten.map((row) => ({ type: 'insert', row })),
        ...seen.map((row, index) => ({ type: 'update', row, previous: asWritten[index] })),
        ...seen.map((row) => ({ type: 'delete', row })),
      ];
      const events = messages.map((message) =>
        'row' in message
          ? { type: message.type, row: message.row, previous: 'previous' in message ? message.previous : undefined }
          : message,
      );
      expect(events).to.deep.equal(expected.map((event) => ({ previous: undefined, ...event })));
    });
  });

  describe('held to rules, with a publishable key and an end user', () => {
    it('pages and streams what the feed sends the same end user: their rows, without the hidden fields', async () => {
      const mine = { owner: { $auth: 'sub' } };
      await client.post('/v1/collections', { name: 'owned' });
      await client.put('/v1/collections/owned/rules', { read: mine, fields: { internal: { read: false } } });
      const key = await appKey(client);
      const token = await tokenOf('ada');
      const rows = '/v1/collections/owned/rows';
      await client.post(
        rows,
        range(1, 12).map((n) => ({ n, owner: n % 2 === 0 ? 'ada' : 'bob', internal: `secret ${n}` })),
      );
      for (const id of range(1, 6)) await client.patch(`${rows}/${id}`, { owner: id % 2 === 0 ? 'bob' : 'ada' });
      for (const id of [7, 8]) await client.delete(`${rows}/${id}`);
      const feed = await FeedClient.open(server.url, key, { collection: 'owned', since: 0, access_token: token });
      try {
        const ada = new EndUser(server.url, key, token);
        const paged: FeedMessage[] = [];
        let since = 0;
        for (;;) {
          const page = await ada.get<Page>(changesOf('owned', { since, limit: 4 }));
          expect(page.status, page.text).to.equal(200);
          paged.push(...page.body.changes);
          since = page.body.next_since;
          if (page.body.caught_up) break;
        }
        await feed.until(() => feed.changes.length >= paged.length, `${paged.length} messages`);
        expect(paged).to.deep.equal(feed.changes);
        expect(JSON.stringify(paged)).not.to.include('secret');
        expect(paged.some((message) => message.type === 'update' && message.matches === false)).to.equal(true);
        const stream = await EventStream.open(`${server.url}${changesOf('owned', { since: 0 })}`, key, {
          'x-api-key': key,
          authorization: `Bearer ${token}`,
        });
        await stream.until(() => stream.changes.length >= paged.length, 'the replay');
        expect(stream.changes).to.deep.equal(paged);
        stream.close();
      } finally {
        await feed.close();
      }
    });
  });

  describe('the key and the token in the query (api_key, access_token), as a browser sends them', () => {
    let key: string;
    let token: string;
    before(async () => {
      await client.post('/v1/collections', { name: 'queried' });
      await client.put('/v1/collections/queried/rules', { read: { owner: { $auth: 'sub' } } });
      await client.post('/v1/collections/queried/rows', [
        { owner: 'ada', n: 1 },
        { owner: 'bob', n: 2 },
      ]);
      key = await appKey(client);
      token = await tokenOf('ada');
    });

    it("read the end user's changes as the headers do", async () => {
      const queried = await server.anonymous().get<Page>(changesOf('queried', { since: 0, api_key: key, access_token: token }));
      expect(queried.status, queried.text).to.equal(200);
      expect(queried.body.changes.map((change) => change.type === 'insert' && change.row)).to.deep.equal([{ id: 1, owner: 'ada', n: 1 }]);
      expect(queried.body).to.deep.equal((await new EndUser(server.url, key, token).get<Page>(changesOf('queried', { since: 0 }))).body);
      const head = await server.anonymous().request('HEAD', changesOf('queried', { api_key: key, access_token: token }));
      expect(head.status).to.equal(200);
    });

    const scenarios: {
      name: string;
      query: (key: string, token: string) => string;
      headers?: (key: string) => Record<string, string>;
      status: number;
      code: string;
    }[] = [
      { name: 'a key given twice', query: (key) => `api_key=${key}&api_key=${key}`, status: 401, code: 'unauthorized' },
      { name: 'an empty key', query: () => 'api_key=', status: 401, code: 'unauthorized' },
      { name: 'an unknown key', query: () => 'api_key=rb_pub_noSuchKey', status: 401, code: 'unauthorized' },
      {
        name: 'a key that differs from the one in x-api-key',
        query: (key) => `api_key=${key}`,
        headers: () => ({ 'x-api-key': 'rb_pub_another' }),
        status: 401,
        code: 'unauthorized',
      },
      {
        name: 'a token given twice',
        query: (key, token) => `api_key=${key}&access_token=${token}&access_token=${token}`,
        status: 401,
        code: 'invalid_token',
      },
      { name: 'an empty token', query: (key) => `api_key=${key}&access_token=`, status: 401, code: 'invalid_token' },
      {
        name: 'a token that does not verify',
        query: (key) => `api_key=${key}&access_token=not.a.token`,
        status: 401,
        code: 'invalid_token',
      },
      {
        name: 'a token that differs from the one in Authorization',
        query: (key, token) => `api_key=${key}&access_token=${token}`,
        headers: (key) => ({ 'x-api-key': key, authorization: 'Bearer another.token.here' }),
        status: 401,
        code: 'invalid_token',
      },
    ];
    for (const { name, query, headers, status, code } of scenarios) {
      it(`refuse ${name}: ${status} ${code}`, async () => {
        const answer = await server.anonymous().get(`/v1/collections/queried/changes?${query(key, token)}`, { headers: headers?.(key) });
        expect(answer.status, answer.text).to.equal(status);
        expect((answer.body as { code: string }).code).to.equal(code);
      });
    }

    it('refuse a token beside a secret key (400), and are no parameters of other operations (400)', async () => {
      const secret = await server.anonymous().get(`/v1/collections/queried/changes?api_key=${client.key}&access_token=${token}`);
      expect(secret.status, secret.text).to.equal(400);
      expect((secret.body as { errors: { name: string }[] }).errors.map(({ name }) => name)).to.deep.equal(['access_token']);
      const rows = await client.get(`/v1/collections/queried/rows?api_key=${client.key}`);
      expect(rows.status, rows.text).to.equal(400);
    });
  });

  describe('caching', () => {
    it('answers a full page with an ETag and immutable caching (304 for it), the last with no-store', async () => {
      const first = await client.get<Page>(changesOf('notes', { since: 0, limit: 5 }));
      expect(seqs(first.body.changes)).to.deep.equal(range(1, 5));
      expect(first.body.caught_up).to.equal(false);
      expect(first.headers.get('cache-control')).to.equal('private, max-age=31536000, immutable');
      const etag = first.headers.get('etag') as string;
      expect(etag).to.match(/^"[A-Za-z0-9_-]+"$/);
      const again = await client.get(changesOf('notes', { since: 0, limit: 5 }), { headers: { 'if-none-match': etag } });
      expect(again.status).to.equal(304);
      expect(again.headers.get('etag')).to.equal(etag);
      const last = await client.get<Page>(changesOf('notes', { since: first.body.next_since, limit: 1000 }));
      expect(last.body.caught_up).to.equal(true);
      expect(last.headers.get('cache-control')).to.equal('no-store');
      expect(last.headers.has('etag')).to.equal(false);
    });
  });

  describe('bad input', () => {
    const refusals: [string, Record<string, string | number>, Record<string, string>, number, string?][] = [
      ['a since that is no integer', { since: 'abc' }, {}, 400, 'since'],
      ['a negative since', { since: -1 }, {}, 400, 'since'],
      ['a since written loosely', { since: '1e3' }, {}, 400, 'since'],
      ['a wait over 60', { wait: 61 }, {}, 400, 'wait'],
      ['a limit of 0', { limit: 0 }, {}, 400, 'limit'],
      ['a limit over 1000', { limit: 1001 }, {}, 400, 'limit'],
      ['an unknown kind of event', { events: 'insert,upsert' }, {}, 400, 'events'],
      ['a filter that is no JSON', { filter: '{status' }, {}, 400, 'filter'],
      ['an unknown parameter', { collection: 'notes' }, {}, 400, 'collection'],
      ['an Accept naming none of the forms', {}, { accept: 'text/html' }, 406],
      ['an Accept refusing every form', {}, { accept: 'application/json;q=0, text/*;q=0, application/jsonl;q=0' }, 406],
      ['a Last-Event-ID that is no seq', {}, { accept: 'text/event-stream', 'last-event-id': 'x' }, 400, 'last-event-id'],
    ];
    for (const [what, query, headers, status, name] of refusals) {
      it(`refuses ${what} with ${status}`, async () => {
        const answer = await client.get<{ errors?: { name: string }[]; code: string }>(changesOf('notes', query), { headers });
        expect(answer.status, answer.text).to.equal(status);
        if (name) expect(answer.body.errors?.map((error) => error.name)).to.include(name);
        else expect(answer.body.code).to.equal('not_acceptable');
      });
    }

    it('answers 404 for a collection that does not exist', async () => {
      expect((await client.get(changesOf('nowhere'))).status).to.equal(404);
    });

    it('takes a browser Accept, or */*, for a page', async () => {
      for (const accept of ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', '*/*', 'application/*']) {
        const page = await client.get<Page>(changesOf('notes', { limit: 1 }), { headers: { accept } });
        expect(page.status, accept).to.equal(200);
        expect(page.body.changes).to.have.length(1);
      }
    });
  });

  describe('a long poll', () => {
    it('is woken by a change it shows, and not by one it does not', async () => {
      await client.post('/v1/collections', { name: 'polled' });
      const rows = '/v1/collections/polled/rows';
      const startedAt = Date.now();
      const poll = client.get<Page>(changesOf('polled', { since: 0, wait: 30, events: 'insert', filter: '{"n":2}' }));
      // The poll follows the collection once the feed follows it for it.
      await eventually(() => server.feed.collections > 0, 'the poll to wait');
      expect((await client.post(rows, [{ n: 1 }])).status).to.equal(201);
      expect((await client.post(rows, [{ n: 2 }])).status).to.equal(201);
      const page = await poll;
      expect(page.status).to.equal(200);
      expect(page.body.changes.map((message) => 'row' in message && message.row)).to.deep.equal([{ id: 2, n: 2 }]);
      expect(page.body).to.include({ next_since: 2, caught_up: true });
      expect(Date.now() - startedAt).to.be.below(30_000);
    });

    it('answers an empty page once its time has passed', async () => {
      await client.post('/v1/collections', { name: 'quiet' });
      const startedAt = Date.now();
      const page = await client.get<Page>(changesOf('quiet', { wait: 1 }));
      expect(page.body).to.deep.equal({ changes: [], next_since: 0, caught_up: true });
      expect(Date.now() - startedAt).to.be.within(900, 10_000);
    });

    it('answers at once when there are changes already', async () => {
      const page = await client.get<Page>(changesOf('notes', { wait: 60, limit: 3 }));
      expect(seqs(page.body.changes)).to.deep.equal([1, 2, 3]);
    });

    it('loses no change and repeats none when its clients ask again as changes come, by one and by pages', async function () {
      this.timeout(120_000);
      await client.post('/v1/collections', { name: 'busy' });
      const rows = '/v1/collections/busy/rows';
      // 60 changes: 40 inserts one at a time, 5 updates, then 5 inserts of 3 rows, written while the polls
      // ask. The last change is an insert: the poll of inserts alone, waiting past the updates, is answered
      // by it, not by its wait's end (10 s).
      const total = 60;
      const pollers = [
        { limit: 1, events: 'insert,update,delete' },
        { limit: 1000, events: 'insert' },
        { limit: 1000, events: 'insert,update,delete' },
        { limit: 2, events: 'insert,update,delete' },
      ].map(async (query) => {
        const messages: FeedMessage[] = [];
        for (let since = 0; since < total; ) {
          const page = await client.get<Page>(changesOf('busy', { ...query, since, wait: 10 }));
          expect(page.status, page.text).to.equal(200);
          messages.push(...page.body.changes);
          expect(page.body.next_since).to.be.at.least(since);
          since = page.body.next_since;
        }
        return messages;
      });
      await eventually(() => server.feed.waitingPolls > 0, 'a poll to wait');
      for (const n of range(1, 40)) expect((await client.post(rows, [{ n }])).status).to.equal(201);
      for (const id of range(1, 5)) expect((await client.patch(`${rows}/${id}`, { patched: true })).status).to.equal(200);
      for (const n of range(1, 5)) expect((await client.post(rows, [{ n }, { n }, { n }])).status).to.equal(201);
      const [byOne, inserts, byPages, byTwo] = await Promise.all(pollers);
      const all = await pageAll(client, 'busy');
      expect(seqs(all), 'no gap, no duplicate').to.deep.equal(range(1, total));
      expect(byOne, 'one at a time').to.deep.equal(all);
      expect(byPages, 'by pages').to.deep.equal(all);
      expect(byTwo, 'two at a time').to.deep.equal(all);
      expect(inserts, 'its kinds alone').to.deep.equal(all.filter((message) => message.type === 'insert'));
    });

    it('holds no HTTP parser while it waits, as a feed socket holds none; its connection then serves what was sent behind it and after it, and a client gone gives its place back', async () => {
      await client.post('/v1/collections', { name: 'lent' });
      // The server's end of each connection, by the client's port.
      const ends = new Map<number, Socket & { parser?: unknown }>();
      const noted = (socket: Socket) => ends.set(socket.remotePort as number, socket);
      server.server.on('connection', noted);
      const connection = await RawConnection.open(server.url);
      const get = (path: string) => head(`GET ${path} HTTP/1.1`, { Host: 'localhost', Authorization: `Bearer ${client.key}` });
      const read = async (path: string) => {
        const response = await connection.next();
        checkResponse({ method: 'GET', path: path.split('?')[0], ...response });
        return { status: response.status, body: JSON.parse(response.text) };
      };
      try {
        const before = server.feed.waitingPolls;
        const poll = changesOf('lent', { wait: 30 });
        connection.send(get(poll));
        await eventually(() => server.feed.waitingPolls > before, 'the poll to wait');
        const end = ends.get(connection.localPort);
        expect(end?.parser, 'its parser given back while it waits').to.equal(null);
        // A request sent behind the waiting poll (pipelined) is read once the poll has its answer.
        const rows = '/v1/collections/lent/rows?limit=10';
        connection.send(get(rows));
        expect((await client.post('/v1/collections/lent/rows', [{ n: 1 }])).status).to.equal(201);
        const answered = await read(poll);
        expect(answered.status).to.equal(200);
        expect(answered.body.changes.map((message: FeedMessage) => 'row' in message && message.row)).to.deep.equal([{ id: 1, n: 1 }]);
        expect(await read(rows)).to.deep.equal({ status: 200, body: [{ id: 1, n: 1 }] });
        // The same connection, the server's again, serves the next requests: another waiting poll among them.
        connection.send(get(rows));
        expect((await read(rows)).status).to.equal(200);
        const next = changesOf('lent', { since: 1, wait: 30 });
        connection.send(get(next));
        await eventually(() => server.feed.waitingPolls > before, 'the next poll to wait');
        expect(end?.parser, 'lent again').to.equal(null);
        connection.close();
        await eventually(() => server.feed.waitingPolls === before, 'the poll of the client gone to give its place back');
      } finally {
        server.server.off('connection', noted);
        connection.close();
      }
    });

    it('ends its connection when its client sends more than 64 KiB while it waits, giving its place back', async () => {
      await client.post('/v1/collections', { name: 'flooded' });
      const connection = await RawConnection.open(server.url);
      try {
        const before = server.feed.waitingPolls;
        const poll = changesOf('flooded', { wait: 30 });
        connection.send(head(`GET ${poll} HTTP/1.1`, { Host: 'localhost', Authorization: `Bearer ${client.key}` }));
        await eventually(() => server.feed.waitingPolls > before, 'the poll to wait');
        connection.send(
          head('POST /v1/collections/flooded/rows HTTP/1.1', { Host: 'localhost', 'Content-Length': '70000' }) + 'x'.repeat(70_000),
        );
        await connection.closed;
        await eventually(() => server.feed.waitingPolls === before, 'the poll to give its place back');
      } finally {
        connection.close();
      }
    });

    it('answers 404 once its collection is deleted while it waits', async () => {
      await client.post('/v1/collections', { name: 'doomed' });
      const before = server.feed.waitingPolls;
      const poll = client.get<{ code: string }>(changesOf('doomed', { wait: 30 }));
      await eventually(() => server.feed.waitingPolls > before, 'the poll to wait');
      expect((await client.delete('/v1/collections/doomed')).status).to.equal(204);
      const answer = await poll;
      expect(answer.status).to.equal(404);
      expect(answer.body.code).to.equal('not_found');
    });

    it('answers its page, caught up, when the server shuts down while it waits', async () => {
      const closing = await startTestServer({}, { backend });
      const owner = await closing.client();
      await owner.post('/v1/collections', { name: 'notes' });
      const poll = owner.get<Page>(changesOf('notes', { wait: 60 }));
      await eventually(() => closing.feed.waitingPolls === 1, 'the poll to wait');
      const stoppedAt = Date.now();
      await closing.stop();
      const page = await poll;
      expect(page.status).to.equal(200);
      expect(page.body).to.deep.equal({ changes: [], next_since: 0, caught_up: true });
      expect(Date.now() - stoppedAt, 'long before its 60 s').to.be.below(10_000);
    });
  });

  describe('a connection a long poll has answered, idle', () => {
    it('is ended by a server that stops, at once', async () => {
      const closing = await startTestServer({}, { backend });
      const owner = await closing.client();
      await owner.post('/v1/collections', { name: 'notes' });
      const connection = await RawConnection.open(closing.url);
      try {
        const poll = changesOf('notes', { wait: 30 });
        connection.send(head(`GET ${poll} HTTP/1.1`, { Host: 'localhost', Authorization: `Bearer ${owner.key}` }));
        await eventually(() => closing.feed.waitingPolls === 1, 'the poll to wait');
        expect((await owner.post('/v1/collections/notes/rows', [{ n: 1 }])).status).to.equal(201);
        const answer = await connection.next();
        checkResponse({ method: 'GET', path: poll.split('?')[0], ...answer });
        expect(answer.status).to.equal(200);
        expect(answer.headers.get('connection')).to.equal('keep-alive');
        const stoppedAt = Date.now();
        await closing.stop();
        await connection.closed;
        // Not its keep-alive timeout (60 s here), nor the stop's grace (10 s).
        expect(Date.now() - stoppedAt).to.be.below(5_000);
      } finally {
        connection.close();
      }
    });
  });

  describe('pruned history', () => {
    it('is 410 gone for a since whose next events were pruned', async () => {
      const small = await startTestServer({ eventsRetainCount: 3 }, { backend });
      try {
        const owner = await small.client();
        await owner.post('/v1/collections', { name: 'notes' });
        await owner.post(
          '/v1/collections/notes/rows',
          range(1, 10).map((n) => ({ n })),
        );
        expect(await small.feed.pruner.runOnce()).to.equal(7);
        for (const since of [0, 6]) {
          const answer = await owner.get<{ code: string }>(changesOf('notes', { since }));
          expect(answer.status, `since=${since}`).to.equal(410);
          expect(answer.body.code).to.equal('gone');
        }
        const kept = await owner.get<Page>(changesOf('notes', { since: 7 }));
        expect(seqs(kept.body.changes)).to.deep.equal([8, 9, 10]);
      } finally {
        await small.stop();
      }
    });
  });

  if (backend === 'postgres') {
    describe('on several instances', () => {
      it('a long poll on one is woken by a change written on another', async () => {
        const other = await startTestServer({}, { backend, database: { url: server.databaseUrl, drop: async () => {} } });
        try {
          await client.post('/v1/collections', { name: 'shared' });
          const poll = client.get<Page>(changesOf('shared', { wait: 30 }));
          await eventually(() => server.feed.collections > 0, 'the poll to wait');
          // Written on the other instance, with a key of the same account.
          const created = await client.post<{ key: string }>('/v1/keys', { scope: 'write' });
          expect(created.status, created.text).to.equal(201);
          const writer = new Client(other.url, created.body.key);
          expect((await writer.post('/v1/collections/shared/rows', [{ n: 1 }])).status).to.equal(201);
          const page = await poll;
          expect(seqs(page.body.changes)).to.deep.equal([1]);
        } finally {
          await other.close();
        }
      });
    });
  }
});
