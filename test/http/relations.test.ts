// Relations (openapi.yaml, the `relations` tag; docs/relations.md): declared, listed, exported, and every
// write held to them, on both backends, under concurrency.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { FeedClient } from '../support/feed.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { watchHealth } from '../support/watchdog.ts';

type Row = { id: number } & Record<string, unknown>;
type Problem = {
  code: string;
  detail: string;
  errors?: { in?: string; name?: string; row?: number; pointer?: string; message: string }[];
  violations?: { id: number; pointer: string }[];
  total?: number;
};

const filter = (value: object) => `filter=${encodeURIComponent(JSON.stringify(value))}`;

describeEachBackend('relations', (backend) => {
  let server: TestServer;
  let client: Client;
  let made = 0;
  /** A fresh pair of names, so that the tests share no collection. */
  const fresh = (base: string) => `${base}${++made}`;
  async function collection(name: string, rows: object[] = []) {
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    if (rows.length > 0) expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
  }
  const relate = (collection: string, name: string, body: object) =>
    client.put<Problem & Record<string, unknown>>(`/v1/collections/${collection}/relations/${name}`, body);
  const rowsOf = async (name: string) => (await client.get<Row[]>(`/v1/collections/${name}/rows?limit=1000`)).body;

  /** people (3 rows) and posts naming them, with the relation `author` declared as `onDelete`. */
  async function authored(onDelete: string) {
    const people = fresh('people');
    const posts = fresh('posts');
    await collection(people, [{ name: 'Ada' }, { name: 'Bob' }, { name: 'Cy' }]);
    await collection(posts, [
      { title: 'a', author_id: 1 },
      { title: 'b', author_id: 1 },
      { title: 'c', author_id: 2 },
      { title: 'd', author_id: null },
    ]);
    const declared = await relate(posts, 'author', { field: 'author_id', collection: people, on_delete: onDelete, reverse: 'posts' });
    expect(declared.status, JSON.stringify(declared.body)).to.equal(200);
    return { people, posts };
  }

  before(async () => {
    server = await startTestServer({ sortIndexMinRows: 0 }, { backend });
    client = await server.client();
  });
  after(() => server.stop());
  watchHealth(() => server);

  describe('declaring', () => {
    it('declares a relation and its reverse, lists both directions, shows them on the collection, and removes them', async () => {
      const { people, posts } = await authored('restrict');
      const toOne = { name: 'author', kind: 'to_one', collection: people, field: 'author_id', on_delete: 'restrict', reverse: 'posts' };
      const toMany = { name: 'posts', kind: 'to_many', collection: posts, field: 'author_id', on_delete: 'restrict', reverse: 'author' };
      expect((await client.get(`/v1/collections/${posts}/relations`)).body).to.deep.equal([toOne]);
      expect((await client.get(`/v1/collections/${people}/relations`)).body).to.deep.equal([toMany]);
      expect((await client.get(`/v1/collections/${people}/relations/posts`)).body).to.deep.equal(toMany);
      expect((await client.get(`/v1/collections/${posts}/relations/author`)).body).to.deep.equal(toOne);
      expect((await client.get<{ relations: unknown[] }>(`/v1/collections/${posts}`)).body.relations).to.deep.equal([toOne]);
      expect((await client.get(`/v1/collections/${posts}/relations/nothing`)).status).to.equal(404);
      // A schema set and removed keeps the relations.
      expect((await client.put(`/v1/collections/${posts}/schema`, { type: 'object' })).status).to.equal(200);
      expect((await client.post(`/v1/collections/${posts}/rows`, [{ author_id: 99 }])).status).to.equal(422);
      expect((await client.delete(`/v1/collections/${posts}/schema`)).status).to.equal(204);
      expect((await client.get(`/v1/collections/${posts}/schema`)).status).to.equal(404);
      expect((await client.post(`/v1/collections/${posts}/rows`, [{ author_id: 99 }])).status).to.equal(422);
      expect((await client.delete(`/v1/collections/${people}/relations/posts`)).status).to.equal(404);
      expect((await client.delete(`/v1/collections/${posts}/relations/author`)).status).to.equal(204);
      expect((await client.get(`/v1/collections/${people}/relations`)).body).to.deep.equal([]);
      // No longer checked.
      expect((await client.post(`/v1/collections/${posts}/rows`, [{ author_id: 99 }])).status).to.equal(201);
    });

    it('answers 409 schema_conflict listing the stored rows that name missing rows, and declares nothing', async () => {
      const people = fresh('people');
      const posts = fresh('posts');
      await collection(people, [{ name: 'Ada' }]);
      await collection(posts, [{ author_id: 1 }, { author_id: 7 }, { author_id: 'x' }, {}]);
      const refused = await relate(posts, 'author', { field: 'author_id', collection: people });
      expect(refused.status).to.equal(409);
      expect(refused.body.code).to.equal('schema_conflict');
      expect(refused.body.total).to.equal(2);
      expect(refused.body.violations?.map((v) => [v.id, v.pointer])).to.deep.equal([
        [2, '/author_id'],
        [3, '/author_id'],
      ]);
      expect((await client.get(`/v1/collections/${posts}/relations`)).body).to.deep.equal([]);
    });

    it('refuses bad declarations with a 400 naming the place', async () => {
      const a = fresh('a');
      const b = fresh('b');
      await collection(a);
      await collection(b);
      const placeOf = async (collection: string, name: string, body: object) => {
        const answer = await relate(collection, name, body);
        expect(answer.status, JSON.stringify(answer.body)).to.equal(400);
        return answer.body.errors?.map((error) => error.name);
      };
      expect(await placeOf(a, 'to_b', { field: 'b_id', collection: 'nowhere' })).to.deep.equal(['/collection']);
      expect(await placeOf(a, 'to_b', { field: 'b.id', collection: b })).to.deep.equal(['/field']);
      expect(await placeOf(a, 'to_b', { field: 'id', collection: b })).to.deep.equal(['/field']);
      expect(await placeOf(a, 'bad-name', { field: 'b_id', collection: b })).to.deep.equal(['relation_name']);
      // A cascade to itself, and one through another collection back to the first.
      expect(await placeOf(a, 'parent', { field: 'parent_id', collection: a, on_delete: 'cascade' })).to.deep.equal(['/on_delete']);
      expect((await relate(a, 'to_b', { field: 'b_id', collection: b, on_delete: 'cascade' })).status).to.equal(200);
      expect(await placeOf(b, 'to_a', { field: 'a_id', collection: a, on_delete: 'cascade' })).to.deep.equal(['/on_delete']);
      expect((await relate(b, 'to_a', { field: 'a_id', collection: a, on_delete: 'set_null' })).status).to.equal(200);
      // A field another relation holds; a reverse the other collection uses.
      expect(await placeOf(a, 'again', { field: 'b_id', collection: b })).to.deep.equal(['/field']);
      expect((await relate(a, 'owner', { field: 'owner_id', collection: b, reverse: 'owned' })).status).to.equal(200);
      expect(await placeOf(a, 'keeper', { field: 'keeper_id', collection: b, reverse: 'owned' })).to.deep.equal(['/reverse']);
      expect(await placeOf(b, 'owned', { field: 'x_id', collection: a })).to.deep.equal(['relation_name']);
      // More than 16 relations of a collection, both directions counted: a has 3 so far (b's to_a is one of them).
      for (let n = 0; n < 13; n++) expect((await relate(a, `r${n}`, { field: `f${n}`, collection: b })).status).to.equal(200);
      expect(await placeOf(a, 'r13', { field: 'f13', collection: b })).to.deep.equal(['relation_name']);
    });
  });

  describe('keeping rows whole', () => {
    it('answers 422 naming the field for inserts, patches, upserts, batches and changes by filter naming missing rows', async () => {
      const { people, posts } = await authored('restrict');
      const refused = await client.post<Problem>(`/v1/collections/${posts}/rows`, [{ author_id: 3 }, { author_id: 42 }]);
      expect(refused.status).to.equal(422);
      expect(refused.body.errors?.map((e) => [e.row, e.pointer])).to.deep.equal([[1, '/author_id']]);
      expect((await client.post(`/v1/collections/${posts}/rows`, [{ author_id: '1' }])).status).to.equal(422);
      expect((await client.patch(`/v1/collections/${posts}/rows/1`, { author_id: 42 })).status).to.equal(422);
      expect((await client.patch(`/v1/collections/${posts}/rows?${filter({ title: 'a' })}`, { author_id: 42 })).status).to.equal(422);
      const batch = await client.post<Problem & { operation: number }>('/v1/batch', {
        operations: [
          { op: 'insert', collection: posts, rows: [{ author_id: 2 }] },
          { op: 'insert', collection: posts, rows: [{ author_id: 43 }] },
        ],
      });
      expect([batch.status, batch.body.operation]).to.deep.equal([422, 1]);
      // A row inserted in the same batch may be named.
      const together = await client.post('/v1/batch', {
        operations: [
          { op: 'insert', collection: people, rows: [{ name: 'Di' }] },
          { op: 'insert', collection: posts, rows: [{ title: 'e', author_id: 4 }] },
        ],
      });
      expect(together.status, JSON.stringify(together.body)).to.equal(200);
      expect((await client.post(`/v1/collections/${posts}/indexes`, { fields: ['title'], unique: true })).status).to.equal(201);
      // Rows that name rows and a value another row holds: their statement fails on the unique index, not on a relation.
      const taken = await client.post<Problem>(`/v1/collections/${posts}/rows`, [{ title: 'a', author_id: 1 }]);
      expect([taken.status, taken.body.code]).to.deep.equal([409, 'unique_violation']);
      const upsert = await client.post(`/v1/collections/${posts}/rows?on_conflict=title`, [{ title: 'a', author_id: 44 }]);
      expect(upsert.status).to.equal(422);
      expect((await rowsOf(posts)).map((row) => row.author_id)).to.deep.equal([1, 1, 2, null, 4]);
    });

    it('restrict: a delete of a named row is 409, nothing deleted; of an unnamed one goes through', async () => {
      const { people, posts } = await authored('restrict');
      const refused = await client.delete<Problem>(`/v1/collections/${people}/rows/1`);
      expect([refused.status, refused.body.code]).to.deep.equal([409, 'conflict']);
      expect((await client.delete(`/v1/collections/${people}/rows?${filter({ name: 'Bob' })}`)).status).to.equal(409);
      expect((await rowsOf(people)).length).to.equal(3);
      expect((await client.delete(`/v1/collections/${people}/rows/3`)).status).to.equal(204);
      const batch = await client.post<Problem & { operation: number }>('/v1/batch', {
        operations: [
          { op: 'delete', collection: posts, id: 3 },
          { op: 'delete', collection: people, id: 2 },
          { op: 'delete', collection: people, id: 1 },
        ],
      });
      expect([batch.status, batch.body.operation]).to.deep.equal([409, 2]);
      expect((await rowsOf(posts)).length).to.equal(4);
    });

    it('cascade: the naming rows are deleted in the same transaction, each with its delete event in the feed', async () => {
      const { people, posts } = await authored('cascade');
      const comments = fresh('comments');
      await collection(comments, [{ post_id: 1 }, { post_id: 3 }, { post_id: 2 }]);
      expect((await relate(comments, 'post', { field: 'post_id', collection: posts, on_delete: 'cascade' })).status).to.equal(200);
      const postFeed = await FeedClient.open(server.url, client.key, { collection: posts });
      const commentFeed = await FeedClient.open(server.url, client.key, { collection: comments });
      try {
        expect((await client.delete(`/v1/collections/${people}/rows/1`)).status).to.equal(204);
        const deleted = await postFeed.changesCount(2);
        expect(deleted.map((m) => [m.type, 'row' in m ? (m.row as Row).id : undefined])).to.deep.equal([
          ['delete', 1],
          ['delete', 2],
        ]);
        const cascaded = await commentFeed.changesCount(2);
        expect(cascaded.map((m) => [m.type, 'row' in m ? (m.row as Row).id : undefined])).to.deep.equal([
          ['delete', 1],
          ['delete', 3],
        ]);
      } finally {
        await postFeed.close();
        await commentFeed.close();
      }
      expect((await rowsOf(posts)).map((row) => row.id)).to.deep.equal([3, 4]);
      expect((await rowsOf(comments)).map((row) => row.id)).to.deep.equal([2]);
      expect((await client.get<{ row_count: number }>(`/v1/collections/${posts}`)).body.row_count).to.equal(2);
      // A restrict further down refuses the whole cascade.
      const notes = fresh('notes');
      await collection(notes, [{ comment_id: 2 }]);
      expect((await relate(notes, 'comment', { field: 'comment_id', collection: comments })).status).to.equal(200);
      expect((await client.delete(`/v1/collections/${people}/rows/2`)).status).to.equal(409);
      expect((await rowsOf(posts)).map((row) => row.id)).to.deep.equal([3, 4]);
    });

    it('set_null: the naming rows keep living with their field null, each with its update event in the feed', async () => {
      const { people, posts } = await authored('set_null');
      const feed = await FeedClient.open(server.url, client.key, { collection: posts });
      try {
        expect((await client.delete(`/v1/collections/${people}/rows?${filter({ name: { $in: ['Ada', 'Bob'] } })}`)).status).to.equal(200);
        const updates = await feed.changesCount(3);
        expect(updates.map((m) => [m.type, 'row' in m ? m.row : undefined])).to.deep.equal([
          ['update', { id: 1, title: 'a', author_id: null }],
          ['update', { id: 2, title: 'b', author_id: null }],
          ['update', { id: 3, title: 'c', author_id: null }],
        ]);
      } finally {
        await feed.close();
      }
      expect((await rowsOf(posts)).map((row) => row.author_id)).to.deep.equal([null, null, null, null]);
    });

    it('changes only the rows naming the deleted rows, none naming a row between them', async () => {
      for (const onDelete of ['cascade', 'set_null']) {
        const people = fresh('people');
        const posts = fresh('posts');
        await collection(
          people,
          Array.from({ length: 5 }, (_, n) => ({ n: n + 1 })),
        );
        // Rows naming the deleted 1 and 5, and the rows between them.
        const authors = [1, 2, 3, 4, 5, null, 5, 1, 3];
        await collection(
          posts,
          authors.map((author_id) => ({ author_id })),
        );
        const declared = await relate(posts, 'author', { field: 'author_id', collection: people, on_delete: onDelete });
        expect(declared.status, JSON.stringify(declared.body)).to.equal(200);
        const deleted = await client.delete(`/v1/collections/${people}/rows?${filter({ n: { $in: [1, 5] } })}`);
        expect(deleted.status, JSON.stringify(deleted.body)).to.equal(200);
        const left = (await rowsOf(posts)).map((row) => [row.id, row.author_id]);
        const kept = authors.map((author, index) => [index + 1, author] as const);
        expect(left, onDelete).to.deep.equal(
          onDelete === 'cascade'
            ? kept.filter(([, author]) => author !== 1 && author !== 5)
            : kept.map(([id, author]) => [id, author === 1 || author === 5 ? null : author]),
        );
      }
    });

    it('never leaves a dangling id with 50 writers racing deletes', async () => {
      for (const onDelete of ['restrict', 'cascade', 'set_null']) {
        const people = fresh('people');
        const posts = fresh('posts');
        await collection(
          people,
          Array.from({ length: 20 }, (_, n) => ({ n })),
        );
        await collection(posts);
        expect((await relate(posts, 'author', { field: 'author_id', collection: people, on_delete: onDelete })).status).to.equal(200);
        const statuses = await Promise.all(
          Array.from({ length: 50 }, async (_, writer) => {
            const id = (writer % 20) + 1;
            if (writer % 5 === 0) return (await client.delete(`/v1/collections/${people}/rows/${id}`)).status;
            if (writer % 5 === 1)
              return (await client.patch(`/v1/collections/${posts}/rows?${filter({ n: writer - 1 })}`, { author_id: id })).status;
            if (writer % 5 === 2)
              return (
                await client.post('/v1/batch', { operations: [{ op: 'insert', collection: posts, rows: [{ author_id: id, n: writer }] }] })
              ).status;
            return (await client.post(`/v1/collections/${posts}/rows`, [{ author_id: id, n: writer }])).status;
          }),
        );
        // A row deleted twice is 404 the second time.
        for (const status of statuses) expect(status).to.be.oneOf([200, 201, 204, 404, 409, 422]);
        const alive = new Set((await rowsOf(people)).map((row) => row.id));
        for (const post of await rowsOf(posts)) {
          if (post.author_id !== null)
            expect(alive.has(post.author_id as number), `post ${post.id} names ${post.author_id}`).to.equal(true);
        }
      }
    });

    it('declares relations while cascading deletes run between the same collections, whichever name sorts first', async () => {
      // A declaration holds both collections, as a cascading delete holds the collection of the row it
      // deletes and then the collection its rows cascade into: taken in two orders, PostgreSQL would
      // abort one of the two as a deadlock.
      for (const [target, source] of [
        [fresh('a_parents'), fresh('b_children')],
        [fresh('b_parents'), fresh('a_children')],
      ]) {
        await collection(
          target,
          Array.from({ length: 30 }, (_, n) => ({ n })),
        );
        await collection(
          source,
          Array.from({ length: 90 }, (_, n) => ({ parent_id: (n % 30) + 1, other_id: null })),
        );
        expect((await relate(source, 'parent', { field: 'parent_id', collection: target, on_delete: 'cascade' })).status).to.equal(200);
        const statuses = await Promise.all(
          Array.from({ length: 30 }, async (_, n) => {
            // A third declare a relation of their own, and every other of those deletes it again.
            if (n % 3 === 0) {
              const declared = await relate(source, `other${n}`, { field: `other${n}_id`, collection: target, on_delete: 'set_null' });
              if (n % 6 !== 0 || declared.status !== 200) return declared.status;
              return (await client.delete(`/v1/collections/${source}/relations/other${n}`)).status;
            }
            return (await client.delete(`/v1/collections/${target}/rows/${n + 1}`)).status;
          }),
        );
        expect(statuses.filter((status) => status !== 200 && status !== 204)).to.deep.equal([]);
        // Each delete took the rows naming its row along.
        const left = new Set((await rowsOf(target)).map((row) => row.id));
        for (const child of await rowsOf(source)) expect(left.has(child.parent_id as number), `child ${child.id}`).to.equal(true);
        expect((await client.get<unknown[]>(`/v1/collections/${source}/relations`)).body).to.have.length(6);
      }
    });

    it('runs batches over two related collections while cascading deletes run between them', async () => {
      // A batch holds the collections it names in the order of their names (a_posts, then b_people), a
      // cascading delete of a b_people row holds b_people, then a_posts: on PostgreSQL the two may wait
      // for each other in a circle, and the one aborted is tried again (never a 500).
      const people = fresh('b_people');
      const posts = fresh('a_posts');
      await collection(
        people,
        Array.from({ length: 30 }, (_, n) => ({ n })),
      );
      await collection(
        posts,
        Array.from({ length: 60 }, (_, n) => ({ author_id: (n % 30) + 1 })),
      );
      expect((await relate(posts, 'author', { field: 'author_id', collection: people, on_delete: 'cascade' })).status).to.equal(200);
      const statuses = await Promise.all(
        Array.from({ length: 40 }, async (_, n) => {
          const id = (n % 30) + 1;
          if (n % 2 === 0) return (await client.delete(`/v1/collections/${people}/rows/${id}`)).status;
          const operations = [
            { op: 'insert', collection: posts, rows: [{ author_id: ((n + 7) % 30) + 1 }] },
            { op: 'update', collection: people, id, patch: { seen: n } },
          ];
          return (await client.post('/v1/batch', { operations })).status;
        }),
      );
      // A batch naming a deleted row is 404 (its update) or 422 (its insert); a row deleted twice, 404.
      for (const status of statuses) expect(status).to.be.oneOf([200, 204, 404, 422]);
      const alive = new Set((await rowsOf(people)).map((row) => row.id));
      for (const post of await rowsOf(posts)) expect(alive.has(post.author_id as number), `post ${post.id}`).to.equal(true);
    });

    it('drops the relations of and to a deleted collection', async () => {
      const { people, posts } = await authored('restrict');
      expect((await client.delete(`/v1/collections/${people}`)).status).to.equal(204);
      expect((await client.get(`/v1/collections/${posts}/relations`)).body).to.deep.equal([]);
      expect((await client.post(`/v1/collections/${posts}/rows`, [{ author_id: 99 }])).status).to.equal(201);
    });
  });
});
