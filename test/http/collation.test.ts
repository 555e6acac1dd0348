// On a PostgreSQL database whose default collation is not "C" (ICU's en-US sorts a A b B), every order
// the service gives over text is still by code point, as openapi.yaml says and as SQLite gives it.
import { expect } from 'chai';
import { createDatabase, skipWithoutPostgres, type TestDatabase } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Row = { id: number } & Record<string, unknown>;

/** Names that en-US sorts `a A b B zed Zed`, in code point order. */
const byCodePoint = ['A', 'B', 'Zed', 'a', 'b', 'zed'];
const shuffled = ['b', 'B', 'a', 'A', 'Zed', 'zed'];

describe('on a PostgreSQL database whose collation is not C', () => {
  let server: TestServer | undefined;
  let client: Client;
  const running = () => server as TestServer;

  before(async function () {
    await skipWithoutPostgres(this);
    let database: TestDatabase;
    try {
      database = await createDatabase('postgres', { icuLocale: 'en-US' });
    } catch {
      this.skip(); // a server before PostgreSQL 15, or without ICU, cannot make one
    }
    // One sort index per collection: the first field ordered by is indexed, the next sorts whole.
    server = await startTestServer({ sortIndexMinRows: 0, sortIndexMax: 1 }, { backend: 'postgres', database });
    client = await server.client();
  });
  after(() => server?.stop());

  it('is a database where text does not sort by code point', async () => {
    const { rows } = await running().store.knex.raw(`select string_agg(x, ' ' order by x) as sorted from unnest(?::text[]) x`, [shuffled]);
    expect(rows[0].sorted).to.equal('a A b B zed Zed');
  });

  it('lists collections by name in code point order', async () => {
    for (const name of shuffled) expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    const response = await client.get<{ name: string }[]>('/v1/collections');
    expect(response.status).to.equal(200);
    expect(response.body.map((collection) => collection.name)).to.deep.equal(byCodePoint);
  });

  it('orders rows by a string field in code point order, from an index and sorting whole, both ways', async () => {
    const values = [...shuffled, 'é', 'E'];
    const expected = ['A', 'B', 'E', 'Zed', 'a', 'b', 'zed', 'é'];
    const other = await running().client();
    expect((await other.post('/v1/collections', { name: 'rows' })).status).to.equal(201);
    expect(
      (
        await other.post(
          '/v1/collections/rows/rows',
          values.map((v) => ({ indexed: v, whole: v })),
        )
      ).status,
    ).to.equal(201);
    for (const field of ['indexed', 'whole']) {
      for (const order of ['asc', 'desc'] as const) {
        const response = await other.get<Row[]>(`/v1/collections/rows/rows?order_by=${field}&order=${order}`);
        expect(response.status).to.equal(200);
        const got = response.body.map((row) => row[field]);
        expect(got, `${field} ${order}`).to.deep.equal(order === 'asc' ? expected : [...expected].reverse());
      }
    }
    const { sorted } = await running().store.knex('collections').where({ name: 'rows' }).first('sorted');
    expect(JSON.parse(sorted)).to.deep.equal(['indexed']);
  });

  it('lists plans and keys (rowbase plans list, keys list) by name in code point order', async () => {
    const store = running().store;
    for (const name of shuffled) {
      await store.setPlan({ name: `plan-${name}`, quota: 1, period: 'day' });
      await store.createKey(`listed-${name}`);
    }
    const plans = (await store.listPlans()).map((plan) => plan.name).filter((name) => name.startsWith('plan-'));
    expect(plans).to.deep.equal(byCodePoint.map((name) => `plan-${name}`));
    const accounts = (await store.listKeys()).map((key) => key.account).filter((name) => name.startsWith('listed-'));
    expect(accounts).to.deep.equal(byCodePoint.map((name) => `listed-${name}`));
  });
});
