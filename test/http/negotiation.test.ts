// What a plain REST client may send beside its request, and what rowbase does with it (openapi.yaml,
// info; docs/api.md, "HTTP"): Accept is not consulted (every body is JSON), nothing is compressed, Expect:
// 100-continue is honoured (any other expectation is a 417), there is no CORS: OPTIONS is a method like
// any other, and CONNECT, which asks for a tunnel, is a 400.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import { type Client, readResponse } from '../support/client.ts';
import { expectProblem, rawRequest } from '../support/raw.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const rows = '/v1/collections/negotiated/rows';

describeEachBackend('what a client may send beside its request', (backend) => {
  let server: TestServer;
  let client: Client;
  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
    expect((await client.post('/v1/collections', { name: 'negotiated' })).status).to.equal(201);
    const batch = Array.from({ length: 1000 }, (_, index) => ({ text: `row ${index} ${'x'.repeat(100)}` }));
    expect((await client.post(rows, batch)).status).to.equal(201);
  });
  after(() => server.stop());

  describe('Accept', () => {
    // RFC 9110 §12.5.1 lets a server disregard Accept; a 406 would break clients that send a browser's Accept.
    for (const accept of ['application/xml', 'text/html', 'application/json;q=0, */*;q=0', 'image/*']) {
      it(`is not consulted: Accept: ${accept} gets JSON, and problems as problems`, async () => {
        const page = await client.get(`${rows}?limit=1`, { headers: { accept } });
        expect(page.status).to.equal(200);
        expect(page.headers.get('content-type')).to.equal('application/json; charset=utf-8');
        const missing = await client.get(`${rows}/999999`, { headers: { accept } });
        expect(missing.status).to.equal(404);
        expect(missing.headers.get('content-type')).to.match(/^application\/problem\+json/);
      });
    }
  });

  describe('Accept-Encoding', () => {
    it('is not consulted: a page of 1000 rows comes uncompressed, whatever the client accepts', async () => {
      for (const encoding of ['gzip', 'br', 'gzip, deflate, br', '*']) {
        const page = await client.get<unknown[]>(`${rows}?limit=1000`, { headers: { 'accept-encoding': encoding } });
        expect(page.status).to.equal(200);
        expect(page.headers.has('content-encoding'), encoding).to.equal(false);
        expect(page.body).to.have.length(1000);
        expect(Number(page.headers.get('content-length'))).to.equal(Buffer.byteLength(page.text));
      }
    });

    it('a long answer of characters of two to four bytes: its Content-Length its bytes, HEAD its head alone', async () => {
      const path = '/v1/collections/lettered/rows';
      expect((await client.post('/v1/collections', { name: 'lettered' })).status).to.equal(201);
      const texts = Array.from({ length: 200 }, (_, index) => `${index} é€😀 ${'ß'.repeat(100)}`);
      const written = texts.map((text) => ({ text }));
      expect((await client.post(path, written)).status).to.equal(201);
      const page = await client.get<{ text: string }[]>(`${path}?limit=200`);
      expect(page.status).to.equal(200);
      expect(page.text.length).to.be.above(16 * 1024);
      expect(page.body.map(({ text }) => text)).to.deep.equal(texts);
      const bytes = Number(page.headers.get('content-length'));
      expect(bytes).to.equal(Buffer.byteLength(page.text)).and.above(page.text.length);
      const head = await client.request('HEAD', `${path}?limit=200`);
      expect(head.status).to.equal(200);
      expect(head.text).to.equal('');
      expect(Number(head.headers.get('content-length'))).to.equal(bytes);
    });
  });

  describe('Expect: 100-continue', () => {
    /** POSTs `body` after the server's 100 Continue, through node:http (fetch sends no Expect). */
    async function postAfterContinue(path: string, body: string, headers: Record<string, string>) {
      const { hostname, port } = new URL(server.url);
      const request = httpRequest({ host: hostname, port, path, method: 'POST', headers: { ...headers, expect: '100-continue' } });
      let continued = false;
      request.once('continue', () => {
        continued = true;
        request.end(body);
      });
      const response = await new Promise<IncomingMessage>((resolve, reject) => {
        request.once('response', resolve);
        request.once('error', reject);
      });
      return { continued, response: await readResponse<{ id: number }[]>('POST', path, response) };
    }

    it('is answered with 100 Continue, and the body read and stored', async () => {
      const json = { 'content-type': 'application/json', authorization: `Bearer ${client.key}` };
      const { continued, response } = await postAfterContinue(rows, '[{"text":"continued"}]', json);
      expect(continued).to.equal(true);
      expect(response.status).to.equal(201);
      expect((await client.get(`${rows}/${response.body[0].id}`)).body).to.include({ text: 'continued' });
    });
  });

  describe('Expect other than 100-continue', () => {
    /** Sends `method path` with `Expect: <expect>` through node:http, and reads the answer; the body is never sent. */
    async function expecting(method: string, path: string, expect: string) {
      const { hostname, port } = new URL(server.url);
      const request = httpRequest({ host: hostname, port, path, method, headers: { expect, authorization: `Bearer ${client.key}` } });
      request.end();
      const response = await new Promise<IncomingMessage>((resolve, reject) => {
        request.once('response', resolve);
        request.once('error', reject);
      });
      return readResponse<{ code: string }>(method, path, response);
    }

    for (const [method, path, value] of [
      ['POST', rows, '200-ok'],
      ['GET', '/health', 'something-else'],
      ['GET', '/v1/usage', '101-upgrade'],
    ] as const) {
      it(`is refused with a problem, 417 expectation_failed: ${method} ${path} with Expect: ${value}`, async () => {
        const response = await expecting(method, path, value);
        expect(response.status).to.equal(417);
        expect(response.headers.get('content-type')).to.equal('application/problem+json');
        expect(response.body.code).to.equal('expectation_failed');
      });
    }

    it('is refused to HEAD without the body', async () => {
      const response = await expecting('HEAD', '/health', 'other');
      expect([response.status, response.text]).to.deep.equal([417, '']);
    });
  });

  describe('CONNECT', () => {
    for (const target of ['/v1/usage', '127.0.0.1:80', 'localhost:443', '/ws']) {
      it(`is refused with 400 validation_failed, and the connection closed: CONNECT ${target}`, async () => {
        const response = await rawRequest(server.url, [
          `CONNECT ${target} HTTP/1.1`,
          `Host: ${target.startsWith('/') ? 'localhost' : target}`,
        ]);
        expectProblem(response, 400, 'validation_failed');
        expect(response.headers.connection).to.equal('close');
      });
    }
  });

  describe('OPTIONS and CORS', () => {
    const preflight = {
      origin: 'https://app.example',
      'access-control-request-method': 'GET',
      'access-control-request-headers': 'authorization',
    };
    // A preflight under /v1 is answered for any origin, with or without a key (docs/access.md, "CORS").
    // biome-ignore format: a table
    const answered = [
      { name: 'a CORS preflight to /v1 (no key, as browsers send it)', path: '/v1/collections', keyed: false, methods: 'GET, HEAD, POST' },
      { name: 'a CORS preflight to /v1 with a key', path: '/v1/collections', keyed: true, methods: 'GET, HEAD, POST' },
      { name: 'a CORS preflight to a row with a key', path: `${rows}/1`, keyed: true, methods: 'GET, HEAD, DELETE, PATCH' },
    ];
    for (const { name, path, keyed, methods } of answered) {
      it(`answers 204 to ${name}, allowing that origin and the path's methods`, async () => {
        const response = await (keyed ? client : server.anonymous()).request('OPTIONS', path, { headers: preflight });
        expect(response.status).to.equal(204);
        expect(response.headers.get('access-control-allow-origin')).to.equal(preflight.origin);
        expect(response.headers.get('access-control-allow-methods')).to.equal(methods);
      });
    }
    // Outside /v1 nothing is called from another origin: OPTIONS is a 405 there, as before.
    // biome-ignore format: a table
    const scenarios = [
      { name: 'a CORS preflight to /health', path: '/health', keyed: false, status: 405, allow: 'GET, HEAD' },
      { name: 'a CORS preflight to /openapi.yaml', path: '/openapi.yaml', keyed: false, status: 405, allow: 'GET, HEAD' },
    ];
    for (const { name, path, keyed, status, allow } of scenarios) {
      it(`answers ${status} to ${name}, with no Access-Control-* header`, async () => {
        const response = await (keyed ? client : server.anonymous()).request('OPTIONS', path, { headers: preflight });
        expect(response.status).to.equal(status);
        if (allow) expect(response.headers.get('allow')).to.equal(allow);
        expect([...response.headers.keys()].filter((header) => header.startsWith('access-control-'))).to.deep.equal([]);
      });
    }

    it('sends no Access-Control-* header to a cross-origin GET with a secret key, or outside /v1', async () => {
      for (const response of [
        await client.get('/v1/collections', { headers: { origin: 'https://app.example' } }),
        await server.anonymous().get('/health', { headers: { origin: 'https://app.example' } }),
      ]) {
        expect(response.status).to.equal(200);
        expect([...response.headers.keys()].filter((header) => header.startsWith('access-control-'))).to.deep.equal([]);
      }
    });
  });
});
