// Requests no HTTP client sends, written byte for byte: each is answered with a problem, as every other
// bad request is (contract.md, "Errors"), and the server stays up.
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { expect } from 'chai';
import type { Client } from '../support/client.ts';
import { expectProblem, rawRequest } from '../support/raw.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describe('requests written by hand', () => {
  let server: TestServer;
  let client: Client;
  let other: Client;

  before(async () => {
    server = await startTestServer();
    client = await server.client();
    other = await server.client();
    expect((await client.post('/v1/collections', { name: 'mine' })).status).to.equal(201);
  });
  after(() => server.stop());

  afterEach(async () => {
    expect((await server.anonymous().get('/health')).status).to.equal(200);
  });

  for (const target of ['http://[::1/health', 'http://[::1/v1/collections']) {
    it(`answers 400 for a request target no URL parser reads: ${target}`, async () => {
      const response = await rawRequest(server.url, [`GET ${target} HTTP/1.1`, 'Host: x', `x-api-key: ${client.key}`]);
      expectProblem(response, 400, 'validation_failed');
    });
  }

  it('answers 401 for two Authorization lines, whichever comes first', async () => {
    for (const keys of [
      [client.key, other.key],
      [other.key, client.key],
      [client.key, client.key],
    ]) {
      const response = await rawRequest(server.url, [
        'GET /v1/collections HTTP/1.1',
        'Host: x',
        ...keys.map((key) => `Authorization: Bearer ${key}`),
      ]);
      expectProblem(response, 401, 'unauthorized');
    }
  });

  // Node's parser refuses these before any route runs; each still gets a problem, and the connection closes.
  for (const [name, lines, status, code] of [
    [
      'two different Content-Lengths',
      ['POST /v1/collections HTTP/1.1', 'Host: x', 'Content-Length: 2', 'Content-Length: 3'],
      400,
      'validation_failed',
    ],
    [
      'Transfer-Encoding beside Content-Length',
      ['POST /v1/collections HTTP/1.1', 'Host: x', 'Transfer-Encoding: chunked', 'Content-Length: 3'],
      400,
      'validation_failed',
    ],
    ['an unknown method', ['FROB /health HTTP/1.1', 'Host: x'], 400, 'validation_failed'],
    ['a header line without a colon', ['GET /health HTTP/1.1', 'Host: x', 'no colon here'], 400, 'validation_failed'],
    ['20 KiB of headers', ['GET /health HTTP/1.1', 'Host: x', `x-pad: ${'p'.repeat(20 * 1024)}`], 431, 'headers_too_large'],
  ] as const) {
    it(`answers ${status} ${code} for ${name}`, async () => {
      const response = await rawRequest(server.url, [...lines]);
      expectProblem(response, status, code);
      expect(response.headers.connection).to.equal('close');
    });
  }

  // RFC 9112 §3.2. Node's own answer to it was a 400 with an empty body.
  it('answers 400 validation_failed for an HTTP/1.1 request without Host, and an HTTP/1.0 one as usual', async () => {
    const response = await rawRequest(server.url, ['GET /health HTTP/1.1', 'Connection: close']);
    expectProblem(response, 400, 'validation_failed');
    expect(JSON.parse(response.body).errors).to.deep.equal([{ in: 'header', name: 'host', message: 'is required' }]);
    expect((await rawRequest(server.url, ['GET /health HTTP/1.0'])).status).to.equal(200);
  });

  // RFC 9112 §3.2: whichever Host would be meant, a request with two is refused, on every path.
  for (const [name, lines] of [
    ['the same Host twice', ['Host: x', 'Host: x']],
    ['two different Hosts', ['Host: x', 'host: y']],
  ] as const) {
    it(`answers 400 validation_failed for ${name}, on every route`, async () => {
      for (const requestLine of ['GET /health HTTP/1.1', 'GET /v1/collections/mine/rows HTTP/1.1', 'GET /v1/nothing HTTP/1.0']) {
        const response = await rawRequest(server.url, [requestLine, ...lines, `x-api-key: ${client.key}`, 'Connection: close']);
        expectProblem(response, 400, 'validation_failed');
        expect(JSON.parse(response.body).errors, requestLine).to.deep.equal([{ in: 'header', name: 'host', message: 'must be sent once' }]);
      }
    });
  }

  // What was received is a whole JSON batch by itself: a reader that took the end of the connection
  // for the end of the body would store it.
  it('stores nothing of a body whose client goes away before its Content-Length is sent, and stays up', async () => {
    const { hostname, port } = new URL(server.url);
    const received = once(server.server, 'request') as Promise<[IncomingMessage]>;
    const socket = connect(Number(port), hostname);
    await once(socket, 'connect');
    const head = ['POST /v1/collections/mine/rows HTTP/1.1', 'Host: x', `x-api-key: ${client.key}`, 'Content-Type: application/json'];
    socket.write(`${[...head, 'Content-Length: 100'].join('\r\n')}\r\n\r\n`);
    const [request] = await received;
    // The server reads the body, and has its first bytes, before the client goes.
    if (request.listenerCount('data') === 0)
      await new Promise<void>((resolve) => request.on('newListener', (event) => event === 'data' && resolve()));
    const read = once(request, 'data');
    socket.write('[{"cut":"short"}]');
    await read;
    // Node destroys the request with an `aborted` error, which events.once() would reject with.
    const closed = new Promise((resolve) => request.once('close', resolve));
    socket.destroy();
    await closed;
    // Writes are stored in the order they came: the cut batch would be stored before this one.
    expect((await client.post('/v1/collections/mine/rows', [{ after: true }])).status).to.equal(201);
    const rows = await client.get('/v1/collections/mine/rows');
    expect((rows.body as { after?: boolean }[]).map((row) => row.after)).to.deep.equal([true]);
  });

  it('answers one Authorization line as usual', async () => {
    const response = await rawRequest(server.url, ['GET /v1/collections HTTP/1.1', 'Host: x', `Authorization: Bearer ${client.key}`]);
    expect(response.status).to.equal(200);
    expect(JSON.parse(response.body).map((collection: { name: string }) => collection.name)).to.deep.equal(['mine']);
  });
});
