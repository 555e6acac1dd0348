// SQLite makes a sort index in steps, each a write of its own, so that every account's writes go
// between them (src/db/sqlite/sort-indexes.ts); PostgreSQL makes it in one transaction,
// which holds only the collection's own writes (test/http/sort-index.test.ts covers both).
import { expect } from 'chai';
import type { SqliteStore } from '../../../src/db/open-store.ts';
import { SORT_INDEX_STEP_ROWS } from '../../../src/db/sqlite/sort-indexes.ts';
import type { Client } from '../../support/client.ts';
import { range } from '../../support/feed.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

type Row = { id: number; n?: number | null };

describe('sort index making on SQLite', () => {
  let server: TestServer;
  let client: Client;
  let collections = 0;
  before(async () => {
    server = await startTestServer({ sortIndexMinRows: 1 });
    client = await server.client();
  });
  after(() => server.stop());

  /** Groups of writes run so far (src/db/engine/grouping.ts, GroupedWrites): each step of a making is one. */
  const groups = () => (server.store as SqliteStore).writes.stats.groups;
  const sortedOf = async (name: string) => JSON.parse((await server.store.knex('collections').where({ name }).first('sorted')).sorted);

  /** A new collection of `rows` rows, `{n}` with n from a fixed shuffle (ties included). */
  async function collectionOf(rows: number): Promise<string> {
    const name = `steps${++collections}`;
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    for (let first = 1; first <= rows; first += 1000) {
      const batch = range(first, Math.min(rows, first + 999)).map((i) => ({ n: (i * 7919) % 997 }));
      expect((await client.post(`/v1/collections/${name}/rows`, batch)).status).to.equal(201);
    }
    return name;
  }

  /** Every row, read by id, then in contract.md's order by n (numbers ascending, ties by id, missing last). */
  async function expectedByN(name: string): Promise<number[]> {
    const rows: Row[] = [];
    for (let offset = 0; ; offset += 1000) {
      const page = (await client.get<Row[]>(`/v1/collections/${name}/rows?limit=1000&offset=${offset}`)).body;
      rows.push(...page);
      if (page.length < 1000) break;
    }
    const rank = (row: Row) => (row.n === undefined || row.n === null ? Number.POSITIVE_INFINITY : row.n);
    return rows.sort((x, y) => rank(x) - rank(y) || x.id - y.id).map((row) => row.id);
  }

  async function idsByN(name: string): Promise<number[]> {
    const ids: number[] = [];
    for (let offset = 0; ; offset += 1000) {
      const page = (await client.get<Row[]>(`/v1/collections/${name}/rows?order_by=n&limit=1000&offset=${offset}`)).body;
      ids.push(...page.map((row) => row.id));
      if (page.length < 1000) return ids;
    }
  }

  it(`makes the index of a large collection in steps of ${SORT_INDEX_STEP_ROWS} rows, each a write of its own`, async () => {
    const rows = 2 * SORT_INDEX_STEP_ROWS + 2000;
    const name = await collectionOf(rows);
    const before = groups();
    expect((await client.get(`/v1/collections/${name}/rows?order_by=n&limit=5`)).status).to.equal(200);
    // A first write, three steps, a last write (and maybe usage's own, beside them); in one pass it was one.
    expect(groups() - before).to.be.at.least(5);
    expect(await sortedOf(name)).to.deep.equal(['n']);
    expect(await idsByN(name)).to.deep.equal(await expectedByN(name));
  });

  it('keys every row inserted, patched or deleted while the index is made', async () => {
    const rows = 2 * SORT_INDEX_STEP_ROWS;
    const name = await collectionOf(rows);
    const base = `/v1/collections/${name}/rows`;
    const making = client.get(`${base}?order_by=n&limit=5`);
    const writes = [
      ...range(1, 30).map((i) => client.post(base, [{ n: -i }, { other: i }])),
      ...range(1, 30).map((i) => client.patch(`${base}/${i * 311}`, { n: 5000 + i })),
      ...range(1, 10).map((i) => client.patch(`${base}/${i * 97}`, { n: null })),
      ...range(1, 20).map((i) => client.delete(`${base}/${i * 401}`)),
    ];
    const answers = await Promise.all([making, ...writes]);
    for (const answer of answers) expect(answer.status).to.be.oneOf([200, 201, 204]);
    expect(await sortedOf(name)).to.deep.equal(['n']);
    expect(await idsByN(name)).to.deep.equal(await expectedByN(name));
  });

  it('drops the keys a making cut short left in the slot it takes', async () => {
    const name = await collectionOf(50);
    const { id } = await server.store.knex('collections').where({ name }).first('id');
    // As a making ended by the process's end would leave them: keys in slot 0, which `sorted` does not list.
    await server.store.knex('sort_keys').insert([
      { collection_id: id, slot: 0, row_id: 999, rank: 1, num: -1, str: null },
      { collection_id: id, slot: 0, row_id: 1, rank: 1, num: 1e9, str: null },
    ]);
    expect(await idsByN(name)).to.deep.equal(await expectedByN(name));
    expect(await sortedOf(name)).to.deep.equal(['n']);
  });
});
