// A batch (openapi.yaml, writeBatch): several writes over the account's collections in one transaction,
// in order, each the write its own request makes; the first that fails fails the batch, named by
// `operation`, with nothing written and no event sent.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { FeedClient, type FeedMessage, range, seqs } from '../support/feed.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { watchHealth } from '../support/watchdog.ts';

type Row = { id: number } & Record<string, unknown>;
type Result = { status: number; body?: Row | Row[]; etag?: string; etags?: string[] };
type Answer = { results: Result[] };
type Problem = { code: string; operation?: number; errors?: { in: string; name: string }[]; fields?: string[]; existing_id?: number };

describeEachBackend('POST /v1/batch', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;

  /** A new collection with `rows` (and their ids from 1), and `setUp` done to it. */
  async function collectionWith(rows: object[] = [], setUp?: (name: string) => Promise<void>): Promise<string> {
    const name = `b${++collections}`;
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    if (rows.length > 0) expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
    await setUp?.(name);
    return name;
  }
  const rowsOf = async (name: string) => (await client.get<Row[]>(`/v1/collections/${name}/rows`)).body;
  const seqOf = async (name: string) => (await client.get<{ seq: number }>(`/v1/collections/${name}`)).body.seq;
  const batch = <T = Answer>(operations: unknown[], headers?: Record<string, string>) =>
    client.post<T>('/v1/batch', { operations }, { headers });
  /** What can be seen of the collections: their rows and seqs, to show that a refused batch wrote nothing. */
  const stateOf = async (...names: string[]) => Promise.all(names.map(async (name) => [await rowsOf(name), await seqOf(name)]));

  before(async () => {
    server = await startTestServer({ maxBatchOperations: 8 }, { backend });
    client = await server.client();
  });
  after(() => server.stop());
  watchHealth(() => server);

  describe('success', () => {
    it('answers each operation as its own request would, in order, each seeing the writes before it', async () => {
      const orders = await collectionWith();
      const stock = await collectionWith([{ sku: 'tea', count: 5 }]);
      const stockEtag = (await client.get(`/v1/collections/${stock}/rows/1`)).headers.get('etag') as string;
      const answer = await batch([
        { op: 'insert', collection: orders, rows: [{ customer: 'ada', total: 30 }, { customer: 'bob' }] },
        { op: 'update', collection: stock, id: 1, patch: { count: 4 }, if_match: stockEtag },
        { op: 'update', collection: orders, id: 2, patch: { total: 12 } },
        { op: 'delete', collection: orders, id: 1 },
      ]);
      expect(answer.status).to.equal(200);
      const [inserted, patched, readBack, deleted] = answer.body.results;
      expect(inserted.status).to.equal(201);
      expect(inserted.body).to.deep.equal([
        { id: 1, customer: 'ada', total: 30 },
        { id: 2, customer: 'bob' },
      ]);
      expect(inserted.etags).to.have.length(2);
      expect(patched).to.deep.include({ status: 200, body: { id: 1, sku: 'tea', count: 4 } });
      // The row the first operation inserted, patched by the third.
      expect(readBack.body).to.deep.equal({ id: 2, customer: 'bob', total: 12 });
      expect(deleted).to.deep.equal({ status: 204 });
      expect(await rowsOf(orders)).to.deep.equal([{ id: 2, customer: 'bob', total: 12 }]);
      expect(await rowsOf(stock)).to.deep.equal([{ id: 1, sku: 'tea', count: 4 }]);
      // Each ETag is the row's, as GET answers it.
      expect((await client.get(`/v1/collections/${stock}/rows/1`)).headers.get('etag')).to.equal(patched.etag);
      expect((await client.get(`/v1/collections/${orders}/rows/2`)).headers.get('etag')).to.equal(readBack.etag);
    });

    it('upserts by a unique index, the later operations seeing the rows it wrote', async () => {
      const people = await collectionWith([{ email: 'ada@example.com', name: 'Ada' }], async (name) => {
        expect((await client.post(`/v1/collections/${name}/indexes`, { fields: ['email'], unique: true })).status).to.equal(201);
      });
      const answer = await batch([
        {
          op: 'upsert',
          collection: people,
          on_conflict: ['email'],
          rows: [
            { email: 'ada@example.com', name: 'Ada L.' },
            { email: 'bob@example.com', name: 'Bob' },
          ],
        },
        { op: 'update', collection: people, id: 2, patch: { name: 'Robert' } },
      ]);
      expect(answer.status).to.equal(200);
      expect(answer.body.results[0]).to.deep.include({
        status: 200,
        body: [
          { id: 1, email: 'ada@example.com', name: 'Ada L.' },
          { id: 2, email: 'bob@example.com', name: 'Bob' },
        ],
      });
      expect(answer.body.results[0].etags).to.have.length(2);
      expect((await client.get(`/v1/collections/${people}/rows/1`)).headers.get('etag')).to.equal(answer.body.results[0].etags?.[0]);
      expect(answer.body.results[1].body).to.deep.equal({ id: 2, email: 'bob@example.com', name: 'Robert' });
    });

    it('patches in each format of PATCH, increments included, exactly under concurrent batches', async () => {
      const counters = await collectionWith([{ likes: 0, tags: ['a'], meta: { by: 'ada', draft: true } }]);
      const patches = await batch([
        { op: 'update', collection: counters, id: 1, patch_format: 'merge-patch', patch: { meta: { draft: null, at: 1 } } },
        {
          op: 'update',
          collection: counters,
          id: 1,
          patch_format: 'json-patch',
          patch: [
            { op: 'test', path: '/meta/by', value: 'ada' },
            { op: 'add', path: '/tags/-', value: 'b' },
          ],
        },
      ]);
      expect(patches.status, patches.text).to.equal(200);
      expect(patches.body.results[1].body).to.deep.equal({ id: 1, likes: 0, tags: ['a', 'b'], meta: { by: 'ada', at: 1 } });
      const increment = {
        op: 'update',
        collection: counters,
        id: 1,
        patch_format: 'json-patch',
        patch: [{ op: 'increment', path: '/likes', value: 1 }],
      };
      const answers = await Promise.all(range(1, 30).map(() => batch([increment, increment])));
      expect(answers.map((answer) => answer.status)).to.deep.equal(answers.map(() => 200));
      expect((await rowsOf(counters))[0].likes).to.equal(60);
      expect(await seqOf(counters)).to.equal(1 + 2 + 60);
    });

    it('sends the events once committed, in operation order, each collection with consecutive seq', async () => {
      const first = await collectionWith([{ n: 0 }]);
      const second = await collectionWith();
      const feeds = await Promise.all([first, second].map((collection) => FeedClient.open(server.url, client.key, { collection })));
      try {
        const answer = await batch([
          { op: 'insert', collection: first, rows: [{ n: 1 }, { n: 2 }] },
          { op: 'insert', collection: second, rows: [{ m: 1 }] },
          { op: 'update', collection: first, id: 1, patch: { n: 10 } },
          { op: 'delete', collection: second, id: 1 },
          { op: 'delete', collection: first, id: 2 },
        ]);
        expect(answer.status).to.equal(200);
        const [ofFirst, ofSecond] = await Promise.all([feeds[0].changesCount(4), feeds[1].changesCount(2)]);
        const kinds = (messages: FeedMessage[]) => messages.map((message) => [message.type, 'row' in message ? message.row.id : undefined]);
        expect(kinds(ofFirst)).to.deep.equal([
          ['insert', 2],
          ['insert', 3],
          ['update', 1],
          ['delete', 2],
        ]);
        expect(seqs(ofFirst)).to.deep.equal(range(2, 5));
        expect(kinds(ofSecond)).to.deep.equal([
          ['insert', 1],
          ['delete', 1],
        ]);
        expect(seqs(ofSecond)).to.deep.equal(range(1, 2));
      } finally {
        for (const feed of feeds) feed.close();
      }
    });

    it('inserts into a collection with a search index, its rows found by their words', async () => {
      const notes = await collectionWith([], async (name) => {
        expect((await client.post(`/v1/collections/${name}/indexes`, { type: 'search', fields: ['title'] })).status).to.equal(201);
      });
      const other = await collectionWith();
      const answer = await batch([
        { op: 'insert', collection: notes, rows: [{ title: 'red shoes' }] },
        { op: 'insert', collection: other, rows: [{ n: 1 }] },
        { op: 'insert', collection: notes, rows: [{ title: 'blue hat' }, { title: 'red hat' }] },
      ]);
      expect(answer.status, answer.text).to.equal(200);
      expect(answer.body.results.map((result) => result.body)).to.deep.equal([
        [{ id: 1, title: 'red shoes' }],
        [{ id: 1, n: 1 }],
        [
          { id: 2, title: 'blue hat' },
          { id: 3, title: 'red hat' },
        ],
      ]);
      const found = await client.get<Row[]>(
        `/v1/collections/${notes}/rows?filter=${encodeURIComponent(JSON.stringify({ $search: 'red' }))}`,
      );
      expect(found.body.map((row) => row.id)).to.deep.equal([1, 3]);
    });

    it('checks inserts against the schema their collection has now, set since the last batch into it', async () => {
      const typed = await collectionWith();
      expect((await batch([{ op: 'insert', collection: typed, rows: [{ n: 1 }] }])).status).to.equal(200);
      const schema = { type: 'object', properties: { n: { type: 'integer' } } };
      expect((await client.put(`/v1/collections/${typed}/schema`, schema)).status).to.equal(200);
      const refused = await batch<Problem>([
        { op: 'insert', collection: typed, rows: [{ n: 2 }] },
        { op: 'insert', collection: typed, rows: [{ n: 'three' }] },
      ]);
      expect([refused.status, refused.body.code, refused.body.operation]).to.deep.equal([422, 'row_invalid', 1]);
      expect(await rowsOf(typed)).to.deep.equal([{ id: 1, n: 1 }]);
      expect((await batch([{ op: 'insert', collection: typed, rows: [{ n: 2 }] }])).body.results[0].body).to.deep.equal([{ id: 2, n: 2 }]);
    });

    it('inserts from concurrent batches naming the same collections in opposite orders, each row once, in order of its batch', async () => {
      const left = await collectionWith();
      const right = await collectionWith();
      const insert = (collection: string, n: number) => ({ op: 'insert', collection, rows: [{ n }, { n }] });
      const answers = await Promise.all(
        range(1, 20).map((n) => batch(n % 2 ? [insert(left, n), insert(right, n)] : [insert(right, n), insert(left, n)])),
      );
      expect(answers.map((answer) => answer.status)).to.deep.equal(answers.map(() => 200));
      for (const name of [left, right]) {
        const rows = await rowsOf(name);
        expect(rows.map((row) => row.id)).to.deep.equal(range(1, 40));
        // Each batch's two rows of a collection are consecutive.
        for (let at = 0; at < rows.length; at += 2) expect(rows[at].n).to.equal(rows[at + 1].n);
        expect(new Set(rows.map((row) => row.n)).size).to.equal(20);
        expect(await seqOf(name)).to.equal(40);
      }
      // Each row's ETag as GET answers it.
      const [first] = answers[0].body.results;
      for (const [at, row] of (first.body as Row[]).entries())
        expect((await client.get(`/v1/collections/${left}/rows/${row.id}`)).headers.get('etag')).to.equal(first.etags?.[at]);
    });

    it('replays the answer to a retry with the same Idempotency-Key, writing nothing again', async () => {
      const name = await collectionWith();
      const operations = [
        { op: 'insert', collection: name, rows: [{ n: 1 }] },
        { op: 'update', collection: name, id: 1, patch: { n: 2 } },
      ];
      const first = await batch(operations, { 'Idempotency-Key': `batch-${name}` });
      expect(first.status).to.equal(200);
      const again = await batch(operations, { 'Idempotency-Key': `batch-${name}` });
      expect(again.status).to.equal(200);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(again.body).to.deep.equal(first.body);
      expect(await rowsOf(name)).to.deep.equal([{ id: 1, n: 2 }]);
      expect(await seqOf(name)).to.equal(2);
      const other = await batch([{ op: 'delete', collection: name, id: 1 }], { 'Idempotency-Key': `batch-${name}` });
      expect(other.body).to.include({ code: 'idempotency_key_reused' });
    });

    it('holds the collections in one order, so that batches over the same ones in opposite orders all succeed', async () => {
      const left = await collectionWith([{ n: 0 }]);
      const right = await collectionWith([{ n: 0 }]);
      const increment = (collection: string, n: number) => ({ op: 'update', collection, id: 1, patch: { n } });
      const answers = await Promise.all(
        range(1, 20).map((n) => batch(n % 2 ? [increment(left, n), increment(right, n)] : [increment(right, n), increment(left, n)])),
      );
      expect(answers.map((answer) => answer.status)).to.deep.equal(answers.map(() => 200));
      expect(await seqOf(left)).to.equal(21);
      expect(await seqOf(right)).to.equal(21);
    });
  });

  describe('all or none', () => {
    const refusals: {
      name: string;
      operations: (names: string[], etag: string) => unknown[];
      status: number;
      code: string;
      operation?: number;
      errorAt?: string;
    }[] = [
      {
        name: 'a failing If-Match in the last operation',
        operations: ([a, b]) => [
          { op: 'insert', collection: a, rows: [{ n: 9 }] },
          { op: 'insert', collection: b, rows: [{ n: 9 }] },
          { op: 'update', collection: a, id: 1, patch: { n: 8 }, if_match: '"1.1"' },
        ],
        status: 412,
        code: 'precondition_failed',
        operation: 2,
      },
      {
        name: 'a missing row',
        operations: ([a, b]) => [
          { op: 'delete', collection: a, id: 1 },
          { op: 'update', collection: b, id: 99, patch: { n: 1 } },
        ],
        status: 404,
        code: 'not_found',
        operation: 1,
      },
      {
        name: 'a missing collection',
        operations: ([a]) => [
          { op: 'insert', collection: a, rows: [{ n: 1 }] },
          { op: 'insert', collection: 'absent', rows: [{ n: 1 }] },
        ],
        status: 404,
        code: 'not_found',
        operation: 1,
      },
      {
        name: 'a row that breaks a unique index written by an earlier operation',
        operations: ([a, , c]) => [
          { op: 'insert', collection: a, rows: [{ n: 3 }] },
          { op: 'insert', collection: c, rows: [{ email: 'x' }] },
          { op: 'insert', collection: c, rows: [{ email: 'x' }] },
        ],
        status: 409,
        code: 'unique_violation',
        operation: 2,
      },
      {
        name: 'a row whose unique value a stored row holds, sent among other inserts',
        operations: ([a, , c]) => [
          { op: 'insert', collection: c, rows: [{ email: 'z' }] },
          { op: 'insert', collection: a, rows: [{ n: 3 }] },
          { op: 'insert', collection: c, rows: [{ email: 'w' }, { email: 'y' }] },
          { op: 'insert', collection: a, rows: [{ n: 4 }] },
        ],
        status: 409,
        code: 'unique_violation',
        operation: 2,
      },
      {
        name: 'a row that breaks its schema',
        operations: ([a, , c]) => [
          { op: 'update', collection: a, id: 1, patch: { n: 2 } },
          { op: 'insert', collection: c, rows: [{ email: 7 }] },
        ],
        status: 422,
        code: 'row_invalid',
        operation: 1,
      },
      {
        name: 'a good If-Match that the batch itself made stale',
        operations: ([a], etag) => [
          { op: 'update', collection: a, id: 1, patch: { n: 2 }, if_match: etag },
          { op: 'delete', collection: a, id: 1, if_match: etag },
        ],
        status: 412,
        code: 'precondition_failed',
        operation: 1,
      },
      {
        name: 'an upsert by fields of no unique index',
        operations: ([a]) => [{ op: 'upsert', collection: a, on_conflict: ['n'], rows: [{ n: 1 }] }],
        status: 400,
        code: 'validation_failed',
        operation: 0,
        errorAt: '/operations/0/on_conflict',
      },
      {
        name: 'a JSON Patch whose test fails',
        operations: ([a]) => [
          { op: 'update', collection: a, id: 1, patch: { n: 5 } },
          {
            op: 'update',
            collection: a,
            id: 1,
            patch_format: 'json-patch',
            patch: [
              { op: 'increment', path: '/n', value: 1 },
              { op: 'test', path: '/n', value: 5 },
            ],
          },
        ],
        status: 409,
        code: 'patch_conflict',
        operation: 1,
        errorAt: '/operations/1/patch/1',
      },
      {
        name: 'a malformed JSON Patch',
        operations: ([a]) => [
          { op: 'insert', collection: a, rows: [{ n: 1 }] },
          { op: 'update', collection: a, id: 1, patch_format: 'json-patch', patch: [{ op: 'remove', path: '/id' }] },
        ],
        status: 400,
        code: 'validation_failed',
        operation: 1,
        errorAt: '/operations/1/patch/0/path',
      },
      {
        name: 'a malformed if_match',
        operations: ([a]) => [
          { op: 'insert', collection: a, rows: [{ n: 1 }] },
          { op: 'delete', collection: a, id: 1, if_match: 'no quotes' },
        ],
        status: 400,
        code: 'validation_failed',
        operation: 1,
        errorAt: '/operations/1/if_match',
      },
      {
        name: 'an unknown op',
        operations: ([a]) => [
          { op: 'insert', collection: a, rows: [{ n: 1 }] },
          { op: 'merge', collection: a, id: 1 },
        ],
        status: 400,
        code: 'validation_failed',
        errorAt: '/operations/1/op',
      },
      {
        name: 'an operation without its collection',
        operations: () => [{ op: 'insert', rows: [{ n: 1 }] }],
        status: 400,
        code: 'validation_failed',
        errorAt: '/operations/0/collection',
      },
      {
        name: 'an update without its id',
        operations: ([a]) => [
          { op: 'insert', collection: a, rows: [{ n: 1 }] },
          { op: 'update', collection: a, patch: { n: 1 } },
        ],
        status: 400,
        code: 'validation_failed',
        errorAt: '/operations/1/id',
      },
      // Each operation is an object: a value of another type is one no branch of BatchOperation takes.
      ...[1, 'insert', null, [], true].map((value) => ({
        name: `an operation that is ${JSON.stringify(value)}`,
        operations: ([a]: string[]) => [{ op: 'insert', collection: a, rows: [{ n: 1 }] }, value],
        status: 400,
        code: 'validation_failed',
        errorAt: '/operations/1',
      })),
      {
        name: 'more operations than the server takes',
        operations: ([a]) => range(1, 9).map((n) => ({ op: 'insert', collection: a, rows: [{ n }] })),
        status: 400,
        code: 'validation_failed',
        errorAt: '/operations',
      },
    ];
    for (const { name, operations, status, code, operation, errorAt } of refusals) {
      it(`refuses a batch with ${name}, writing nothing`, async () => {
        const names = [
          await collectionWith([{ n: 1 }]),
          await collectionWith([{ n: 1 }]),
          await collectionWith([{ email: 'y' }], async (typed) => {
            expect((await client.post(`/v1/collections/${typed}/indexes`, { fields: ['email'], unique: true })).status).to.equal(201);
            const schema = { type: 'object', properties: { email: { type: 'string' } } };
            expect((await client.put(`/v1/collections/${typed}/schema`, schema)).status).to.equal(200);
          }),
        ];
        const etag = (await client.get(`/v1/collections/${names[0]}/rows/1`)).headers.get('etag') as string;
        const before = await stateOf(...names);
        const refused = await batch<Problem>(operations(names, etag));
        expect(refused.status, refused.text).to.equal(status);
        expect(refused.body.code).to.equal(code);
        expect(refused.body.operation).to.equal(operation);
        if (errorAt) expect(refused.body.errors?.map((error) => error.name)).to.include(errorAt);
        expect(await stateOf(...names)).to.deep.equal(before);
      });
    }

    it('meets the collections a limited key may not see as missing, naming the operation', async () => {
      const seen = await collectionWith([{ n: 1 }]);
      const hidden = await collectionWith([{ n: 1 }]);
      // A key of the account that holds them, made by its admin key, limited to one of them.
      const made = await client.post<{ key: string }>('/v1/keys', { scope: 'write', collections: [seen] });
      expect(made.status).to.equal(201);
      const own = new Client(server.url, made.body.key);
      const before = await stateOf(seen, hidden);
      const refused = await own.post<Problem>('/v1/batch', {
        operations: [
          { op: 'insert', collection: seen, rows: [{ n: 2 }] },
          { op: 'update', collection: hidden, id: 1, patch: { n: 2 } },
        ],
      });
      expect(refused.status).to.equal(404);
      expect(refused.body).to.include({ code: 'not_found', operation: 1 });
      expect(await stateOf(seen, hidden)).to.deep.equal(before);
      const allowed = await own.post<Answer>('/v1/batch', { operations: [{ op: 'insert', collection: seen, rows: [{ n: 2 }] }] });
      expect(allowed.status).to.equal(200);
    });
  });

  describe('bounds', () => {
    it('counts one request per operation toward the plan, and refuses a batch the quota cannot hold whole', async () => {
      await server.store.setPlan({ name: `batch-${backend}`, quota: 10, period: 'month', rate: null });
      const counted = await server.client(undefined, `batch-${backend}`);
      expect((await counted.post('/v1/collections', { name: 'counted' })).status).to.equal(201);
      const five = range(1, 5).map((n) => ({ op: 'insert', collection: 'counted', rows: [{ n }] }));
      const answer = await counted.post<Answer>('/v1/batch', { operations: five });
      expect(answer.status).to.equal(200);
      expect(answer.headers.get('ratelimit-remaining')).to.equal('4');
      const refused = await counted.post<Problem>('/v1/batch', { operations: five });
      expect(refused.status).to.equal(429);
      expect(refused.body.code).to.equal('quota_exceeded');
      const usage = await counted.get<{ used: number }>('/v1/usage');
      expect(usage.body.used).to.equal(8);
      expect((await counted.get<Row[]>('/v1/collections/counted/rows')).body).to.have.length(5);
    });

    it('stops a batch that holds the database past the query timeout, writing nothing', async () => {
      const hurried = await startTestServer({ queryTimeoutMs: 1, maxBatchOperations: 100 }, { backend });
      try {
        const owner = await hurried.client();
        expect((await owner.post('/v1/collections', { name: 'slow' })).status).to.equal(201);
        const rows = range(1, 100).map((n) => ({ n }));
        const refused = await owner.post<Problem>('/v1/batch', {
          operations: range(1, 100).map(() => ({ op: 'insert', collection: 'slow', rows })),
        });
        expect(refused.status).to.equal(503);
        expect(refused.body.code).to.equal('query_timeout');
        expect(refused.body.operation).to.be.a('number');
        expect((await owner.get<{ seq: number }>('/v1/collections/slow')).body.seq).to.equal(0);
      } finally {
        await hurried.stop();
      }
    });
  });
});
