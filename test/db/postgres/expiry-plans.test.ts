// The plan PostgreSQL makes of a page read through a sort index of a collection with a time to live
// (src/db/postgres/sql/reads.ts, sortedPage): each key's row read by its primary key, before the page's
// limit, as the page reads few keys, never a hash of the collection's expired rows, which a page would
// build whole on each read; once a key when the collection was seen with its time to live, else looked up
// for its expiry (src/db/engine/sql/expiry.ts, liveKeyText) and again for its text.
import { expect } from 'chai';
import { openStore, type Store } from '../../../src/db/open-store.ts';
import { getRowSql, sortedPage } from '../../../src/db/postgres/sql/reads.ts';
import { createDatabase, skipWithoutPostgres, type TestDatabase } from '../../support/backends.ts';

describe('a page of a collection with a time to live, planned by PostgreSQL', () => {
  let database: TestDatabase;
  let store: Store;
  before(async function () {
    await skipWithoutPostgres(this);
  });
  beforeEach(async () => {
    database = await createDatabase('postgres');
    store = await openStore(database.url);
    await store.createKey('reader');
  });
  afterEach(async () => {
    await store?.close().catch(() => {});
    await database?.drop();
  });

  /** A collection of `rows` rows, a tenth of them with an expiry when `ttl`, and its sort index on score: its id. */
  async function fill(name: string, rows: number, ttl: boolean): Promise<number> {
    const { knex } = store;
    const { id: accountId } = await knex('accounts').where({ name: 'reader' }).first('id');
    const [{ id }] = await knex('collections')
      .insert({
        account_id: accountId,
        name,
        created_at: new Date().toISOString(),
        sorted: '["score"]',
        ttl_field: ttl ? 'expires_at' : null,
      })
      .returning('id');
    await knex.raw(
      `insert into rows (collection_id, id, data, expires_at)
        select ?, g, '{"score":' || (g * 7919 % 1000) || '}', case when ? and g % 10 = 0 then g end from generate_series(1, ?) g`,
      [id, ttl, rows],
    );
    await knex.raw('insert into sort_keys select ?, 0, g, 1, g * 7919 % 1000, null from generate_series(1, ?) g', [id, rows]);
    return Number(id);
  }

  /** The generic plan of `sql` (as a named statement gets after five runs), its parameters of `types`, run with `values`. */
  async function genericPlan(sql: string, types: string, values: string): Promise<string> {
    const { knex } = store;
    const connection = await knex.client.acquireConnection();
    try {
      await connection.query('set plan_cache_mode = force_generic_plan');
      await connection.query(`prepare planned (${types}) as ${sql}`);
      const { rows } = await connection.query(`explain execute planned (${values})`);
      return rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n');
    } finally {
      await connection.query('deallocate planned; reset plan_cache_mode');
      await knex.client.releaseConnection(connection);
    }
  }

  // As in a database in service: the statistics were taken while `rows` held only rows that never
  // expire; then a collection of 1,000 rows, a tenth of them with an expiry, and its sort index on score.
  // A collection last seen without a time to live (one set since): its keys' rows looked up to be tested.
  it("looks each key's row up by its primary key, in the generic plan its named statement gets", async () => {
    await fill('lasting', 100, false);
    await store.knex.raw('analyze rows; analyze sort_keys');
    const expiring = await fill('expiring', 1000, true);
    const { sql } = sortedPage({ id: expiring, expiring: false }, 0, 'desc', 'present', 50, 0, 500);
    const plan = await genericPlan(sql, 'integer, integer, integer, bigint, integer', `${expiring}, 0, 50, 500, 0`);
    expect(plan).to.match(/Index Scan using rows_pkey on rows x/);
    expect(plan).not.to.include('hashed SubPlan');
    expect(plan).not.to.include('rows_expiry');
  });

  // Seen with one: each key joined with its row once, inside the keys' cut, the expiry tested on the row read.
  it('joins each key with its row once when the collection was seen with a time to live', async () => {
    await fill('lasting', 100, false);
    await store.knex.raw('analyze rows; analyze sort_keys');
    const expiring = await fill('expiring', 1000, true);
    const { sql } = sortedPage({ id: expiring, expiring: true }, 0, 'desc', 'present', 50, 0, 500);
    const plan = await genericPlan(sql, 'integer, integer, integer, bigint, integer', `${expiring}, 0, 50, 500, 0`);
    expect(plan.match(/Index Scan using rows_pkey on rows/g)).to.have.length(1);
    expect(plan).to.match(/Index Only Scan Backward using sort_keys_order on sort_keys k/);
    expect(plan).not.to.include('hashed SubPlan');
    expect(plan).not.to.include('rows_expiry');
  });

  // A get-row tells a missing row from a missing collection in its one statement: the collection by its
  // name, then the row by both columns of the primary key, under the same stale statistics.
  it('reads a row by id, and its collection, each by its key in one statement', async () => {
    await fill('lasting', 100, false);
    await store.knex.raw('analyze rows; analyze sort_keys');
    await fill('expiring', 1000, true);
    let n = 0;
    const sql = getRowSql.replaceAll('?', () => `$${++n}`);
    const plan = await genericPlan(sql, 'integer, bigint, integer, text', "10, 500, 1, 'expiring'");
    expect(plan).to.match(/Index Scan using rows_pkey on rows r .*\n\s+Index Cond: \(\(collection_id = c\.id\) AND \(id = \$1\)\)/);
    expect(plan).to.match(/Index Scan using \w+ on collections c/);
    expect(plan).not.to.include('Seq Scan');
  });
});
