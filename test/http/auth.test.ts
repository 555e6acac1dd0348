// Keys and revocation against a running server (contract.md, "Authentication and tenancy"): a revoked
// key stops working within a second on every instance, though the server keeps lookups for a moment.
import { expect } from 'chai';
import { openStore } from '../../src/db/store.ts';
import { describeEachBackend } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { pollUntil } from '../support/process.ts';
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

  it('refuses a key revoked by its own process at once', async () => {
    const { key, prefix } = await server.store.createKey('revoked-here', TEST_PLAN);
    const client = new Client(server.url, key);
    expect((await client.get('/v1/collections')).status).to.equal(200);
    await server.store.revokeKey(prefix);
    expect((await client.get('/v1/collections')).status).to.equal(401);
  });

  it('accepts a new key at once, though the server has just refused others', async () => {
    await server.anonymous().get('/v1/collections', { headers: { 'x-api-key': 'rb_unknown' } });
    const client = await server.client();
    expect((await client.get('/v1/collections')).status).to.equal(200);
  });
});
