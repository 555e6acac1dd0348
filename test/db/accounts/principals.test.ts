// The cache of key lookups (src/db/accounts/principals.ts, PrincipalCache), on a clock the tests move: what it trusts, for how
// long, and what it forgets.
import { expect } from 'chai';
import type { Principal } from '../../../src/db/accounts/keys.ts';
import { PrincipalCache } from '../../../src/db/accounts/principals.ts';

describe('principal cache', () => {
  let now: number;
  let live: Map<string, Principal>;
  let queries: string[];
  const lookup = async (hash: string) => {
    queries.push(hash);
    return live.get(hash);
  };
  const cacheWith = (options: { maxEntries?: number } = {}) => new PrincipalCache(lookup, { ttlMs: 500, clock: () => now, ...options });
  const principal = (accountId: number, account: string, expiresAt: number | null = null): Principal => ({
    accountId,
    account,
    keyId: accountId * 10,
    prefix: `rb_${account}`,
    scope: 'admin',
    collections: null,
    expiresAt,
    kind: 'secret',
    origins: null,
    endUserRate: null,
  });
  const alice = principal(1, 'alice');
  beforeEach(() => {
    now = 1_000_000;
    live = new Map([['a', alice]]);
    queries = [];
  });

  it('trusts an answer for less than its ttl, then reads the key again', async () => {
    const cache = cacheWith();
    expect(await cache.find('a')).to.deep.equal(alice);
    live.delete('a'); // revoked elsewhere
    now += 499;
    expect(await cache.find('a')).to.deep.equal(alice);
    now += 1;
    expect(await cache.find('a')).to.equal(undefined);
    expect(queries).to.deep.equal(['a', 'a']);
  });

  it('remembers an unknown key for its ttl too', async () => {
    const cache = cacheWith();
    expect(await cache.find('b')).to.equal(undefined);
    live.set('b', principal(2, 'bob'));
    now += 499;
    expect(await cache.find('b')).to.equal(undefined);
    now += 1;
    expect(await cache.find('b')).to.deep.equal(principal(2, 'bob'));
  });

  it('counts the ttl from when the query began, not from when it answered', async () => {
    let answer: (principal: Principal | undefined) => void = () => {};
    const cache = new PrincipalCache(() => new Promise((resolve) => (answer = resolve)), { ttlMs: 500, clock: () => now });
    const finding = cache.find('a');
    now += 400; // a slow query
    answer(alice);
    expect(await finding).to.deep.equal(alice);
    now += 100;
    const again = cache.find('a');
    answer(undefined);
    expect(await again).to.equal(undefined);
  });

  it('makes one query for concurrent lookups of one key', async () => {
    const cache = cacheWith();
    const answers = await Promise.all([cache.find('a'), cache.find('a'), cache.find('a')]);
    expect(answers).to.deep.equal([alice, alice, alice]);
    expect(queries).to.deep.equal(['a']);
  });

  it('forgets every answer on forget(), and does not keep one read while it forgot', async () => {
    const cache = cacheWith();
    await cache.find('a');
    const underWay = cache.find('b');
    cache.forget();
    await underWay;
    live.delete('a');
    expect(await cache.find('a')).to.equal(undefined);
    live.set('b', alice);
    expect(await cache.find('b')).to.deep.equal(alice);
    expect(queries).to.deep.equal(['a', 'b', 'a', 'b']);
  });

  it('remembers no failed lookup', async () => {
    let fail = true;
    const cache = new PrincipalCache(
      async () => {
        if (fail) throw new Error('database gone');
        return alice;
      },
      { clock: () => now },
    );
    let failure: unknown;
    await cache.find('a').catch((error) => (failure = error));
    expect(failure).to.be.an('error');
    fail = false;
    expect(await cache.find('a')).to.deep.equal(alice);
  });

  it('holds at most maxEntries answers, dropping the oldest', async () => {
    const cache = cacheWith({ maxEntries: 3 });
    for (const hash of ['k1', 'k2', 'k3', 'k4']) await cache.find(hash);
    queries = [];
    for (const hash of ['k2', 'k3', 'k4', 'k1']) await cache.find(hash);
    expect(queries).to.deep.equal(['k1']);
  });

  it('answers a key past its expiry as unknown, from the moment it expires, though the answer is trusted still', async () => {
    live.set('e', principal(3, 'eve', now + 700));
    const cache = cacheWith();
    expect(await cache.find('e')).to.deep.equal(principal(3, 'eve', 1_000_700));
    now += 699;
    expect(await cache.find('e')).to.deep.equal(principal(3, 'eve', 1_000_700));
    now += 1;
    expect(await cache.find('e')).to.equal(undefined);
    now += 200; // within the ttl of the answer read at 1_000_500
    expect(await cache.find('e')).to.equal(undefined);
  });

  it('notes the use of each key once a minute, to the minute, however often it is answered or read again', async () => {
    live.set('b', principal(2, 'bob'));
    const cache = cacheWith();
    now = 60_000 * 1000 + 59_000; // the last second of a minute
    await Promise.all([cache.find('a'), cache.find('a'), cache.find('b')]);
    expect([...cache.takeUses()]).to.deep.equal([
      [10, 60_000 * 1000],
      [20, 60_000 * 1000],
    ]);
    now += 600; // read again, still in the same minute
    await cache.find('a');
    expect(cache.takeUses().size).to.equal(0);
    now += 400; // the next minute
    await cache.find('a');
    await cache.find('x'); // unknown: no use
    expect([...cache.takeUses()]).to.deep.equal([[10, 60_000 * 1001]]);
  });

  it('keeps a use handed back when it could not be written, unless a later one was noted since', async () => {
    const cache = cacheWith();
    await cache.find('a');
    const failed = cache.takeUses();
    cache.returnUses(failed);
    expect([...cache.takeUses()]).to.deep.equal([...failed]);
    now += 60_000;
    await cache.find('a');
    cache.returnUses(failed);
    expect([...cache.takeUses()]).to.deep.equal([[10, now - (now % 60_000)]]);
  });
});
