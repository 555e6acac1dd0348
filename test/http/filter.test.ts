// Lists with `filter`, `select` and `count=exact` (openapi.yaml, listRows): the rows a page answers are
// those matches() (src/query/evaluate.ts) keeps, in the page's order, on both backends; the count is
// theirs; a filter that does not parse is a 400 pointing into it. Walks by cursor, in random orders of
// several fields, through the Link of lists and the `next` of queries, answer them all, once each, in
// the order test/support/order.ts gives.
import { expect } from 'chai';
import fc from 'fast-check';
import { matches } from '../../src/query/evaluate.ts';
import { parseFilter } from '../../src/query/filter.ts';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { filters } from '../support/filters.ts';
import { type OrderKey, sortRows } from '../support/order.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Row = { id: number } & Record<string, unknown>;

const statuses = ['open', 'closed', 'Open', '', 'é', '😀'];
const rows: Record<string, unknown>[] = Array.from({ length: 60 }, (_, n) => {
  const row: Record<string, unknown> = { n, status: statuses[n % statuses.length] };
  if (n % 3 === 0) row.score = n % 7 === 0 ? String(n) : n / 2;
  if (n % 4 === 1) row.owner = { name: `o${n % 5}`, tags: [n % 2 === 0, n % 3] };
  if (n % 5 === 2) row.tags = ['a', n % 4, { k: n % 3 }];
  if (n % 11 === 0) row.flag = null;
  if (n % 13 === 0) row['a.b'] = n;
  return row;
});

const filter = filters({
  field: fc.constantFrom('n', 'status', 'score', 'owner.name', 'owner.tags', 'tags', 'flag', 'a\\.b', 'id', 'missing'),
  scalar: fc.oneof(fc.constantFrom(...statuses), fc.integer({ min: -2, max: 61 }), fc.constantFrom(0.5, 1.5, 10.5, null, true, false)),
  composites: [['a', 1, { k: 1 }], { k: 2 }, ['a', 0, { k: 0 }]],
  prefixes: ['o', 'op', 'O', ''],
});

const orderKey = fc.record({
  field: fc.constantFrom('n', 'status', 'score', 'owner', 'tags', 'flag', 'a.b', 'missing', 'id'),
  direction: fc.constantFrom<'asc' | 'desc'>('asc', 'desc'),
});
const order = fc.uniqueArray(orderKey, { minLength: 1, maxLength: 3, selector: (key) => key.field });

describeEachBackend('filtered lists', (backend) => {
  let server: TestServer;
  let client: Client;
  let stored: Row[];
  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
    await client.post('/v1/collections', { name: 'notes' });
    stored = (await client.post<Row[]>('/v1/collections/notes/rows', rows)).body;
  });
  after(() => server?.stop());

  const list = (query: Record<string, string>) => client.get<Row[]>(`/v1/collections/notes/rows?${new URLSearchParams(query)}`);

  it('answers exactly the rows the filter keeps, in order, with their count, for random filters', async () => {
    await fc.assert(
      fc.asyncProperty(filter, fc.constantFrom('asc', 'desc'), async (sent, order) => {
        const expected = stored.filter((row) => matches(parseFilter(sent), row)).map((row) => row.id);
        if (order === 'desc') expected.reverse();
        const response = await list({ filter: JSON.stringify(sent), order, count: 'exact', limit: '1000' });
        expect(response.status, response.text).to.equal(200);
        expect(response.body.map((row) => row.id)).to.deep.equal(expected);
        expect(response.headers.get('rowbase-total-count')).to.equal(String(expected.length));
      }),
      { numRuns: 150 },
    );
  });

  it('walks the rows a random filter keeps, in a random order of several fields, by cursor, each once and in order', async () => {
    await fc.assert(
      fc.asyncProperty(filter, order, fc.integer({ min: 1, max: 25 }), fc.boolean(), async (sent, keys: OrderKey[], limit, byQuery) => {
        const expected = sortRows(
          stored.filter((row) => matches(parseFilter(sent), row)),
          keys,
        ).map((row) => row.id);
        const walked: number[] = [];
        let after: string | undefined;
        for (let pages = 0; pages <= expected.length / limit + 1; pages++) {
          let ids: number[];
          let total: string | number | null | undefined;
          if (byQuery) {
            const body = { filter: sent, order: keys, limit, count: 'exact', ...(after ? { after } : {}) };
            const response = await client.post<{ rows: Row[]; next: string | null; total: number }>('/v1/collections/notes/query', body);
            expect(response.status, response.text).to.equal(200);
            [ids, total, after] = [response.body.rows.map((row) => row.id), response.body.total, response.body.next ?? undefined];
          } else {
            const query: Record<string, string> = {
              filter: JSON.stringify(sent),
              order_by: keys.map((key) => key.field).join(','),
              order: keys.map((key) => key.direction).join(','),
              limit: String(limit),
              count: 'exact',
            };
            if (after) query.after = after;
            const response = await list(query);
            expect(response.status, response.text).to.equal(200);
            const link = response.headers.get('link');
            [ids, total] = [response.body.map((row) => row.id), response.headers.get('rowbase-total-count')];
            after =
              link === null ? undefined : (new URL(/<([^>]+)>/.exec(link)?.[1] ?? '', server.url).searchParams.get('after') ?? undefined);
          }
          expect(Number(total)).to.equal(expected.length);
          expect(after !== undefined, 'a next page exactly when this one is full').to.equal(ids.length === limit);
          walked.push(...ids);
          if (!after) break;
        }
        expect(walked).to.deep.equal(expected);
      }),
      { numRuns: 60 },
    );
  });

  it('counts every matching row while answering one page, ordered by a field', async () => {
    const response = await list({
      filter: '{"status":{"$in":["open","closed"]}}',
      order_by: 'n',
      order: 'desc',
      limit: '3',
      offset: '1',
      count: 'exact',
    });
    // n % 6 is 0 or 1: 55, 54, 49, 48, 43, …
    expect(response.body.map((row) => row.n)).to.deep.equal([54, 49, 48]);
    expect(response.headers.get('rowbase-total-count')).to.equal('20');
    expect(response.headers.get('rowbase-seq')).to.equal('60');
  });

  it('answers only the selected fields, and id, leaving out those a row lacks', async () => {
    const response = await list({ select: 'status,score,__proto__', limit: '4' });
    expect(response.body).to.deep.equal([
      { id: 1, status: 'open', score: '0' },
      { id: 2, status: 'closed' },
      { id: 3, status: 'Open' },
      { id: 4, status: '', score: 1.5 },
    ]);
    const nested = await list({ select: 'owner', filter: '{"owner.name":"o1"}', limit: '1' });
    expect(nested.body).to.deep.equal([{ id: 2, owner: { name: 'o1', tags: [false, 1] } }]);
  });

  it('counts without a filter too', async () => {
    const response = await list({ count: 'exact', limit: '0' });
    expect(response.body).to.deep.equal([]);
    expect(response.headers.get('rowbase-total-count')).to.equal('60');
  });

  for (const [sent, pointer, message] of [
    ['{"n":', '', /JSON/],
    ['[1]', '', /object/],
    ['{"n":{"$gt":null}}', '/n/$gt', /./],
    ['{"n":{"$between":1}}', '/n/$between', /./],
    ['{"$or":[]}', '/$or', /./],
    ['{"a..b":1}', '/a..b', /./],
  ] as const) {
    it(`refuses the filter ${sent} with a 400 pointing at "${pointer}"`, async () => {
      const response = await list({ filter: sent });
      expect(response.status).to.equal(400);
      const { code, errors } = response.body as unknown as {
        code: string;
        errors: { in: string; name: string; pointer: string; message: string }[];
      };
      expect(code).to.equal('validation_failed');
      expect(errors[0]).to.include({ in: 'query', name: 'filter', pointer });
      expect(errors[0].message).to.match(message);
    });
  }

  it('refuses an empty name in select', async () => {
    const response = await list({ select: 'a,,b' });
    expect(response.status).to.equal(400);
    expect((response.body as unknown as { errors: unknown[] }).errors).to.deep.equal([
      { in: 'query', name: 'select', message: 'names an empty field' },
    ]);
  });

  it('answers 404 for a filtered list of a collection that does not exist', async () => {
    const response = await client.get('/v1/collections/nope/rows?filter=%7B%7D&count=exact');
    expect(response.status).to.equal(404);
  });
});
