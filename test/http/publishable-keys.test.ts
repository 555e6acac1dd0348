// Publishable keys over HTTP (openapi.yaml, the `keys` tag and KeyKind; docs/access.md): made by an admin
// key with the web origins they may be used from, listed and revoked like other keys, and refused
// everywhere (403) until the collections' rules govern an operation.
import { expect } from 'chai';
import type { components } from '../../generated/openapi.ts';
import { describeEachBackend } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { refusal } from '../support/feed.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

type Key = components['schemas']['Key'];
type CreatedKey = components['schemas']['CreatedKey'];
type Problem = Omit<components['schemas']['Problem'], 'errors'> & { errors: components['schemas']['ValidationError'][] };

let accounts = 0;

describeEachBackend('publishable keys', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({}, { backend });
  });
  after(() => server.stop());

  /** An admin key of a new account, and a client with it. */
  async function owner() {
    const made = await server.store.createKey(`publishable-${++accounts}`, TEST_PLAN);
    return new Client(server.url, made.key);
  }

  describe('POST /v1/keys with kind publishable', () => {
    it('makes an rb_pub_ key of scope write with its origins and rate, listed by a 15-character prefix and revoked like any key', async () => {
      const admin = await owner();
      const made = await admin.post<CreatedKey>('/v1/keys', {
        kind: 'publishable',
        name: 'web app',
        origins: ['https://app.example', 'http://localhost:5173'],
        end_user_rate: 20,
      });

      expect(made.status).to.equal(201);
      const { key, ...shown } = made.body;
      expect(key).to.match(/^rb_pub_[A-Za-z0-9_-]{32}$/);
      expect(shown).to.deep.equal({
        prefix: key.slice(0, 15),
        name: 'web app',
        scope: 'write',
        collections: null,
        expires_at: null,
        kind: 'publishable',
        origins: ['https://app.example', 'http://localhost:5173'],
        end_user_rate: 20,
        created_at: shown.created_at,
        last_used_at: null,
      });
      const listed = await admin.get<Key[]>('/v1/keys');
      expect(listed.body.find(({ prefix }) => prefix === shown.prefix)).to.deep.equal(shown);
      expect(listed.body.filter(({ kind }) => kind === 'secret')).to.have.length(1);

      expect((await admin.delete(`/v1/keys/${shown.prefix}`)).status).to.equal(204);
      expect((await admin.get<Key[]>('/v1/keys')).body.map(({ prefix }) => prefix)).to.not.include(shown.prefix);
      expect((await new Client(server.url, key).get('/v1/collections')).status).to.equal(401);
    });

    it('takes scope write, or none, and no end_user_rate for no limit of its own', async () => {
      const admin = await owner();
      const made = await admin.post<CreatedKey>('/v1/keys', { kind: 'publishable', scope: 'write', origins: ['https://a.example:8443'] });
      expect(made.status).to.equal(201);
      expect(made.body).to.include({ scope: 'write', end_user_rate: null });
      expect(made.body.origins).to.deep.equal(['https://a.example:8443']);
    });

    it('makes a secret key as before when kind is left out or secret', async () => {
      const admin = await owner();
      for (const body of [{ scope: 'read' }, { kind: 'secret', scope: 'read', origins: null, end_user_rate: null }]) {
        const made = await admin.post<CreatedKey>('/v1/keys', body);
        expect(made.status).to.equal(201);
        expect(made.body.key).to.match(/^rb_[A-Za-z0-9_-]{32}$/);
        expect(made.body).to.include({ kind: 'secret', origins: null, end_user_rate: null, scope: 'read' });
      }
    });

    const publishable = (more: object) => ({ kind: 'publishable', origins: ['https://app.example'], ...more });
    const invalid = [
      { name: 'an empty list of origins', body: publishable({ origins: [] }), field: '/origins' },
      {
        name: '51 origins',
        body: publishable({ origins: Array.from({ length: 51 }, (_, n) => `https://app${n}.example`) }),
        field: '/origins',
      },
      { name: 'an origin twice', body: publishable({ origins: ['https://a.example', 'https://a.example'] }), field: '/origins' },
      { name: 'no origins', body: { kind: 'publishable' }, field: '/origins' },
      { name: 'origins of null', body: publishable({ origins: null }), field: '/origins' },
      {
        name: 'an origin with a path',
        body: publishable({ origins: ['https://a.example', 'https://b.example/app'] }),
        field: '/origins/1',
      },
      { name: 'an origin with a trailing slash', body: publishable({ origins: ['https://a.example/'] }), field: '/origins/0' },
      { name: 'an origin with a query', body: publishable({ origins: ['https://a.example?x=1'] }), field: '/origins/0' },
      { name: 'an origin with userinfo', body: publishable({ origins: ['https://me@a.example'] }), field: '/origins/0' },
      { name: 'the origin *', body: publishable({ origins: ['*'] }), field: '/origins/0' },
      { name: 'the origin null', body: publishable({ origins: ['null'] }), field: '/origins/0' },
      { name: 'an origin in uppercase', body: publishable({ origins: ['https://App.Example'] }), field: '/origins/0' },
      { name: "an origin with its scheme's default port", body: publishable({ origins: ['https://a.example:443'] }), field: '/origins/0' },
      { name: 'an ftp origin', body: publishable({ origins: ['ftp://a.example'] }), field: '/origins/0' },
      { name: 'an origin that is no URL', body: publishable({ origins: ['app.example'] }), field: '/origins/0' },
      { name: 'an origin that is no string', body: publishable({ origins: [7] }), field: '/origins/0' },
      { name: 'origins on a secret key', body: { scope: 'read', origins: ['https://a.example'] }, field: '/origins' },
      { name: 'end_user_rate on a secret key', body: { scope: 'read', end_user_rate: 5 }, field: '/end_user_rate' },
      { name: 'scope admin on a publishable key', body: publishable({ scope: 'admin' }), field: '/scope' },
      { name: 'scope read on a publishable key', body: publishable({ scope: 'read' }), field: '/scope' },
      { name: 'an end_user_rate of 0', body: publishable({ end_user_rate: 0 }), field: '/end_user_rate' },
      { name: 'an end_user_rate past 10000', body: publishable({ end_user_rate: 10_001 }), field: '/end_user_rate' },
      { name: 'an end_user_rate that is no integer', body: publishable({ end_user_rate: 1.5 }), field: '/end_user_rate' },
      { name: 'an unknown kind', body: { kind: 'public', scope: 'read' }, field: '/kind' },
    ];
    for (const { name, body, field } of invalid) {
      it(`refuses ${name} with a 400 naming it, and makes no key`, async () => {
        const admin = await owner();
        const refused = await admin.post<Problem>('/v1/keys', body);
        expect(refused.status).to.equal(400);
        expect(refused.body.code).to.equal('validation_failed');
        expect(refused.body.errors.map((error) => [error.in, error.name])).to.deep.include(['body', field]);
        expect((await admin.get<Key[]>('/v1/keys')).body).to.have.length(1);
      });
    }
  });

  describe('without rules', () => {
    let publishableKey: string;
    before(async () => {
      const admin = await owner();
      await admin.post('/v1/collections', { name: 'notes' });
      await admin.post('/v1/collections/notes/rows', [{ n: 1 }]);
      publishableKey = (await admin.post<CreatedKey>('/v1/keys', { kind: 'publishable', origins: ['https://app.example'] })).body.key;
    });

    // A collection's rows take a publishable key, and a collection without rules grants it nothing.
    const rows: [string, string, unknown?][] = [
      ['GET', '/v1/collections/notes/rows'],
      ['GET', '/v1/collections/notes/rows/1'],
      ['HEAD', '/v1/collections/notes/rows'],
      ['POST', '/v1/collections/notes/rows', [{ n: 2 }]],
      ['PATCH', '/v1/collections/notes/rows/1', { n: 3 }],
      ['DELETE', '/v1/collections/notes/rows/1'],
    ];
    for (const [method, path, json] of rows) {
      it(`answers ${method} ${path} with a publishable key 403: the collection has no rules, which grant nothing`, async () => {
        const answer = await new Client(server.url, publishableKey).request<Problem>(method, path, { json });
        expect(answer.status).to.equal(403);
        if (method === 'HEAD') return;
        expect(answer.body.code).to.equal('forbidden');
        expect(answer.body.detail).to.include('false denies every caller');
      });
    }

    const requests: [string, string, unknown?][] = [
      ['GET', '/v1/collections'],
      ['GET', '/v1/usage'],
      ['GET', '/v1/keys'],
      ['POST', '/v1/keys', { kind: 'publishable', origins: ['https://app.example'] }],
      ['GET', '/v1/webhooks'],
      ['POST', '/v1/webhooks', { url: 'https://hooks.example/other' }],
    ];
    for (const [method, path, json] of requests) {
      it(`answers ${method} ${path} with a publishable key 403: it needs a secret key`, async () => {
        const answer = await new Client(server.url, publishableKey).request<Problem>(method, path, { json });
        expect(answer.status).to.equal(403);
        if (method === 'HEAD') return;
        expect(answer.body.code).to.equal('forbidden');
        expect(answer.body.detail).to.include('needs a secret key');
      });
    }

    it('refuses the feed of a collection without rules to a publishable key with 403 before the upgrade', async () => {
      for (const via of ['query', 'bearer'] as const) {
        const refused = await refusal(server.url, publishableKey, { collection: 'notes' }, { via });
        expect(refused.status).to.equal(403);
        expect(refused.problem.code).to.equal('forbidden');
        expect(refused.problem.detail).to.include('read: false');
      }
    });

    it('writes nothing for a publishable key', async () => {
      const admin = await owner();
      await admin.post('/v1/collections', { name: 'notes' });
      const key = (await admin.post<CreatedKey>('/v1/keys', { kind: 'publishable', origins: ['https://app.example'] })).body.key;
      expect((await new Client(server.url, key).post('/v1/collections/notes/rows', [{ n: 1 }])).status).to.equal(403);
      expect((await admin.get('/v1/collections/notes/rows')).body).to.deep.equal([]);
    });
  });
});
