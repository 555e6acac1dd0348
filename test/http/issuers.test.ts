// Managing token issuers over HTTP (openapi.yaml, the `auth` tag; docs/access.md, "Token issuers").
// Nothing is fetched when an issuer is made: the URLs here are values only, and where the address rule
// is on, those it refuses are never connected to.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

interface Issuer {
  name: string;
  issuer: string;
  audiences: string[];
  key_source: 'jwks_uri' | 'discovery_url' | 'secret';
  jwks_uri: string | null;
  discovery_url: string | null;
  created_at: string;
  updated_at: string;
}

interface Problem {
  code: string;
  detail: string;
  errors?: { in: string; name: string; message: string }[];
}

const SECRET = 'a shared secret of at least 32 bytes';
const bySecret = { issuer: 'https://backend.example/', audiences: ['app'], secret: SECRET };
const byJwks = { issuer: 'https://auth.example/', audiences: ['app', 'admin'], jwks_uri: 'https://auth.example/.well-known/jwks.json' };
const byDiscovery = {
  issuer: 'https://id.example/',
  audiences: ['app'],
  discovery_url: 'https://id.example/.well-known/openid-configuration',
};

describeEachBackend('managing token issuers', (backend) => {
  let server: TestServer;
  let client: Client;
  before(async () => {
    server = await startTestServer({}, { backend });
  });
  after(() => server.stop());
  beforeEach(async () => {
    client = await server.client();
  });

  it('makes an issuer (201), replaces it (200), reads, lists and deletes it', async () => {
    const made = await client.put<Issuer>('/v1/auth/issuers/app', byJwks);
    expect(made.status).to.equal(201);
    expect(made.body).to.deep.include({ name: 'app', ...byJwks, key_source: 'jwks_uri', discovery_url: null });
    const replaced = await client.put<Issuer>('/v1/auth/issuers/app', byDiscovery);
    expect(replaced.status).to.equal(200);
    expect(replaced.body).to.deep.include({ name: 'app', ...byDiscovery, key_source: 'discovery_url', jwks_uri: null });
    expect(replaced.body.created_at).to.equal(made.body.created_at);
    expect((await client.get<Issuer>('/v1/auth/issuers/app')).body).to.deep.equal(replaced.body);
    expect((await client.request('HEAD', '/v1/auth/issuers/app')).status).to.equal(200);
    expect((await client.delete('/v1/auth/issuers/app')).status).to.equal(204);
    expect((await client.get('/v1/auth/issuers/app')).status).to.equal(404);
    expect((await client.request('HEAD', '/v1/auth/issuers/app')).status).to.equal(404);
    expect((await client.delete('/v1/auth/issuers/app')).status).to.equal(404);
  });

  it('never answers a secret back: key_source says there is one', async () => {
    const made = await client.put<Issuer>('/v1/auth/issuers/backend', bySecret);
    expect(made.status).to.equal(201);
    expect(made.body).to.deep.include({ key_source: 'secret', jwks_uri: null, discovery_url: null });
    for (const answer of [made, await client.get('/v1/auth/issuers/backend'), await client.get('/v1/auth/issuers')]) {
      expect(answer.text).not.to.include(SECRET);
      expect(answer.text).not.to.include('"secret":');
    }
  });

  it('lists the issuers by name in code point order', async () => {
    for (const name of ['b', 'B', 'a-1', 'A_2', 'a']) expect((await client.put(`/v1/auth/issuers/${name}`, bySecret)).status).to.equal(201);
    const listed = await client.get<Issuer[]>('/v1/auth/issuers');
    expect(listed.body.map(({ name }) => name)).to.deep.equal(['A_2', 'B', 'a', 'a-1', 'b']);
  });

  const refusals: [string, string, unknown, string | RegExp][] = [
    ['no key source', 'app', { issuer: 'i', audiences: ['a'] }, /none was given/],
    ['two key sources', 'app', { ...bySecret, jwks_uri: byJwks.jwks_uri }, /jwks_uri and secret were given/],
    ['three key sources', 'app', { ...byDiscovery, jwks_uri: byJwks.jwks_uri, secret: SECRET }, /jwks_uri and discovery_url and secret/],
    ['a secret of 31 characters', 'app', { ...bySecret, secret: 's'.repeat(31) }, '/secret'],
    ['no audience', 'app', { ...bySecret, audiences: [] }, '/audiences'],
    ['eleven audiences', 'app', { ...bySecret, audiences: [...'abcdefghijk'] }, '/audiences'],
    ['an issuer past 2,048 characters', 'app', { ...bySecret, issuer: 'i'.repeat(2049) }, '/issuer'],
    ['an issuer holding U+0000', 'app', { ...byJwks, issuer: 'a\u0000b' }, '/issuer'],
    ['an issuer holding a line feed', 'app', { ...bySecret, issuer: 'a\nb' }, '/issuer'],
    ['an unknown field', 'app', { ...bySecret, algorithm: 'HS256' }, '/algorithm'],
    ['a name that is no plain name', '1app', bySecret, 'issuer_name'],
    ['an ftp jwks_uri', 'app', { ...byJwks, jwks_uri: 'ftp://auth.example/jwks' }, /must be an http or https URL/],
    ['a jwks_uri with credentials', 'app', { ...byJwks, jwks_uri: 'https://u:p@auth.example/jwks' }, /credentials/],
    ['a jwks_uri on a private address', 'app', { ...byJwks, jwks_uri: 'http://10.0.0.1/jwks' }, /private address \(10\.0\.0\.1\)/],
    [
      'a discovery_url at the metadata address',
      'app',
      { ...byDiscovery, discovery_url: 'http://169.254.169.254/latest' },
      /private address \(169\.254\.169\.254\)/,
    ],
    ['a jwks_uri at a loopback name', 'app', { ...byJwks, jwks_uri: 'http://localhost:8080/jwks' }, /loopback name/],
  ];
  for (const [name, issuerName, body, says] of refusals) {
    it(`refuses ${name} with 400`, async () => {
      const refused = await client.put<Problem>(`/v1/auth/issuers/${issuerName}`, body);
      expect(refused.status).to.equal(400);
      expect(refused.body.code).to.equal('validation_failed');
      if (typeof says === 'string') expect(refused.body.errors?.map((error) => error.name)).to.include(says);
      else expect(refused.body.detail).to.match(says);
      expect((await client.get(`/v1/auth/issuers/${issuerName}`)).status).to.be.oneOf([400, 404]);
    });
  }

  it('takes URLs on private addresses where the server allows them', async () => {
    const open = await startTestServer({ webhooksAllowPrivate: true }, { backend });
    try {
      const admin = await open.client();
      expect((await admin.put('/v1/auth/issuers/app', { ...byJwks, jwks_uri: 'http://10.0.0.1/jwks' })).status).to.equal(201);
      expect((await admin.put('/v1/auth/issuers/app', { ...byJwks, jwks_uri: 'http://localhost:8080/jwks' })).status).to.equal(200);
    } finally {
      await open.stop();
    }
  });

  it('holds at most 20 issuers an account: 409 past it, and replacing one is still allowed', async () => {
    for (let n = 0; n < 20; n++) expect((await client.put(`/v1/auth/issuers/i${n}`, bySecret)).status).to.equal(201);
    const refused = await client.put<Problem>('/v1/auth/issuers/one-more', bySecret);
    expect(refused.status).to.equal(409);
    expect(refused.body.code).to.equal('conflict');
    expect((await client.put('/v1/auth/issuers/i0', byJwks)).status).to.equal(200);
    expect((await client.delete('/v1/auth/issuers/i1')).status).to.equal(204);
    expect((await client.put('/v1/auth/issuers/one-more', bySecret)).status).to.equal(201);
  });

  it("answers another account's issuer 404, and never lists it", async () => {
    expect((await client.put('/v1/auth/issuers/app', bySecret)).status).to.equal(201);
    const other = await server.client();
    expect((await other.get('/v1/auth/issuers/app')).status).to.equal(404);
    expect((await other.delete('/v1/auth/issuers/app')).status).to.equal(404);
    expect((await other.get('/v1/auth/issuers')).body).to.deep.equal([]);
    // Its own issuer of the same name is another.
    expect((await other.put('/v1/auth/issuers/app', byJwks)).status).to.equal(201);
    expect((await client.get<Issuer>('/v1/auth/issuers/app')).body.key_source).to.equal('secret');
  });

  it('is admin work of a key of the whole account: 403 to a write key, and to a key limited to collections', async () => {
    const account = `issuers-${backend}-limits`;
    await server.client(account);
    const writer = await server.client(account, TEST_PLAN, { scope: 'write' });
    const limited = await server.client(account, TEST_PLAN, { collections: ['notes'] });
    for (const caller of [writer, limited]) {
      const statuses = [
        (await caller.get('/v1/auth/issuers')).status,
        (await caller.get('/v1/auth/issuers/app')).status,
        (await caller.put('/v1/auth/issuers/app', bySecret)).status,
        (await caller.delete('/v1/auth/issuers/app')).status,
      ];
      expect(statuses).to.deep.equal([403, 403, 403, 403]);
    }
  });

  it('deletes once for one Idempotency-Key, replaying the first answer', async () => {
    expect((await client.put('/v1/auth/issuers/app', bySecret)).status).to.equal(201);
    const send = () => client.delete('/v1/auth/issuers/app', { headers: { 'idempotency-key': 'delete-app' } });
    expect((await send()).status).to.equal(204);
    const again = await send();
    expect(again.status).to.equal(204);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
  });
});
