// The engines fed with the words of src/search/words.ts (docs/search.md, "How the databases are fed")
// find exactly the rows the in-memory reference, matchesSearch(), finds: random rows of accents, mixed case,
// punctuation, CJK and emoji, their terms written with each dialect's searchSql, and random searches
// run through its match(), on SQLite's FTS5 and on PostgreSQL's tsvector and GIN index alike.
import { expect } from 'chai';
import fc from 'fast-check';
import type { SearchSql } from '../../../src/db/engine/dialect.ts';
import { searchTerms } from '../../../src/db/engine/sql/search.ts';
import type { Store } from '../../../src/db/open-store.ts';
import { searchSql as postgresSearchSql } from '../../../src/db/postgres/sql/search.ts';
import { searchSql as sqliteSearchSql } from '../../../src/db/sqlite/sql/search.ts';
import { matchesSearch, rowWords, type Search, searchOf } from '../../../src/search/words.ts';
import { describeEachBackend, storeWithAccount, type TestDatabase } from '../../support/backends.ts';
import { row, search } from '../../support/words.ts';

const dialects: Record<string, SearchSql> = { sqlite: sqliteSearchSql, postgres: postgresSearchSql };

describeEachBackend('search: the engines fed with our words', (backend) => {
  let database: TestDatabase;
  let store: Store;
  let accountId: number;
  let collections = 0;
  const searchSql = dialects[backend];
  const rowsOf = (result: unknown) => (backend === 'sqlite' ? result : (result as { rows: unknown }).rows) as { id: number | string }[];

  before(async () => {
    ({ database, store, accountId } = await storeWithAccount(backend, 'searcher'));
  });
  after(async () => {
    await store?.close().catch(() => {});
    await database?.drop();
  });

  /** A new collection of `rows`, their words written as a search index over title and body writes them; its id. */
  async function collectionOf(rows: Record<string, unknown>[]): Promise<number> {
    const name = `c${++collections}`;
    await store.createCollection(accountId, name);
    await store.insertRows(accountId, name, rows);
    const [{ id }] = await store.knex('collections').where({ account_id: accountId, name }).select('id');
    const collectionId = Number(id);
    const entries = rows.map((fields, index) => [index + 1, searchTerms(collectionId, rowWords(fields, ['title', 'body'])).join(' ')]);
    await store.knex.raw(searchSql.put, [collectionId, JSON.stringify(entries)]);
    return collectionId;
  }

  async function found(collectionId: number, { words, prefix }: Search): Promise<number[]> {
    const query = searchSql.query(
      searchTerms(collectionId, words),
      prefix === undefined ? undefined : searchTerms(collectionId, [prefix])[0],
    );
    const sql = `select r.id from rows r where r.collection_id = ? and ${searchSql.match('r')} order by r.id`;
    return rowsOf(await store.knex.raw(sql, [collectionId, query])).map((row) => Number(row.id));
  }

  it('find the rows matchesSearch() finds, for random rows and searches, in their collection only', async () => {
    let telling = 0;
    let searches = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(row, { minLength: 1, maxLength: 25 }),
        fc.array(search, { minLength: 1, maxLength: 12 }),
        async (rows, texts) => {
          const collectionId = await collectionOf(rows);
          // Another collection holding every row's words: none of its rows is found in the first.
          const other = await collectionOf([{ title: rows.map((fields) => `${fields.title} ${fields.body}`).join(' ') }]);
          expect(other).not.to.equal(collectionId);
          for (const value of texts) {
            const asked = searchOf(value);
            const expected = rows.flatMap((fields, index) =>
              matchesSearch(rowWords(fields, ['title', 'body']), asked) ? [index + 1] : [],
            );
            expect(await found(collectionId, asked), JSON.stringify(value)).to.deep.equal(expected);
            searches++;
            if (expected.length > 0 && expected.length < rows.length) telling++;
          }
        },
      ),
      { numRuns: 60 },
    );
    // A search that finds every row or none tells little: many must not.
    expect(telling / searches).to.be.above(0.1);
  });

  it('set the words of a row again, and remove them, and with its row', async () => {
    const collectionId = await collectionOf([{ title: 'Red shoes' }, { title: 'Blue shoes' }]);
    await store.knex.raw(searchSql.put, [collectionId, JSON.stringify([[1, searchTerms(collectionId, ['green', 'shoes']).join(' ')]])]);
    expect(await found(collectionId, searchOf('red'))).to.deep.equal([]);
    expect(await found(collectionId, searchOf('gree'))).to.deep.equal([1]);
    await store.knex('rows').where({ collection_id: collectionId, id: 2 }).delete();
    expect(await found(collectionId, searchOf('shoes'))).to.deep.equal([1]);
    await store.knex.raw(searchSql.removeAll, [collectionId]);
    expect(await found(collectionId, searchOf('shoes'))).to.deep.equal([]);
  });
});
