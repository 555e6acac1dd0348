// End users' tokens on requests (docs/access.md): beside a publishable key in x-api-key, the token in
// `Authorization: Bearer` is verified against the account's issuers before anything else of the
// request; a token that does not verify is 401 invalid_token. An operation that needs a secret key
// (here, listing collections) answers a verified user the publishable key's 403.
import { expect } from 'chai';
import { SignJWT } from 'jose';
import { describeEachBackend } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Problem = { code: string; detail: string };

const SECRET = 'a shared secret of at least 32 bytes';
const ISSUER = 'https://backend.example/';

/** An HS256 token of the app's backend for `sub`, `claims` merged in, expiring in `seconds`. */
function tokenOf(sub: string, { seconds = 300, audience = 'app', secret = SECRET } = {}): Promise<string> {
  return new SignJWT({ sub })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(ISSUER)
    .setAudience(audience)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + seconds)
    .sign(new TextEncoder().encode(secret));
}

describeEachBackend('end users’ tokens on requests', (backend) => {
  let server: TestServer;
  let admin: Client;
  let publishable: string;
  /** A GET /v1/collections with the publishable key and `authorization`, if given. */
  const asApp = (authorization?: string) =>
    new Client(server.url).get<Problem>('/v1/collections', {
      headers: { 'x-api-key': publishable, ...(authorization ? { authorization } : {}) },
    });

  before(async () => {
    server = await startTestServer({}, { backend });
    admin = await server.client();
    expect((await admin.put('/v1/auth/issuers/backend', { issuer: ISSUER, audiences: ['app'], secret: SECRET })).status).to.equal(201);
    const made = await admin.post<{ key: string }>('/v1/keys', { kind: 'publishable', origins: ['https://app.example'] });
    expect(made.status).to.equal(201);
    publishable = made.body.key;
  });
  after(() => server.stop());

  it('verifies a good token, then answers the publishable key’s 403 where a secret key is needed', async () => {
    const answer = await asApp(`Bearer ${await tokenOf('ada')}`);
    expect(answer.status).to.equal(403);
    expect(answer.body.code).to.equal('forbidden');
  });

  it('answers an anonymous caller (no token) the same 403', async () => {
    const answer = await asApp();
    expect(answer.status).to.equal(403);
    expect(answer.body.code).to.equal('forbidden');
  });

  for (const [what, token, reason] of [
    ['an expired token', () => tokenOf('ada', { seconds: -120 }), /expired/i],
    ['a token for another audience', () => tokenOf('ada', { audience: 'other' }), /audience/i],
    ['a token signed with another secret', () => tokenOf('ada', { secret: 'another secret of at least 32 bytes!' }), /signature/i],
    ['no JWT at all', async () => 'not.a.jwt', /./],
  ] as const) {
    it(`refuses ${what}: 401 invalid_token saying why, with WWW-Authenticate`, async () => {
      const answer = await asApp(`Bearer ${await token()}`);
      expect(answer.status).to.equal(401);
      expect(answer.body.code).to.equal('invalid_token');
      expect(answer.body.detail).to.match(reason);
      expect(answer.headers.get('www-authenticate')).to.match(/^Bearer .*error="invalid_token"/);
    });
  }

  it('reads a Bearer value beside a publishable key as a token only when it is no key of ours', async () => {
    // Another key in Authorization is two keys, refused as before: 401 unauthorized.
    const answer = await asApp(`Bearer ${admin.key}`);
    expect(answer.status).to.equal(401);
    expect(answer.body.code).to.equal('unauthorized');
  });

  it('never reads a token beside a secret key: a Bearer JWT with a secret x-api-key is two credentials, 401', async () => {
    const answer = await new Client(server.url).get<Problem>('/v1/collections', {
      headers: { 'x-api-key': admin.key as string, authorization: `Bearer ${await tokenOf('ada')}` },
    });
    expect(answer.status).to.equal(401);
    expect(answer.body.code).to.equal('unauthorized');
  });

  it('stops accepting tokens of an issuer once it is deleted', async () => {
    const token = await tokenOf('ada');
    expect((await asApp(`Bearer ${token}`)).status).to.equal(403);
    expect((await admin.delete('/v1/auth/issuers/backend')).status).to.equal(204);
    try {
      // Within a second on every instance (the issuers are trusted half a second): waited for, not slept.
      const deadline = Date.now() + 2000;
      let answer = await asApp(`Bearer ${token}`);
      while (answer.status !== 401 && Date.now() < deadline) answer = await asApp(`Bearer ${token}`);
      expect(answer.status).to.equal(401);
      expect(answer.body.code).to.equal('invalid_token');
    } finally {
      await admin.put('/v1/auth/issuers/backend', { issuer: ISSUER, audiences: ['app'], secret: SECRET });
    }
  });
});
