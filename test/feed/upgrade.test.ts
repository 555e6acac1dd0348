// The feed's upgrade: every refusal of /ws a problem, logged, and the accepted ones subscribed.
import { once } from 'node:events';
import { type IncomingMessage, request } from 'node:http';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import WebSocket from 'ws';
import { createLogger } from '../../src/log.ts';
import { type BackendName, describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { FeedClient, feedUrl, type Query, refusal, refusalProblem } from '../support/feed.ts';
import { head, rawExchange, websocketHeaders } from '../support/raw.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describeEachBackend('GET /ws', (backend) => {
  let server: TestServer;
  let owner: Client;
  let stranger: Client;
  before(async () => {
    server = await startTestServer({}, { backend });
    owner = await server.client();
    stranger = await server.client();
    await owner.post('/v1/collections', { name: 'notes' });
    await owner.post('/v1/collections/notes/rows', [{ text: 'a' }, { text: 'b' }, { text: 'c' }]);
    await stranger.post('/v1/collections', { name: 'own' });
  });
  after(() => server.stop());

  describe('refuses before upgrading, with the status and problem body of the HTTP API', () => {
    const scenarios: {
      name: string;
      key?: 'owner' | 'stranger' | 'unknown' | 'none';
      query: Query;
      headers?: Record<string, string>;
      status: number;
      code: string;
      field?: string;
    }[] = [
      { name: 'a missing key', key: 'none', query: { collection: 'notes' }, status: 401, code: 'unauthorized' },
      { name: 'an unknown key', key: 'unknown', query: { collection: 'notes' }, status: 401, code: 'unauthorized' },
      {
        name: 'a query key and a different header key',
        query: { collection: 'notes' },
        headers: { 'x-api-key': 'rb_somethingelse' },
        status: 401,
        code: 'unauthorized',
      },
      {
        name: 'a malformed Authorization header',
        query: { collection: 'notes' },
        headers: { authorization: 'Basic abc' },
        status: 401,
        code: 'unauthorized',
      },
      { name: 'a missing collection', query: {}, status: 400, code: 'validation_failed', field: 'collection' },
      { name: 'an invalid collection name', query: { collection: '1notes' }, status: 400, code: 'validation_failed', field: 'collection' },
      {
        name: 'an unknown event kind',
        query: { collection: 'notes', events: 'insert,upsert' },
        status: 400,
        code: 'validation_failed',
        field: 'events',
      },
      { name: 'an empty events list', query: { collection: 'notes', events: '' }, status: 400, code: 'validation_failed', field: 'events' },
      {
        name: 'an events list with a hole',
        query: { collection: 'notes', events: 'insert,,delete' },
        status: 400,
        code: 'validation_failed',
        field: 'events',
      },
      { name: 'a negative since', query: { collection: 'notes', since: '-1' }, status: 400, code: 'validation_failed', field: 'since' },
      { name: 'a fractional since', query: { collection: 'notes', since: '1.5' }, status: 400, code: 'validation_failed', field: 'since' },
      {
        name: 'a since that is not a number',
        query: { collection: 'notes', since: 'abc' },
        status: 400,
        code: 'validation_failed',
        field: 'since',
      },
      {
        name: 'a since after the latest seq',
        query: { collection: 'notes', since: 4 },
        status: 400,
        code: 'validation_failed',
        field: 'since',
      },
      {
        name: 'an unknown query parameter',
        query: { collection: 'notes', limit: 5 },
        status: 400,
        code: 'validation_failed',
        field: 'limit',
      },
      { name: 'a collection that does not exist', query: { collection: 'nothing' }, status: 404, code: 'not_found' },
      { name: "another account's collection", key: 'stranger', query: { collection: 'notes' }, status: 404, code: 'not_found' },
    ];
    for (const scenario of scenarios) {
      it(`${scenario.status} ${scenario.code} for ${scenario.name}`, async () => {
        const keys = { owner: owner.key, stranger: stranger.key, unknown: 'rb_unknownunknownunknownunknownunk', none: undefined };
        const answer = await refusal(server.url, keys[scenario.key ?? 'owner'], scenario.query, { headers: scenario.headers });
        expect(answer.status).to.equal(scenario.status);
        expect(answer.problem.code).to.equal(scenario.code);
        if (scenario.status === 401) expect(answer.headers['www-authenticate']).to.equal('Bearer realm="rowbase"');
        if (scenario.field) expect(answer.problem.errors?.map((error) => error.name)).to.include(scenario.field);
      });
    }

    it('400 for a parameter given twice', async () => {
      const url = `${feedUrl(server.url, owner.key, { collection: 'notes' })}&collection=notes`;
      const answer = await refuseRaw(url);
      expect(answer.status).to.equal(400);
    });

    it('401 for api_key given twice, even with the same key', async () => {
      const url = `${feedUrl(server.url, owner.key, { collection: 'notes' })}&api_key=${owner.key}`;
      expect((await refuseRaw(url)).status).to.equal(401);
    });

    it('404 for a WebSocket upgrade to another path', async () => {
      const answer = await refuseRaw(feedUrl(server.url, owner.key, { collection: 'notes' }).replace('/ws?', '/v1/collections?'));
      expect(answer.status).to.equal(404);
    });

    // Only the path `/ws` is the feed, read as the HTTP API reads paths: `//evil/ws` is the path
    // `//evil/ws`, not a host `evil` and the path `/ws`, and no dot segment is resolved.
    const otherPaths = ['//evil/ws', '//x/ws', '//evil:80/ws', '///ws', '/ws/', '/WS', '/ws;x', '/%77s', '/./ws', '/a/../ws'];
    for (const path of otherPaths) {
      it(`404 not_found for an upgrade to ${path}, as the HTTP API answers a plain GET of it`, async () => {
        const target = `${path}?collection=notes&api_key=${owner.key}`;
        const [upgrade, plain] = await Promise.all(
          [websocketHeaders, { Host: 'localhost' }].map(async (headers) => {
            const [{ status, headers: answered, text }] = await rawExchange(server.url, head(`GET ${target} HTTP/1.1`, headers));
            return [status, refusalProblem(status, answered.get('content-type'), text).code];
          }),
        );
        expect(upgrade, 'the upgrade').to.deep.equal([404, 'not_found']);
        expect(plain, 'a plain GET').to.deep.equal(upgrade);
      });
    }

    // RFC 9112 §3.2.2: a server accepts the absolute form, as the HTTP API does (`GET http://host/health`).
    for (const target of ['http://host/ws', 'https://example.com:8443/ws']) {
      it(`the feed for the absolute-form target ${target}`, async () => {
        const request = head(`GET ${target}?collection=notes&api_key=${owner.key} HTTP/1.1`, websocketHeaders);
        const [{ status }] = await rawExchange(server.url, request);
        expect(status).to.equal(101);
      });
    }

    it('400 for an upgrade request that is not a WebSocket handshake', async () => {
      const { status, body } = await rawUpgrade(server.url, owner.key, 'GET', { upgrade: 'websocket' });
      expect(status).to.equal(400);
      expect(body.errors.map((error: { name: string }) => error.name)).to.deep.equal(['sec-websocket-key', 'sec-websocket-version']);
    });

    it('405 with Allow: GET for an upgrade with another method', async () => {
      const { status, headers, body } = await rawUpgrade(server.url, owner.key, 'POST', {
        upgrade: 'websocket',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        'sec-websocket-version': '13',
      });
      expect([status, body.code, headers.allow]).to.deep.equal([405, 'method_not_allowed', 'GET']);
    });

    it('429 quota_exceeded past the plan, counting each accepted upgrade, and nothing is upgraded', async () => {
      await server.store.setPlan({ name: 'three-a-month', quota: 3, period: 'month', rate: null });
      const client = await server.client(undefined, 'three-a-month');
      await client.post('/v1/collections', { name: 'notes' });
      const accepted = await FeedClient.open(server.url, client.key, { collection: 'notes' });
      await accepted.close();
      const usage = await client.get<{ used: number; remaining: number }>('/v1/usage');
      expect(usage.body).to.include({ used: 3, remaining: 0 }, 'the insert, the upgrade and this request');
      const connections = server.feed.connections;
      const answer = await refusal(server.url, client.key, { collection: 'notes' });
      expect(answer.status).to.equal(429);
      expect(answer.problem.code).to.equal('quota_exceeded');
      expect(Number(answer.headers['retry-after'])).to.be.greaterThan(0);
      expect(server.feed.connections).to.equal(connections);
    });
  });

  describe('refuses a request that is no WebSocket upgrade, before looking at its key', () => {
    const handshake = ['connection', 'upgrade', 'sec-websocket-key', 'sec-websocket-version'];
    const scenarios: {
      name: string;
      method?: string;
      /** The request line's HTTP version; default 1.1. */
      version?: string;
      key?: 'none';
      headers: Record<string, string>;
      body?: string;
      status: number;
      errors?: string[];
    }[] = [
      { name: 'a plain GET', headers: { Host: 'localhost' }, status: 400, errors: handshake },
      { name: 'a plain GET without a key', key: 'none', headers: { Host: 'localhost' }, status: 400, errors: handshake },
      {
        name: 'Upgrade: websocket without Connection: Upgrade',
        headers: { ...websocketHeaders, Connection: 'keep-alive' },
        status: 400,
        errors: ['connection'],
      },
      {
        name: 'an upgrade to h2c',
        headers: {
          ...websocketHeaders,
          Connection: 'Upgrade, HTTP2-Settings',
          Upgrade: 'h2c',
          'HTTP2-Settings': 'AAMAAABkAARAAAAAAAIAAAAA',
        },
        status: 400,
        errors: ['upgrade'],
      },
      { name: 'a plain POST', method: 'POST', headers: { Host: 'localhost' }, status: 405 },
      // RFC 6455 §4.1: every handshake carries Host.
      {
        name: 'an upgrade without Host',
        headers: Object.fromEntries(Object.entries(websocketHeaders).filter(([name]) => name !== 'Host')),
        status: 400,
        errors: ['host'],
      },
      // RFC 9112 §3.2: one Host line, never two, whichever would be meant (names are case-insensitive).
      { name: 'an upgrade with two Host lines', headers: { ...websocketHeaders, host: 'elsewhere' }, status: 400, errors: ['host'] },
      { name: 'a plain GET with two Host lines', headers: { Host: 'localhost', host: 'localhost' }, status: 400, errors: ['host'] },
      // RFC 6455 §4.1: the handshake is an HTTP/1.1 request.
      { name: 'an HTTP/1.0 upgrade', version: '1.0', headers: websocketHeaders, status: 400, errors: [] },
      // The feed speaks no subprotocol: agreeing to the client's first one (as `ws` does by default)
      // would claim one it does not speak.
      {
        name: 'an upgrade offering subprotocols',
        headers: { ...websocketHeaders, 'Sec-WebSocket-Protocol': 'graphql-ws, chat' },
        status: 400,
        errors: ['sec-websocket-protocol'],
      },
      {
        name: 'an upgrade with a malformed Sec-WebSocket-Protocol',
        headers: { ...websocketHeaders, 'Sec-WebSocket-Protocol': 'a b,,' },
        status: 400,
        errors: ['sec-websocket-protocol'],
      },
      // Its bytes would be read as the client's first WebSocket frames.
      {
        name: 'an upgrade with a body',
        headers: { ...websocketHeaders, 'Content-Length': '5' },
        body: 'hello',
        status: 400,
        errors: ['content-length'],
      },
      {
        name: 'an upgrade with a chunked body',
        headers: { ...websocketHeaders, 'Transfer-Encoding': 'chunked' },
        body: '5\r\nhello\r\n0\r\n\r\n',
        status: 400,
        errors: ['transfer-encoding'],
      },
    ];
    it('400 for a plain HEAD, as for a plain GET, without the body', async () => {
      const response = await fetch(`${server.url}/ws?collection=notes`, { method: 'HEAD' });
      expect([response.status, response.headers.get('content-type'), await response.text()]).to.deep.equal([
        400,
        'application/problem+json',
        '',
      ]);
    });

    for (const scenario of scenarios) {
      it(`${scenario.status} for ${scenario.name}, not counted`, async () => {
        const client = await server.client();
        const before = await client.get<{ used: number }>('/v1/usage');
        const query = scenario.key === 'none' ? '' : `&api_key=${client.key}`;
        const requestLine = `${scenario.method ?? 'GET'} /ws?collection=notes${query} HTTP/${scenario.version ?? '1.1'}`;
        const request = head(requestLine, scenario.headers) + (scenario.body ?? '');
        const [{ status, headers, text }] = await rawExchange(server.url, request);
        const problem = refusalProblem(status, headers.get('content-type'), text);
        expect(status).to.equal(scenario.status);
        if (status === 405) expect(headers.get('allow')).to.equal('GET, HEAD');
        else expect([problem.code, problem.errors?.map((error) => error.name)]).to.deep.equal(['validation_failed', scenario.errors]);
        const after = await client.get<{ used: number }>('/v1/usage');
        expect(after.body.used - before.body.used, 'only the read of usage counts').to.equal(1);
      });
    }
  });

  describe('counts toward usage', () => {
    let small: TestServer;
    before(async () => {
      small = await startTestServer({ eventsRetainCount: 1 }, { backend });
    });
    after(() => small.stop());
    const usedBy = async (client: Client) => (await client.get<{ used: number }>('/v1/usage')).body.used;

    it('every upgrade with a valid key, once, whatever its outcome, as a /v1 request', async () => {
      const client = await small.client();
      const other = await small.client();
      await other.post('/v1/collections', { name: 'theirs' });
      await client.post('/v1/collections', { name: 'notes' });
      await client.post('/v1/collections/notes/rows', [{ n: 1 }, { n: 2 }, { n: 3 }]);
      await small.feed.pruner.runOnce();
      const before = await usedBy(client);
      const refused: [Query, number][] = [
        [{}, 400],
        [{ collection: '1notes' }, 400],
        [{ collection: 'notes', events: 'upsert' }, 400],
        [{ collection: 'notes', limit: 5 }, 400],
        [{ collection: 'notes', since: 4 }, 400],
        [{ collection: 'notes', since: 0 }, 410],
        [{ collection: 'nothing' }, 404],
        [{ collection: 'theirs' }, 404],
      ];
      for (const [query, status] of refused) {
        expect((await refusal(small.url, client.key, query)).status, JSON.stringify(query)).to.equal(status);
      }
      const feed = await FeedClient.open(small.url, client.key, { collection: 'notes' });
      await feed.close();
      expect((await usedBy(client)) - before, 'each refusal, the accepted upgrade and this read').to.equal(refused.length + 2);
    });

    it('no upgrade refused 401, or before its key is looked at', async () => {
      const client = await small.client();
      const before = await usedBy(client);
      const differentKeys = await refusal(small.url, client.key, { collection: 'notes' }, { headers: { 'x-api-key': 'rb_somethingelse' } });
      expect(differentKeys.status).to.equal(401);
      expect((await refuseRaw(feedUrl(small.url, client.key, { collection: 'notes' }).replace('/ws?', '/v1/ws?'))).status).to.equal(404);
      expect((await rawUpgrade(small.url, client.key, 'PUT', { upgrade: 'websocket' })).status).to.equal(405);
      expect((await rawUpgrade(small.url, client.key, 'GET', { upgrade: 'websocket' })).status).to.equal(400);
      expect((await usedBy(client)) - before, 'only this read').to.equal(1);
    });

    it('refuses 429 over the quota whatever else is wrong, and counts none of those', async () => {
      await small.store.setPlan({ name: 'two-a-month', quota: 2, period: 'month', rate: null });
      const client = await small.client(undefined, 'two-a-month');
      await client.post('/v1/collections', { name: 'notes' });
      expect((await refusal(small.url, client.key, { collection: 'nothing' })).status, 'the second request').to.equal(404);
      for (const query of [{ collection: 'nothing' }, { collection: 'notes', events: 'upsert' }, { collection: 'notes' }]) {
        const answer = await refusal(small.url, client.key, query);
        expect([answer.status, answer.problem.code], JSON.stringify(query)).to.deep.equal([429, 'quota_exceeded']);
      }
      const principal = await small.store.findPrincipal(client.key as string);
      expect((await small.meter.usage(principal?.accountId as number)).used).to.equal(2);
    });
  });

  describe('accepts', () => {
    for (const via of ['query', 'bearer', 'header'] as const) {
      it(`the key in ${{ query: 'the api_key query parameter', bearer: 'an Authorization Bearer header', header: 'an x-api-key header' }[via]}`, async () => {
        const feed = await FeedClient.open(server.url, owner.key, { collection: 'notes' }, { via });
        expect(feed.ready).to.deep.equal({ type: 'ready', collection: 'notes', events: ['insert', 'update', 'delete'], seq: 3 });
        await feed.close();
      });
    }

    // The key is the feed's only credential, never a cookie: a page of another site can subscribe only
    // with a key it holds, so Origin decides nothing (no cross-site WebSocket hijacking to guard against).
    it('an upgrade from any Origin', async () => {
      const feed = await FeedClient.open(
        server.url,
        owner.key,
        { collection: 'notes' },
        { headers: { origin: 'https://elsewhere.example' } },
      );
      expect(feed.ready.seq).to.equal(3);
      await feed.close();
    });

    // Off: compressing costs memory per socket (a deflate context each), and frames are made once for
    // every socket (src/feed/frames.ts).
    it('without permessage-deflate, though the client offers it', async () => {
      const socket = new WebSocket(feedUrl(server.url, owner.key, { collection: 'notes' }), { perMessageDeflate: true });
      const upgraded = once(socket, 'upgrade');
      await once(socket, 'open');
      const [response] = await upgraded;
      expect([response.headers['sec-websocket-extensions'], socket.extensions]).to.deep.equal([undefined, '']);
      socket.close();
      await once(socket, 'close');
    });

    it('the same key in the query and a header', async () => {
      const feed = await FeedClient.open(server.url, owner.key, { collection: 'notes' }, { headers: { 'x-api-key': owner.key as string } });
      expect(feed.ready.seq).to.equal(3);
      await feed.close();
    });
  });

  it('never writes the key to the log', async () => {
    const { logged, log: logOf } = await startLoggedServer(backend);
    const client = await logged.client();
    try {
      await client.post('/v1/collections', { name: 'notes' });
      const feed = await FeedClient.open(logged.url, client.key, { collection: 'notes' });
      await client.post('/v1/collections/notes/rows', [{ text: 'x' }]);
      await feed.changesCount(1);
      await feed.close();
      await refusal(logged.url, client.key, { collection: 'nothing' });
      await refusal(logged.url, client.key, { collection: 'notes', since: 99 });
      await refusal(logged.url, `${client.key}x`, { collection: 'notes' });
    } finally {
      await logged.stop();
    }
    const log = logOf();
    expect(log, 'the log').to.include('feed subscribed');
    expect(log, 'the log').not.to.include(client.key);
    expect(log, 'the log').not.to.include('api_key');
  });

  // Node's parser passes these on; `new URL` throws on them, with the whole target in the error.
  it('400 validation_failed for a request target that is not a URL, with neither target nor key in the log', async () => {
    const { logged, log } = await startLoggedServer(backend);
    const client = await logged.client();
    try {
      await client.post('/v1/collections', { name: 'cc' });
      for (const target of ['http://[::1/ws', '//[', '//a:99999/ws', 'http://x:abc/ws', '//%zz/ws']) {
        const request = head(`GET ${target}?collection=cc&api_key=${client.key} HTTP/1.1`, websocketHeaders);
        const [{ status, headers, text }] = await rawExchange(logged.url, request);
        const problem = refusalProblem(status, headers.get('content-type'), text);
        expect([status, problem.code, problem.errors], target).to.deep.equal([
          400,
          'validation_failed',
          [{ in: 'path', name: '', message: 'is not a valid URL' }],
        ]);
      }
      const feed = await FeedClient.open(logged.url, client.key, { collection: 'cc' });
      await feed.close();
    } finally {
      await logged.stop();
    }
    expect(log(), 'the log').to.include('feed subscribed');
    for (const secret of [client.key as string, 'api_key', '[::1', 'x:abc', '%zz']) expect(log(), 'the log').not.to.include(secret);
  });
});

/** A server of `backend` that logs everything (level trace) to a string. */
async function startLoggedServer(backend: BackendName): Promise<{ logged: TestServer; log: () => string }> {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const logged = await startTestServer({}, { backend, log: createLogger('trace', sink) });
  return { logged, log: () => lines.join('') };
}

/** An upgrade request to /ws with hand-made headers, sent with node:http; its answer must be a problem. */
async function rawUpgrade(base: string, key: string | undefined, method: string, headers: Record<string, string>) {
  const options = { method, headers: { ...headers, authorization: `Bearer ${key}`, connection: 'Upgrade' } };
  const response = await new Promise<IncomingMessage>((resolve, reject) =>
    request(`${base}/ws?collection=notes`, options, resolve).on('error', reject).end(),
  );
  let text = '';
  for await (const chunk of response) text += chunk;
  expect(response.headers['content-type']).to.equal('application/problem+json');
  return { status: response.statusCode, headers: response.headers, body: JSON.parse(text) };
}

/** A refusal for a URL built by hand. */
function refuseRaw(url: string): Promise<{ status: number }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    socket.on('open', () => reject(new Error('the upgrade was accepted')));
    socket.on('error', reject);
    socket.on('unexpected-response', (request, response) => {
      request.destroy();
      resolve({ status: response.statusCode ?? 0 });
    });
  });
}
