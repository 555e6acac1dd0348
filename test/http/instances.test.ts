// Another instance on the same database (here: a store of its own, as `rowbase serve` or the CLI in
// another process would have) deletes and re-creates collections; this server must never answer from
// what it read before (contract.md, "Storage and scale").
import { expect } from 'chai';
import { openStore, type Store } from '../../src/db/open-store.ts';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describeEachBackend('a collection changed by another instance', (backend) => {
  let server: TestServer;
  let other: Store;
  let client: Client;
  let accountId: number;
  before(async () => {
    server = await startTestServer({}, { backend });
    other = await openStore(server.databaseUrl);
    client = await server.client();
    accountId = (await server.store.findPrincipal(client.key!))!.accountId;
  });
  after(async () => {
    await other.close();
    await server.stop();
  });

  /** Reads the row, its page and the collection until this server has surely looked them up. */
  async function readAll(name: string) {
    const row = await client.get(`/v1/collections/${name}/rows/1`);
    const page = await client.get(`/v1/collections/${name}/rows?order_by=n`);
    const byId = await client.get(`/v1/collections/${name}/rows`);
    return { row, page, byId };
  }

  it('is a 404 for reads and writes here once deleted there', async () => {
    await client.post('/v1/collections', { name: 'gone' });
    await client.post('/v1/collections/gone/rows', [{ n: 1 }]);
    expect((await readAll('gone')).row.status).to.equal(200);

    await other.deleteCollection(accountId, 'gone');

    const { row, page, byId } = await readAll('gone');
    for (const response of [row, page, byId]) {
      expect(response.status).to.equal(404);
      expect(response.body).to.include({ code: 'not_found', detail: 'There is no collection named gone.' });
    }
    expect((await client.patch('/v1/collections/gone/rows/1', { n: 2 })).status).to.equal(404);
    expect((await client.post('/v1/collections/gone/rows', [{ n: 2 }])).status).to.equal(404);
    expect((await client.delete('/v1/collections/gone/rows/1')).status).to.equal(404);
  });

  it('answers with the new collection once deleted and made again there', async () => {
    await client.post('/v1/collections', { name: 'reborn' });
    await client.post('/v1/collections/reborn/rows', [
      { n: 1, was: 'old' },
      { n: 2, was: 'old' },
    ]);
    expect((await readAll('reborn')).row.body).to.deep.equal({ id: 1, n: 1, was: 'old' });

    await other.deleteCollection(accountId, 'reborn');
    await other.createCollection(accountId, 'reborn');
    await other.insertRows(accountId, 'reborn', [{ n: 5, was: 'new' }]);

    const { row, page, byId } = await readAll('reborn');
    expect(row.body).to.deep.equal({ id: 1, n: 5, was: 'new' });
    expect(page.body).to.deep.equal([{ id: 1, n: 5, was: 'new' }]);
    expect(byId.body).to.deep.equal([{ id: 1, n: 5, was: 'new' }]);
    expect((await client.get('/v1/collections/reborn/rows/2')).body).to.include({
      code: 'not_found',
      detail: 'There is no row 2 in collection reborn.',
    });
    const patched = await client.patch('/v1/collections/reborn/rows/1', { n: 6 });
    expect(patched.body).to.deep.equal({ id: 1, n: 6, was: 'new' });
  });

  it('reads a $match through its relation as declared there anew, deleted there, and through an index made there', async () => {
    const match = (filter: object) =>
      client.get<{ id: number }[]>(`/v1/collections/posts/rows?filter=${encodeURIComponent(JSON.stringify(filter))}`);
    const ids = async (filter: object) => (await match(filter)).body.map((row) => row.id);
    for (const name of ['people', 'posts']) await client.post('/v1/collections', { name });
    await client.post('/v1/collections/people/rows', [{ email: 'a@x' }, { email: 'b@x' }, { email: 'c@x', team: 't' }]);
    expect((await client.post('/v1/collections/people/indexes', { fields: ['email'], unique: true })).status).to.equal(201);
    await client.post('/v1/collections/posts/rows', [
      { author_id: 1, editor_id: 2 },
      { author_id: 2, editor_id: 1 },
      { author_id: 1, editor_id: 3 },
    ]);
    expect((await client.put('/v1/collections/posts/relations/author', { field: 'author_id', collection: 'people' })).status).to.equal(200);
    // Read twice: the second from what this server saw.
    for (let read = 0; read < 2; read++) expect(await ids({ author: { $match: { email: 'a@x' } } })).to.deep.equal([1, 3]);
    expect(await ids({ $not: { author: { $match: { email: 'a@x' } } } })).to.deep.equal([2]);

    await other.putRelation(accountId, 'posts', 'author', { field: 'editor_id', collection: 'people' });
    await other.sortBy(accountId, 'posts', 'editor_id');
    expect(await ids({ author: { $match: { email: 'a@x' } } })).to.deep.equal([2]);
    expect(await ids({ author: { $match: { email: 'c@x' } } })).to.deep.equal([3]);

    await other.createIndex(accountId, 'people', ['team'], false);
    await other.sortBy(accountId, 'people', 'team');
    expect(await ids({ author: { $match: { team: 't' } } })).to.deep.equal([3]);

    // Read here as one person at most, by the unique email: no longer once the index is gone and two share it.
    await other.deleteIndex(accountId, 'people', 'email');
    await other.insertRows(accountId, 'people', [{ email: 'a@x' }]);
    await other.insertRows(accountId, 'posts', [{ author_id: 3, editor_id: 4 }]);
    for (let read = 0; read < 2; read++) expect(await ids({ author: { $match: { email: 'a@x' } } })).to.deep.equal([2, 4]);

    await other.deleteRelation(accountId, 'posts', 'author');
    const refused = await match({ author: { $match: { email: 'a@x' } } });
    expect(refused.status).to.equal(400);
  });

  it('reads a $some through its relation as declared there anew and deleted there, with its count and under $not', async () => {
    const some = (filter: object, query = '') =>
      client.get<{ id: number }[]>(`/v1/collections/topics/rows?filter=${encodeURIComponent(JSON.stringify(filter))}${query}`);
    const ids = async (filter: object) => (await some(filter)).body.map((row) => row.id);
    for (const name of ['topics', 'notes']) await client.post('/v1/collections', { name });
    await client.post('/v1/collections/topics/rows', [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
    await client.post('/v1/collections/notes/rows', [
      { topic_id: 1, other_id: 4, tag: 'red' },
      { topic_id: 1, other_id: 3, tag: 'red' },
      { topic_id: 2, other_id: 2, tag: 'blue' },
      { topic_id: 3, other_id: 4, tag: 'red' },
    ]);
    expect((await client.post('/v1/collections/notes/indexes', { fields: ['tag'] })).status).to.equal(201);
    const declared = await client.put('/v1/collections/notes/relations/topic', {
      field: 'topic_id',
      collection: 'topics',
      reverse: 'notes',
    });
    expect(declared.status).to.equal(200);
    // Read twice: the second from what this server saw.
    for (let read = 0; read < 2; read++) expect(await ids({ notes: { $some: { tag: 'red' } } })).to.deep.equal([1, 3]);
    const counted = await some({ notes: { $some: { tag: 'red' } } }, '&count=exact&limit=1');
    expect([counted.body.map((row) => row.id), counted.headers.get('rowbase-total-count')]).to.deep.equal([[1], '2']);
    expect(await ids({ $not: { notes: { $some: { tag: 'red' } } } })).to.deep.equal([2, 4]);
    expect(await ids({ $or: [{ n: 4 }, { notes: { $some: { tag: 'blue' } } }] })).to.deep.equal([2, 4]);
    expect(await ids({ notes: { $some: { tag: 'green' } } })).to.deep.equal([]);

    await other.putRelation(accountId, 'notes', 'topic', { field: 'other_id', collection: 'topics', reverse: 'notes' });
    await other.sortBy(accountId, 'notes', 'other_id');
    expect(await ids({ notes: { $some: { tag: 'red' } } })).to.deep.equal([3, 4]);
    await other.insertRows(accountId, 'notes', [{ topic_id: 4, other_id: 1, tag: 'red' }]);
    expect(await ids({ notes: { $some: { tag: 'red' } } })).to.deep.equal([1, 3, 4]);

    await other.deleteRelation(accountId, 'notes', 'topic');
    expect((await some({ notes: { $some: { tag: 'red' } } })).status).to.equal(400);
  });

  it('is an empty page, not a 404, for a collection that exists without rows', async () => {
    await client.post('/v1/collections', { name: 'empty' });
    for (const query of ['', '?order_by=n']) {
      const response = await client.get(`/v1/collections/empty/rows${query}`);
      expect(response.status).to.equal(200);
      expect(response.body).to.deep.equal([]);
    }
  });
});
