// CORS (openapi.yaml, `info`, "CORS"; docs/api.md, "HTTP"): preflights under /v1 answered for any origin
// with no key and not counted; a publishable key's answers readable from its own origins only, 403
// from another; a secret key's never; the refusals of a key, a token or an origin readable by any page.
import { expect } from 'chai';
import type { components } from '../../generated/openapi.ts';
import { describeEachBackend } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

type CreatedKey = components['schemas']['CreatedKey'];
type Usage = components['schemas']['Usage'];

const APP = 'https://app.example';
const OTHER = 'https://evil.example';
const EXPOSED =
  'ETag, Link, Location, Rowbase-Seq, Rowbase-Total-Count, Accept-Patch, Allow, WWW-Authenticate, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After, X-Request-Id, Idempotent-Replayed, Rowbase-Wait-Skipped';
let accounts = 0;

describeEachBackend('CORS', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({}, { backend });
  });
  after(() => server.stop());

  /** A secret admin key of a new account with a collection, and a publishable key of it for APP. */
  async function keys() {
    const made = await server.store.createKey(`cors-${++accounts}`, TEST_PLAN);
    const secret = new Client(server.url, made.key);
    await secret.post('/v1/collections', { name: 'notes' });
    const publishable = (await secret.post<CreatedKey>('/v1/keys', { kind: 'publishable', origins: [APP, 'http://localhost:5173'] })).body;
    return { secret, publishable: new Client(server.url, publishable.key) };
  }
  const used = async (secret: Client) => (await secret.get<Usage>('/v1/usage')).body.used;

  describe('a preflight', () => {
    const preflights = [
      { path: '/v1/collections/notes/rows', requested: 'POST', methods: 'GET, HEAD, POST, PATCH, DELETE' },
      { path: '/v1/collections/notes/rows/7', requested: 'PATCH', methods: 'GET, HEAD, DELETE, PATCH' },
      { path: '/v1/keys', requested: 'GET', methods: 'GET, HEAD, POST' },
      { path: '/v1/no-such-route', requested: 'GET', methods: 'GET, HEAD, POST, PUT, PATCH, DELETE' },
    ];
    for (const { path, requested, methods } of preflights) {
      it(`to ${path} is answered 204 for any origin, with no key: ${methods}`, async () => {
        const answer = await new Client(server.url).request('OPTIONS', path, {
          headers: {
            origin: OTHER,
            'access-control-request-method': requested,
            'access-control-request-headers': 'x-api-key, content-type',
          },
        });
        expect(answer.status).to.equal(204);
        expect(answer.text).to.equal('');
        expect(answer.headers.get('access-control-allow-origin')).to.equal(OTHER);
        expect(answer.headers.get('access-control-allow-methods')?.split(', ').sort()).to.deep.equal(methods.split(', ').sort());
        expect(answer.headers.get('access-control-allow-headers')).to.equal(
          'authorization, x-api-key, content-type, content-encoding, if-match, if-none-match, idempotency-key, prefer, x-request-id, last-event-id',
        );
        expect(answer.headers.get('access-control-max-age')).to.equal('600');
        expect(answer.headers.get('vary')).to.equal('Origin');
        expect(answer.headers.get('x-request-id')).to.be.a('string');
        expect(answer.headers.get('ratelimit-limit')).to.equal(null);
      });
    }

    it('is not counted, even with a key', async () => {
      const { secret, publishable } = await keys();
      const before = await used(secret);
      const headers = { origin: APP, 'access-control-request-method': 'GET' };
      expect((await publishable.request('OPTIONS', '/v1/collections/notes/rows', { headers })).status).to.equal(204);
      expect((await new Client(server.url).request('OPTIONS', '/v1/usage', { headers })).status).to.equal(204);
      expect(await used(secret)).to.equal(before + 1); // the usage read itself
    });

    it('is only an OPTIONS with Origin and Access-Control-Request-Method under /v1: any other OPTIONS is answered as before', async () => {
      const anonymous = new Client(server.url);
      expect((await anonymous.request('OPTIONS', '/v1/collections', { headers: { origin: APP } })).status).to.equal(401);
      expect(
        (await anonymous.request('OPTIONS', '/v1/collections', { headers: { 'access-control-request-method': 'GET' } })).status,
      ).to.equal(401);
      const health = await anonymous.request('OPTIONS', '/health', { headers: { origin: APP, 'access-control-request-method': 'GET' } });
      expect(health.status).to.equal(405);
      expect(health.headers.get('access-control-allow-origin')).to.equal(null);
    });
  });

  describe('a request with Origin and a publishable key', () => {
    it("from one of the key's origins carries the CORS headers on its answer, a problem included", async () => {
      const { publishable } = await keys();
      for (const origin of [APP, 'http://localhost:5173']) {
        const answer = await publishable.get('/v1/collections/notes/rows', { headers: { origin } });
        // Refused until rules exist (docs/access.md), and readable by the page.
        expect(answer.status).to.equal(403);
        expect((answer.body as { code: string }).code).to.equal('forbidden');
        expect(answer.headers.get('access-control-allow-origin')).to.equal(origin);
        expect(answer.headers.get('vary')).to.equal('Origin');
        expect(answer.headers.get('access-control-expose-headers')).to.equal(EXPOSED);
        expect(answer.headers.get('ratelimit-limit')).to.be.a('string');
      }
    });

    for (const origin of [OTHER, 'https://app.example:8443', 'http://app.example', 'null']) {
      it(`from ${origin}, not on the key's list, answers 403 origin_not_allowed, which the page may read, and is not counted`, async () => {
        const { secret, publishable } = await keys();
        const before = await used(secret);
        const answer = await publishable.get('/v1/collections/notes/rows', { headers: { origin } });
        expect(answer.status).to.equal(403);
        expect((answer.body as { code: string }).code).to.equal('origin_not_allowed');
        // The refusal alone is readable (it says only which origin the page sent), and never with credentials.
        expect(answer.headers.get('access-control-allow-origin')).to.equal(origin);
        expect(answer.headers.get('access-control-expose-headers')).to.equal(EXPOSED);
        expect(answer.headers.get('access-control-allow-credentials')).to.equal(null);
        expect(answer.headers.get('vary')).to.equal('Origin');
        expect(answer.headers.get('ratelimit-limit')).to.equal(null);
        expect(await used(secret)).to.equal(before + 1);
      });
    }

    it('without Origin is answered as before: 403 until rules exist, no CORS headers', async () => {
      const { publishable } = await keys();
      const answer = await publishable.get('/v1/collections/notes/rows');
      expect(answer.status).to.equal(403);
      expect((answer.body as { code: string }).code).to.equal('forbidden');
      expect(answer.headers.get('access-control-allow-origin')).to.equal(null);
    });
  });

  describe('a request with Origin refused for its key or token', () => {
    const refusals: { name: string; headers?: Record<string, string>; path?: string; code: string }[] = [
      { name: 'no key', code: 'unauthorized' },
      { name: 'an unknown key', headers: { 'x-api-key': 'rb_pub_noSuchKey' }, code: 'unauthorized' },
      {
        name: 'an unknown key in api_key, on the changes',
        path: '/v1/collections/notes/changes?api_key=rb_pub_noSuchKey',
        code: 'unauthorized',
      },
    ];
    for (const { name, headers, path, code } of refusals) {
      it(`answers ${name} 401 ${code}, which the page may read, WWW-Authenticate included`, async () => {
        const answer = await new Client(server.url).get(path ?? '/v1/collections/notes/rows', { headers: { ...headers, origin: OTHER } });
        expect(answer.status).to.equal(401);
        expect((answer.body as { code: string }).code).to.equal(code);
        expect(answer.headers.get('access-control-allow-origin')).to.equal(OTHER);
        expect(answer.headers.get('access-control-expose-headers')).to.equal(EXPOSED);
        expect(answer.headers.get('access-control-allow-credentials')).to.equal(null);
        expect(answer.headers.get('www-authenticate')).to.equal('Bearer realm="rowbase"');
      });
    }

    it("answers a publishable key's token that does not verify 401 invalid_token, which the page may read", async () => {
      const { publishable } = await keys();
      const headers = { origin: APP, 'x-api-key': publishable.key as string, authorization: 'Bearer not.a.token' };
      const answer = await new Client(server.url).get('/v1/collections/notes/rows', { headers });
      expect(answer.status).to.equal(401);
      expect((answer.body as { code: string }).code).to.equal('invalid_token');
      expect(answer.headers.get('access-control-allow-origin')).to.equal(APP);
    });

    it('without Origin carries no CORS header', async () => {
      const answer = await new Client(server.url).get('/v1/collections/notes/rows');
      expect(answer.status).to.equal(401);
      expect(answer.headers.get('access-control-allow-origin')).to.equal(null);
    });
  });

  describe('a request with Origin and a secret key', () => {
    it('is served as any, and never gets CORS headers', async () => {
      const { secret } = await keys();
      for (const origin of [APP, OTHER]) {
        const answer = await secret.post('/v1/collections/notes/rows', [{ n: 1 }], { headers: { origin } });
        expect(answer.status).to.equal(201);
        for (const name of ['access-control-allow-origin', 'access-control-expose-headers', 'vary']) {
          expect(answer.headers.get(name), name).to.equal(null);
        }
      }
    });
  });
});
