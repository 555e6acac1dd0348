// Filters read through sort indexes (src/db/filter-indexes.ts; docs/api.md, "Filters and indexes"):
// a filter whose top level holds an equality, a range, a prefix or a list of values of one type (`$in`)
// on an indexed field reads only that range of the index (those keys), and must keep exactly the rows matches() (src/query/evaluate.ts) keeps, counted
// alike, in the page's order, on both backends. The field's values mix every JSON type, strings longer
// than the 400 characters a PostgreSQL key holds (several sharing their first 400), and missing ones.
import { expect } from 'chai';
import fc from 'fast-check';
import { matches } from '../../src/query/evaluate.ts';
import { parseFilter } from '../../src/query/filter.ts';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { appKey, EndUser, tokenOf } from '../support/end-users.ts';
import { type OrderKey, sortRows } from '../support/order.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Row = { id: number } & Record<string, unknown>;

/** 400 characters, the first of every long string: they differ only past what a PostgreSQL key holds. */
const head = `${'k'.repeat(398)}é😀`.slice(0, 400);
const longs = [head, `${head}a`, `${head}b`, `${head}ba`, `${head}\u0000`, `${'k'.repeat(399)}`, `${head.slice(0, 399)}l`];
const strings = ['', 'a', 'ab', 'b', 'é', '😀', '\ud7ff', 'a\u0000', ...longs];
const values: unknown[] = [-1, 0, 0.5, 1, 2, 1e21, ...strings, true, false, null, { a: 1 }, [1], undefined];
const rows = Array.from({ length: 90 }, (_, n) => {
  const row: Record<string, unknown> = { n: n % 7, w: strings[n % strings.length] };
  const v = values[(n * 7) % values.length];
  if (v !== undefined) row.v = v;
  return row;
});

const scalar = fc.constantFrom(-1, 0, 0.25, 1, 3, 1e21, true, false, ...strings);
const text = fc.constantFrom(...strings, 'k', head.slice(0, 200), `${head}bb`);
/** Conditions an index can find the rows of, on v, w or n, and others the index cannot. */
const indexed = fc.oneof(
  scalar,
  fc.record({ $gt: scalar }, { requiredKeys: [] }).filter((c) => Object.keys(c).length > 0),
  fc.record({ $gte: scalar, $lt: scalar }, { requiredKeys: [] }),
  fc.record({ $lte: scalar, $gt: scalar }, { requiredKeys: [] }),
  fc.record({ $prefix: text }),
  fc.record({ $prefix: text, $lt: text }),
  fc.record({ $in: fc.array(fc.constantFrom(-1, 0, 0.25, 1, 3, 1e21), { minLength: 1, maxLength: 4 }) }),
  fc.record({ $in: fc.array(text, { minLength: 1, maxLength: 4 }) }),
  fc.record({ $in: fc.array(fc.boolean(), { minLength: 1, maxLength: 2 }) }),
);
const other = fc.oneof(
  fc.record({ $ne: scalar }),
  fc.record({ $exists: fc.boolean() }),
  // Of several types, or none: no index range.
  fc.record({ $in: fc.array(scalar, { maxLength: 3 }) }),
);
const member = fc.tuple(fc.constantFrom('v', 'w', 'n', 'id'), fc.oneof({ weight: 3, arbitrary: indexed }, other));
const filter = fc
  .array(member, { minLength: 1, maxLength: 3 })
  .map((members) =>
    Object.fromEntries(members.filter(([, condition]) => Object.keys(Object(condition)).length > 0 || typeof condition !== 'object')),
  );
const order = fc.uniqueArray(
  fc.record({ field: fc.constantFrom('v', 'w', 'n', 'id'), direction: fc.constantFrom<'asc' | 'desc'>('asc', 'desc') }),
  { minLength: 1, maxLength: 2, selector: (key) => key.field },
);

describeEachBackend('filters through sort indexes', (backend) => {
  let server: TestServer;
  let client: Client;
  let stored: Row[];
  before(async () => {
    // Every collection is large enough: the first filter on a field makes its index.
    server = await startTestServer({ sortIndexMinRows: 0 }, { backend });
    client = await server.client();
    await client.post('/v1/collections', { name: 'mixed' });
    stored = (await client.post<Row[]>('/v1/collections/mixed/rows', rows)).body;
  });
  after(() => server?.stop());

  const sortedOf = async (name: string) =>
    JSON.parse((await server.store.knex('collections').where({ name }).first('sorted')).sorted) as string[];
  const query = (body: object) => client.post<{ rows: Row[]; next: string | null; total: number }>('/v1/collections/mixed/query', body);

  it('makes the index of the first field a filter finds rows by, and of no other', async () => {
    await client.post('/v1/collections', { name: 'fresh' });
    await client.post('/v1/collections/fresh/rows', rows);
    const path = '/v1/collections/fresh/rows';
    expect((await client.get(`${path}?filter=${encodeURIComponent('{"n":{"$ne":1},"id":{"$gt":3}}')}`)).status).to.equal(200);
    expect(await sortedOf('fresh')).to.deep.equal([]);
    expect((await client.get(`${path}?filter=${encodeURIComponent('{"n":{"$gt":1},"w":"a"}')}`)).status).to.equal(200);
    expect(await sortedOf('fresh'), 'an equality first').to.deep.equal(['w']);
    expect((await client.get(`${path}?filter=${encodeURIComponent('{"n":{"$gt":1},"w":"a"}')}`)).status).to.equal(200);
    expect((await client.get(`${path}?filter=${encodeURIComponent('{"n":{"$gt":1}}')}`)).status).to.equal(200);
    expect(await sortedOf('fresh')).to.deep.equal(['w', 'n']);
  });

  it('keeps exactly the rows the filter keeps, counted, in order, for random filters on indexed fields', async () => {
    await fc.assert(
      fc.asyncProperty(filter, order, async (sent, keys: OrderKey[]) => {
        const expected = sortRows(
          stored.filter((row) => matches(parseFilter(sent), row)),
          keys,
        ).map((row) => row.id);
        const response = await query({ filter: sent, order: keys, limit: 1000, count: 'exact' });
        expect(response.status, response.text).to.equal(200);
        expect(response.body.rows.map((row) => row.id)).to.deep.equal(expected);
        expect(response.body.total).to.equal(expected.length);
      }),
      { numRuns: 200 },
    );
    expect(await sortedOf('mixed')).to.have.members(['v', 'w', 'n']);
  });

  it('walks the rows of a random filter on indexed fields by cursor, each once and in order', async () => {
    await fc.assert(
      fc.asyncProperty(filter, order, fc.integer({ min: 1, max: 7 }), async (sent, keys: OrderKey[], limit) => {
        const expected = sortRows(
          stored.filter((row) => matches(parseFilter(sent), row)),
          keys,
        ).map((row) => row.id);
        const walked: number[] = [];
        let after: string | undefined;
        for (let pages = 0; pages <= expected.length / limit + 1; pages++) {
          const response = await query({ filter: sent, order: keys, limit, ...(after ? { after } : {}) });
          expect(response.status, response.text).to.equal(200);
          walked.push(...response.body.rows.map((row) => row.id));
          after = response.body.next ?? undefined;
          if (!after) break;
        }
        expect(walked).to.deep.equal(expected);
      }),
      { numRuns: 60 },
    );
  });

  it('answers the pages of a random filter ordered by the field it finds rows by, by id, or by another indexed field', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('v', 'w', 'n'),
        indexed,
        filter,
        fc.constantFrom('same', 'id', 'v', 'w', 'n'),
        fc.constantFrom<'asc' | 'desc'>('asc', 'desc'),
        fc.integer({ min: 1, max: 9 }),
        fc.nat(12),
        async (field, condition, more, by, direction, limit, offset) => {
          const sent = { ...more, [field]: condition };
          // By another indexed field, a page first reads that field's index while it fills (pages.ts, walkedPage).
          const orderBy = by === 'same' ? field : by;
          const expected = sortRows(
            stored.filter((row) => matches(parseFilter(sent), row)),
            [{ field: orderBy, direction }],
          ).map((row) => row.id);
          const query = new URLSearchParams({ filter: JSON.stringify(sent), order_by: orderBy, order: direction, limit: String(limit) });
          query.set('offset', String(offset));
          const response = await client.get<Row[]>(`/v1/collections/mixed/rows?${query}`);
          expect(response.status, response.text).to.equal(200);
          expect(response.body.map((row) => row.id)).to.deep.equal(expected.slice(offset, offset + limit));
        },
      ),
      { numRuns: 500 },
    );
  });

  for (const [name, sent] of [
    ['an equality on a string longer than a key', { w: `${head}b` }],
    ['an equality on a string exactly as long as a key', { w: head }],
    ['a range between strings that share their first 400 characters', { w: { $gt: `${head}a`, $lte: `${head}ba` } }],
    ['a prefix longer than a key', { w: { $prefix: `${head}b` } }],
    ['a prefix of the long strings', { w: { $prefix: head.slice(0, 10) } }],
    ['an equality on a number, in a field of every type', { v: 1 }],
    ['a range of numbers, in a field of every type', { v: { $gte: 0, $lt: 2 } }],
    ['a range of strings, in a field of every type', { v: { $gte: 'a', $lt: 'b' } }],
    ['an equality on a boolean', { v: false }],
    ['a range of booleans', { v: { $gt: false } }],
    // No value is of both types: the rows of the range of the first, tested, are none.
    ['conditions of two types on one field', { v: { $gte: 0, $lt: 'b' } }],
    ['the id and an indexed field', { id: { $gt: 10, $lte: 60 }, v: { $lt: 1 } }],
    ['an indexed field and a condition the index cannot find', { w: { $prefix: 'a' }, n: { $ne: 3 } }],
    ['a list of strings that share their first 400 characters, and others', { w: { $in: [`${head}b`, head, '😀', '\ud7ff', 'a\u0000'] } }],
    ['a list of numbers, in a field of every type', { v: { $in: [2, -1, 1e21] } }],
    ['a list of strings ordered by code point, not UTF-16', { v: { $in: ['\uffff', '😀'] } }],
  ] as const) {
    it(`keeps exactly the rows of ${name}`, async () => {
      const expected = stored.filter((row) => matches(parseFilter(sent), row)).map((row) => row.id);
      expect(expected.length > 0, 'a filter some rows match, but for two types').to.equal(name !== 'conditions of two types on one field');
      const response = await query({ filter: sent, limit: 1000, count: 'exact' });
      expect(response.status, response.text).to.equal(200);
      expect(response.body.rows.map((row) => row.id)).to.deep.equal(expected);
      expect(response.body.total).to.equal(expected.length);
    });
  }

  /** A new collection of `rows` with an index of each of v, w and n: each filter on one is read through its range. */
  async function indexedCollection(name: string): Promise<Row[]> {
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    for (const field of ['v', 'w', 'n'])
      expect((await client.post(`/v1/collections/${name}/indexes`, { fields: [field] })).status).to.equal(201);
    const created = (await client.post<Row[]>(`/v1/collections/${name}/rows`, rows)).body;
    expect(await sortedOf(name)).to.have.members(['v', 'w', 'n']);
    return created;
  }
  const byFilter = (name: string, sent: object, more = '') =>
    `/v1/collections/${name}/rows?filter=${encodeURIComponent(JSON.stringify(sent))}${more}`;

  // A change by filter reads the rows of the range as a page does (src/db/rows/rows.ts, matchedSql).
  it('changes by filter exactly the rows a random filter on indexed fields keeps, and no other', async () => {
    const created = await indexedCollection('changed');
    const last = new Map<number, number>();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(filter, async (sent) => {
        run++;
        const expected = created.filter((row) => matches(parseFilter(sent), row)).map((row) => row.id);
        const response = await client.patch<{ count: number; rows: Row[] }>(byFilter('changed', sent, '&return=rows'), { t: run });
        expect(response.status, response.text).to.equal(200);
        expect(response.body.count).to.equal(expected.length);
        expect(response.body.rows.map((row) => [row.id, row.t])).to.deep.equal(expected.map((id) => [id, run]));
        for (const id of expected) last.set(id, run);
      }),
      { numRuns: 150 },
    );
    const now = (await client.get<Row[]>('/v1/collections/changed/rows?limit=1000')).body;
    expect(now.map((row) => [row.id, row.t])).to.deep.equal(created.map((row) => [row.id, last.get(row.id)]));
  });

  it('deletes by filter exactly the rows a random filter on indexed fields keeps, and no other', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(filter, async (sent) => {
        const name = `deleted${++run}`;
        const created = await indexedCollection(name);
        const kept = created.filter((row) => !matches(parseFilter(sent), row)).map((row) => row.id);
        const response = await client.delete<{ count: number }>(byFilter(name, sent));
        expect(response.status, response.text).to.equal(200);
        expect(response.body.count).to.equal(created.length - kept.length);
        const left = (await client.get<Row[]>(`/v1/collections/${name}/rows?limit=1000`)).body;
        expect(left.map((row) => row.id)).to.deep.equal(kept);
      }),
      { numRuns: 25 },
    );
  });

  it('reads the collection again by name when the one whose index it remembered is gone', async () => {
    await client.post('/v1/collections', { name: 'again' });
    await client.post('/v1/collections/again/rows', [{ w: 'a' }, { w: 'b' }]);
    const first = await client.get<Row[]>(`/v1/collections/again/rows?filter=${encodeURIComponent('{"w":"b"}')}`);
    expect(first.body.map((row) => row.w)).to.deep.equal(['b']);
    expect((await client.delete('/v1/collections/again')).status).to.equal(204);
    await client.post('/v1/collections', { name: 'again' });
    await client.post('/v1/collections/again/rows', [{ w: 'b' }, { x: 1 }, { w: 'b', y: 2 }]);
    const second = await client.get<Row[]>(`/v1/collections/again/rows?filter=${encodeURIComponent('{"w":"b"}')}&count=exact`);
    expect(second.body).to.deep.equal([
      { id: 1, w: 'b' },
      { id: 3, w: 'b', y: 2 },
    ]);
    expect(second.headers.get('rowbase-total-count')).to.equal('2');
  });
});

describeEachBackend('pages walked through the order’s index for a large range', (backend) => {
  // A page filtered by an equality on an indexed field and ordered by another indexed field reads the
  // order's index when the equality's range is large (ROWBASE_SORT_INDEX_MIN_ROWS keys or more), which is
  // counted once a moment, not once a page (src/db/reads/pages.ts, isLarge): a range that shrinks or grows
  // right after it was counted must leave every page exact. Two indexes a collection at most, the order's
  // and the owner's, so that no pair of the two is made (pair-indexes.test.ts reads those): the walk.
  let server: TestServer;
  let client: Client;
  before(async () => {
    server = await startTestServer({ sortIndexMinRows: 5, sortIndexMax: 2 }, { backend });
    client = await server.client();
  });
  after(() => server?.stop());

  it('answers exactly the rows of a range that shrank or grew since it was counted', async () => {
    await client.post('/v1/collections', { name: 'owned' });
    const seeded = [...Array.from({ length: 10 }, (_, n) => ({ owner: 'a', n })), ...[100, 101, 102].map((n) => ({ owner: 'b', n }))];
    expect((await client.post('/v1/collections/owned/rows', seeded)).status).to.equal(201);
    // The index of the order's field, made by the first page ordered by it; the owner's, by the first filter on it.
    expect((await client.get('/v1/collections/owned/rows?order_by=n')).status).to.equal(200);
    expect((await client.get(`/v1/collections/owned/rows?filter=${encodeURIComponent('{"owner":"a"}')}`)).status).to.equal(200);
    const page = async (owner: string) => {
      const filter = encodeURIComponent(JSON.stringify({ owner }));
      const response = await client.get<Row[]>(`/v1/collections/owned/rows?filter=${filter}&order_by=n&order=desc&limit=3`);
      expect(response.status, response.text).to.equal(200);
      return response.body.map((row) => row.n);
    };
    for (let round = 0; round < 3; round++) {
      expect(await page('a')).to.deep.equal([9, 8, 7]);
      expect(await page('b')).to.deep.equal([102, 101, 100]);
    }
    const sorted = JSON.parse((await server.store.knex('collections').where({ name: 'owned' }).first('sorted')).sorted) as string[];
    expect(sorted).to.have.members(['n', 'owner']);
    // a's range, counted large, now holds two rows; b's, counted small, thirteen.
    const shrunk = encodeURIComponent(JSON.stringify({ owner: 'a', n: { $lt: 8 } }));
    expect((await client.delete<{ count: number }>(`/v1/collections/owned/rows?filter=${shrunk}`)).body.count).to.equal(8);
    expect(await page('a')).to.deep.equal([9, 8]);
    const grown = Array.from({ length: 10 }, (_, n) => ({ owner: 'b', n: 200 + n }));
    expect((await client.post('/v1/collections/owned/rows', grown)).status).to.equal(201);
    expect(await page('b')).to.deep.equal([209, 208, 207]);
    expect(await page('a')).to.deep.equal([9, 8]);
  });
  it('walks each end user’s pages under their own rule, and under the rules of the moment', async () => {
    // The walk's statement is written once a grant's rule object and kept (pages.ts, walkStatement): two
    // users' rules, two versions of the rules, and a rule changed between one user's pages never share one.
    await client.post('/v1/collections', { name: 'mine' });
    const rules = (read: object) => client.put('/v1/collections/mine/rules', { read, create: true, update: true, delete: true });
    expect((await rules({ owner: { $auth: 'sub' } })).status).to.equal(200);
    const seeded = Array.from({ length: 24 }, (_, n) => ({ owner: n % 2 === 0 ? 'ada' : 'bob', n, kind: n % 4 < 2 ? 'a' : 'b' }));
    expect((await client.post('/v1/collections/mine/rows', seeded)).status).to.equal(201);
    expect((await client.get('/v1/collections/mine/rows?order_by=n')).status).to.equal(200);
    expect((await client.get(`/v1/collections/mine/rows?filter=${encodeURIComponent('{"owner":"ada"}')}`)).status).to.equal(200);
    const sorted = JSON.parse((await server.store.knex('collections').where({ name: 'mine' }).first('sorted')).sorted) as string[];
    expect(sorted).to.have.members(['n', 'owner']);
    const key = await appKey(client);
    const [ada, bob] = [new EndUser(server.url, key, await tokenOf('ada')), new EndUser(server.url, key, await tokenOf('bob'))];
    const page = async (user: EndUser, order: 'asc' | 'desc', offset = 0) => {
      const response = await user.get<Row[]>(`/v1/collections/mine/rows?order_by=n&order=${order}&limit=3&offset=${offset}`);
      expect(response.status, response.text).to.equal(200);
      return response.body.map((row) => row.n);
    };
    for (let round = 0; round < 2; round++) {
      expect(await page(ada, 'asc')).to.deep.equal([0, 2, 4]);
      expect(await page(bob, 'asc')).to.deep.equal([1, 3, 5]);
      expect(await page(ada, 'desc', 3)).to.deep.equal([16, 14, 12]);
      expect(await page(bob, 'desc')).to.deep.equal([23, 21, 19]);
    }
    // A second version of the rules, between one user's pages: its own rule, never the first's.
    expect((await rules({ owner: { $auth: 'sub' }, kind: 'a' })).status).to.equal(200);
    expect(await page(ada, 'asc')).to.deep.equal([0, 4, 8]);
    expect(await page(bob, 'desc')).to.deep.equal([21, 17, 13]);
    expect((await rules({ owner: { $auth: 'sub' } })).status).to.equal(200);
    expect(await page(ada, 'asc')).to.deep.equal([0, 2, 4]);
    expect(await page(bob, 'desc')).to.deep.equal([23, 21, 19]);
  });
});
