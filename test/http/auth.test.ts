// Keys and revocation against a running server (contract.md, "Authentication and tenancy"): a revoked
// key stops working within a second on every instance, though the server keeps lookups for a moment.
import { expect } from 'chai';
import { openStore } from '../../src/db/open-store.ts';
import { describeEachBackend } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { checkResponse } from '../support/contract.ts';
import { pollUntil } from '../support/process.ts';
import { rawExchange } from '../support/raw.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

describeEachBackend('authentication', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({}, { backend });
  });
  after(() => server.stop());

  it('refuses a key revoked by another process within a second, though it was in use until then', async () => {
    const { key, prefix } = await server.store.createKey('revoked-elsewhere', TEST_PLAN);
    const client = new Client(server.url, key);
    for (let i = 0; i < 5; i++) expect((await client.get('/v1/collections')).status).to.equal(200);
    // Another instance, or the CLI: a store of its own on the same database.
    const other = await openStore(server.databaseUrl);
    try {
      await other.revokeKey(prefix);
    } finally {
      await other.close();
    }
    const tookMs = await pollUntil(async () => (await client.get('/v1/collections')).status === 401, 1000);
    expect(tookMs).to.be.below(1000);
    const refused = await client.get('/v1/collections');
    expect(refused.status).to.equal(401);
    expect(refused.headers.get('www-authenticate')).to.equal('Bearer realm="rowbase"');
  });

  it("answers another account's read while a write holds the database's writer: its key, plan and usage read beside it", async () => {
    // An account no request has come from yet: its key, its plan and its usage are read on its first.
    const made = await server.store.createKey('reads-beside-a-write', TEST_PLAN);
    const accountId = (await server.store.findPrincipal(made.key as string))?.accountId as number;
    await server.store.createCollection(accountId, 'mine');
    await server.store.insertRows(accountId, 'mine', [{ n: 2 }]);
    const { key } = await server.store.createKey('reads-beside-a-write', TEST_PLAN);
    // What a long write holds for all of its transaction (a declaration's apply): SQLite's one writer, a connection of PostgreSQL's pool.
    const held = await server.store.knex.transaction();
    try {
      const read = await new Client(server.url, key).get('/v1/collections/mine/rows/1');
      expect(read.status).to.equal(200);
      expect(read.body).to.deep.equal({ id: 1, n: 2 });
    } finally {
      await held.rollback();
    }
  });

  it('refuses a key revoked by its own process at once', async () => {
    const { key, prefix } = await server.store.createKey('revoked-here', TEST_PLAN);
    const client = new Client(server.url, key);
    expect((await client.get('/v1/collections')).status).to.equal(200);
    await server.store.revokeKey(prefix);
    expect((await client.get('/v1/collections')).status).to.equal(401);
  });

  it('refuses a key from its expiry on exactly as an unknown key: the same status, headers and body, and not counted', async () => {
    // Time for the key's first request before it expires, on a loaded host.
    const expiresAt = Date.now() + 1500;
    const { key } = await server.store.createKey('expiring', TEST_PLAN, { expires_at: new Date(expiresAt).toISOString() });
    const client = new Client(server.url, key);
    expect((await client.get('/v1/collections')).status).to.equal(200);
    await pollUntil(async () => (await client.get('/v1/collections')).status === 401, 3000);
    expect(Date.now()).to.be.at.least(expiresAt);
    // One request id for both: each answer names its own (X-Request-Id, the problem's instance).
    const [expired, unknown] = await Promise.all(
      [client, new Client(server.url, 'rb_unknown')].map((c) => c.get('/v1/collections', { headers: { 'x-request-id': 'same' } })),
    );
    expect(expired.status).to.equal(401);
    expect(expired.text).to.equal(unknown.text);
    const headers = (response: typeof expired) => [...response.headers].filter(([name]) => name !== 'date');
    expect(headers(expired)).to.deep.equal(headers(unknown));
    expect(expired.headers.has('ratelimit-limit')).to.equal(false);
  });

  it('accepts a new key at once, though the server has just refused others', async () => {
    await server.anonymous().get('/v1/collections', { headers: { 'x-api-key': 'rb_unknown' } });
    const client = await server.client();
    expect((await client.get('/v1/collections')).status).to.equal(200);
  });

  // Key headers exactly as written on the wire (fetch would trim them). The auth scheme is
  // case-insensitive and followed by one or more spaces (RFC 9110 §11.1, §11.4); whitespace around a
  // field value is no part of it (RFC 9110 §5.5). x-api-key holds the key alone.
  // biome-ignore format: a table
  const keyHeaders: { name: string; lines: (key: string) => string[]; status: 200 | 401 }[] = [
    { name: 'the scheme in lower case', lines: (key) => [`Authorization: bearer ${key}`], status: 200 },
    { name: 'the scheme in upper case', lines: (key) => [`Authorization: BEARER ${key}`], status: 200 },
    { name: 'several spaces after the scheme', lines: (key) => [`Authorization: Bearer    ${key}`], status: 200 },
    { name: 'spaces and a tab around the value', lines: (key) => [`Authorization: \t Bearer ${key} \t`], status: 200 },
    { name: 'an x-api-key with spaces around it', lines: (key) => [`x-api-key:   ${key}   `], status: 200 },
    { name: 'the same key in both headers', lines: (key) => [`Authorization: Bearer ${key}`, `x-api-key: ${key}`], status: 200 },
    { name: 'a tab between scheme and key', lines: (key) => [`Authorization: Bearer\t${key}`], status: 401 },
    { name: 'no space between scheme and key', lines: (key) => [`Authorization: Bearer${key}`], status: 401 },
    { name: 'the Bearer scheme inside x-api-key', lines: (key) => [`x-api-key: Bearer ${key}`], status: 401 },
    { name: 'an empty Authorization beside x-api-key', lines: (key) => ['Authorization:', `x-api-key: ${key}`], status: 401 },
    { name: 'an empty x-api-key beside Authorization', lines: (key) => [`Authorization: Bearer ${key}`, 'x-api-key:'], status: 401 },
    { name: 'the key with a character more', lines: (key) => [`x-api-key: ${key}x`], status: 401 },
    { name: 'the key in another case', lines: (key) => [`x-api-key: ${key.toUpperCase()}`], status: 401 },
  ];
  for (const { name, lines, status } of keyHeaders) {
    it(`answers ${status} to ${name}`, async () => {
      const { key } = await server.store.createKey(`wire-${backend}`, TEST_PLAN);
      const request = ['GET /v1/collections HTTP/1.1', 'Host: x', ...lines(key as string), 'Connection: close', '', ''].join('\r\n');
      const [response] = await rawExchange(server.url, request);
      checkResponse({ method: 'GET', path: '/v1/collections', ...response });
      expect(response.status).to.equal(status);
      expect(response.headers.has('ratelimit-limit')).to.equal(status === 200);
    });
  }
});
