// The cache of key lookups (src/db/principals.ts), on a clock the tests move: what it trusts, for how
// long, and what it forgets.
import { expect } from 'chai';
import type { Principal } from '../../src/db/keys.ts';
import { PrincipalCache } from '../../src/db/principals.ts';

describe('principal cache', () => {
  let now: number;
  let live: Map<string, Principal>;
  let queries: string[];
  const lookup = async (hash: string) => {
    queries.push(hash);
    return live.get(hash);
  };
  const cacheWith = (options: { maxEntries?: number } = {}) => new PrincipalCache(lookup, { ttlMs: 500, clock: () => now, ...options });
  const alice = { accountId: 1, account: 'alice' };
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
    live.set('b', { accountId: 2, account: 'bob' });
    now += 499;
    expect(await cache.find('b')).to.equal(undefined);
    now += 1;
    expect(await cache.find('b')).to.deep.equal({ accountId: 2, account: 'bob' });
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
});
