// Aggregates (openapi.yaml, aggregateRows and getAggregates) on both backends: random rows of mixed
// types, missing fields, nulls and nested values, random filters, groupings and aggregates, each answer
// exactly what src/query/aggregate.ts evaluates in memory over the same rows; then the answers' rules
// one by one.
import { expect } from 'chai';
import fc from 'fast-check';
import { type AggregateQuery, aggregateInMemory, parseAggregateQuery } from '../../src/query/aggregate.ts';
import type { Row } from '../../src/query/evaluate.ts';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const FIELDS = ['a', 'b', 'c'];
/** Fields no group names (no plain names), which aggregates may read. */
const ODD_FIELDS = ['x"y', 'a\\b', '__proto__', 'NUL\u0000', 'k\ud800'];

// Values of every JSON type, few enough of each that groups gather several rows; numbers that add
// inexactly as doubles (0.1, 1e16 + 1), integers near 2^53, and objects equal in another order.
const scalar = fc.oneof(
  fc.constantFrom(0, 1, -1, 2.5, 0.1, 0.2, 0.3, 1e16, 1e21, -3.75e-7, 5e-324, 1.7976931348623157e308),
  // Integers past a double's exact ones, and past 64 bits, which SQLite reads as reals.
  fc.constantFrom(2 ** 53 - 1, 2 ** 53, 2 ** 63, -(2 ** 63), 2 ** 64),
  fc.integer({ min: -5, max: 5 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom('', 'x', 'y', 'X', 'é', 'e\u0301', '😀', '\uffff', '\u0000', 'a"b', 'a\\b', '\ud800', '\ud7ff', 'x\u0001'),
  fc.boolean(),
  fc.constant(null),
);
const nested = fc.oneof(
  fc.constantFrom(
    { p: 1, q: 'z' },
    { q: 'z', p: 1 },
    [1, 'z'],
    ['z', 1],
    [],
    {},
    { p: { r: [1, { s: 2 }] } },
    { p: { r: [1, { s: 2 }] }, q: null },
  ),
  fc.jsonValue({ maxDepth: 2 }).filter((value) => value !== null && typeof value === 'object'),
);
const value = fc.oneof({ weight: 6, arbitrary: scalar }, { weight: 2, arbitrary: nested });
const rowArbitrary = fc.dictionary(fc.constantFrom(...FIELDS, ...ODD_FIELDS), value, { maxKeys: 4 });

const ops = ['count', 'sum', 'avg', 'min', 'max', 'count_distinct'] as const;
const aggregates = fc
  .array(fc.tuple(fc.constantFrom(...ops), fc.constantFrom(...FIELDS, ...ODD_FIELDS)), { minLength: 1, maxLength: 5 })
  .map((list) => Object.fromEntries(list.map(([op, field], index) => [`x${index}`, op === 'count' ? { count: {} } : { [op]: field }])));
const filter = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  fc.record({ a: fc.oneof(scalar, fc.record({ $gte: fc.integer({ min: -3, max: 3 }) }), fc.record({ $exists: fc.boolean() })) }),
  fc.record({ b: fc.record({ $in: fc.array(scalar, { maxLength: 3 }) }) }),
  fc.record({ $or: fc.tuple(fc.record({ a: scalar }), fc.record({ c: fc.record({ $ne: scalar }) })) }),
);
const body = fc
  .record({
    filter,
    group_by: fc.shuffledSubarray(FIELDS, { maxLength: 2 }),
    aggregates,
    limit: fc.integer({ min: 0, max: 8 }),
  })
  .chain((query) => {
    const names = [...query.group_by, ...Object.keys(query.aggregates)];
    return fc
      .shuffledSubarray(names, { maxLength: Math.min(2, names.length) })
      .chain((fields) =>
        fc.tuple(...fields.map((field) => fc.record({ field: fc.constant(field), direction: fc.constantFrom('asc', 'desc') }))),
      )
      .map((order) => ({ ...query, order }));
  })
  .map(({ filter, ...rest }) => (filter === undefined ? rest : { filter, ...rest }));

interface Answer {
  groups: Record<string, unknown>[];
  seq: number;
  truncated: boolean;
}

/** A new collection of `client` holding `rows`, and the rows as stored, with their ids. */
async function collectionOf(client: Client, name: string, rows: Record<string, unknown>[]): Promise<Row[]> {
  expect((await client.post('/v1/collections', { name })).status).to.equal(201);
  if (rows.length === 0) return [];
  const inserted = await client.post<Row[]>(`/v1/collections/${name}/rows`, rows);
  expect(inserted.status, inserted.text).to.equal(201);
  return inserted.body;
}

const evaluate = (stored: Row[], request: object): ReturnType<typeof aggregateInMemory> =>
  aggregateInMemory(stored, parseAggregateQuery(request, 'body', 1000) as AggregateQuery);

describeEachBackend('aggregates', (backend) => {
  // Without sort indexes, every aggregate reads its rows whole; with them (made by the first filter on
  // a field, whatever the collection's size), a filter's top level reads an index's range, and a count
  // under an equality counts keys.
  for (const [title, sortIndexMinRows] of [
    ['read whole', 1_000_000],
    ['read through sort indexes', 0],
  ] as const) {
    describe(title, () => {
      let server: TestServer;
      let client: Client;
      let collections = 0;

      before(async () => {
        server = await startTestServer({ sortIndexMinRows }, { backend });
        client = await server.client();
      });
      after(() => server.stop());

      it('answers exactly what the evaluation in memory answers, for random rows and queries', async () => {
        await fc.assert(
          fc.asyncProperty(
            fc.array(rowArbitrary, { maxLength: 30 }),
            fc.array(body, { minLength: 1, maxLength: 4 }),
            async (rows, queries) => {
              const name = `c${++collections}`;
              const stored = await collectionOf(client, name, rows);
              for (const query of queries) {
                const answer = await client.post<Answer>(`/v1/collections/${name}/aggregate`, query);
                expect(answer.status, answer.text).to.equal(200);
                const expected = evaluate(stored, query);
                expect({ groups: answer.body.groups, truncated: answer.body.truncated }, JSON.stringify(query)).to.deep.equal(expected);
                expect(answer.body.seq).to.equal(rows.length);
              }
            },
          ),
          { numRuns: Number(process.env.AGGREGATE_RUNS ?? 40) },
        );
        const indexed = await server.store.knex('collections').whereNot('sorted', '[]').count({ n: '*' });
        expect(Number(indexed[0].n) > 0).to.equal(sortIndexMinRows === 0);
      });
    });
  }

  describe('answers', () => {
    let server: TestServer;
    let client: Client;
    const rows = [
      { status: 'open', points: 0.1, tag: { k: 1, j: 'x' }, due: '2026-12-01' },
      { status: 'open', points: 0.2, tag: { j: 'x', k: 1 }, due: 3 },
      { status: 'open', points: 0.3, tag: [1], due: true },
      { status: 'done', points: 2 ** 53 - 2, tag: [1], due: { at: 1 } },
      { status: 'done', points: 1, due: [2] },
      { points: 'many', due: null },
      { status: null, points: 1e308 },
      { status: null, points: 1e308 },
    ];

    before(async () => {
      server = await startTestServer({ maxGroups: 3, sortIndexMinRows: 0 }, { backend });
      client = await server.client();
      await collectionOf(client, 'tasks', rows);
      await collectionOf(client, 'empty', []);
    });
    after(() => server.stop());

    const post = (body: unknown, name = 'tasks') => client.post<Answer>(`/v1/collections/${name}/aggregate`, body);

    it('sums exactly, numbers alone, past the largest double null; averages the sum', async () => {
      const answer = await post({ group_by: ['status'], aggregates: { sum: { sum: 'points' }, avg: { avg: 'points' }, n: { count: {} } } });
      expect(answer.status, answer.text).to.equal(200);
      expect(answer.body).to.deep.equal({
        groups: [
          { status: 'done', sum: 2 ** 53 - 1, avg: (2 ** 53 - 1) / 2, n: 2 },
          { status: 'open', sum: 0.6, avg: 0.6 / 3, n: 3 },
          { status: null, sum: null, avg: null, n: 3 },
        ],
        seq: rows.length,
        truncated: false,
      });
      expect(answer.headers.get('rowbase-seq')).to.equal(String(rows.length));
    });

    it('groups objects by JSON equality, whatever the order of their members, answered sorted', async () => {
      const answer = await post({ group_by: ['tag'], aggregates: { n: { count: {} } }, order: [{ field: 'n', direction: 'desc' }] });
      expect(answer.body.groups).to.deep.equal([
        { tag: null, n: 4 },
        { tag: [1], n: 2 },
        { tag: { j: 'x', k: 1 }, n: 2 },
      ]);
      expect(JSON.stringify(answer.body.groups[2])).to.equal('{"tag":{"j":"x","k":1},"n":2}');
    });

    it('answers a group field or an alias named __proto__ or constructor as a member of its own', async () => {
      expect((await client.post('/v1/collections', { name: 'protos' })).status).to.equal(201);
      const inserted = await client.request('POST', '/v1/collections/protos/rows', {
        raw: '[{"__proto__":"a","n":1},{"__proto__":"a","n":2},{"__proto__":{"b":1},"n":4}]',
        headers: { 'content-type': 'application/json' },
      });
      expect(inserted.status).to.equal(201);
      const grouped = await post({ group_by: ['__proto__'], aggregates: { constructor: { sum: 'n' }, toString: { count: {} } } }, 'protos');
      expect(grouped.text).to.equal(
        '{"groups":[{"__proto__":"a","constructor":3,"toString":2},{"__proto__":{"b":1},"constructor":4,"toString":1}],"seq":3,"truncated":false}',
      );
      // As text: in a literal, __proto__ would set the object's prototype, not a member.
      const aliased = await client.request('POST', '/v1/collections/protos/aggregate', {
        raw: '{"filter":{"n":{"$gte":1}},"aggregates":{"__proto__":{"count":{}},"hasOwnProperty":{"max":"n"}}}',
        headers: { 'content-type': 'application/json' },
      });
      expect(aliased.text).to.equal('{"groups":[{"__proto__":3,"hasOwnProperty":4}],"seq":3,"truncated":false}');
    });

    it('takes min and max in the page order across types: numbers, strings, booleans, then objects and arrays by id', async () => {
      const answer = await post({ aggregates: { first: { min: 'due' }, last: { max: 'due' }, kinds: { count_distinct: 'due' } } });
      expect(answer.body.groups).to.deep.equal([{ first: 3, last: [2], kinds: 5 }]);
      const strings = await post({ filter: { due: { $prefix: '' } }, aggregates: { first: { min: 'due' }, last: { max: 'status' } } });
      expect(strings.body.groups).to.deep.equal([{ first: '2026-12-01', last: 'open' }]);
    });

    it('answers one group without group_by, there with no row; none with group_by', async () => {
      expect((await post({}, 'empty')).body).to.deep.equal({ groups: [{ count: 0 }], seq: 0, truncated: false });
      expect((await post({ aggregates: { s: { sum: 'x' }, m: { min: 'x' } } }, 'empty')).body.groups).to.deep.equal([{ s: null, m: null }]);
      expect((await post({ group_by: ['status'] }, 'empty')).body.groups).to.deep.equal([]);
    });

    it('counts under an indexed equality, and answers truncated past limit and ROWBASE_MAX_GROUPS', async () => {
      expect((await post({ filter: { status: 'open' }, aggregates: { a: { count: {} }, b: { count: {} } } })).body.groups).to.deep.equal([
        { a: 3, b: 3 },
      ]);
      const cut = await post({ group_by: ['due'], order: [{ field: 'due', direction: 'desc' }] });
      expect(cut.body.truncated).to.equal(true);
      // Objects and arrays tie in the order: then the groups' JSON text orders them.
      expect(cut.body.groups).to.deep.equal([
        { due: [2], count: 1 },
        { due: { at: 1 }, count: 1 },
        { due: true, count: 1 },
      ]);
      const one = await post({ group_by: ['status'], limit: 1 });
      expect(one.body).to.deep.include({ groups: [{ status: 'done', count: 2 }], truncated: true });
      const none = await post({ group_by: ['status'], limit: 0 });
      expect(none.body).to.deep.include({ groups: [], truncated: true });
    });

    it('answers the same to GET, its query URL-encoded', async () => {
      const body = {
        filter: { points: { $gte: 0 } },
        group_by: ['status'],
        aggregates: { n: { count: {} }, top: { max: 'points' } },
        order: [{ field: 'top', direction: 'desc' }],
        limit: 2,
      };
      const query = new URLSearchParams({
        filter: JSON.stringify(body.filter),
        group_by: 'status',
        aggregates: JSON.stringify(body.aggregates),
        order: JSON.stringify(body.order),
        limit: '2',
      });
      const got = await client.get<Answer>(`/v1/collections/tasks/aggregate?${query}`);
      expect(got.status, got.text).to.equal(200);
      expect(got.body).to.deep.equal((await post(body)).body);
      const head = await client.request('HEAD', `/v1/collections/tasks/aggregate?${query}`);
      expect(head.status).to.equal(200);
      expect(head.headers.get('rowbase-seq')).to.equal(String(rows.length));
    });

    const tooMany = (n: number, make: (index: number) => [string, unknown]) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => make(i)));
    // biome-ignore format: a table
    const refused: { name: string; body: unknown; errors: { name: string }[] }[] = [
      { name: 'an unknown aggregate', body: { aggregates: { n: { median: 'points' } } }, errors: [{ name: '/aggregates/n/median' }] },
      { name: 'an aggregate of two operations', body: { aggregates: { n: { sum: 'a', max: 'a' } } }, errors: [{ name: '/aggregates/n' }] },
      { name: 'a count of a field', body: { aggregates: { n: { count: 'points' } } }, errors: [{ name: '/aggregates/n/count' }] },
      { name: 'an alias that is a group field', body: { group_by: ['status'], aggregates: { status: { count: {} } } }, errors: [{ name: '/aggregates/status' }] },
      { name: 'an alias that is no plain name', body: { aggregates: { 'a b': { count: {} } } }, errors: [{ name: '/aggregates/a b' }] },
      { name: 'a group field that is no plain name', body: { group_by: ['a.b'] }, errors: [{ name: '/group_by/0' }] },
      { name: 'the id as a group field', body: { group_by: ['id'] }, errors: [{ name: '/group_by/0' }] },
      { name: 'a group field twice', body: { group_by: ['a', 'a'] }, errors: [{ name: '/group_by/1' }] },
      { name: 'eleven group fields', body: { group_by: Array.from({ length: 11 }, (_, i) => `f${i}`) }, errors: [{ name: '/group_by' }] },
      { name: 'twenty-one aggregates', body: { aggregates: tooMany(21, (i) => [`a${i}`, { count: {} }]) }, errors: [{ name: '/aggregates' }] },
      { name: 'an order of a field that is neither', body: { group_by: ['status'], order: [{ field: 'points' }] }, errors: [{ name: '/order/0/field' }] },
      { name: 'a limit past ROWBASE_MAX_GROUPS', body: { limit: 4 }, errors: [{ name: '/limit' }] },
      { name: 'a filter the query language refuses', body: { filter: { points: { $between: 1 } } }, errors: [{ name: '/filter/points/$between' }] },
    ];
    for (const { name, body, errors } of refused) {
      it(`refuses ${name} with a 400 naming it`, async () => {
        const answer = await post(body);
        expect(answer.status, answer.text).to.equal(400);
        const problem = answer.body as unknown as { code: string; errors: { name: string }[] };
        expect(problem.code).to.equal('validation_failed');
        expect(problem.errors.map(({ name }) => ({ name }))).to.deep.include.members(errors);
      });
    }

    it('refuses in GET naming the parameter, and JSON that does not parse', async () => {
      const wrong = await client.get(`/v1/collections/tasks/aggregate?aggregates=${encodeURIComponent('{"n":{"median":"x"}}')}`);
      expect(wrong.status).to.equal(400);
      expect((wrong.body as { errors: { in: string; name: string }[] }).errors[0]).to.deep.include({ in: 'query', name: 'aggregates' });
      const broken = await client.get('/v1/collections/tasks/aggregate?order=%5B');
      expect((broken.body as { errors: { name: string }[] }).errors[0]).to.deep.include({ name: 'order' });
    });

    it('refuses rows that fall into more groups than it may read, naming group_by', async () => {
      await collectionOf(
        client,
        'wide',
        Array.from({ length: 301 }, (_, n) => ({ n })),
      );
      const answer = await post({ group_by: ['n'] }, 'wide');
      expect(answer.status, answer.text).to.equal(400);
      expect((answer.body as unknown as { errors: { name: string }[] }).errors).to.deep.equal([
        { in: 'body', name: '/group_by', message: 'makes more than 300 groups' },
      ]);
      expect((await post({ group_by: ['n'] }, 'absent')).status).to.equal(404);
    });

    it('answers 404 to a key limited to other collections, as for one that does not exist', async () => {
      const limited = await server.client(undefined, undefined, { scope: 'read', collections: ['other'] });
      const owned = await server.client('owner');
      await collectionOf(owned, 'mine', [{ n: 1 }]);
      const elsewhere = await server.client('owner', undefined, { scope: 'read', collections: ['other'] });
      for (const who of [limited, elsewhere]) {
        const answer = await who.post('/v1/collections/mine/aggregate', {});
        expect(answer.status).to.equal(404);
        expect((await who.get('/v1/collections/mine/aggregate')).status).to.equal(404);
      }
      expect((await owned.post('/v1/collections/mine/aggregate', {})).status).to.equal(200);
    });
  });
});
