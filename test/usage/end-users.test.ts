// The meter's rate per end user (src/usage/end-users.ts) where no request reaches yet: a batch's
// operations past the first, and what the database keeps of end users. The HTTP behaviour is
// test/http/end-user-rate.test.ts's.
import { expect } from 'chai';
import type { Principal } from '../../src/db/accounts/keys.ts';
import { ApiError } from '../../src/errors.ts';
import type { EndUser } from '../../src/usage/end-users.ts';
import { describeEachBackend } from '../support/backends.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

describeEachBackend('the meter’s rate per end user', (backend) => {
  let now = Date.parse('2026-11-22T10:00:00.000Z');
  let server: TestServer;
  let keys = 0;
  before(async () => {
    server = await startTestServer({}, { backend, clock: () => now });
  });
  after(() => server.stop());

  /** The principal of a new publishable key with an end_user_rate of `rate`. */
  async function publishable(rate: number): Promise<Principal> {
    const limits = { kind: 'publishable' as const, scope: 'write' as const, origins: ['https://app.example'], end_user_rate: rate };
    const { key } = await server.store.createKey(`end-users-${++keys}`, TEST_PLAN, limits);
    return (await server.store.findPrincipal(key)) as Principal;
  }

  const endUserOf = ({ keyId, endUserRate }: Principal, sub: string): EndUser => ({
    keyId,
    rate: endUserRate as number,
    by: 'token',
    id: JSON.stringify(['https://backend.example/', sub]),
  });

  it('counts a batch’s operations past the first for its end user, and refuses those past the rate with 429', async () => {
    const principal = await publishable(3);
    const ada = endUserOf(principal, 'ada');
    const admission = await server.meter.admit(principal.accountId, 1, ada);
    await server.meter.admitMore(principal.accountId, 2, admission);
    const refused = await server.meter.admitMore(principal.accountId, 1, admission).catch((error: unknown) => error);
    expect(refused).to.be.instanceOf(ApiError);
    expect((refused as ApiError).code).to.equal('rate_limited');
    // Another end user of the key has the whole rate.
    await server.meter.admitMore(principal.accountId, 2, await server.meter.admit(principal.accountId, 1, endUserOf(principal, 'bob')));
  });

  it('keeps in the database a hash of who each end user is, never their sub, and deletes counts no instance wrote for ten minutes', async () => {
    const principal = await publishable(5);
    await server.meter.admit(principal.accountId, 1, endUserOf(principal, 'grace'));
    await server.meter.admit(principal.accountId, 1, endUserOf(principal, 'grace'));
    await server.meter.flush();
    const rows = await server.store.knex('end_user_counts').where({ key_id: principal.keyId });
    expect(rows).to.have.length(1);
    expect(Number(rows[0].count)).to.equal(2);
    expect(rows[0].end_user).to.match(/^[A-Za-z0-9_-]{43}$/);

    // Unseen for more than the minute a bucket is kept, then ten minutes more: the count goes.
    now += 11 * 60_000;
    await server.meter.flush();
    expect(await server.store.knex('end_user_counts').where({ key_id: principal.keyId })).to.have.length(0);
  });
});
