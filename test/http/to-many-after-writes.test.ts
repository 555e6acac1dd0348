// A to-many expansion (openapi.yaml, `expand`; docs/relations.md) after every kind of write of the related
// rows, on both backends: inserts, patches that move a row, set its relation field to null, make its text
// long and short again, changes by filter, deletes, and the relation deleted and declared again. A
// relation field's sort keys carry their rows' texts (src/db/*/sql/collections.ts, carriedText), which
// the expansion reads: the test also checks which keys carry and that every text carried is its row's.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { watchHealth } from '../support/watchdog.ts';

type Row = { id: number } & Record<string, unknown>;

describeEachBackend('a to-many expansion after writes', (backend) => {
  let server: TestServer;
  let client: Client;
  const posts: Row[] = [1, 2, 3].map((id) => ({ id, title: `p${id}` }));
  const comments = new Map<number, Row>();
  /** The ids of the comments whose keys carry their texts. */
  const carrying = new Set<number>();

  before(async () => {
    server = await startTestServer({ sortIndexMinRows: 0 }, { backend });
    client = await server.client();
    for (const name of ['posts', 'comments']) expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    const stored = await client.post(
      '/v1/collections/posts/rows',
      posts.map(({ title }) => ({ title })),
    );
    expect(stored.status).to.equal(201);
    await relate();
  });
  after(() => server.stop());
  watchHealth(() => server);

  async function relate() {
    const body = { field: 'post_id', collection: 'posts', reverse: 'comments' };
    expect((await client.put('/v1/collections/comments/relations/post', body)).status).to.equal(200);
  }

  /** Inserts comments, each carrying when the relation is declared, its post a number and its text short. */
  async function insert(rows: Record<string, unknown>[], related = true) {
    const stored = await client.post<Row[]>('/v1/collections/comments/rows', rows);
    expect(stored.status).to.equal(201);
    for (const row of stored.body) {
      comments.set(row.id, row);
      if (related && typeof row.post_id === 'number' && JSON.stringify(row).length < 1900) carrying.add(row.id);
    }
  }

  async function patch(id: number, fields: Record<string, unknown>) {
    const patched = await client.patch<Row>(`/v1/collections/comments/rows/${id}`, fields);
    expect(patched.status).to.equal(200);
    comments.set(id, patched.body);
    return patched.body;
  }

  /** The comments of `post` as an expansion answers them: in id order, at most 10. */
  const commentsOf = (post: Row) =>
    [...comments.values()]
      .filter((comment) => comment.post_id === post.id)
      .sort((a, b) => a.id - b.id)
      .slice(0, 10);

  /** Every post's expansion, as a page and as a row, against the comments written, and the texts carried. */
  async function expectExpanded() {
    const page = await client.get<Row[]>('/v1/collections/posts/rows?expand=comments');
    expect(page.status).to.equal(200);
    expect(page.body).to.deep.equal(posts.map((post) => ({ ...post, _expand: { comments: commentsOf(post) } })));
    for (const post of posts) {
      const one = await client.get<Row>(`/v1/collections/posts/rows/${post.id}?expand=comments`);
      expect(one.status).to.equal(200);
      expect(one.body._expand).to.deep.equal({ comments: commentsOf(post) });
    }
    expect(await carried()).to.deep.equal({ ids: [...carrying].sort((a, b) => a - b), stale: 0 });
  }

  /** The ids of the comments whose keys carry a text, and how many of those texts are not their rows'. */
  async function carried(collection = 'comments') {
    const { knex } = server.store;
    const keys = await knex('sort_keys as k')
      .join('collections as c', 'c.id', 'k.collection_id')
      .join('rows as r', (on) => on.on('r.collection_id', 'k.collection_id').andOn('r.id', 'k.row_id'))
      .where('c.name', collection)
      .whereNotNull('k.carried')
      .orderBy('k.row_id')
      .select('k.row_id', knex.raw('k.carried = r.data as same'));
    return { ids: keys.map((key) => Number(key.row_id)), stale: keys.filter((key) => !key.same).length };
  }

  it('reads the comments inserted after the relation was declared', async () => {
    await insert([1, 1, 2, 1, 3, 2].map((post_id, i) => ({ post_id, text: `c${i + 1}` })));
    await expectExpanded();
  });

  it('follows patches: of another field, moving a comment, to a null post, past the bound carried and back', async () => {
    await patch(1, { text: 'c1, edited' });
    await patch(2, { post_id: 3 });
    await patch(3, { post_id: null });
    carrying.delete(3);
    await expectExpanded();
    await patch(4, { text: 'x'.repeat(3000) });
    carrying.delete(4);
    await expectExpanded();
    // Short again: SQLite's key carries it again; PostgreSQL's when its relation field is written again,
    // and until then the text is read from its row.
    await patch(4, { text: 'c4' });
    if (backend === 'sqlite') carrying.add(4);
    await expectExpanded();
    await patch(4, { post_id: 2 });
    carrying.add(4);
    await patch(3, { post_id: 1 });
    carrying.add(3);
    await expectExpanded();
  });

  it('follows changes by filter, of another field and of the relation field', async () => {
    const edited = await client.patch<{ count: number }>(`/v1/collections/comments/rows?filter=${encodeURIComponent('{"post_id": 1}')}`, {
      edited: true,
    });
    expect(edited.body).to.deep.equal({ count: [...comments.values()].filter((row) => row.post_id === 1).length });
    const moved = await client.patch<{ count: number }>(`/v1/collections/comments/rows?filter=${encodeURIComponent('{"text": "c5"}')}`, {
      post_id: 1,
    });
    expect(moved.body).to.deep.equal({ count: 1 });
    for (const id of comments.keys()) {
      const row = await client.get<Row>(`/v1/collections/comments/rows/${id}`);
      comments.set(id, row.body);
    }
    await expectExpanded();
  });

  it('follows a delete and long rows, and a relation declared again', async () => {
    expect((await client.delete('/v1/collections/comments/rows/6')).status).to.equal(204);
    comments.delete(6);
    carrying.delete(6);
    await insert([{ post_id: 2, text: 'y'.repeat(2500) }]);
    await expectExpanded();
    expect((await client.delete('/v1/collections/comments/relations/post')).status).to.equal(204);
    // Written while there is no relation: its key carries nothing; on PostgreSQL the keys that carry keep
    // up with their rows, on SQLite a row written then carries none.
    await insert([{ post_id: 3, text: 'c8' }], false);
    await patch(1, { text: 'c1, edited again' });
    expect(await carried()).to.deep.equal({ ids: backend === 'postgres' ? [1, 2, 3, 4, 5] : [2, 3, 4, 5], stale: 0 });
    // Declared again over the sort index there, the keys that carried none carry their texts.
    await relate();
    carrying.add(8);
    await expectExpanded();
    expect([...carrying].sort((a, b) => a - b)).to.deep.equal([1, 2, 3, 4, 5, 8]);
  });

  it('has the keys of a field sorted before its relation was declared carry their rows', async () => {
    expect((await client.post('/v1/collections', { name: 'notes' })).status).to.equal(201);
    const stored = await client.post<Row[]>('/v1/collections/notes/rows', [
      { post_id: 2 },
      { post_id: 2, n: 'x'.repeat(2500) },
      { post_id: 1 },
    ]);
    expect(stored.status).to.equal(201);
    // The first page ordered by the field makes its sort index.
    expect((await client.get('/v1/collections/notes/rows?order_by=post_id')).status).to.equal(200);
    const body = { field: 'post_id', collection: 'posts', reverse: 'notes' };
    expect((await client.put('/v1/collections/notes/relations/post', body)).status).to.equal(200);
    const page = await client.get<Row[]>('/v1/collections/posts/rows?expand=notes');
    expect(page.body.map((post) => (post._expand as { notes: Row[] }).notes.map((note) => note.id))).to.deep.equal([[3], [1, 2], []]);
    expect(await carried('notes')).to.deep.equal({ ids: [1, 3], stale: 0 });
  });

  it('has the keys of a sort index made as its relation is declared carry their rows', async () => {
    expect((await client.post('/v1/collections', { name: 'replies' })).status).to.equal(201);
    const stored = await client.post<Row[]>('/v1/collections/replies/rows', [
      { post_id: 3 },
      { post_id: 3, n: 'x'.repeat(2500) },
      { post_id: null },
      { post_id: 1 },
    ]);
    expect(stored.status).to.equal(201);
    // No sort index of the field yet: the declaration makes it over the rows there.
    const body = { field: 'post_id', collection: 'posts', reverse: 'replies' };
    expect((await client.put('/v1/collections/replies/relations/post', body)).status).to.equal(200);
    const page = await client.get<Row[]>('/v1/collections/posts/rows?expand=replies');
    expect(page.body.map((post) => (post._expand as { replies: Row[] }).replies.map((reply) => reply.id))).to.deep.equal([[4], [], [1, 2]]);
    expect(await carried('replies')).to.deep.equal({ ids: [1, 4], stale: 0 });
  });
});
