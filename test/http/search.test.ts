// Search (docs/search.md; openapi.yaml, createIndex and Filter's `$search`): a search index declared over
// rows already there, kept by every write of a row, and `$search` finding the rows the in-memory
// reference (src/search/words.ts) finds, on each backend; ranked by `_score`, most relevant first, ties
// by id ascending, through lists, versioned lists, queries and their cursors, each backend by its
// engine's own measure.
import { expect } from 'chai';
import fc from 'fast-check';
import { matchesSearch, rowWords, searchOf } from '../../src/search/words.ts';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { appKey, EndUser, tokenOf } from '../support/end-users.ts';
import { FeedClient } from '../support/feed.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { watchHealth } from '../support/watchdog.ts';
import { row, search } from '../support/words.ts';

type Row = { id: number; _score?: number } & Record<string, unknown>;
type Problem = { code: string; detail: string; errors?: { in?: string; name: string; message: string }[] };
type QueryPage = { rows: Row[]; next: string | null; total?: number };

const filter = (value: object) => `filter=${encodeURIComponent(JSON.stringify(value))}`;
const FIELDS = ['title', 'body'];

/** Searches that tell the rows of the write paths' test apart. */
const searches = ['red', 'red shoes', 'cafe', 'Café', 'sho', 'blue', '東京', 'green', 'naive', 'zebra', 'ΟΔΟΣ', 'boot', 'x '];

describeEachBackend('search', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;

  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
  });
  after(() => server.stop());
  watchHealth(() => server);

  async function collectionWith(rows: object[] = []): Promise<string> {
    const name = `s${++collections}`;
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    if (rows.length > 0) expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
    return name;
  }
  const declare = (name: string, fields = FIELDS) => client.post(`/v1/collections/${name}/indexes`, { type: 'search', fields });
  const rowsOf = async (name: string) => (await client.get<Row[]>(`/v1/collections/${name}/rows?limit=1000`)).body;
  const found = async (name: string, text: string) => {
    const answer = await client.get<Row[]>(`/v1/collections/${name}/rows?limit=1000&${filter({ $search: text })}`);
    expect(answer.status, text).to.equal(200);
    return answer.body.map((row) => row.id);
  };

  /** Every search of `searches` finds, in the collection, the rows matchesSearch() finds among its rows as GET lists them. */
  async function expectSearchesAgree(name: string, step: string) {
    const rows = await rowsOf(name);
    for (const text of searches) {
      const expected = rows.filter((row) => matchesSearch(rowWords(row, FIELDS), searchOf(text))).map((row) => row.id);
      expect(await found(name, text), `${step}: ${JSON.stringify(text)}`).to.deep.equal(expected);
    }
  }

  describe('search indexes', () => {
    it('is declared over the rows already there, listed, and dropped', async () => {
      const name = await collectionWith([{ title: 'Red shoes' }, { title: 'Blue boots', body: 'café' }, { title: 42 }]);
      const made = await declare(name);
      expect(made.status).to.equal(201);
      expect(made.body).to.deep.equal({ name: 'search:title,body', fields: FIELDS, unique: false, type: 'search' });
      expect(made.headers.get('location')).to.equal(`/v1/collections/${name}/indexes/search:title,body`);
      expect(await found(name, 'CAFE')).to.deep.equal([2]);
      expect((await client.get(`/v1/collections/${name}/indexes`)).body).to.deep.equal([made.body]);
      expect((await client.delete(`/v1/collections/${name}/indexes/search:title,body`)).status).to.equal(204);
      expect((await client.get(`/v1/collections/${name}/indexes`)).body).to.deep.equal([]);
      const refused = await client.get<Problem>(`/v1/collections/${name}/rows?${filter({ $search: 'red' })}`);
      expect(refused.status).to.equal(400);
      expect(refused.body.detail).to.include('no search index').and.include('"type": "search"');
      // Declared again, over the rows as they are now.
      expect((await declare(name, ['body'])).status).to.equal(201);
      expect(await found(name, 'cafe')).to.deep.equal([2]);
      expect(await found(name, 'red')).to.deep.equal([]);
    });

    it('holds the words of the fields it has now, once dropped and declared again over others', async () => {
      const name = await collectionWith();
      const insert = async (row: object) => expect((await client.post(`/v1/collections/${name}/rows`, [row])).status).to.equal(201);
      expect((await declare(name, ['title'])).status).to.equal(201);
      await insert({ title: 'red', body: 'blue' });
      await insert({ title: 'red', body: 'blue' });
      expect((await client.delete(`/v1/collections/${name}/indexes/search:title`)).status).to.equal(204);
      await insert({ title: 'red', body: 'blue' });
      expect((await declare(name, ['body'])).status).to.equal(201);
      await insert({ title: 'red', body: 'green blue' });
      await insert({ title: 'red', body: 'blue' });
      expect(await found(name, 'red')).to.deep.equal([]);
      expect(await found(name, 'blue')).to.deep.equal([1, 2, 3, 4, 5]);
      expect(await found(name, 'green')).to.deep.equal([4]);
    });

    it('is one a collection at most, never unique, and its fields plain names', async () => {
      const name = await collectionWith();
      expect((await declare(name)).status).to.equal(201);
      const second = await declare(name, ['title']);
      expect(second.status).to.equal(409);
      const unique = await client.post<Problem>(`/v1/collections/${name}/indexes`, { type: 'search', fields: ['title'], unique: true });
      expect(unique.status).to.equal(400);
      expect(unique.body.errors?.[0].name).to.equal('/unique');
      expect((await client.post(`/v1/collections/${name}/indexes`, { type: 'search', fields: ['a.b'] })).status).to.equal(400);
      expect((await client.post(`/v1/collections/${name}/indexes`, { type: 'words', fields: ['title'] })).status).to.equal(400);
      // An index of values over the same fields is another index.
      expect((await client.post(`/v1/collections/${name}/indexes`, { fields: FIELDS })).status).to.equal(201);
    });

    it('goes with its collection: a collection made again under the name has none', async () => {
      const name = await collectionWith([{ title: 'red' }]);
      expect((await declare(name)).status).to.equal(201);
      expect((await client.delete(`/v1/collections/${name}`)).status).to.equal(204);
      expect((await client.post('/v1/collections', { name })).status).to.equal(201);
      expect((await client.post(`/v1/collections/${name}/rows`, [{ title: 'red' }])).status).to.equal(201);
      expect((await client.get(`/v1/collections/${name}/rows?${filter({ $search: 'red' })}`)).status).to.equal(400);
      expect((await declare(name)).status).to.equal(201);
      expect(await found(name, 'red')).to.deep.equal([1]);
    });
  });

  describe('random rows and searches', () => {
    it('find the rows the in-memory reference finds, alone and beside another condition', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(row, { minLength: 1, maxLength: 20 }),
          fc.array(search, { minLength: 1, maxLength: 6 }),
          async (rows, texts) => {
            const name = await collectionWith(rows.map((fields, index) => ({ ...fields, n: index % 3 })));
            expect((await declare(name)).status).to.equal(201);
            const stored = await rowsOf(name);
            for (const text of texts) {
              const holds = (each: Row) => matchesSearch(rowWords(each, FIELDS), searchOf(text));
              expect(await found(name, text), text).to.deep.equal(stored.filter(holds).map((each) => each.id));
              const beside = await client.get<Row[]>(`/v1/collections/${name}/rows?${filter({ $or: [{ $search: text }, { n: 0 }] })}`);
              expect(beside.body.map((each) => each.id)).to.deep.equal(
                stored.filter((each) => holds(each) || each.n === 0).map((each) => each.id),
              );
            }
          },
        ),
        { numRuns: 25 },
      );
    });
  });

  describe('every write keeps the index', () => {
    it('holds the rows inserted while it is declared, each once', async () => {
      const name = await collectionWith([{ title: 'red 0' }]);
      const inserts = Array.from({ length: 24 }, (_, n) => client.post(`/v1/collections/${name}/rows`, [{ title: `red ${n + 1}` }]));
      const declared = declare(name);
      for (const answer of await Promise.all(inserts)) expect(answer.status).to.equal(201);
      expect((await declared).status).to.equal(201);
      expect(await found(name, 'red')).to.deep.equal((await rowsOf(name)).map((row) => row.id));
      expect(await found(name, 'red')).to.have.length(25);
      // And those inserted after, at once.
      const after = await Promise.all(Array.from({ length: 8 }, () => client.post(`/v1/collections/${name}/rows`, [{ title: 'red' }])));
      for (const answer of after) expect(answer.status).to.equal(201);
      expect(await found(name, 'red')).to.have.length(33);
    });

    it('inserts, upserts, patches of every format, changes by filter, batches, deletes and imports', async () => {
      const name = await collectionWith([
        { title: 'Red shoes', body: 'size 42', email: 'a@x' },
        { title: 'Café crème', body: 'naïve', email: 'b@x' },
      ]);
      expect((await declare(name)).status).to.equal(201);
      expect((await client.post(`/v1/collections/${name}/indexes`, { fields: ['email'], unique: true })).status).to.equal(201);
      await expectSearchesAgree(name, 'declared');

      const rows = `/v1/collections/${name}/rows`;
      expect(
        (await client.post(rows, [{ title: 'Blue shoes' }, { title: '東京の靴', body: 'RED' }, { title: 7, body: 'zebra' }])).status,
      ).to.equal(201);
      await expectSearchesAgree(name, 'inserted');
      // Inserts sent at once, merged into one statement.
      const many = await Promise.all(['green boots', 'ΟΔΟΣ red', 'x y'].map((title) => client.post(rows, [{ title }])));
      for (const answer of many) expect(answer.status).to.equal(201);
      await expectSearchesAgree(name, 'inserted at once');

      const upsert = await client.post(`${rows}?on_conflict=email`, [
        { email: 'a@x', title: 'Green shoes', body: '' },
        { email: 'c@x', title: 'Zebra boots' },
      ]);
      expect(upsert.status).to.equal(200);
      await expectSearchesAgree(name, 'upserted');

      expect((await client.patch(`${rows}/1`, { title: 'Blue cafe' })).status).to.equal(200);
      await expectSearchesAgree(name, 'patched by path');
      // Patches sent at once, merged into one statement.
      const patched = await Promise.all([3, 4, 5].map((id) => client.patch(`${rows}/${id}`, { body: `naive ${id}` })));
      for (const answer of patched) expect(answer.status).to.equal(200);
      await expectSearchesAgree(name, 'patched at once');
      const mergePatch = await client.request('PATCH', `${rows}/2`, {
        raw: JSON.stringify({ title: null, body: 'boots' }),
        headers: { 'content-type': 'application/merge-patch+json' },
      });
      expect(mergePatch.status).to.equal(200);
      await expectSearchesAgree(name, 'merge-patched');
      const jsonPatch = await client.request('PATCH', `${rows}/3`, {
        raw: JSON.stringify([{ op: 'replace', path: '/title', value: 'red zebra' }]),
        headers: { 'content-type': 'application/json-patch+json' },
      });
      expect(jsonPatch.status).to.equal(200);
      await expectSearchesAgree(name, 'json-patched');
      const etag = (await client.get(`${rows}/4`)).headers.get('etag') as string;
      expect((await client.patch(`${rows}/4`, { title: 'green' }, { headers: { 'if-match': etag } })).status).to.equal(200);
      await expectSearchesAgree(name, 'patched under If-Match');

      const byFilter = await client.patch<{ count: number }>(`${rows}?${filter({ $search: 'zebra' })}`, { body: 'boot' });
      expect(byFilter.status).to.equal(200);
      expect(byFilter.body.count).to.be.greaterThan(0);
      await expectSearchesAgree(name, 'changed by filter');

      const batch = await client.post('/v1/batch', {
        operations: [
          { op: 'insert', collection: name, rows: [{ title: 'batch red' }] },
          { op: 'update', collection: name, id: 5, patch: { title: 'café' } },
          { op: 'delete', collection: name, id: 6 },
        ],
      });
      expect(batch.status).to.equal(200);
      await expectSearchesAgree(name, 'batch');

      expect((await client.delete(`${rows}/1`)).status).to.equal(204);
      await expectSearchesAgree(name, 'deleted');
      expect((await client.delete(`${rows}?${filter({ $search: 'green' })}`)).status).to.equal(200);
      await expectSearchesAgree(name, 'deleted by filter');

      const accountId = Number((await server.store.knex('collections').where({ name }).first('account_id')).account_id);
      const last = Math.max(...(await rowsOf(name)).map((row) => row.id));
      await server.store.importRows(accountId, name, [{ id: last + 10, text: JSON.stringify({ title: 'imported RED café' }) }], last + 10);
      await expectSearchesAgree(name, 'imported');
      expect(await found(name, 'imported')).to.deep.equal([last + 10]);
    });
  });

  describe('$search', () => {
    it('combines with every condition, inside $or and $not too, in lists, counts, queries and aggregates', async () => {
      const name = await collectionWith([
        { title: 'Red shoes', price: 10 },
        { title: 'red boots', price: 20 },
        { title: 'Blue shoes', price: 30 },
      ]);
      expect((await declare(name, ['title'])).status).to.equal(201);
      const ids = async (value: object) =>
        (await client.get<Row[]>(`/v1/collections/${name}/rows?${filter(value)}`)).body.map((row) => row.id);
      expect(await ids({ $search: 'red', price: { $gt: 15 } })).to.deep.equal([2]);
      expect(await ids({ $or: [{ $search: 'blue' }, { price: 10 }] })).to.deep.equal([1, 3]);
      expect(await ids({ $not: { $search: 'shoes' } })).to.deep.equal([2]);
      expect(await ids({ $and: [{ $search: 'red' }, { $search: 'sho' }] })).to.deep.equal([1]);
      const counted = await client.get<Row[]>(`/v1/collections/${name}/rows?count=exact&${filter({ $search: 'shoes' })}`);
      expect(counted.headers.get('rowbase-total-count')).to.equal('2');
      const query = await client.post<{ rows: Row[] }>(`/v1/collections/${name}/query`, { filter: { $search: 'red' } });
      expect(query.status).to.equal(200);
      expect(JSON.stringify(query.body)).to.include('red boots').and.include('Red shoes').and.not.include('Blue');
      const aggregate = await client.post<{ groups: { rows: number }[] }>(`/v1/collections/${name}/aggregate`, {
        filter: { $search: 'shoes' },
      });
      expect(aggregate.status).to.equal(200);
      expect(aggregate.body.groups).to.deep.equal([{ count: 2 }]);
    });

    const refusals: [string, unknown, string][] = [
      ['an empty search', '', 'holds no word'],
      ['a search of punctuation and emoji', '!? 🎉', 'holds no word'],
      ['a search over 256 characters', 'a'.repeat(257), '256 at most'],
      ['a search of more than 32 words', Array.from({ length: 33 }, (_, n) => `w${n}`).join(' '), '32 at most'],
      ['a search that is no string', ['red'], 'must be a string'],
    ];
    for (const [title, value, message] of refusals) {
      it(`refuses ${title}: 400 naming it`, async () => {
        const name = await collectionWith();
        expect((await declare(name)).status).to.equal(201);
        const refused = await client.get<Problem>(`/v1/collections/${name}/rows?${filter({ $search: value })}`);
        expect(refused.status).to.equal(400);
        expect(refused.body.code).to.equal('validation_failed');
        expect(refused.body.errors).to.deep.include({
          in: 'query',
          name: 'filter',
          pointer: '/$search',
          message: refused.body.errors?.[0].message,
        });
        expect(refused.body.errors?.[0].message).to.include(message);
      });
    }

    it("filters the feed's subscriptions by the same words", async () => {
      const name = await collectionWith();
      expect((await declare(name)).status).to.equal(201);
      const feed = await FeedClient.open(server.url, client.key, { collection: name, filter: JSON.stringify({ $search: 'café sho' }) });
      try {
        const rows = [{ title: 'CAFE shop' }, { title: 'café' }, { body: 'cafe', title: 'Shoes' }, { title: 'shoes' }];
        expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
        // The last message that matches: the ones between that do not were left out.
        const seen = await feed.seqReached(3);
        expect(seen.map((message) => (message as { row: Row }).row.id)).to.deep.equal([1, 3]);
        const refused = await FeedClient.open(server.url, client.key, {
          collection: await collectionWith(),
          filter: JSON.stringify({ $search: 'red' }),
        }).then(
          () => 'opened',
          (error: Error) => error.message,
        );
        expect(refused).to.include('400');
      } finally {
        await feed.close();
      }
    });

    it("finds an end user's own rows only, and is refused to a caller the rules hide a field from", async () => {
      const name = await collectionWith([
        { owner: 'ada', title: 'red shoes', secret: 'x' },
        { owner: 'bob', title: 'red boots', secret: 'y' },
        { owner: 'ada', title: 'blue shoes', secret: 'z' },
      ]);
      expect((await declare(name, ['title'])).status).to.equal(201);
      const mine = { owner: { $auth: 'sub' } };
      const rules = { read: mine, create: mine, update: mine, delete: mine };
      expect((await client.put(`/v1/collections/${name}/rules`, rules)).status).to.equal(200);
      const ada = new EndUser(server.url, await appKey(client), await tokenOf('ada'));
      const red = await ada.get<Row[]>(`/v1/collections/${name}/rows?${filter({ $search: 'red' })}`);
      expect(red.status).to.equal(200);
      expect(red.body.map((row) => row.id)).to.deep.equal([1]);
      expect((await ada.get<Row[]>(`/v1/collections/${name}/rows?${filter({ $search: 'sho' })}`)).body.map((row) => row.id)).to.deep.equal([
        1, 3,
      ]);
      // Ranked: the rule's condition beside the caller's search keeps it at the filter's top level.
      const rankedRed = await ada.get<Row[]>(`/v1/collections/${name}/rows?order_by=_score&select=_score&${filter({ $search: 'sho' })}`);
      expect(rankedRed.status).to.equal(200);
      expect(rankedRed.body.map((row) => row.id)).to.have.members([1, 3]);
      // A hidden field: the search index may hold its words.
      expect((await client.put(`/v1/collections/${name}/rules`, { ...rules, fields: { secret: { read: false } } })).status).to.equal(200);
      const refused = await ada.get<Problem>(`/v1/collections/${name}/rows?${filter({ $search: 'red' })}`);
      expect(refused.status).to.equal(403);
      expect(refused.body.errors?.[0].message).to.include('$search');
    });

    it('is refused in a webhook filter and in a rule', async () => {
      const name = await collectionWith();
      const webhook = await client.post<Problem>('/v1/webhooks', {
        url: 'https://example.com/hook',
        collections: [name],
        filter: { $search: 'red' },
      });
      expect(webhook.status).to.equal(400);
      expect(webhook.body.errors?.[0].name).to.equal('/filter');
      const rules = await client.put<Problem>(`/v1/collections/${name}/rules`, { read: { $search: 'red' } });
      expect(rules.status).to.equal(400);
      expect(rules.body.errors?.[0]).to.deep.include({ name: '/read/$search' });
    });
  });

  describe('ranking', () => {
    /** A collection of `rows` with a search index of FIELDS. */
    const ranked = async (rows: object[]) => {
      const name = await collectionWith(rows);
      expect((await declare(name)).status).to.equal(201);
      return name;
    };
    const list = async (name: string, query: string) => {
      const answer = await client.get<Row[]>(`/v1/collections/${name}/rows?${query}`);
      expect(answer.status, query).to.equal(200);
      return answer;
    };
    const refusal = async (path: string, body?: object) => {
      const answer = body ? await client.post<Problem>(path, body) : await client.get<Problem>(path);
      expect(answer.status, path).to.equal(400);
      return answer.body;
    };

    /** Each row's score is no higher than the one before, and rows of one score come by id ascending. */
    function expectRanked(rows: Row[]) {
      for (let index = 1; index < rows.length; index++) {
        const [before, at] = [rows[index - 1], rows[index]];
        expect(at._score, `row ${at.id}`)
          .to.be.a('number')
          .and.at.most(before._score as number);
        if (at._score === before._score) expect(at.id, 'ties by id').to.be.above(before.id);
      }
    }

    it('orders by relevance: the rows holding the words more often, in fewer words, first; ties by id ascending', async () => {
      const name = await ranked([
        { title: 'A red car', body: 'with many other words beside it, long and longer' },
        { title: 'Red red', body: 'red' },
        { title: 'blue' },
        { title: 'Red shoes' },
        { title: 'Red shoes' },
      ]);
      const { body } = await list(name, `order_by=_score&select=title,_score&${filter({ $search: 'red' })}`);
      // Three times in three words first, once in many last; 4 and 5 hold the same words, and tie.
      expect(body.map((each) => each.id)).to.deep.equal([2, 4, 5, 1]);
      expectRanked(body);
      expect(body[1]._score).to.equal(body[2]._score);
      // The same rows, in another order, without `_score`; the score selected beside another order.
      expect((await list(name, filter({ $search: 'red' }))).body.map((each) => each.id)).to.deep.equal([1, 2, 4, 5]);
      const byId = (await list(name, `select=_score&${filter({ $search: 'red' })}`)).body;
      expect(byId.map((each) => each.id)).to.deep.equal([1, 2, 4, 5]);
      for (const each of byId) expect(each._score).to.equal(body.find((ranked) => ranked.id === each.id)?._score);
      expect(Object.keys(byId[0])).to.deep.equal(['id', '_score']);
    });

    /**
     * Rows whose order BM25 sets whatever the statistics of other rows (docs/search.md, "Ranking"): each
     * holds each word of its search at least as often as the next, in no more words for each time.
     * Listed in the order they rank, inserted in the reverse.
     */
    const pinned: { search: string; rows: object[] }[] = [
      {
        search: 'red',
        rows: [{ title: 'red red x' }, { title: 'red x' }, { title: 'red', body: Array.from({ length: 19 }, (_, n) => `w${n}`).join(' ') }],
      },
      { search: 'red', rows: [{ title: 'red red x y' }, { title: 'red x y z' }] },
      { search: 'red shoes', rows: [{ title: 'red red shoes shoes' }, { title: 'red shoes' }, { title: 'red shoes a b c d' }] },
      { search: 'red sho', rows: [{ title: 'red shoes shop x' }, { title: 'red shoe x y' }] },
      { search: 'cafe', rows: [{ title: 'Café', body: 'CAFE x' }, { title: 'cafe x' }] },
    ];

    it('ranks as BM25 does where its order holds whatever the other rows: more times, in fewer words, first', async () => {
      for (const { search: text, rows } of pinned) {
        const expected = rows.map((_, n) => rows.length - n);
        // Words written as the index is made, and as rows are inserted into a collection that has it.
        const made = await ranked([...rows].reverse());
        const inserted = await ranked([]);
        for (const each of [...rows].reverse())
          expect((await client.post(`/v1/collections/${inserted}/rows`, [each])).status).to.equal(201);
        for (const name of [made, inserted]) {
          const { body } = await list(name, `order_by=_score&select=_score&${filter({ $search: text })}`);
          expect(
            body.map((each) => each.id),
            `${text}: ${JSON.stringify(body)}`,
          ).to.deep.equal(expected);
          expectRanked(body);
          expect(new Set(body.map((each) => each._score)).size, 'no two tie').to.equal(body.length);
        }
      }
    });

    it('ranks beside other conditions, with a prefix, counted, and through a query and a versioned list', async () => {
      const name = await ranked([
        { title: 'red shoes', n: 1 },
        { title: 'red shoe shop', n: 2 },
        { title: 'red', n: 1 },
        { title: 'shoes shoes', body: 'red', n: 1 },
      ]);
      const query = { $search: 'red sho', n: 1 };
      const listed = await list(name, `order_by=_score&select=_score&count=exact&${filter(query)}`);
      expect(listed.headers.get('rowbase-total-count')).to.equal('2');
      expectRanked(listed.body);
      expect(listed.body.map((each) => each.id)).to.have.members([1, 4]);
      const queried = await client.post<QueryPage>(`/v1/collections/${name}/query`, {
        filter: { $and: [{ n: 1 }, { $search: 'red sho' }] },
        order: [{ field: '_score' }],
        select: ['_score'],
        count: 'exact',
      });
      expect(queried.status).to.equal(200);
      expect(queried.body.rows).to.deep.equal(listed.body);
      expect(queried.body.total).to.equal(2);
      const versioned = await client.get<{ etag: string; row: Row }[]>(
        `/v1/collections/${name}/versioned-rows?order_by=_score&select=_score&${filter(query)}`,
      );
      expect(versioned.status).to.equal(200);
      expect(versioned.body.map((each) => each.row)).to.deep.equal(listed.body);
    });

    it('pages through a ranking by cursors and by offsets as one page holds it: no row repeated or skipped', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(row, { minLength: 1, maxLength: 25 }),
          search,
          fc.integer({ min: 1, max: 4 }),
          async (rows, text, limit) => {
            // Rows repeated, so that scores tie.
            const name = await ranked([...rows, ...rows.slice(0, 5)]);
            const stored = (await list(name, 'limit=1000')).body;
            const holds = stored.filter((each) => matchesSearch(rowWords(each, FIELDS), searchOf(text)));
            const whole = (await list(name, `order_by=_score&select=_score&limit=1000&${filter({ $search: text })}`)).body;
            expect(whole.map((each) => each.id)).to.have.members(holds.map((each) => each.id));
            expectRanked(whole);
            // A list, following its Link headers.
            const walked: Row[] = [];
            let next: string | undefined =
              `/v1/collections/${name}/rows?order_by=_score&select=_score&limit=${limit}&${filter({ $search: text })}`;
            while (next) {
              const answer: { status: number; body: Row[]; headers: Headers } = await client.get<Row[]>(next);
              expect(answer.status).to.equal(200);
              walked.push(...answer.body);
              next = answer.headers.get('link')?.match(/^<([^>]+)>; rel="next"$/)?.[1];
            }
            expect(walked).to.deep.equal(whole);
            // A query, following `next`.
            const queried: Row[] = [];
            let after: string | null | undefined;
            do {
              const body: Record<string, unknown> = { filter: { $search: text }, order: [{ field: '_score' }], select: ['_score'], limit };
              if (after) body.after = after;
              const answer = await client.post<QueryPage>(`/v1/collections/${name}/query`, body);
              expect(answer.status).to.equal(200);
              queried.push(...answer.body.rows);
              after = answer.body.next;
            } while (after);
            expect(queried).to.deep.equal(whole);
            // Pages by offset: a search alone reads its best scores first (pages.ts, bestScores).
            for (let offset = 0; offset < whole.length; offset += limit) {
              const answer = await list(name, `order_by=_score&select=_score&limit=${limit}&offset=${offset}&${filter({ $search: text })}`);
              expect(answer.body).to.deep.equal(whole.slice(offset, offset + limit));
            }
          },
        ),
        { numRuns: 15 },
      );
    });

    it('answers a stored field named _score as stored, unless selected: then it is the score', async () => {
      const name = await ranked([{ title: 'red', _score: 'mine' }]);
      const whole = (await list(name, `order_by=_score&${filter({ $search: 'red' })}`)).body;
      expect(whole).to.deep.equal([{ id: 1, title: 'red', _score: 'mine' }]);
      const selected = (await list(name, `order_by=_score&select=_score,title&${filter({ $search: 'red' })}`)).body;
      expect(selected[0]._score).to.be.a('number');
      expect(selected[0].title).to.equal('red');
      // A filter still reads the stored field.
      expect((await list(name, filter({ $search: 'red', _score: 'mine' }))).body).to.have.length(1);
    });

    it('answers where the search matched in each indexed field, selected as _highlight', async () => {
      const name = await ranked([
        { title: 'Red shoes', body: 'Café au lait, RED' },
        { title: 'blue', body: 'red cafe\u0301' },
        { title: 'Red', body: 7 },
      ]);
      const { body } = await list(name, `select=title,_highlight&${filter({ $search: 'red caf' })}`);
      expect(body).to.deep.equal([
        { id: 1, title: 'Red shoes', _highlight: { title: ['', 'Red', ' shoes'], body: ['', 'Café', ' au lait, ', 'RED', ''] } },
        { id: 2, title: 'blue', _highlight: { body: ['', 'red', ' ', 'cafe\u0301', ''] } },
      ]);
      const queried = await client.post<QueryPage>(`/v1/collections/${name}/query`, {
        filter: { $search: 'red' },
        select: ['_highlight'],
        order: [{ field: '_score' }],
      });
      expect(queried.status).to.equal(200);
      expect(queried.body.rows.find((each) => each.id === 3)).to.deep.equal({ id: 3, _highlight: { title: ['', 'Red', ''] } });
      const refused = await refusal(`/v1/collections/${name}/rows?select=_highlight`);
      expect(refused.errors?.map((error) => error.name)).to.deep.equal(['select']);
      expect(refused.detail).to.include('_highlight');
    });

    it('refuses _score without a $search at the filter top level, in another direction, or beside other keys', async () => {
      const name = await ranked([{ title: 'red' }]);
      const rows = `/v1/collections/${name}/rows`;
      const named = (problem: Problem) => problem.errors?.map(({ name: at }) => at);
      expect(named(await refusal(`${rows}?order_by=_score`))).to.deep.equal(['order_by']);
      expect(named(await refusal(`${rows}?order_by=_score&${filter({ $or: [{ $search: 'red' }, { n: 1 }] })}`))).to.deep.equal([
        'order_by',
      ]);
      expect(named(await refusal(`${rows}?order_by=_score&${filter({ $not: { $search: 'red' } })}`))).to.deep.equal(['order_by']);
      expect(named(await refusal(`${rows}?select=title,_score&${filter({ title: 'red' })}`))).to.deep.equal(['select']);
      expect(named(await refusal(`${rows}?order_by=_score&order=desc&${filter({ $search: 'red' })}`))).to.deep.equal(['order']);
      expect(named(await refusal(`${rows}?order_by=_score,title&${filter({ $search: 'red' })}`))).to.deep.equal(['order_by']);
      const query = `/v1/collections/${name}/query`;
      expect(named(await refusal(query, { order: [{ field: '_score' }] }))).to.deep.equal(['/order/0/field']);
      expect(named(await refusal(query, { select: ['_score'], filter: { title: 'red' } }))).to.deep.equal(['/select']);
      expect(named(await refusal(query, { order: [{ field: '_score', direction: 'desc' }], filter: { $search: 'red' } }))).to.deep.equal([
        '/order/0/direction',
      ]);
      // Nested $and keep the search at the top level.
      const nested = await list(name, `order_by=_score&${filter({ $and: [{ $and: [{ $search: 'red' }] }] })}`);
      expect(nested.body.map((each) => each.id)).to.deep.equal([1]);
    });
  });
});
