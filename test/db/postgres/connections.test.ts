// The settings every connection of a PostgreSQL store's pool starts with (src/db/postgres/index.ts):
// no statement compiled to machine code (JIT), whose compiling cost a search page a third of its time.
import { expect } from 'chai';
import { openStore, type Store } from '../../../src/db/open-store.ts';
import { createDatabase, skipWithoutPostgres, type TestDatabase } from '../../support/backends.ts';

describe("a PostgreSQL store's connections", () => {
  let database: TestDatabase;
  let store: Store;
  before(async function () {
    await skipWithoutPostgres(this);
  });
  beforeEach(async () => {
    database = await createDatabase('postgres');
    store = await openStore(database.url);
  });
  afterEach(async () => {
    await store?.close().catch(() => {});
    await database?.drop();
  });

  it('compile no statement to machine code: jit is off on each, however many the pool opens', async () => {
    const { knex } = store;
    const [server] = (await knex.raw("select reset_val from pg_settings where name = 'jit'")).rows;
    const connections = await Promise.all([1, 2, 3].map(() => knex.client.acquireConnection()));
    try {
      const settings = await Promise.all(connections.map(async (connection) => (await connection.query('show jit')).rows[0].jit));
      expect(settings).to.deep.equal(['off', 'off', 'off']);
      // The server's own setting, to which RESET would go back, says on: the setting is the pool's, not the server's.
      expect(server.reset_val).to.equal('on');
    } finally {
      await Promise.all(connections.map((connection) => knex.client.releaseConnection(connection)));
    }
  });
});
