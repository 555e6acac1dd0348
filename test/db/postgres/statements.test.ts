// A statement run alone on PostgreSQL (src/db/postgres/statements.ts, runAlone): by the time its failure
// is answered, its transaction has ended and what it held is free, so a write tried again at once on
// another connection (a failed group's, each alone) never finds its own Idempotency-Key's lock held.
import { expect } from 'chai';
import type pg from 'pg';
import { openStore, type Store } from '../../../src/db/open-store.ts';
import { runAlone } from '../../../src/db/postgres/statements.ts';
import { createDatabase, skipWithoutPostgres, type TestDatabase } from '../../support/backends.ts';

describe('PostgreSQL statements run alone', () => {
  let database: TestDatabase;
  let store: Store;
  before(async function () {
    await skipWithoutPostgres(this);
    database = await createDatabase('postgres');
    store = await openStore(database.url);
  });
  after(async () => {
    await store?.close().catch(() => {});
    await database?.drop();
  });

  it('answer a failure once its transaction has released its advisory locks', async () => {
    const { knex } = store;
    // Many locks, so that the server's abort, which releases them, takes long enough to be seen.
    const locks = 3000;
    const other: pg.Client = await knex.client.acquireConnection();
    try {
      for (let round = 0; round < 150; round++) {
        const failing = runAlone(
          knex,
          'select 1 / (count(*) - count(*)) as n from (select pg_advisory_xact_lock(7, g) from generate_series(1, ?::integer) g) t',
          [locks],
        );
        const failure = await failing.then(
          () => undefined,
          (error: { code?: string }) => error,
        );
        expect(failure?.code).to.equal('22012'); // division_by_zero, after every lock was taken
        const { rows } = await other.query(
          'select count(*) filter (where not pg_try_advisory_xact_lock(7, g))::integer as held from generate_series(1, $1::integer) g',
          [locks],
        );
        expect(rows[0].held, `round ${round}`).to.equal(0);
      }
    } finally {
      await knex.client.releaseConnection(other);
    }
  });
});
