// Requests that offer an upgrade to anything but WebSocket are answered by the HTTP API as if they
// offered none (RFC 9110 §7.8), bodies and pipelining included. Sent byte for byte over node:net; every
// answer is checked against openapi.yaml.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { checkResponse } from '../support/contract.ts';
import { type ExchangedResponse, head, rawExchange, websocketHeaders } from '../support/raw.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/** What `curl --http2` adds to each request over plain HTTP. */
const h2c = { Connection: 'Upgrade, HTTP2-Settings', Upgrade: 'h2c', 'HTTP2-Settings': 'AAMAAABkAARAAAAAAAIAAAAA' };

describeEachBackend('a request offering an upgrade to another protocol', (backend) => {
  let server: TestServer;
  let owner: Client;
  before(async () => {
    server = await startTestServer({}, { backend });
    owner = await server.client();
    await owner.post('/v1/collections', { name: 'notes' });
  });
  after(() => server.stop());

  /** Sends the requests at once and returns their answers, each checked against openapi.yaml. */
  async function send(...requests: { method: string; path: string; headers: Record<string, string>; body?: string }[]) {
    const bytes = requests.map(
      ({ method, path, headers, body = '' }) => head(`${method} ${path} HTTP/1.1`, { Host: 'localhost', ...headers }) + body,
    );
    const responses = await rawExchange(server.url, bytes.join(''), requests.length);
    responses.forEach((response, index) => {
      checkResponse({ method: requests[index].method, path: requests[index].path.split('?')[0], ...response });
    });
    return responses;
  }
  const json = (response: ExchangedResponse) => JSON.parse(response.text);
  const auth = () => ({ Authorization: `Bearer ${owner.key}` });

  describe('is answered as if it offered none', () => {
    const scenarios: {
      name: string;
      method: string;
      path: string;
      headers?: () => Record<string, string>;
      body?: string;
      status: number;
      check?: (body: unknown) => void;
    }[] = [
      {
        name: 'GET /health',
        method: 'GET',
        path: '/health',
        status: 200,
        check: (body) => expect(body).to.deep.equal({ ok: true, service: 'rowbase' }),
      },
      {
        name: 'GET /v1/collections with a key',
        method: 'GET',
        path: '/v1/collections',
        headers: auth,
        status: 200,
        check: (body) => expect((body as { name: string }[]).map(({ name }) => name)).to.include('notes'),
      },
      { name: 'GET /v1/collections without a key', method: 'GET', path: '/v1/collections', status: 401 },
      { name: 'GET /openapi.yaml', method: 'GET', path: '/openapi.yaml', status: 200 },
      {
        name: 'POST /v1/collections with a JSON body',
        method: 'POST',
        path: '/v1/collections',
        headers: () => ({ ...auth(), 'Content-Type': 'application/json', 'Content-Length': '18' }),
        body: '{"name":"created"}',
        status: 201,
        check: (body) => expect(body).to.include({ name: 'created' }),
      },
      {
        name: 'POST …/rows with a chunked JSON body',
        method: 'POST',
        path: '/v1/collections/notes/rows',
        headers: () => ({ ...auth(), 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }),
        body: '7\r\n[{"n":1\r\n8\r\n},{"n":2\r\n2\r\n}]\r\n0\r\n\r\n',
        status: 201,
        check: (body) => expect((body as { n: number }[]).map(({ n }) => n)).to.deep.equal([1, 2]),
      },
      {
        name: 'a malformed JSON body',
        method: 'POST',
        path: '/v1/collections',
        headers: () => ({ ...auth(), 'Content-Type': 'application/json', 'Content-Length': '7' }),
        body: '{"name"',
        status: 400,
      },
    ];
    for (const scenario of scenarios) {
      it(`${scenario.status} for ${scenario.name}`, async () => {
        const headers = { ...h2c, ...scenario.headers?.() };
        const [response] = await send({ method: scenario.method, path: scenario.path, headers, body: scenario.body });
        expect(response.status, response.text).to.equal(scenario.status);
        scenario.check?.(json(response));
      });
    }

    it('whatever the protocol, and with keep-alive beside Upgrade in Connection', async () => {
      const headers = { Connection: 'keep-alive, Upgrade', Upgrade: 'TLS/1.0, HTTP/2.0' };
      const [response] = await send({ method: 'GET', path: '/health', headers });
      expect([response.status, json(response)]).to.deep.equal([200, { ok: true, service: 'rowbase' }]);
    });

    it('and counted once toward usage, like any /v1 request', async () => {
      const request = { method: 'GET', path: '/v1/collections', headers: { ...h2c, ...auth() } };
      const [first, second] = await send(request, request);
      const remaining = [first, second].map((response) => Number(response.headers.get('ratelimit-remaining')));
      expect(remaining[0] - remaining[1]).to.equal(1);
    });
  });

  it('answers the requests pipelined before and after it, in order', async () => {
    const [before, offering, after] = await send(
      { method: 'GET', path: '/v1/collections/notes', headers: auth() },
      { method: 'GET', path: '/health', headers: h2c },
      { method: 'GET', path: '/v1/collections', headers: auth() },
    );
    expect([before.status, offering.status, after.status]).to.deep.equal([200, 200, 200]);
    expect([json(before).name, json(offering).service, json(after).length > 0]).to.deep.equal(['notes', 'rowbase', true]);
  });

  it('goes to the feed when websocket is among the protocols it offers, in any case', async () => {
    const headers = { ...websocketHeaders, ...auth(), Upgrade: 'h2c, WebSocket' };
    const [response] = await rawExchange(server.url, head('GET /v1/collections HTTP/1.1', headers));
    // The feed's answer for a WebSocket upgrade to a path that is not /ws, where the HTTP API would say 200.
    expect([response.status, json(response).detail]).to.deep.equal([
      404,
      'There is no WebSocket route /v1/collections; the feed is on /ws.',
    ]);
  });
});
