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

// Values of every JSON type, few enough of each that groups gather several rows; numbers that add
// inexactly as doubles (0.1, 1e16 + 1), integers near 2^53, and objects equal in another order.
const scalar = fc.oneof(
  fc.constantFrom(0, 1, -1, 2.5, 0.1, 0.2, 0.3, 1e16, 1e21, -3.75e-7, 2 ** 53 - 1, 2 ** 53, 5e-324, 1.7976931348623157e308),
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
const rowArbitrary = fc.dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 3 });

const ops = ['count', 'sum', 'avg', 'min', 'max', 'count_distinct'] as const;
const aggregates = fc
  .array(fc.tuple(fc.constantFrom(...ops), fc.constantFrom(...FIELDS)), { minLength: 1, maxLength: 5 })
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

describeEachBackend('aggregates', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;

  before(async () => {
    server = await startTestServer({ sortIndexMinRows: 1_000_000 }, { backend });
    client = await server.client();
  });
  after(() => server.stop());

  /** A new collection holding `rows`, and the rows as stored, with their ids. */
  async function collectionOf(rows: Record<string, unknown>[]): Promise<{ name: string; stored: Row[] }> {
    const name = `c${++collections}`;
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    if (rows.length === 0) return { name, stored: [] };
    const inserted = await client.post<Row[]>(`/v1/collections/${name}/rows`, rows);
    expect(inserted.status, inserted.text).to.equal(201);
    return { name, stored: inserted.body };
  }

  const evaluate = (stored: Row[], request: object): ReturnType<typeof aggregateInMemory> =>
    aggregateInMemory(stored, parseAggregateQuery(request, 'body', 1000) as AggregateQuery);

  it('answers exactly what the evaluation in memory answers, for random rows and queries', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(rowArbitrary, { maxLength: 30 }), fc.array(body, { minLength: 1, maxLength: 4 }), async (rows, queries) => {
        const { name, stored } = await collectionOf(rows);
        for (const query of queries) {
          const answer = await client.post<Answer>(`/v1/collections/${name}/aggregate`, query);
          expect(answer.status, answer.text).to.equal(200);
          const expected = evaluate(stored, query);
          expect({ groups: answer.body.groups, truncated: answer.body.truncated }, JSON.stringify(query)).to.deep.equal(expected);
          expect(answer.body.seq).to.equal(rows.length);
        }
      }),
      { numRuns: Number(process.env.AGGREGATE_RUNS ?? 40) },
    );
  });
});
