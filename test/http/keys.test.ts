// The account's keys over HTTP (openapi.yaml, the `keys` tag): listed by prefix, made no wider than the
// key making them, revoked at once here and within a second on every other instance.
import { expect } from 'chai';
import type { NewKey } from '../../src/db/accounts/keys.ts';
import { describeEachBackend } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { FeedClient } from '../support/feed.ts';
import { pollUntil } from '../support/process.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

interface Key {
  prefix: string;
  name: string | null;
  scope: string;
  collections: string[] | null;
  expires_at: string | null;
  kind: string;
  origins: string[] | null;
  end_user_rate: number | null;
  created_at: string;
  last_used_at: string | null;
}
type CreatedKey = Key & { key: string };

const HOUR = 3_600_000;
/** What a secret key's listing says of its kind. */
const secret = { kind: 'secret', origins: null, end_user_rate: null };
const iso = (ms: number) => new Date(ms).toISOString();
let accounts = 0;

describeEachBackend('the keys of an account', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({}, { backend });
  });
  after(() => server.stop());

  /** A key of `account` with `limits`, and a client with it. */
  async function keyOf(account: string, limits: NewKey = {}) {
    const made = await server.store.createKey(account, TEST_PLAN, limits);
    return { ...made, client: new Client(server.url, made.key) };
  }
  const newAccount = () => `keys-${++accounts}`;
  const prefixes = async (client: Client) => (await client.get<Key[]>('/v1/keys')).body.map(({ prefix }) => prefix);

  describe('GET /v1/keys', () => {
    it("lists the account's live keys, oldest first, by prefix: never a key or its hash, nor a revoked or expired key", async () => {
      const account = newAccount();
      const owner = await keyOf(account);
      const reader = await keyOf(account, {
        scope: 'read',
        collections: ['notes'],
        expires_at: '2099-01-01T00:00:00.000Z',
        name: 'dashboard',
      });
      const revoked = await keyOf(account);
      await server.store.revokeKey(revoked.prefix);
      const expiring = await keyOf(account, { expires_at: iso(Date.now() + 300) });
      await keyOf(newAccount()); // another account's

      await pollUntil(async () => !(await prefixes(owner.client)).includes(expiring.prefix), 2000);
      const listed = await owner.client.get<Key[]>('/v1/keys');

      expect(listed.status).to.equal(200);
      expect(listed.body).to.deep.equal([
        {
          prefix: owner.prefix,
          name: null,
          scope: 'admin',
          collections: null,
          expires_at: null,
          ...secret,
          created_at: owner.created_at,
          last_used_at: listed.body[0].last_used_at,
        },
        {
          prefix: reader.prefix,
          name: 'dashboard',
          scope: 'read',
          collections: ['notes'],
          expires_at: '2099-01-01T00:00:00.000Z',
          ...secret,
          created_at: reader.created_at,
          last_used_at: null,
        },
      ]);
      for (const { key } of [owner, reader]) expect(listed.text).to.not.include(key.slice(11));
    });

    it('shows when a key was last used, to the minute, about a second after', async () => {
      const account = newAccount();
      const owner = await keyOf(account);
      const used = await keyOf(account, { scope: 'read' });
      const lastUsed = async () =>
        (await owner.client.get<Key[]>('/v1/keys')).body.find(({ prefix }) => prefix === used.prefix)?.last_used_at;
      expect(await lastUsed()).to.equal(null);

      const at = Date.now();
      expect((await used.client.get('/v1/usage')).status).to.equal(200);
      await pollUntil(async () => (await lastUsed()) !== null, 3000);

      const minute = at - (at % 60_000);
      expect(Date.parse((await lastUsed()) as string)).to.be.oneOf([minute, minute + 60_000]);
    });
  });

  describe('POST /v1/keys', () => {
    it('answers the new key once, with what limits it, and the key works at once within them', async () => {
      const account = newAccount();
      const owner = await keyOf(account);
      await owner.client.post('/v1/collections', { name: 'notes' });
      await owner.client.post('/v1/collections', { name: 'other' });

      const made = await owner.client.post<CreatedKey>('/v1/keys', {
        name: 'dashboard',
        scope: 'read',
        collections: ['notes'],
        expires_at: '2099-01-01T01:30:00.5+01:30',
      });

      expect(made.status).to.equal(201);
      const { key, ...shown } = made.body;
      expect(key).to.match(/^rb_[A-Za-z0-9_-]{32}$/);
      expect(shown).to.deep.equal({
        prefix: key.slice(0, 11),
        name: 'dashboard',
        scope: 'read',
        collections: ['notes'],
        expires_at: '2099-01-01T00:00:00.500Z',
        ...secret,
        created_at: shown.created_at,
        last_used_at: null,
      });
      expect((await owner.client.get<Key[]>('/v1/keys')).body.find(({ prefix }) => prefix === shown.prefix)).to.deep.equal(shown);
      const client = new Client(server.url, key);
      expect((await client.get('/v1/collections/notes/rows')).status).to.equal(200);
      expect((await client.get('/v1/collections/other/rows')).status).to.equal(404);
      expect((await client.post('/v1/collections/notes/rows', [{ n: 1 }])).status).to.equal(403);
    });

    it("gives a key the maker's collections and expiry when it names none, and every collection or never for null", async () => {
      const account = newAccount();
      const expiresAt = iso(Date.now() + HOUR);
      const limited = await keyOf(account, { collections: ['a', 'b'], expires_at: expiresAt });
      const unlimited = await keyOf(account);

      const inherited = await limited.client.post<CreatedKey>('/v1/keys', { scope: 'write' });
      const whole = await unlimited.client.post<CreatedKey>('/v1/keys', { scope: 'write', collections: null, expires_at: null });
      const plain = await unlimited.client.post<CreatedKey>('/v1/keys', { scope: 'admin' });

      expect(inherited.body).to.include({ scope: 'write', expires_at: expiresAt });
      expect(inherited.body.collections).to.deep.equal(['a', 'b']);
      for (const made of [whole, plain]) expect(made.body).to.include({ collections: null, expires_at: null, name: null });
    });

    // biome-ignore format: a table
    const escalations: { name: string; maker: NewKey; body: Record<string, unknown> }[] = [
      { name: 'a read key making a read key', maker: { scope: 'read' }, body: { scope: 'read' } },
      { name: 'a read key making a write key', maker: { scope: 'read' }, body: { scope: 'write' } },
      { name: 'a write key making a read key', maker: { scope: 'write' }, body: { scope: 'read' } },
      { name: 'a collection-limited key making a key of every collection', maker: { collections: ['a'] }, body: { scope: 'read', collections: null } },
      { name: 'a collection-limited key making a key of one more collection', maker: { collections: ['a'] }, body: { scope: 'read', collections: ['a', 'b'] } },
      { name: 'a collection-limited key making a key of another collection', maker: { collections: ['a'] }, body: { scope: 'admin', collections: ['b'] } },
      { name: 'an expiring key making a key that never expires', maker: { expires_at: iso(Date.now() + HOUR) }, body: { scope: 'read', expires_at: null } },
      { name: 'an expiring key making a key that outlives it', maker: { expires_at: iso(Date.now() + HOUR) }, body: { scope: 'read', expires_at: iso(Date.now() + 2 * HOUR) } },
    ];
    for (const { name, maker, body } of escalations) {
      it(`refuses ${name} with 403, and makes no key`, async () => {
        const account = newAccount();
        const owner = await keyOf(account);
        const { client } = await keyOf(account, maker);
        const before = await prefixes(owner.client);

        const refused = await client.post('/v1/keys', body);

        expect(refused.status).to.equal(403);
        expect(refused.body).to.include({ code: 'forbidden' });
        expect(await prefixes(owner.client)).to.deep.equal(before);
      });
    }

    it('makes keys narrower than the maker: fewer collections, an earlier expiry, and so on down a chain', async () => {
      const account = newAccount();
      const expiresAt = Date.now() + HOUR;
      const maker = await keyOf(account, { collections: ['a', 'b'], expires_at: iso(expiresAt) });

      const narrower = await maker.client.post<CreatedKey>('/v1/keys', {
        scope: 'admin',
        collections: ['a'],
        expires_at: iso(expiresAt - 60_000),
      });
      const same = await maker.client.post<CreatedKey>('/v1/keys', { scope: 'admin', collections: ['b', 'a'], expires_at: iso(expiresAt) });
      const chained = new Client(server.url, narrower.body.key);
      const wider = await chained.post('/v1/keys', { scope: 'read', collections: ['a', 'b'] });

      expect([narrower.status, same.status, wider.status]).to.deep.equal([201, 201, 403]);
    });

    // biome-ignore format: a table
    const invalid: { name: string; body: unknown; field: string }[] = [
      { name: 'no scope', body: { collections: ['a'] }, field: '/scope' },
      { name: 'an unknown scope', body: { scope: 'root' }, field: '/scope' },
      { name: 'an empty list of collections', body: { scope: 'read', collections: [] }, field: '/collections' },
      { name: 'a collection twice', body: { scope: 'read', collections: ['a', 'a'] }, field: '/collections' },
      { name: 'no collection name', body: { scope: 'read', collections: ['1x'] }, field: '/collections/0' },
      { name: 'more than 100 collections', body: { scope: 'read', collections: Array.from({ length: 101 }, (_, n) => `c${n}`) }, field: '/collections' },
      { name: 'an expires_at that is no time', body: { scope: 'read', expires_at: 'tomorrow' }, field: '/expires_at' },
      { name: 'an expires_at on February 30th', body: { scope: 'read', expires_at: '2099-02-30T00:00:00Z' }, field: '/expires_at' },
      { name: 'an expires_at without an offset', body: { scope: 'read', expires_at: '2099-01-01T00:00:00' }, field: '/expires_at' },
      { name: 'an expires_at in the past', body: { scope: 'read', expires_at: '2020-01-01T00:00:00Z' }, field: '/expires_at' },
      { name: 'an expires_at in the year 10000 in UTC', body: { scope: 'read', expires_at: '9999-12-31T23:00:00-01:00' }, field: '/expires_at' },
      { name: 'a name of 101 characters', body: { scope: 'read', name: 'n'.repeat(101) }, field: '/name' },
      { name: 'a name with a control character', body: { scope: 'read', name: 'a\nb' }, field: '/name' },
      { name: 'a name with a C1 control character', body: { scope: 'read', name: 'a\u0085b' }, field: '/name' },
      { name: 'an unknown field', body: { scope: 'read', key: 'rb_mine' }, field: '/key' },
      { name: 'no object', body: ['read'], field: '' },
    ];
    for (const { name, body, field } of invalid) {
      it(`refuses ${name} with a 400 naming it`, async () => {
        const { client } = await keyOf(newAccount());
        const refused = await client.post<{ code: string; errors: { in: string; name: string }[] }>('/v1/keys', body);
        expect(refused.status).to.equal(400);
        expect(refused.body.errors.map((error) => [error.in, error.name])).to.deep.include(['body', field]);
      });
    }
  });

  describe('DELETE /v1/keys/{prefix}', () => {
    it('revokes a key of the account: it stops working at once, and is listed no more', async () => {
      const account = newAccount();
      const owner = await keyOf(account);
      const other = await keyOf(account, { scope: 'read' });
      expect((await other.client.get('/v1/usage')).status).to.equal(200);

      expect((await owner.client.delete(`/v1/keys/${other.prefix}`)).status).to.equal(204);

      expect((await other.client.get('/v1/usage')).status).to.equal(401);
      expect(await prefixes(owner.client)).to.deep.equal([owner.prefix]);
      expect((await owner.client.delete(`/v1/keys/${other.prefix}`)).status, 'revoked already').to.equal(404);
    });

    it('lets a key revoke itself', async () => {
      const { client, prefix } = await keyOf(newAccount());
      expect((await client.delete(`/v1/keys/${prefix}`)).status).to.equal(204);
      expect((await client.get('/v1/keys')).status).to.equal(401);
    });

    it("answers 404 for another account's key, and for a key wider than the one asking, which it does not list", async () => {
      const account = newAccount();
      const owner = await keyOf(account);
      const limited = await keyOf(account, { collections: ['a'] });
      const stranger = await keyOf(newAccount());

      const answers = await Promise.all([
        owner.client.delete(`/v1/keys/${stranger.prefix}`),
        limited.client.delete(`/v1/keys/${owner.prefix}`),
        owner.client.delete('/v1/keys/rb_nothing0'),
      ]);

      expect(answers.map(({ status }) => status)).to.deep.equal([404, 404, 404]);
      expect(answers[1].body).to.include({ detail: `There is no key ${owner.prefix}.` });
      expect(await prefixes(limited.client)).to.deep.equal([limited.prefix]);
      for (const { client } of [owner, stranger]) expect((await client.get('/v1/usage')).status).to.equal(200);
    });

    it('refuses a path that is no prefix with 400, and a key that is not admin with 403', async () => {
      const account = newAccount();
      const { client } = await keyOf(account);
      const writer = await keyOf(account, { scope: 'write' });
      for (const prefix of ['rb_short', 'rb_toolong12', 'xx_abcdefgh', 'rb_abc%20efg']) {
        expect((await client.delete(`/v1/keys/${prefix}`)).status, prefix).to.equal(400);
      }
      expect((await writer.client.delete(`/v1/keys/${writer.prefix}`)).status).to.equal(403);
    });
  });

  describe('with a bound on live keys', () => {
    let bounded: TestServer;
    before(async () => {
      bounded = await startTestServer({ maxKeysPerAccount: 3 }, { backend });
    });
    after(() => bounded.stop());

    it('makes keys while the account holds fewer live ones, exactly however concurrent, then 409 until one is revoked', async () => {
      const { key } = await bounded.store.createKey('bounded', TEST_PLAN);
      const client = new Client(bounded.url, key);

      const made = await Promise.all(Array.from({ length: 5 }, () => client.post<CreatedKey>('/v1/keys', { scope: 'read' })));

      expect(made.map(({ status }) => status).sort()).to.deep.equal([201, 201, 409, 409, 409]);
      expect(made.find(({ status }) => status === 409)?.body).to.include({ code: 'conflict' });
      const revoked = made.find(({ status }) => status === 201)?.body.prefix;
      expect((await client.delete(`/v1/keys/${revoked}`)).status).to.equal(204);
      expect((await client.post('/v1/keys', { scope: 'read' })).status).to.equal(201);
    });
  });

  describe('on two instances of one database', () => {
    let other: TestServer;
    before(async () => {
      other = await startTestServer({}, { backend, database: { url: server.databaseUrl, drop: async () => {} } });
    });
    after(() => other.stop());

    it('a key made on one works on the other at once; one revoked on one stops working on both, and its feeds close, within a second', async () => {
      const account = newAccount();
      const owner = await keyOf(account);
      await owner.client.post('/v1/collections', { name: 'notes' });
      const made = await new Client(other.url, owner.key).post<CreatedKey>('/v1/keys', { scope: 'read' });
      const here = new Client(server.url, made.body.key);
      expect((await here.get('/v1/collections/notes')).status).to.equal(200);
      const feeds = await Promise.all([server, other].map(({ url }) => FeedClient.open(url, made.body.key, { collection: 'notes' })));

      expect((await new Client(other.url, owner.key).delete(`/v1/keys/${made.body.prefix}`)).status).to.equal(204);
      const revokedAt = Date.now();

      expect((await new Client(other.url, made.body.key).get('/v1/collections')).status, 'at once where revoked').to.equal(401);
      const [refusedHereIn] = await Promise.all([
        pollUntil(async () => (await here.get('/v1/collections')).status === 401, 1000),
        ...feeds.map((feed) => feed.closing(2000)),
      ]);
      expect(refusedHereIn).to.be.below(1000);
      expect(Date.now() - revokedAt).to.be.below(1000);
      for (const feed of feeds) expect(feed.closed).to.deep.equal({ code: 4401, reason: 'key revoked' });
    });
  });
});
