// Expanded rows (openapi.yaml, `expand`; docs/relations.md) against an in-memory reference on random
// data, on both backends: rows, pages, cursors and queries, nested, bounded, and what is refused.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { appKey, EndUser, tokenOf } from '../support/end-users.ts';
import { FeedClient } from '../support/feed.ts';
import { random } from '../support/random.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { watchHealth } from '../support/watchdog.ts';

type Row = { id: number } & Record<string, unknown>;
type Problem = { code: string; errors?: { in: string; name: string; message: string }[] };

describeEachBackend('expand', (backend) => {
  let server: TestServer;
  let client: Client;
  const people: Row[] = [];
  const posts: Row[] = [];
  const comments: Row[] = [];

  before(async () => {
    server = await startTestServer({ sortIndexMinRows: 0 }, { backend });
    client = await server.client();
    const next = random(54);
    for (let i = 1; i <= 30; i++) people.push({ id: i, name: `p${i}`, age: next(90) });
    for (let i = 1; i <= 120; i++) posts.push({ id: i, title: `t${i}`, author_id: next(8) === 0 ? null : 1 + next(30) });
    for (let i = 1; i <= 400; i++)
      comments.push({
        id: i,
        post_id: next(4) === 0 ? 1 + next(5) : 1 + next(120),
        author_id: 1 + next(30),
        score: next(10),
        text: `c${i}`,
      });
    for (const [name, rows] of [
      ['people', people],
      ['posts', posts],
      ['comments', comments],
    ] as const) {
      expect((await client.post('/v1/collections', { name })).status).to.equal(201);
      const stored = await client.post<Row[]>(
        `/v1/collections/${name}/rows`,
        rows.map(({ id, ...fields }) => fields),
      );
      expect(stored.status).to.equal(201);
    }
    const relate = async (collection: string, name: string, body: object) =>
      expect((await client.put(`/v1/collections/${collection}/relations/${name}`, body)).status).to.equal(200);
    await relate('posts', 'author', { field: 'author_id', collection: 'people', reverse: 'posts' });
    await relate('comments', 'post', { field: 'post_id', collection: 'posts', on_delete: 'cascade', reverse: 'comments' });
    await relate('comments', 'author', { field: 'author_id', collection: 'people', reverse: 'comments' });
  });
  after(() => server.stop());
  watchHealth(() => server);

  const person = (id: unknown) => people.find((row) => row.id === id) ?? null;
  /** The reference: a post's comments by id, at most `limit`, with $cut when there were more. */
  function commentsOf(post: Row, limit = 10, keep = (_: Row) => true, order = (a: Row, b: Row) => a.id - b.id) {
    const all = comments.filter((comment) => comment.post_id === post.id && keep(comment)).sort(order);
    return { rows: all.slice(0, limit), cut: all.length > limit };
  }
  function expandedPost(post: Row): Row {
    const { rows, cut } = commentsOf(post);
    return { ...post, _expand: { author: person(post.author_id), comments: rows, ...(cut ? { $cut: ['comments'] } : {}) } };
  }

  it('expands a page: to-one as an object or null, to-many as an array of at most 10, $cut naming those cut', async () => {
    const page = await client.get<Row[]>('/v1/collections/posts/rows?expand=author,comments&limit=50');
    expect(page.status).to.equal(200);
    expect(page.body).to.deep.equal(posts.slice(0, 50).map(expandedPost));
    expect(page.body.some((post) => (post._expand as { $cut?: string[] }).$cut)).to.equal(true);
    expect(page.body.some((post) => (post._expand as { author: unknown }).author === null)).to.equal(true);
  });

  it('answers a query of such a page with its count and cursor, and a page of it with its fields selected', async () => {
    // Read by one statement (on SQLite, the page's bytes as the database made them), placed in a query's answer or cut to a selection.
    const query = await client.post<{ rows: Row[]; next: string | null; total: number }>('/v1/collections/posts/query', {
      limit: 20,
      count: 'exact',
      expand: { author: {}, comments: {} },
    });
    expect(query.status, JSON.stringify(query.body)).to.equal(200);
    expect(query.body.rows).to.deep.equal(posts.slice(0, 20).map(expandedPost));
    expect(query.body.total).to.equal(posts.length);
    const rest = await client.post<{ rows: Row[] }>('/v1/collections/posts/query', {
      limit: 20,
      after: query.body.next,
      expand: { author: {}, comments: {} },
    });
    expect(rest.body.rows).to.deep.equal(posts.slice(20, 40).map(expandedPost));
    const selected = await client.get<Row[]>('/v1/collections/posts/rows?expand=author,comments&limit=5&select=title');
    expect(selected.status).to.equal(200);
    expect(selected.body).to.deep.equal(
      posts.slice(0, 5).map((post) => ({ id: post.id, title: post.title, _expand: expandedPost(post)._expand })),
    );
  });

  it('answers a long page with its related rows whole, in characters of every UTF-8 length, and to HEAD its length alone', async () => {
    // Read by one statement, answered as the text or the bytes it made: a length in characters would be short.
    const text = 'aé€😀'.repeat(100);
    for (const name of ['letters', 'replies']) expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    const letters = Array.from({ length: 20 }, (_, n) => ({ text, n }));
    const replies = Array.from({ length: 60 }, (_, n) => ({ letter_id: 1 + (n % 20), text }));
    expect((await client.post('/v1/collections/letters/rows', letters)).status).to.equal(201);
    expect((await client.post('/v1/collections/replies/rows', replies)).status).to.equal(201);
    const relation = { field: 'letter_id', collection: 'letters', reverse: 'replies' };
    expect((await client.put('/v1/collections/replies/relations/letter', relation)).status).to.equal(200);
    const path = '/v1/collections/letters/rows?expand=replies&limit=20';
    const page = await client.get<Row[]>(path);
    expect(page.status).to.equal(200);
    expect(page.body).to.deep.equal(
      letters.map((letter, i) => {
        const own = replies.flatMap((reply, j) => (reply.letter_id === i + 1 ? [{ id: j + 1, ...reply }] : []));
        return { id: i + 1, ...letter, _expand: { replies: own } };
      }),
    );
    const length = page.headers.get('content-length');
    expect(Number(length))
      .to.equal(Buffer.byteLength(page.text))
      .and.above(64 * 1024);
    const head = await client.request('HEAD', path);
    expect([head.status, head.headers.get('content-length'), head.text]).to.deep.equal([200, length, '']);
  });

  it('follows cursors with the same expansions, page after page', async () => {
    const seen: Row[] = [];
    let url: string | undefined = '/v1/collections/posts/rows?expand=author,comments&limit=35';
    while (url) {
      const page: { status: number; body: Row[]; headers: Headers } = await client.get<Row[]>(url);
      expect(page.status).to.equal(200);
      seen.push(...page.body);
      const link: string | null = page.headers.get('link');
      url = link ? (/<([^>]+)>/.exec(link) as RegExpExecArray)[1] : undefined;
    }
    expect(seen).to.deep.equal(posts.map(expandedPost));
  });

  it('expands one row, and answers its ETag', async () => {
    const answer = await client.get<Row>('/v1/collections/posts/rows/7?expand=comments,author');
    expect(answer.status).to.equal(200);
    expect(answer.body).to.deep.equal(expandedPost(posts[6]));
    expect(answer.headers.get('etag')).to.equal((await client.get('/v1/collections/posts/rows/7')).headers.get('etag'));
    expect((await client.get('/v1/collections/posts/rows/999?expand=author')).status).to.equal(404);
  });

  it('queries with a filter, an order, a limit and a select of each to-many, nested three deep', async () => {
    const answer = await client.post<{ rows: Row[] }>('/v1/collections/people/query', {
      filter: { age: { $gte: 30 } },
      limit: 20,
      expand: {
        posts: {
          limit: 3,
          order: [{ field: 'id', direction: 'desc' }],
          select: ['title'],
          expand: {
            comments: {
              filter: { score: { $gte: 5 } },
              order: [{ field: 'score', direction: 'desc' }],
              limit: 2,
              select: ['score'],
              expand: { author: {} },
            },
          },
        },
      },
    });
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    const byScore = (a: Row, b: Row) => (b.score as number) - (a.score as number) || b.id - a.id;
    const expected = people
      .filter((row) => (row.age as number) >= 30)
      .slice(0, 20)
      .map((row) => {
        const all = posts.filter((post) => post.author_id === row.id).sort((a, b) => b.id - a.id);
        const kept = all.slice(0, 3).map((post) => {
          const { rows, cut } = commentsOf(post, 2, (comment) => (comment.score as number) >= 5, byScore);
          const shown = rows.map((comment) => ({ id: comment.id, score: comment.score, _expand: { author: person(comment.author_id) } }));
          return { id: post.id, title: post.title, _expand: { comments: shown, ...(cut ? { $cut: ['comments'] } : {}) } };
        });
        return { ...row, _expand: { posts: kept, ...(all.length > 3 ? { $cut: ['posts'] } : {}) } };
      });
    expect(answer.body.rows).to.deep.equal(expected);
  });

  it("answers each row's own to-many rows where others' crowd them out of the page's one read", async () => {
    // Posts 1 to 5 hold a quarter of the comments: the first two comments of posts 1 to 12, read as one,
    // are nearly all theirs, and the others' are read again, one post at a time.
    for (const direction of ['asc', 'desc'] as const) {
      const answer = await client.post<{ rows: Row[] }>('/v1/collections/posts/query', {
        filter: { id: { $lte: 12 } },
        expand: { comments: { limit: 1, order: [{ field: 'id', direction }] } },
      });
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      const order = direction === 'asc' ? (a: Row, b: Row) => a.id - b.id : (a: Row, b: Row) => b.id - a.id;
      const expected = posts.slice(0, 12).map((post) => {
        const { rows, cut } = commentsOf(post, 1, () => true, order);
        return { ...post, _expand: { comments: rows, ...(cut ? { $cut: ['comments'] } : {}) } };
      });
      expect(answer.body.rows, direction).to.deep.equal(expected);
      expect(expected.filter((post) => (post._expand as { comments: Row[] }).comments.length > 0).length).to.be.above(6);
    }
  });

  it("reads a to-many's rows by the field of each row where the collection may have no sort index of it", async () => {
    const bare = await startTestServer({ sortIndexMinRows: 0, sortIndexMax: 0 }, { backend });
    try {
      const other = await bare.client();
      for (const [name, rows] of [
        ['posts', posts],
        ['comments', comments],
      ] as const) {
        expect((await other.post('/v1/collections', { name })).status).to.equal(201);
        expect(
          (
            await other.post(
              `/v1/collections/${name}/rows`,
              rows.map(({ id, ...fields }) => fields),
            )
          ).status,
        ).to.equal(201);
      }
      const related = await other.put('/v1/collections/comments/relations/post', {
        field: 'post_id',
        collection: 'posts',
        reverse: 'comments',
      });
      expect(related.status).to.equal(200);
      const answer = await other.post<{ rows: Row[] }>('/v1/collections/posts/query', {
        limit: 12,
        expand: { comments: { limit: 2, order: [{ field: 'score', direction: 'desc' }] } },
      });
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      const byScore = (a: Row, b: Row) => (b.score as number) - (a.score as number) || b.id - a.id;
      expect(answer.body.rows).to.deep.equal(
        posts.slice(0, 12).map((post) => {
          const { rows, cut } = commentsOf(post, 2, () => true, byScore);
          return { ...post, _expand: { comments: rows, ...(cut ? { $cut: ['comments'] } : {}) } };
        }),
      );
    } finally {
      await bare.stop();
    }
  });

  it('refuses a relation that is none, one deeper than 3, and a to-one with a limit, naming each', async () => {
    const refused = async (url: string, body?: object) => {
      const answer = body ? await client.post<Problem>(url, body) : await client.get<Problem>(url);
      expect(answer.status, JSON.stringify(answer.body)).to.equal(400);
      return answer.body.errors?.map((error) => [error.name, error.message]);
    };
    expect(await refused('/v1/collections/posts/rows?expand=author,editor')).to.deep.equal([
      ['expand', 'editor names no relation of posts'],
    ]);
    expect(await refused('/v1/collections/posts/rows?expand=comments.author.posts.author')).to.deep.equal([
      ['expand', 'comments.author.posts.author expands deeper than 3 relations'],
    ]);
    const deep = await refused('/v1/collections/posts/query', {
      expand: { comments: { expand: { author: { expand: { posts: { expand: { author: {} } } } } } } },
    });
    // The fourth level is no member the third may have.
    expect(deep?.[0][0]).to.equal('/expand/comments/expand/author/expand/posts/expand');
    expect(await refused('/v1/collections/posts/query', { expand: { author: { limit: 2 } } })).to.deep.equal([
      ['/expand/author/limit', 'is for a to-many relation only'],
    ]);
    expect(await refused('/v1/collections/posts/query', { expand: { nothing: {} } })).to.deep.equal([
      ['/expand/nothing', 'names no relation of posts'],
    ]);
  });

  it('refuses the names every object inherits as relations that are none, and answers the next request as before', async () => {
    for (const expand of ['__proto__', 'constructor', 'toString', 'comments.__proto__', 'author.constructor', '__proto__.author']) {
      const refused = await client.get<Problem>(`/v1/collections/posts/rows?expand=${expand}`);
      expect(refused.status, expand).to.equal(400);
      expect(refused.body.errors?.[0].message).to.match(/names no relation of (posts|comments|people)$/);
      // Nothing the name reached is left on the objects every request's input is made of.
      expect((await client.get('/v1/collections/posts/rows?limit=1')).status, expand).to.equal(200);
    }
    const body = await client.request('POST', '/v1/collections/posts/query', {
      raw: '{"expand":{"__proto__":{"expand":{"author":{}}}}}',
      headers: { 'content-type': 'application/json' },
    });
    expect(body.status).to.equal(400);
    expect((await client.get('/v1/collections/posts/rows?limit=1')).status).to.equal(200);
  });

  it('reserves _expand: a write holding it is 400; a row stored with one answers it only when not expanded', async () => {
    expect((await client.post('/v1/collections/people/rows', [{ _expand: 1 }])).status).to.equal(400);
    expect((await client.patch('/v1/collections/people/rows/1', { _expand: 1 })).status).to.equal(400);
    const jsonPatch = await client.request('PATCH', '/v1/collections/people/rows/1', {
      raw: JSON.stringify([{ op: 'add', path: '/_expand', value: 1 }]),
      headers: { 'content-type': 'application/json-patch+json' },
    });
    expect(jsonPatch.status).to.equal(400);
    const batch = await client.post('/v1/batch', { operations: [{ op: 'insert', collection: 'people', rows: [{ _expand: {} }] }] });
    expect(batch.status).to.equal(400);
  });

  it("holds each expanded row to its own collection's rules: one the caller may not read is null or absent, its hidden fields gone", async () => {
    const mine = { owner: { $auth: 'sub' } };
    for (const name of ['owners', 'things']) expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    expect((await client.put('/v1/collections/owners/rules', { read: mine, fields: { secret: { read: false } } })).status).to.equal(200);
    expect((await client.put('/v1/collections/things/rules', { read: mine })).status).to.equal(200);
    const owners = [
      { owner: 'ada', name: 'A', secret: 's1' },
      { owner: 'bob', name: 'B', secret: 's2' },
    ];
    const things = [
      { owner: 'ada', owner_id: 1 },
      { owner: 'ada', owner_id: 2 },
      { owner: 'bob', owner_id: 1 },
      { owner: 'ada', owner_id: 1 },
    ];
    expect((await client.post('/v1/collections/owners/rows', owners)).status).to.equal(201);
    expect((await client.post('/v1/collections/things/rows', things)).status).to.equal(201);
    expect(
      (await client.put('/v1/collections/things/relations/holder', { field: 'owner_id', collection: 'owners', reverse: 'things' })).status,
    ).to.equal(200);
    const ada = new EndUser(server.url, await appKey(client), await tokenOf('ada'));
    const page = await ada.get<Row[]>('/v1/collections/things/rows?expand=holder');
    expect(page.status, JSON.stringify(page.body)).to.equal(200);
    const shownOwner = { id: 1, owner: 'ada', name: 'A' };
    expect(page.body).to.deep.equal([
      { id: 1, owner: 'ada', owner_id: 1, _expand: { holder: shownOwner } },
      { id: 2, owner: 'ada', owner_id: 2, _expand: { holder: null } },
      { id: 4, owner: 'ada', owner_id: 1, _expand: { holder: shownOwner } },
    ]);
    const one = await ada.get<Row>('/v1/collections/owners/rows/1?expand=things');
    expect(one.body).to.deep.equal({
      ...shownOwner,
      _expand: {
        things: [
          { id: 1, owner: 'ada', owner_id: 1 },
          { id: 4, owner: 'ada', owner_id: 1 },
        ],
      },
    });
    expect((await ada.get('/v1/collections/owners/rows/2?expand=things')).status).to.equal(404);
    // A filter on a hidden field of the related rows is refused, as on their own collection.
    const hidden = await ada.post<Problem>('/v1/collections/things/query', { expand: { holder: { select: ['secret'] } } });
    expect(hidden.status).to.equal(403);
  });

  describe('filters through relations', () => {
    const filtered = async (collection: string, filter: object, extra = '') => {
      const answer = await client.get<Row[]>(
        `/v1/collections/${collection}/rows?limit=1000&filter=${encodeURIComponent(JSON.stringify(filter))}${extra}`,
      );
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      return answer;
    };
    const ids = (rows: Row[]) => rows.map((row) => row.id);

    it('$match: a to-one relation names a row that matches; $some: a to-many relation has one, nested, counted', async () => {
      const old = (id: unknown) => ((person(id)?.age as number | undefined) ?? -1) >= 50;
      const expected = ids(posts.filter((post) => old(post.author_id)));
      expect(ids((await filtered('posts', { author: { $match: { age: { $gte: 50 } } } })).body)).to.deep.equal(expected);
      // Again through a sort index of people's age (a page ordered by it makes one: sortIndexMinRows 0).
      expect((await client.get('/v1/collections/people/rows?order_by=age')).status).to.equal(200);
      expect(ids((await filtered('posts', { author: { $match: { age: { $gte: 50 } } } })).body)).to.deep.equal(expected);
      const someNine = (row: Row) => comments.some((comment) => comment.author_id === row.id && comment.score === 9);
      const counted = await filtered('people', { comments: { $some: { score: 9 } } }, '&count=exact');
      expect(ids(counted.body)).to.deep.equal(ids(people.filter(someNine)));
      expect(counted.headers.get('rowbase-total-count')).to.equal(String(people.filter(someNine).length));
      // Nested, beside a condition of the row's own, and under $not.
      const young = (id: unknown) => ((person(id)?.age as number | undefined) ?? 99) < 20;
      const nested = { comments: { $some: { author: { $match: { age: { $lt: 20 } } } } }, title: { $ne: 't1' } };
      const byYoung = (post: Row) => post.title !== 't1' && comments.some((c) => c.post_id === post.id && young(c.author_id));
      expect(ids((await filtered('posts', nested)).body)).to.deep.equal(ids(posts.filter(byYoung)));
      const none = await filtered('posts', { $not: { author: { $match: { name: { $in: ['p1', 'p2'] } } } } });
      expect(ids(none.body)).to.deep.equal(ids(posts.filter((post) => post.author_id !== 1 && post.author_id !== 2)));
      expect((await filtered('posts', { author: { $match: { name: 'nobody' } } })).body).to.deep.equal([]);
    });

    it('changes by filter through a relation, and refuses a name that is none and a feed', async () => {
      const chosen = posts.filter((post) => post.author_id === 3);
      const patched = await client.patch<{ count: number }>(
        `/v1/collections/posts/rows?filter=${encodeURIComponent(JSON.stringify({ author: { $match: { name: 'p3' } } }))}`,
        { flagged: true },
      );
      expect(patched.body).to.deep.equal({ count: chosen.length });
      for (const post of chosen) post.flagged = true;
      expect(ids((await filtered('posts', { flagged: true })).body)).to.deep.equal(ids(chosen));
      const refused = await client.get<Problem>(
        `/v1/collections/posts/rows?filter=${encodeURIComponent(JSON.stringify({ editor: { $match: {} } }))}`,
      );
      expect([refused.status, refused.body.errors?.[0].message]).to.deep.equal([400, 'editor: $match names no to-one relation of posts']);
      // The feed tests each change alone, in memory: no related row at hand.
      const feed = FeedClient.open(server.url, client.key, { collection: 'posts', filter: JSON.stringify({ author: { $match: {} } }) });
      await feed.then(
        (opened) => opened.close().then(() => expect.fail('the feed took a filter through a relation')),
        (error: Error) => expect(error.message).to.equal('upgrade refused with 400'),
      );
    });

    it("orders a to-many expansion's rows by a field of their own related rows", async () => {
      const answer = await client.post<{ rows: Row[] }>('/v1/collections/posts/query', {
        limit: 30,
        expand: { comments: { order: [{ field: 'author.name', direction: 'desc' }], limit: 3 } },
      });
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      const name = (comment: Row) => Buffer.from(person(comment.author_id)?.name as string);
      const byName = (a: Row, b: Row) => Buffer.compare(name(b), name(a)) || b.id - a.id;
      expect(answer.body.rows).to.deep.equal(
        posts.slice(0, 30).map((post) => {
          const { rows, cut } = commentsOf(post, 3, () => true, byName);
          return { ...post, _expand: { comments: rows, ...(cut ? { $cut: ['comments'] } : {}) } };
        }),
      );
    });

    it("filters a to-many expansion's rows through their own relations", async () => {
      const answer = await client.post<{ rows: Row[] }>('/v1/collections/posts/query', {
        limit: 40,
        expand: { comments: { filter: { author: { $match: { age: { $gte: 50 } } } }, limit: 100 } },
      });
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      const old = (comment: Row) => ((person(comment.author_id)?.age as number | undefined) ?? -1) >= 50;
      expect(answer.body.rows).to.deep.equal(
        posts.slice(0, 40).map((post) => ({ ...post, _expand: { comments: commentsOf(post, 100, old).rows } })),
      );
    });
  });
});
