// PostgreSQL plans each hot page's statement once, not on every run (src/db/postgres/sql/reads.ts, pageCut;
// docs/development.md, "Rules of the hot paths"): under the default plan_cache_mode, a named statement runs
// its generic plan after its first five runs only when that plan costs no more than theirs, which a bound
// LIMIT or OFFSET never did. Each kind of page runs ten times on the one connection of the store's pool,
// whose prepared statements then say which plans ran.
import { expect } from 'chai';
import { openStore, type Store } from '../../../src/db/open-store.ts';
import type { Expansion } from '../../../src/db/reads/expand.ts';
import { createDatabase, skipWithoutPostgres, type TestDatabase } from '../../support/backends.ts';

const BY_ID = [{ field: 'id', direction: 'asc' as const }];
const author: Expansion = { name: 'author', kind: 'to_one', collection: 'people', field: 'author_id', order: BY_ID, limit: 1, expand: [] };
const comments: Expansion = {
  name: 'comments',
  kind: 'to_many',
  collection: 'comments',
  field: 'post_id',
  order: BY_ID,
  limit: 10,
  expand: [],
};

describe("PostgreSQL's plans of pages", () => {
  let database: TestDatabase;
  let store: Store;
  let accountId: number;
  before(async function () {
    await skipWithoutPostgres(this);
    database = await createDatabase('postgres');
    // One connection: its prepared statements are every statement the pages ran. Any collection gets its sort indexes.
    store = await openStore(`${database.url}?pool_max=1`, { sortIndexes: { minRows: 0, max: 8 } });
    const { key } = await store.createKey('reader');
    accountId = (await store.findPrincipal(key))!.accountId;
    const fill = async (name: string, rows: number, row: (id: number) => Record<string, unknown>) => {
      await store.createCollection(accountId, name);
      for (let first = 1; first <= rows; first += 1000)
        await store.insertRows(
          accountId,
          name,
          Array.from({ length: Math.min(1000, rows - first + 1) }, (_, i) => row(first + i)),
        );
    };
    await fill('bench', 3000, (id) => ({ score: (id * 7919) % 1000 }));
    await fill('people', 100, (id) => ({ name: `person ${id}` }));
    await fill('posts', 2000, (id) => ({ author_id: 1 + (id % 100) }));
    await fill('comments', 3000, (id) => ({ post_id: 1 + (id % 2000) }));
    await store.knex.raw('analyze');
  });
  after(async () => {
    await store?.close().catch(() => {});
    await database?.drop();
  });

  it('runs the generic plan of each hot page once it has run five times', async () => {
    let n = 0;
    const pages: Record<string, () => Promise<unknown>> = {
      'by id': () => store.listRows(accountId, 'posts', { limit: 50, offset: 0, order: BY_ID }),
      'by id past an offset': () => store.listRows(accountId, 'posts', { limit: 20, offset: 40, order: BY_ID }),
      'through a sort index': () =>
        store.listRows(accountId, 'bench', { limit: 50, offset: 0, order: [{ field: 'score', direction: 'desc' }] }),
      'filtered through a sort index': () =>
        store.listRows(accountId, 'posts', {
          limit: 50,
          offset: 0,
          order: BY_ID,
          filter: { kind: 'field', path: ['author_id'], op: '$eq', operand: 1 + (n++ % 100) },
        }),
      'with its authors': () => store.listRows(accountId, 'posts', { limit: 50, offset: 0, order: BY_ID }, [author]),
      'with its comments': () => store.listRows(accountId, 'posts', { limit: 50, offset: 0, order: BY_ID }, [comments]),
      'a row by id': () => store.getRow(accountId, 'bench', 1 + (n++ % 3000)),
    };
    for (const read of Object.values(pages)) for (let run = 0; run < 10; run++) await read();
    const { rows } = await store.knex.raw<{ rows: { statement: string; generic_plans: string; custom_plans: string }[] }>(
      'select statement, generic_plans, custom_plans from pg_prepared_statements',
    );
    const ran = (pattern: RegExp) => {
      const found = rows.filter((row) => pattern.test(row.statement));
      expect(found, String(pattern)).to.not.be.empty;
      for (const row of found) expect(Number(row.generic_plans), `${row.custom_plans} custom plans: ${row.statement}`).to.be.above(0);
    };
    // Every statement that ran more than five times, the pages' among them.
    for (const row of rows)
      if (Number(row.generic_plans) + Number(row.custom_plans) > 5)
        expect(Number(row.generic_plans), `${row.custom_plans} custom plans: ${row.statement}`).to.be.above(0);
    ran(/order by id asc\)? limit \d+\) cut limit \$\d+ offset/);
    ran(/from sort_keys where collection_id = \$1 and slot = \$2 and rank < 5/);
    ran(/"_expand":\{/);
    ran(/left join rows r on r.collection_id = c.id and r.id = \$1/);
  });
});
