// The rate per end user of a publishable key (docs/access.md, "A rate per end user"): an end user (a
// token's sub, else the client's address) past the key's `end_user_rate` gets the plan's own 429
// rate_limited and headers, other end users do not, and instances of one database share the limit.
// Every request here is GET /v1/keys, which a publishable key is refused (403) and which counts all the
// same. The servers' meters read a clock the tests move by hand, so no rate refills behind their back.

import { request as httpRequest, type IncomingMessage } from 'node:http';
import { expect } from 'chai';
import { SignJWT } from 'jose';
import { describeEachBackend } from '../support/backends.ts';
import type { Client, Response } from '../support/client.ts';
import { readResponse } from '../support/client.ts';
import { refusal } from '../support/feed.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Problem = { code: string; detail: string };

const SECRET = 'the app backend’s secret, 32 bytes or more';
const ISSUER = 'https://backend.example/';

/** An HS256 token of the app's backend, for `sub` (none when undefined), valid for five minutes. */
function tokenFor(sub: string | undefined): Promise<string> {
  return new SignJWT(sub === undefined ? {} : { sub })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(ISSUER)
    .setAudience('app')
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode(SECRET));
}

/** Who calls: the publishable key, the end user's token if any, the local address to call from, and an X-Forwarded-For. */
interface Caller {
  key: string;
  token?: string;
  from?: string;
  forwardedFor?: string;
}

/** GET /v1/keys of `on` as `caller`, through node:http (fetch cannot choose the local address), checked against openapi.yaml. */
async function ask(on: TestServer, { key, token, from = '127.0.0.1', forwardedFor }: Caller): Promise<Response<Problem>> {
  const headers: Record<string, string> = { 'x-api-key': key };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  if (forwardedFor !== undefined) headers['x-forwarded-for'] = forwardedFor;
  const { hostname, port } = new URL(on.url);
  const request = httpRequest({ host: hostname, port, path: '/v1/keys', headers, localAddress: from, agent: false });
  request.end();
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    request.once('response', resolve);
    request.once('error', reject);
  });
  return readResponse<Problem>('GET', '/v1/keys', response);
}

/** The statuses of `times` calls of `caller`, one after another. */
async function statuses(on: TestServer, caller: Caller, times: number): Promise<number[]> {
  const answers: number[] = [];
  for (let i = 0; i < times; i++) answers.push((await ask(on, caller)).status);
  return answers;
}

const header = (response: Response, name: string) => response.headers.get(name);

describeEachBackend('a rate per end user of a publishable key', (backend) => {
  let now = Date.parse('2026-11-22T10:00:00.000Z');
  const clock = () => now;
  let server: TestServer;
  /** Another instance of the same database, behind one proxy it trusts (ROWBASE_TRUSTED_PROXIES=1). */
  let other: TestServer;
  let admin: Client;

  /** A new publishable key of the admin's account, with `end_user_rate`. */
  async function publishableKey(endUserRate: number | null): Promise<string> {
    const made = await admin.post<{ key: string }>('/v1/keys', {
      kind: 'publishable',
      origins: ['https://app.example'],
      end_user_rate: endUserRate,
    });
    expect(made.status).to.equal(201);
    return made.body.key;
  }

  before(async () => {
    server = await startTestServer({}, { backend, clock });
    other = await startTestServer({ trustedProxies: 1 }, { backend, clock, database: { url: server.databaseUrl, drop: async () => {} } });
    admin = await server.client();
    expect((await admin.put('/v1/auth/issuers/backend', { issuer: ISSUER, audiences: ['app'], secret: SECRET })).status).to.equal(201);
  });
  after(async () => {
    await other.stop();
    await server.stop();
  });

  describe('with a token', () => {
    it('refuses an end user past the rate with the plan’s 429 rate_limited and headers, not counted, while another end user gets through', async () => {
      const key = await publishableKey(3);
      const ada = { key, token: await tokenFor('ada') };
      const bob = { key, token: await tokenFor('bob') };
      const admitted: Response<Problem>[] = [];
      for (let i = 0; i < 3; i++) admitted.push(await ask(server, ada));
      expect(admitted.map((answer) => answer.status)).to.deep.equal([403, 403, 403]);

      const refused = await ask(server, ada);
      expect(refused.status).to.equal(429);
      expect(refused.body.code).to.equal('rate_limited');
      expect(refused.body.detail).to.equal(
        "The key's end_user_rate allows 3 requests a second to each end user, and this one (the token's sub) has made them.",
      );
      // Three tokens a second, none left: one is back in a third of a second, told in whole seconds.
      expect(header(refused, 'Retry-After')).to.equal('1');
      // The plan's headers, as the last request admitted left them: the 429 was not counted.
      const last = admitted[2];
      for (const name of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']) {
        expect(header(refused, name), name).to.equal(header(last, name));
      }

      const bobs = await ask(server, bob);
      expect(bobs.status).to.equal(403);
      expect(Number(header(bobs, 'RateLimit-Remaining'))).to.equal(Number(header(last, 'RateLimit-Remaining')) - 1);

      now += 1000;
      expect(await statuses(server, ada, 4)).to.deep.equal([403, 403, 403, 429]);
    });

    it('counts a token without sub by its client address, with the anonymous callers from there', async () => {
      const key = await publishableKey(2);
      const withoutSub = { key, token: await tokenFor(undefined), from: '127.0.0.3' };
      expect(await statuses(server, withoutSub, 2)).to.deep.equal([403, 403]);
      const refused = await ask(server, { key, from: '127.0.0.3' });
      expect(refused.status).to.equal(429);
      expect(refused.body.detail).to.match(/this one \(the client address: the request has no token with a sub\)/);
      expect((await ask(server, { key, token: await tokenFor('ada'), from: '127.0.0.3' })).status).to.equal(403);
    });

    it('keeps each key’s end users apart', async () => {
      const [first, second] = [await publishableKey(1), await publishableKey(1)];
      const token = await tokenFor('ada');
      expect(await statuses(server, { key: first, token }, 2)).to.deep.equal([403, 429]);
      expect((await ask(server, { key: second, token })).status).to.equal(403);
    });
  });

  describe('anonymous callers', () => {
    it('are limited per client address, whatever X-Forwarded-For says when no proxy is trusted', async () => {
      const key = await publishableKey(2);
      expect((await ask(server, { key, from: '127.0.0.2', forwardedFor: '192.0.2.1' })).status).to.equal(403);
      expect((await ask(server, { key, from: '127.0.0.2', forwardedFor: '192.0.2.2' })).status).to.equal(403);
      expect((await ask(server, { key, from: '127.0.0.2', forwardedFor: '192.0.2.3' })).status).to.equal(429);
      expect((await ask(server, { key, from: '127.0.0.4' })).status).to.equal(403);
    });

    it('behind a trusted proxy, are told apart by the address it forwards (the last entry), an IPv6 one by its /64', async () => {
      const key = await publishableKey(1);
      // The entries before the proxy's own are the client's to write: they tell no one apart.
      expect((await ask(other, { key, forwardedFor: '192.0.2.1, 198.51.100.7' })).status).to.equal(403);
      expect((await ask(other, { key, forwardedFor: '192.0.2.2, 198.51.100.7' })).status).to.equal(429);
      expect((await ask(other, { key, forwardedFor: '198.51.100.8' })).status).to.equal(403);

      expect((await ask(other, { key, forwardedFor: '2001:db8:1:2::1' })).status).to.equal(403);
      expect((await ask(other, { key, forwardedFor: '2001:db8:1:2:ffff::9' })).status).to.equal(429);
      expect((await ask(other, { key, forwardedFor: '2001:db8:1:3::1' })).status).to.equal(403);
    });
  });

  it('leaves a publishable key without end_user_rate to the plan alone', async () => {
    const key = await publishableKey(null);
    expect(new Set(await statuses(server, { key, token: await tokenFor('ada') }, 12))).to.deep.equal(new Set([403]));
  });

  it('counts the feed’s upgrades with a publishable key toward its end user, by address', async () => {
    const key = await publishableKey(2);
    for (let i = 0; i < 2; i++) {
      // Refused for the key's kind (the feed takes no publishable key yet), or for the collection: counted either way.
      expect((await refusal(server.url, key, { collection: 'absent' })).status).to.be.oneOf([403, 404]);
    }
    const refused = await refusal(server.url, key, { collection: 'absent' });
    expect(refused.status).to.equal(429);
    expect(refused.problem.code).to.equal('rate_limited');
    expect(refused.headers['retry-after']).to.equal('1');
    expect(refused.headers['ratelimit-limit']).to.be.a('string');
  });

  describe('on two instances of one database', () => {
    it('shares the rate: what one instance admitted is taken from the other’s bucket at their next flushes', async () => {
      const key = await publishableKey(3);
      const ada = { key, token: await tokenFor('ada') };
      const bob = { key, token: await tokenFor('bob') };
      expect((await ask(other, ada)).status).to.equal(403);
      await other.meter.flush();

      // One instance alone admits its whole bucket: it knows nothing yet of the other's request.
      expect(await statuses(server, ada, 4)).to.deep.equal([403, 403, 403, 429]);
      await server.meter.flush();
      await other.meter.flush();

      // The other has admitted one of its three; the three admitted there leave it none.
      const refused = await ask(other, ada);
      expect(refused.status).to.equal(429);
      expect(refused.body.code).to.equal('rate_limited');
      expect(header(refused, 'Retry-After')).to.equal('1');
      expect((await ask(other, bob)).status).to.equal(403);

      now += 1000;
      expect((await ask(other, ada)).status).to.equal(403);
    });
  });
});
