// The plans of a change by filter (src/db/rows/rows.ts, matchedSql; openapi.yaml, updateRows and
// deleteRows) whose filter an index of the collection serves: the keys of the index's range read, and
// each key's row by the primary key, never every row of the collection, on both backends; on PostgreSQL
// under the statistics of a collection just filled, in the generic plan a named statement gets, and so
// too for the texts the patched rows' keys carry (src/db/postgres/sql/rows.ts, updateRowsSql). The ranges of
// a group of changes sent side by side (rangesRowsSql, src/db/rows/together.ts) read alike, on PostgreSQL
// those of one shape as one VALUES list, each range up to its own limit.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Dialect, KeyRange } from '../../../src/db/engine/dialect.ts';
import { TRUE } from '../../../src/db/engine/sql/template.ts';
import { liveWhere } from '../../../src/db/expiry/live.ts';
import { openStore, type SqliteStore, type Store } from '../../../src/db/open-store.ts';
import * as postgresFilter from '../../../src/db/postgres/filter.ts';
import * as postgresRows from '../../../src/db/postgres/sql/rows.ts';
import { indexedFields } from '../../../src/db/reads/filter-indexes.ts';
import { type FilterMatch, matchedSql } from '../../../src/db/rows/rows.ts';
import * as sqliteFilter from '../../../src/db/sqlite/filter.ts';
import * as sqliteRows from '../../../src/db/sqlite/sql/rows.ts';
import { parseFilter } from '../../../src/query/filter.ts';
import { createDatabase, skipWithoutPostgres, type TestDatabase } from '../../support/backends.ts';

/** What matchedSql() asks of a dialect, from the dialect's own modules. */
type Parts = { filterSql: typeof sqliteFilter.filterSql; keyBoundsSql: Dialect['keyBoundsSql']; rangeRowsSql: Dialect['rangeRowsSql'] };

/** The statement of a change by `filter` of the collection `id` whose sort indexes are `sorted`, at most 11 rows. */
function changeSql(parts: Parts, id: number, filter: object, sorted: string[]) {
  const parsed = parseFilter(filter);
  const match: FilterMatch = { where: liveWhere(parts.filterSql(parsed)), fields: indexedFields(parsed) };
  return matchedSql(parts as unknown as Dialect, id, match, 11, sorted);
}

/** Filters the index of `k` serves, each named. */
const indexedFilters = [
  ['an equality', { k: 7 }],
  ['a range and a condition the index cannot find', { k: { $gte: 10, $lt: 20 }, other: { $ne: 1 } }],
  ['a list of values', { k: { $in: [3, 5, 8] } }],
] as const;

/** `count` ranges of ten scores of the index in slot 0, from 0, 300, 600…, each read up to `limit` keys. */
const manyRanges = (count: number, limit: number): KeyRange[] =>
  Array.from({ length: count }, (_, i) => ({
    slot: 0,
    bounds: {
      rank: 1,
      conditions: [
        { op: '$gte', operand: 300 * i },
        { op: '$lt', operand: 300 * i + 10 },
      ],
    },
    limit,
  }));

/** A range of another kind, a list of three values, read up to two keys. */
const listRange: KeyRange = { slot: 0, bounds: { rank: 1, conditions: [{ op: '$in', operand: [3, 5, 8] }] }, limit: 2 };

describe('a change by filter through an index, as SQLite plans it', () => {
  let dir: string;
  let store: Store;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rowbase-change-plans-'));
    store = await openStore(`sqlite:${join(dir, 'rowbase.sqlite')}`);
  });
  afterEach(async () => {
    await store?.close().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });

  for (const [name, filter] of indexedFilters) {
    it(`reads the index's range and each key's row by its primary key, never every row: ${name}`, async () => {
      const parts = { ...sqliteFilter, ...sqliteRows } as unknown as Parts;
      const { sql, params } = changeSql(parts, 1, filter, ['other', 'k']);
      const plan = (await (store as SqliteStore).readers.read<{ detail: string }>(`explain query plan ${sql}`, params)).map(
        ({ detail }) => detail,
      );
      // The range's rows, found first (MATERIALIZE), each by its primary key; then those read once more, to be tested.
      expect(plan[0], plan.join('\n')).to.equal('MATERIALIZE named');
      expect(plan[1]).to.match(/^SEARCH rows USING INDEX \S+ \(collection_id=\? AND id=\?\)$/);
      expect(plan.some((detail) => /^SEARCH sort_keys USING (COVERING )?INDEX sort_keys_order /.test(detail))).to.equal(true);
      expect(plan.filter((detail) => /^(SCAN|SEARCH) rows\b/.test(detail))).to.deep.equal([plan[1], 'SCAN rows']);
      expect(plan.indexOf('SCAN rows')).to.be.above(plan.findIndex((detail) => detail.startsWith('SEARCH sort_keys')));
    });
  }

  it("reads the ranges of a group of changes each through the index, and each key's row by its primary key", async () => {
    const { sql, params } = sqliteRows.rangesRowsSql(1, [...manyRanges(3, 2 ** 31), listRange], liveWhere(TRUE));
    const plan = (await (store as SqliteStore).readers.read<{ detail: string }>(`explain query plan ${sql}`, params)).map(
      ({ detail }) => detail,
    );
    expect(
      plan.filter((detail) => /^SEARCH sort_keys USING (COVERING )?INDEX sort_keys_order /.test(detail)),
      plan.join('\n'),
    ).to.have.length(4);
    const rowReads = plan.filter((detail) => /^(SCAN|SEARCH) rows\b/.test(detail));
    expect(rowReads.length).to.be.above(0);
    for (const read of rowReads) expect(read).to.match(/^SEARCH rows USING INDEX \S+ \(collection_id=\? AND id=\?\)( LEFT-JOIN)?$/);
    expect(plan.some((detail) => /^SCAN (rows|sort_keys)\b/.test(detail))).to.equal(false);
  });

  it('tests every row of the collection when no field of the filter has an index', async () => {
    const { sql } = changeSql({ ...sqliteFilter, ...sqliteRows } as unknown as Parts, 1, { other: 7 }, ['k']);
    expect(sql).not.to.include('sort_keys');
  });
});

describe('a change by filter through an index, as PostgreSQL plans it', () => {
  let database: TestDatabase;
  let store: Store;
  let id: number;
  before(async function () {
    await skipWithoutPostgres(this);
  });
  beforeEach(async () => {
    database = await createDatabase('postgres');
    store = await openStore(database.url);
    await store.createKey('writer');
    const { knex } = store;
    const { id: accountId } = await knex('accounts').where({ name: 'writer' }).first('id');
    const created = async (name: string) =>
      Number(
        (
          await knex('collections')
            .insert({ account_id: accountId, name, created_at: new Date().toISOString(), sorted: '["k"]' })
            .returning('id')
        )[0].id,
      );
    // As in a database in service: the statistics taken while `rows` held a small collection; then one of 20,000 rows.
    const small = await created('small');
    await fill(small, 100);
    await knex.raw('analyze rows; analyze sort_keys');
    id = await created('big');
    await fill(id, 20000);
  });
  afterEach(async () => {
    await store?.close().catch(() => {});
    await database?.drop();
  });

  /** `rows` rows of the collection `collection`, each `{"k": its id}`, keyed by k in slot 0, each key carrying its row. */
  async function fill(collection: number, rows: number) {
    const { knex } = store;
    await knex.raw(`insert into rows (collection_id, id, data) select ?, g, '{"k":' || g || '}' from generate_series(1, ?) g`, [
      collection,
      rows,
    ]);
    await knex.raw(
      `insert into sort_keys (collection_id, slot, row_id, rank, num, carried) select ?, 0, g, 1, g, '{"k":' || g || '}' from generate_series(1, ?) g`,
      [collection, rows],
    );
  }

  /** The generic plan of `sql` (as a named statement gets after five runs), each `?` a parameter of the type its place gives it, run with `params`. */
  async function genericPlan(sql: string, params: unknown[]): Promise<string> {
    let n = 0;
    const text = sql.replace(/\?/g, () => `$${++n}`);
    const values = params.map((value) => `'${String(value).replaceAll("'", "''")}'`);
    const connection = await store.knex.client.acquireConnection();
    try {
      await connection.query('set plan_cache_mode = force_generic_plan');
      await connection.query(`prepare planned as ${text}`);
      const { rows } = await connection.query(`explain execute planned (${values.join(', ')})`);
      return rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n');
    } finally {
      await connection.query('deallocate planned; reset plan_cache_mode');
      await store.knex.client.releaseConnection(connection);
    }
  }

  for (const [name, filter] of indexedFilters) {
    it(`reads the index's range and each key's row by its primary key, never every row: ${name}`, async () => {
      const { sql, params } = changeSql({ ...postgresFilter, ...postgresRows } as unknown as Parts, id, filter, ['k']);
      const plan = await genericPlan(sql, params);
      expect(plan).to.match(/Index (Only )?Scan using sort_keys_order on sort_keys/);
      expect(plan).to.match(/Index Scan using rows_pkey on rows/);
      expect(plan).to.include('Tid Scan on rows');
      expect(plan).not.to.match(/Seq Scan on (rows|sort_keys)/);
    });
  }

  it("reads many ranges of one shape as one VALUES list, each through the index, each key's row by its primary key", async () => {
    const { sql, params } = postgresRows.rangesRowsSql(id, [...manyRanges(60, 2 ** 31), listRange], liveWhere(TRUE));
    const plan = (await store.knex.raw(`explain ${sql}`, params)).rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n');
    expect(plan).to.include('Values Scan');
    expect(plan).to.match(/Index (Only )?Scan using sort_keys_order on sort_keys/);
    expect(plan).to.match(/Index Scan using rows_pkey on rows|Bitmap Index Scan on rows_pkey/);
    expect(plan).not.to.match(/Seq Scan on (rows|sort_keys)/);
    // Each range's keys, the first range's 1 to 9 (no row 0), the others' ten each; the list's first two.
    const found: { n: number; id: string; data: string }[] = (await store.knex.raw(sql, params)).rows;
    const byRange = Array.from({ length: 61 }, (_, n) =>
      found
        .filter((row) => row.n === n)
        .map((row) => Number(row.id))
        .sort((a, b) => a - b),
    );
    expect(byRange[0]).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (let i = 1; i < 60; i++) expect(byRange[i]).to.deep.equal(Array.from({ length: 10 }, (_, k) => 300 * i + k));
    expect(byRange[60]).to.have.length(2);
    expect(found.every((row) => row.data === `{"k":${row.id}}`)).to.equal(true);
  });

  it("finds the keys of the patched rows each by its primary key, in the plan of the rows' update", async () => {
    const plan = await genericPlan(postgresRows.updateRowsSql, ['[[7,"{\\"k\\":7,\\"t\\":1}"]]', id, 20000, id]);
    expect(plan).to.include('Tid Scan on sort_keys');
    expect(plan).to.include('Tid Scan on rows');
    expect(plan).to.match(/Index Scan using sort_keys_pkey on sort_keys|Bitmap Index Scan on sort_keys_pkey/);
    expect(plan).to.match(/Index Scan using rows_pkey on rows|Bitmap Index Scan on rows_pkey/);
    expect(plan).not.to.match(/Seq Scan on (rows|sort_keys)/);
    // The keys of the collection read whole, by its id alone, were the fault.
    expect(plan).not.to.match(/Index Cond: \(collection_id = \$\d+\)\n/);
  });
});
