// Metering: requests counted per account and period, shared between instances, and 429 past the plan.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Response } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

interface Usage {
  account: string;
  plan: string;
  period: string;
  period_start: string;
  period_end: string;
  quota: number;
  rate: number | null;
  used: number;
  remaining: number;
}

/** A clock the test moves by hand: metering reads time only through it. */
function manualClock(start: string) {
  let now = Date.parse(start);
  return { now: () => now, set: (iso: string) => (now = Date.parse(iso)), advance: (ms: number) => (now += ms) };
}

const header = (response: Response, name: string) => Number(response.headers.get(name));

describeEachBackend('plans and usage', (backend) => {
  const clock = manualClock('2026-11-22T10:00:00.000Z');
  let server: TestServer;
  let plans = 0;
  /** A client of a new account on a new plan of its own. */
  async function clientOnPlan(quota: number, period: 'hour' | 'day' | 'month' = 'month', rate: number | null = null) {
    const plan = `plan-${++plans}`;
    await server.store.setPlan({ name: plan, quota, period, rate });
    const client = await server.client(undefined, plan);
    return { client, plan };
  }
  before(async () => {
    server = await startTestServer({}, { backend, clock: clock.now });
  });
  after(() => server.stop());

  describe('headers', () => {
    it('count down RateLimit-Remaining from the quota, this request included', async () => {
      const { client } = await clientOnPlan(6);
      const remaining = [];
      for (let i = 0; i < 6; i++) {
        const response = await client.get('/v1/collections');
        expect(response.status).to.equal(200);
        expect(header(response, 'RateLimit-Limit')).to.equal(6);
        remaining.push(header(response, 'RateLimit-Remaining'));
      }
      expect(remaining).to.deep.equal([5, 4, 3, 2, 1, 0]);
    });

    it('give the seconds until the period ends in RateLimit-Reset', async () => {
      const { client } = await clientOnPlan(10, 'day');
      clock.set('2026-11-22T23:59:00.000Z');
      const response = await client.get('/v1/collections');
      expect(header(response, 'RateLimit-Reset')).to.equal(60);
    });

    it('come on every authenticated /v1 response, errors included', async () => {
      const { client } = await clientOnPlan(100);
      const responses = [
        await client.get('/v1/collections/absent'),
        await client.post('/v1/collections', { name: '1bad' }),
        await client.request('PUT', '/v1/collections'),
        await client.get('/v1/no-such-route'),
      ];
      expect(responses.map((r) => r.status)).to.deep.equal([404, 400, 405, 404]);
      expect(responses.map((r) => header(r, 'RateLimit-Remaining'))).to.deep.equal([99, 98, 97, 96]);
    });
  });

  describe('quota', () => {
    it('refuses the request past the quota with 429 quota_exceeded and Retry-After until the period ends', async () => {
      const { client } = await clientOnPlan(3, 'hour');
      clock.set('2026-11-22T10:30:00.000Z');
      for (let i = 0; i < 3; i++) expect((await client.get('/v1/collections')).status).to.equal(200);
      const refused = await client.get('/v1/collections');
      expect(refused.status).to.equal(429);
      expect(refused.body).to.include({ code: 'quota_exceeded' });
      expect(header(refused, 'Retry-After')).to.equal(30 * 60);
      expect(header(refused, 'RateLimit-Remaining')).to.equal(0);
    });

    it('admits exactly N of 200 concurrent requests against a quota of 50', async () => {
      const { client } = await clientOnPlan(50);
      const responses = await Promise.all(Array.from({ length: 200 }, () => client.get('/v1/collections')));
      const statuses = responses.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).to.have.length(50);
      expect(statuses.filter((s) => s === 429)).to.have.length(150);
      const remaining = responses.filter((r) => r.status === 200).map((r) => header(r, 'RateLimit-Remaining'));
      expect(remaining.sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 50 }, (_, i) => i));
    });

    it('starts a new calendar period from zero', async () => {
      const { client } = await clientOnPlan(2, 'month');
      clock.set('2026-11-30T23:59:59.000Z');
      await client.get('/v1/collections');
      await client.get('/v1/collections');
      expect((await client.get('/v1/collections')).status).to.equal(429);
      clock.set('2026-12-01T00:00:00.000Z');
      const next = await client.get('/v1/collections');
      expect(next.status).to.equal(200);
      expect(header(next, 'RateLimit-Remaining')).to.equal(1);
    });

    it('follows a plan change within a second', async () => {
      const { client, plan } = await clientOnPlan(2, 'day');
      await client.get('/v1/collections');
      await server.store.setPlan({ name: plan, quota: 100, period: 'day' });
      clock.advance(1000);
      const response = await client.get('/v1/collections');
      expect(header(response, 'RateLimit-Limit')).to.equal(100);
      expect(header(response, 'RateLimit-Remaining')).to.equal(98);
    });
  });

  describe('rate', () => {
    it('refuses more requests in a second than the plan allows with 429 rate_limited, not counted', async () => {
      const { client } = await clientOnPlan(1000, 'month', 5);
      const statuses = [];
      for (let i = 0; i < 7; i++) statuses.push((await client.get('/v1/collections')).status);
      expect(statuses).to.deep.equal([200, 200, 200, 200, 200, 429, 429]);
      const refused = await client.get('/v1/collections');
      expect(refused.body).to.include({ code: 'rate_limited' });
      expect(header(refused, 'Retry-After')).to.be.at.least(1);
      clock.advance(1000);
      const after = await client.get('/v1/usage');
      expect(after.status).to.equal(200);
      expect((after.body as Usage).used).to.equal(6);
    });
  });

  describe('GET /v1/usage', () => {
    it('tells the account, plan, period, quota and what is used and left, this request included', async () => {
      const { client, plan } = await clientOnPlan(10, 'day', 20);
      clock.set('2026-11-22T12:00:00.000Z');
      await client.get('/v1/collections');
      const response = await client.get<Usage>('/v1/usage');
      expect(response.status).to.equal(200);
      expect(response.body).to.deep.include({
        plan,
        period: 'day',
        period_start: '2026-11-22T00:00:00.000Z',
        period_end: '2026-11-23T00:00:00.000Z',
        quota: 10,
        rate: 20,
        used: 2,
        remaining: 8,
      });
      expect(response.body.account).to.match(/^account-/);
    });
  });

  describe('what does not count', () => {
    it('counts neither /health, nor the documents, nor requests with unknown or revoked keys', async () => {
      const { client } = await clientOnPlan(100);
      const anonymous = server.anonymous();
      await anonymous.get('/health');
      await anonymous.get('/openapi.yaml');
      await anonymous.get('/v1/collections');
      const { key, prefix } = await server.store.createKey('counted-not', `plan-${plans}`);
      await server.store.revokeKey(prefix);
      const revoked = await anonymous.get('/v1/collections', { headers: { authorization: `Bearer ${key}` } });
      expect(revoked.status).to.equal(401);
      expect(revoked.headers.has('RateLimit-Limit')).to.equal(false);
      const usage = await client.get<Usage>('/v1/usage');
      expect(usage.body.used).to.equal(1);
    });
  });

  describe('durability', () => {
    it('adds the counts to the database when it flushes', async () => {
      const { client } = await clientOnPlan(100, 'month');
      clock.set('2026-11-22T10:00:00.000Z');
      for (let i = 0; i < 5; i++) await client.get('/v1/collections');
      await server.meter.flush();
      const accountId = (await server.store.findPrincipal(client.key as string))?.accountId as number;
      expect(await server.store.readUsage(accountId, '2026-11-01T00:00:00.000Z')).to.equal(5);
    });
  });
});
