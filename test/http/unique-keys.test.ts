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

  /** Keys whose row is gone, in the whole database. */
  const staleKeys = async () => {
    const [{ n }] = await server.store
      .knex('unique_keys as k')
      .whereNotExists(function () {
        this.from('rows as r').whereRaw('r.collection_id = k.collection_id and r.id = k.row_id');
      })
      .count({ n: '*' });
    return Number(n);
  };
  /** The keys of the collection `name`, null ones too. */
  const keysOf = async (name: string) => {
    const collection = await server.store.knex('collections').where({ name }).first('id');
    if (!collection) return 0;
    const [{ n }] = await server.store.knex('unique_keys').where({ collection_id: collection.id }).count({ n: '*' });
    return Number(n);
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
