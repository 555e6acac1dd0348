// A row's keys of unique indexes (src/db/collections/indexes.ts) go with it on every path that deletes it or
// changes its unique fields: a delete, by id, by filter or in a batch, a relation's cascade, the expiry
// sweeper, a collection's deletion, a patch (one row or by filter) and an upsert. No key is left of a row
// that is gone, and the value it held is free again (PostgreSQL deletes them by a trigger of `rows`,
// SQLite by a foreign key).
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const filter = (value: object) => `filter=${encodeURIComponent(JSON.stringify(value))}`;

describeEachBackend('unique keys go with their rows', (backend) => {
  let server: TestServer;
  let client: Client;
  before(async () => {
    server = await startTestServer({ expirySweepIntervalMs: 3_600_000 }, { backend });
    client = await server.client();
  });
  after(() => server.stop());

  /** Keys whose row is gone, in the whole database: of unique_keys, and of the sort indexes that keep unique strings on SQLite. */
  const staleKeys = async () => {
    let stale = 0;
    for (const table of ['unique_keys', 'sort_keys']) {
      const [{ n }] = await server.store
        .knex(`${table} as k`)
        .whereNotExists(function () {
          this.from('rows as r').whereRaw('r.collection_id = k.collection_id and r.id = k.row_id');
        })
        .count({ n: '*' });
      stale += Number(n);
    }
    return stale;
  };
  /**
   * The values the collection `name`'s unique indexes hold: its keys of unique_keys, and on SQLite the
   * strings of a unique index over one field, which the field's sort index keeps (none in unique_keys).
   */
  const keysOf = async (name: string) => {
    const collection = await server.store.knex('collections').where({ name }).first('id', 'sorted', 'uniques');
    if (!collection) return 0;
    const [{ n }] = await server.store.knex('unique_keys').where({ collection_id: collection.id }).whereNotNull('key').count({ n: '*' });
    if (backend !== 'sqlite') return Number(n);
    const alone = (JSON.parse(collection.uniques) as [number, string[]][]).flatMap(([, fields]) => (fields.length === 1 ? fields : []));
    const slots = (JSON.parse(collection.sorted) as string[]).flatMap((field, slot) => (alone.includes(field) ? [slot] : []));
    const [{ strings }] = await server.store
      .knex('sort_keys')
      .where({ collection_id: collection.id, rank: 2 })
      .whereIn('slot', slots)
      .count({ strings: '*' });
    return Number(n) + Number(strings);
  };
  const made = async (name: string, ...uniques: string[]) => {
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    for (const field of uniques)
      expect((await client.post(`/v1/collections/${name}/indexes`, { fields: [field], unique: true })).status).to.equal(201);
  };
  const insert = async (name: string, rows: object[]) => {
    const answer = await client.post<{ id: number }[]>(`/v1/collections/${name}/rows`, rows);
    expect(answer.status, answer.text).to.equal(201);
    return answer.body.map((row) => row.id);
  };
  /** The value `email` is free again in `name`: a row holding it is written. */
  const freed = async (name: string, email: string) =>
    expect((await client.post(`/v1/collections/${name}/rows`, [{ email }])).status).to.equal(201);

  it('by a delete of one row, by filter and in a batch', async () => {
    await made('deleted', 'email');
    const [a, , c] = await insert('deleted', [{ email: 'a' }, { email: 'b', n: 1 }, { email: 'c' }, { email: 'd', n: 1 }]);
    expect(await keysOf('deleted')).to.equal(4);
    expect((await client.delete(`/v1/collections/deleted/rows/${a}`)).status).to.equal(204);
    expect((await client.delete(`/v1/collections/deleted/rows?${filter({ n: 1 })}`)).body).to.deep.equal({ count: 2 });
    expect((await client.post('/v1/batch', { operations: [{ op: 'delete', collection: 'deleted', id: c }] })).status).to.equal(200);
    expect(await keysOf('deleted')).to.equal(0);
    expect(await staleKeys()).to.equal(0);
    for (const email of ['a', 'b', 'c', 'd']) await freed('deleted', email);
  });

  it("by a relation's cascade", async () => {
    await made('owners', 'email');
    await made('owned', 'email');
    expect(
      (
        await client.put('/v1/collections/owned/relations/owner', {
          field: 'owner_id',
          collection: 'owners',
          on_delete: 'cascade',
          reverse: 'owned',
        })
      ).status,
    ).to.equal(200);
    const [owner] = await insert('owners', [{ email: 'o' }]);
    await insert('owned', [
      { email: 'x', owner_id: owner },
      { email: 'y', owner_id: owner },
    ]);
    expect(await keysOf('owned')).to.equal(2);
    expect((await client.delete(`/v1/collections/owners/rows/${owner}`)).status).to.equal(204);
    expect(await keysOf('owned')).to.equal(0);
    expect(await staleKeys()).to.equal(0);
    await freed('owned', 'x');
  });

  it('by the expiry sweeper', async () => {
    await made('expiring', 'email');
    expect((await client.put('/v1/collections/expiring/ttl', { field: 'expires_at' })).status).to.equal(200);
    await insert('expiring', [
      { email: 'e', expires_at: '2001-01-01T00:00:00Z' },
      { email: 'f', expires_at: '2999-01-01T00:00:00Z' },
    ]);
    expect(await server.feed.sweeper.runOnce()).to.equal(1);
    expect(await keysOf('expiring')).to.equal(1);
    expect(await staleKeys()).to.equal(0);
  });

  it("by a collection's deletion", async () => {
    await made('dropped', 'email');
    await insert('dropped', [{ email: 'a' }, { email: 'b' }]);
    expect((await client.delete('/v1/collections/dropped')).status).to.equal(204);
    expect(await staleKeys()).to.equal(0);
    await made('dropped', 'email');
    await freed('dropped', 'a');
  });

  it('by a patch, a patch by filter and an upsert that change the unique field', async () => {
    await made('changed', 'email', 'handle');
    const [a] = await insert('changed', [
      { email: 'a', handle: 'ha' },
      { email: 'b', handle: 'hb', n: 1 },
      { email: 'c', handle: 'hc' },
    ]);
    expect((await client.patch(`/v1/collections/changed/rows/${a}`, { email: 'a2' })).status).to.equal(200);
    expect((await client.patch(`/v1/collections/changed/rows?${filter({ n: 1 })}`, { email: 'b2' })).body).to.deep.equal({ count: 1 });
    const upserted = await client.post('/v1/collections/changed/rows?on_conflict=handle', [{ email: 'c2', handle: 'hc' }]);
    expect(upserted.status, upserted.text).to.be.oneOf([200, 201]);
    expect(await keysOf('changed')).to.equal(6);
    expect(await staleKeys()).to.equal(0);
    for (const email of ['a', 'b', 'c']) await freed('changed', email);
    for (const email of ['a2', 'b2', 'c2']) expect((await client.post('/v1/collections/changed/rows', [{ email }])).status).to.equal(409);
  });
});

describeEachBackend('where unique keys are kept', (backend) => {
  let server: TestServer;
  let client: Client;
  afterEach(() => server?.stop());

  /** The collection `name`'s keys of unique_keys that are not null, each its row's id and key, by index and row. */
  const keysOf = async (name: string) => {
    const { id } = await server.store.knex('collections').where({ name }).first('id');
    const keys = await server.store
      .knex('unique_keys')
      .where({ collection_id: id })
      .whereNotNull('key')
      .orderBy(['index_id', 'row_id'])
      .select('row_id', 'key');
    return keys.map((key: { row_id: number | string; key: string }) => [Number(key.row_id), key.key]);
  };
  const indexed = async (name: string, rows: object[], ...indexes: string[][]) => {
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    if (rows.length > 0) expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
    for (const fields of indexes)
      expect((await client.post(`/v1/collections/${name}/indexes`, { fields, unique: true })).status).to.equal(201);
  };

  it('keeps a string of an index over one field in its sort index alone on SQLite; every other value, and every value on PostgreSQL, as a key', async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
    // Declared over stored rows: their string keys go once the field's sort index is made.
    await indexed('kept', [{ email: 'a', n: 1 }, { email: 1 }], ['email'], ['email', 'n']);
    expect((await client.post('/v1/collections/kept/rows', [{ email: 'b', n: 2 }, { email: true }, {}])).status).to.equal(201);
    // A row's value moved from a number to a string: its key goes on SQLite.
    expect((await client.patch('/v1/collections/kept/rows/2', { email: 'c' })).status).to.equal(200);
    const keys = await keysOf('kept');
    if (backend === 'sqlite')
      expect(keys).to.deep.equal([
        [4, '[true]'],
        [1, '["a",1]'],
        [3, '["b",2]'],
      ]);
    // PostgreSQL's keys are hashes: their rows are compared.
    else expect(keys.map(([row]) => row)).to.deep.equal([1, 2, 3, 4, 1, 3]);
    for (const [email, holder] of [
      ['a', 1],
      ['c', 2],
      [true, 4],
    ] as const) {
      const refused = await client.post<{ code: string; existing_id: number }>('/v1/collections/kept/rows', [{ email }]);
      expect(refused.body, String(email)).to.include({ code: 'unique_violation', existing_id: holder });
    }
  });

  it('keeps every value as a key where the field has no sort index (as many as a collection may have), and keeps it unique', async () => {
    server = await startTestServer({ sortIndexMax: 0 }, { backend });
    client = await server.client();
    await indexed('unsorted', [{ email: 'a' }], ['email']);
    expect((await client.post('/v1/collections/unsorted/rows', [{ email: 'b' }])).status).to.equal(201);
    if (backend === 'sqlite')
      expect(await keysOf('unsorted')).to.deep.equal([
        [1, '["a"]'],
        [2, '["b"]'],
      ]);
    const refused = await client.post<{ code: string; existing_id: number }>('/v1/collections/unsorted/rows', [{ email: 'b' }]);
    expect(refused.body).to.include({ code: 'unique_violation', existing_id: 2 });
    expect((await client.patch('/v1/collections/unsorted/rows/1', { email: 'b' })).status).to.equal(409);
  });
});
