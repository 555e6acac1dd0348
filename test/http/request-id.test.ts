// Request ids (openapi.yaml, X-Request-Id and Problem.instance): the one sent when sane, else a new one, on
// every answer, in every problem body and on the log lines of the request; feed connections have one too.
import { once } from 'node:events';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import WebSocket from 'ws';
import { createLogger } from '../../src/log.ts';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { refusal } from '../support/feed.ts';
import { expectProblem, rawRequest } from '../support/raw.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describeEachBackend('request ids', (backend) => {
  let server: TestServer;
  let client: Client;
  const lines: string[] = [];
  /** The log's JSON lines so far. */
  const logged = () =>
    lines
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);

  before(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    server = await startTestServer({ logRequests: true }, { backend, log: createLogger('info', sink) });
    client = await server.client();
    await client.post('/v1/collections', { name: 'notes' });
  });
  after(() => server.stop());

  it('makes a new id, a UUID, for a request that sends none, and answers it', async () => {
    const first = await client.get('/health');
    const second = await client.get('/health');
    expect(first.headers.get('x-request-id')).to.match(UUID);
    expect(second.headers.get('x-request-id')).to.match(UUID);
    expect(first.headers.get('x-request-id')).not.to.equal(second.headers.get('x-request-id'));
  });

  it('keeps a sane X-Request-Id the request sends', async () => {
    for (const sent of ['abc', 'req-42_x.y:z', '0af7651916cd43dd8448eb211c80319c', 'a'.repeat(128)]) {
      const response = await client.get('/health', { headers: { 'x-request-id': sent } });
      expect(response.headers.get('x-request-id'), sent).to.equal(sent);
    }
  });

  it('replaces one that is not a sane token with a new id', async () => {
    for (const sent of ['a'.repeat(129), 'has space', 'quote"d', '{json}', 'a/b', 'a,b']) {
      const response = await client.get('/health', { headers: { 'x-request-id': sent } });
      expect(response.headers.get('x-request-id'), sent).to.match(UUID);
    }
  });

  it('names the request in every problem as instance, the id on its answer and its access-log line', async () => {
    const scenarios = [
      { name: 'an unknown route', request: () => client.get('/v1/nowhere', { headers: { 'x-request-id': 'trace-404' } }), status: 404 },
      {
        name: 'no key',
        request: () => server.anonymous().get('/v1/collections', { headers: { 'x-request-id': 'trace-401' } }),
        status: 401,
      },
      {
        name: 'a bad query',
        request: () => client.get('/v1/collections/notes/rows?limit=x', { headers: { 'x-request-id': 'trace-400' } }),
        status: 400,
      },
      {
        name: 'a missing row',
        request: () => client.get('/v1/collections/notes/rows/9', { headers: { 'x-request-id': 'trace-row' } }),
        status: 404,
      },
      { name: 'a bad id sent', request: () => client.get('/v1/nowhere', { headers: { 'x-request-id': 'bad id' } }), status: 404 },
    ];
    for (const { name, request, status } of scenarios) {
      const response = await request();
      expect(response.status, name).to.equal(status);
      const id = response.headers.get('x-request-id') as string;
      expect(id, name).to.match(/^(trace-[a-z0-9]+|[0-9a-f-]{36})$/);
      expect((response.body as { instance: string }).instance, name).to.equal(`urn:rowbase:request:${id}`);
      const line = logged().find((entry) => entry.msg === 'request' && entry.requestId === id);
      expect(line, `${name}: the access-log line`).to.include({ status });
    }
  });

  it('answers HEAD, a 405, a 417 and a refused CONNECT with an id too', async () => {
    const head = await client.request('HEAD', '/v1/collections/notes/rows/9', { headers: { 'x-request-id': 'trace-head' } });
    expect(head.status).to.equal(404);
    expect(head.headers.get('x-request-id')).to.equal('trace-head');
    const put = await client.request('PUT', '/v1/collections', { headers: { 'x-request-id': 'trace-405' } });
    expect(put.status).to.equal(405);
    expect((put.body as { instance: string }).instance).to.equal('urn:rowbase:request:trace-405');
    const expectation = await rawRequest(server.url, ['GET /health HTTP/1.1', 'Host: x', 'Expect: teapot', 'X-Request-Id: trace-417']);
    expectProblem(expectation, 417, 'expectation_failed');
    expect(expectation.headers['x-request-id']).to.equal('trace-417');
    expect(JSON.parse(expectation.body).instance).to.equal('urn:rowbase:request:trace-417');
    const tunnel = await rawRequest(server.url, ['CONNECT example.com:80 HTTP/1.1', 'Host: example.com:80', 'X-Request-Id: trace-connect']);
    expectProblem(tunnel, 400, 'validation_failed');
    expect(tunnel.headers['x-request-id']).to.equal('trace-connect');
  });

  it("gives a request Node's parser refuses a new id, on its answer and in its problem", async () => {
    const broken = await rawRequest(server.url, ['GET /health HTTP/1.1', 'Host: x', 'Content-Length: 1', 'Content-Length: 2']);
    expectProblem(broken, 400, 'validation_failed');
    expect(broken.headers['x-request-id']).to.match(UUID);
    expect(JSON.parse(broken.body).instance).to.equal(`urn:rowbase:request:${broken.headers['x-request-id']}`);
  });

  it("answers a feed upgrade's refusal with the id, in its header and its problem", async () => {
    const refused = await refusal(server.url, client.key, { collection: 'missing' }, { headers: { 'x-request-id': 'trace-ws-404' } });
    expect(refused.status).to.equal(404);
    expect(refused.headers['x-request-id']).to.equal('trace-ws-404');
    expect(refused.problem.instance).to.equal('urn:rowbase:request:trace-ws-404');
    const line = logged().find((entry) => entry.msg === 'request' && entry.requestId === 'trace-ws-404');
    expect(line).to.include({ operation: 'openFeed', route: '/ws', status: 404 });
  });

  it('gives a feed connection an id: on its 101, and on its log lines', async () => {
    const socket = new WebSocket(`${server.url.replace(/^http/, 'ws')}/ws?collection=notes`, {
      headers: { authorization: `Bearer ${client.key}`, 'x-request-id': 'trace-feed' },
    });
    // Both listened for at once: `ready` may come in the same read as the 101.
    const [upgraded, ready] = [once(socket, 'upgrade'), once(socket, 'message')];
    const [upgrade] = (await upgraded) as [{ headers: Record<string, string> }];
    expect(upgrade.headers['x-request-id']).to.equal('trace-feed');
    await ready;
    socket.close();
    await once(socket, 'close');
    const ofConnection = () => logged().filter((entry) => entry.requestId === 'trace-feed');
    const deadline = Date.now() + 5000;
    while (!ofConnection().some((entry) => entry.msg === 'feed closed') && Date.now() < deadline)
      await new Promise((resolve) => setImmediate(resolve));
    expect(ofConnection().map((entry) => entry.msg)).to.include.members(['request', 'feed subscribed', 'feed closed']);
    expect(ofConnection().find((entry) => entry.msg === 'request')).to.include({ operation: 'openFeed', status: 101 });
  });
});
