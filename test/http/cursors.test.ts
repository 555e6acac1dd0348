// Pages in an order of several fields, and cursor paging (openapi.yaml, listRows `order_by`, `order`,
// `after` and `Link`; queryRows): pages in the order test/support/order.ts gives, on both backends;
// walks that never repeat or skip a row that stays in place while others are inserted, changed and
// deleted between pages; cursors refused with a 400 when used with another query, collection or account,
// or altered; the query operation.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client, Response } from '../support/client.ts';
import { type OrderKey, type Row, sortRows } from '../support/order.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Problem = { code: string; errors?: { in: string; name: string; message: string }[] };
type QueryPage = { rows: Row[]; next: string | null; total?: number };

/** Values of every JSON type, missing and null among them, and ties. */
const values = [3, -1, 2.5, 3, 'b', 'a', 'B', '', 'é', true, false, null, { k: 1 }, [1], undefined];

/** A row of the n-th kind: `a` and `b` cycle through `values` at different paces, so every pair meets. */
function rowOf(n: number): Record<string, unknown> {
  const row: Record<string, unknown> = { n, tag: `t${n % 4}` };
  const a = values[n % values.length];
  const b = values[(n * 7 + 3) % values.length];
  if (a !== undefined) row.a = a;
  if (b !== undefined) row.b = b;
  return row;
}

/** The next of a page's `Link`, as a path and query, or undefined when it has none. */
function nextLink(response: Response): string | undefined {
  const link = response.headers.get('link');
  if (link === null) return undefined;
  const match = /^<(\/v1\/[^>]+)>; rel="next"$/.exec(link);
  expect(match, link).to.not.equal(null);
  return match?.[1];
}

const orders: [string, string, OrderKey[]][] = [
  ['a', 'asc', [{ field: 'a', direction: 'asc' }]],
  [
    'a,b',
    'desc',
    [
      { field: 'a', direction: 'desc' },
      { field: 'b', direction: 'desc' },
    ],
  ],
  [
    'a,b',
    'asc,desc',
    [
      { field: 'a', direction: 'asc' },
      { field: 'b', direction: 'desc' },
    ],
  ],
  [
    'b,a,n',
    'desc,asc,desc',
    [
      { field: 'b', direction: 'desc' },
      { field: 'a', direction: 'asc' },
      { field: 'n', direction: 'desc' },
    ],
  ],
  [
    'tag,id',
    'asc,desc',
    [
      { field: 'tag', direction: 'asc' },
      { field: 'id', direction: 'desc' },
    ],
  ],
  ['id', 'desc', [{ field: 'id', direction: 'desc' }]],
  [
    'missing,a',
    'desc,asc',
    [
      { field: 'missing', direction: 'desc' },
      { field: 'a', direction: 'asc' },
    ],
  ],
];

/**
 * Walks the collection `name` (of rowOf() rows 1 to 60) by its Links, 7 rows a page, inserting,
 * changing and deleting rows between pages, and checks that every row that stayed in place (never
 * deleted, nor changed in a field of the order) came exactly once, in the order of `keys`.
 */
async function walkWithChanges(client: Client, name: string, orderBy: string, order: string, keys: OrderKey[]): Promise<void> {
  const stored = (await client.get<Row[]>(`/v1/collections/${name}/rows?limit=1000`)).body;
  const moved = new Set<number>(); // changed in a field of the order, or deleted: free to come once, twice or never
  let n = 1000;
  let step = 0;
  const orderFields = keys.map((key) => key.field).filter((field) => field !== 'id');
  const walked: Row[] = [];
  let next: string | undefined = `/v1/collections/${name}/rows?order_by=${orderBy}&order=${order}&limit=7`;
  while (next) {
    const response = await client.get<Row[]>(next);
    expect(response.status, response.text).to.equal(200);
    walked.push(...response.body);
    next = nextLink(response);
    // Between pages: an insert (never a row of the start), a change of an ordered field, a change of
    // a field outside the order (the row stays in place), and a delete.
    step++;
    const victim = stored[(step * 13) % stored.length].id;
    const mover = stored[(step * 29 + 5) % stored.length].id;
    const idle = stored[(step * 17 + 3) % stored.length].id;
    expect((await client.post(`/v1/collections/${name}/rows`, [rowOf(n++), rowOf(n++)])).status).to.equal(201);
    if (!moved.has(mover) && orderFields.length > 0) {
      const patch = Object.fromEntries(orderFields.map((field) => [field, rowOf(n++).a ?? null]));
      if ((await client.patch(`/v1/collections/${name}/rows/${mover}`, patch)).status === 200) moved.add(mover);
    }
    await client.patch(`/v1/collections/${name}/rows/${idle}`, { note: step });
    if ((await client.delete(`/v1/collections/${name}/rows/${victim}`)).status === 204) moved.add(victim);
  }
  const stayed = stored.filter((row) => !moved.has(row.id));
  const seen = walked.filter((row) => row.id <= stored.length && !moved.has(row.id)).map((row) => row.id);
  expect(seen, 'every row that stayed in place, once, in order').to.deep.equal(sortRows(stayed, keys).map((row) => row.id));
}

describeEachBackend('pages in an order of several fields, with cursors', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;
  /** A fresh collection of the client's account holding `count` rows of rowOf(); answers its name and rows. */
  async function collectionWith(count: number, owner = client): Promise<{ name: string; stored: Row[] }> {
    const name = `c${++collections}`;
    expect((await owner.post('/v1/collections', { name })).status).to.equal(201);
    const stored = (
      await owner.post<Row[]>(
        `/v1/collections/${name}/rows`,
        Array.from({ length: count }, (_, n) => rowOf(n)),
      )
    ).body;
    return { name, stored };
  }
  const list = (name: string, query: string, owner = client) => owner.get<Row[]>(`/v1/collections/${name}/rows?${query}`);

  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
  });
  after(() => server.stop());

  describe('order_by and order', () => {
    for (const [orderBy, order, keys] of orders) {
      it(`orders by ${orderBy} ${order} as the model does, a page at a time`, async () => {
        const { name, stored } = await collectionWith(45);
        const expected = sortRows(stored, keys).map((row) => row.id);
        const whole = await list(name, `order_by=${orderBy}&order=${order}&limit=1000`);
        expect(whole.status, whole.text).to.equal(200);
        expect(whole.body.map((row) => row.id)).to.deep.equal(expected);
        const page = await list(name, `order_by=${orderBy}&order=${order}&limit=10&offset=20`);
        expect(page.body.map((row) => row.id)).to.deep.equal(expected.slice(20, 30));
      });
    }

    const refusals: [string, string, string][] = [
      ['order_by=a,b&order=asc,desc,asc', 'order', 'one for each'],
      ['order_by=a,a', 'order_by', 'twice'],
      ['order_by=a,,b', 'order_by', 'empty'],
      [`order_by=${Array.from({ length: 9 }, (_, n) => `f${n}`).join(',')}`, 'order_by', 'at most'],
      ['order=up', 'order', ''],
      ['order=asc,', 'order', ''],
    ];
    for (const [query, name, message] of refusals) {
      it(`refuses ${query} with a 400 naming ${name}`, async () => {
        const { name: collection } = await collectionWith(1);
        const response = await list(collection, query);
        expect(response.status).to.equal(400);
        const problem = response.body as unknown as Problem;
        expect(problem.code).to.equal('validation_failed');
        expect(problem.errors?.[0]).to.include({ in: 'query', name });
        expect(problem.errors?.[0].message).to.include(message);
      });
    }
  });

  describe('Link and after', () => {
    it('links the next page exactly when a page is full, and walks the collection in order to the end', async () => {
      const { name, stored } = await collectionWith(23);
      const keys = orders[2][2];
      const expected = sortRows(stored, keys).map((row) => row.id);
      const walked: number[] = [];
      let next: string | undefined = `/v1/collections/${name}/rows?order_by=a,b&order=asc,desc&limit=5`;
      const sizes: number[] = [];
      while (next) {
        const response = await client.get<Row[]>(next);
        expect(response.status, response.text).to.equal(200);
        walked.push(...response.body.map((row) => row.id));
        sizes.push(response.body.length);
        next = nextLink(response);
        expect(next !== undefined, `Link on a page of ${response.body.length}`).to.equal(response.body.length === 5);
        if (next) expect(next).to.include('order_by=a%2Cb').and.include('order=asc%2Cdesc').and.include('limit=5');
      }
      expect(sizes).to.deep.equal([5, 5, 5, 5, 3]);
      expect(walked).to.deep.equal(expected);
    });

    it('links a last page that is exactly full to an empty page without a Link', async () => {
      const { name } = await collectionWith(6);
      const first = await list(name, 'limit=3');
      const second = await client.get<Row[]>(nextLink(first) ?? '');
      const third = await client.get<Row[]>(nextLink(second) ?? '');
      expect([first, second, third].map((page) => page.body.map((row) => row.id))).to.deep.equal([[1, 2, 3], [4, 5, 6], []]);
      expect(nextLink(third)).to.equal(undefined);
      expect(nextLink(await list(name, 'limit=0'))).to.equal(undefined);
      expect(nextLink(await list(name, 'limit=7'))).to.equal(undefined);
    });

    it('keeps the filter, select and count in the Link, and leaves offset out', async () => {
      const { name, stored } = await collectionWith(40);
      const filter = JSON.stringify({ tag: { $in: ['t1', 't2'] } });
      const query = new URLSearchParams({ filter, select: 'a', count: 'exact', order_by: 'b', order: 'desc', limit: '4', offset: '2' });
      const first = await list(name, String(query));
      const link = nextLink(first) ?? '';
      const sent = new URL(link, server.url).searchParams;
      expect(Object.fromEntries(sent)).to.deep.include({ filter, select: 'a', count: 'exact', order_by: 'b', order: 'desc', limit: '4' });
      expect(sent.has('offset')).to.equal(false);
      const second = await client.get<Row[]>(link);
      const expected = sortRows(
        stored.filter((row) => ['t1', 't2'].includes(row.tag as string)),
        [{ field: 'b', direction: 'desc' }],
      );
      expect(second.body).to.deep.equal(
        expected.slice(6, 10).map((row) => (Object.hasOwn(row, 'a') ? { id: row.id, a: row.a } : { id: row.id })),
      );
      expect(second.headers.get('rowbase-total-count')).to.equal(String(expected.length));
    });

    for (const [orderBy, order, keys] of orders) {
      it(`never repeats or skips a row that stays in place by ${orderBy} ${order}, while others are inserted, changed and deleted`, async () => {
        await walkWithChanges(client, (await collectionWith(60)).name, orderBy, order, keys);
      });
    }

    it('answers Rowbase-Seq on every page of a walk, the collection’s latest seq as of that page', async () => {
      const { name } = await collectionWith(4);
      const first = await list(name, 'limit=2');
      expect(first.headers.get('rowbase-seq')).to.equal('4');
      await client.post(`/v1/collections/${name}/rows`, [{ n: 9 }]);
      const second = await client.get<Row[]>(nextLink(first) ?? '');
      expect(second.headers.get('rowbase-seq')).to.equal('5');
      expect(second.body.map((row) => row.id)).to.deep.equal([3, 4]);
    });
  });

  describe('cursors of another query, or altered', () => {
    /** A cursor of a page of `query` on `name`. */
    async function cursorOf(name: string, query: string, owner = client): Promise<string> {
      const link = nextLink(await list(name, query, owner));
      return new URL(link ?? '', server.url).searchParams.get('after') ?? '';
    }

    it('takes the same cursor with another limit, with count, and with the filter’s members in another order', async () => {
      const { name } = await collectionWith(20);
      const filter = (text: string) => `filter=${encodeURIComponent(text)}`;
      const after = await cursorOf(name, `${filter('{"tag":"t1","n":{"$gte":0}}')}&limit=2`);
      const response = await list(name, `${filter('{"n":{"$gte":0},"tag":"t1"}')}&limit=3&count=exact&after=${after}`);
      expect(response.status, response.text).to.equal(200);
      expect(response.body.map((row) => row.n)).to.deep.equal([9, 13, 17]);
    });

    it('refuses, with a 400 naming after, a cursor of another filter, order, select, collection or account, and an altered one', async () => {
      const { name } = await collectionWith(10);
      const { name: other } = await collectionWith(10);
      const stranger = await server.client();
      const strangers = await collectionWith(10, stranger);
      const after = await cursorOf(name, 'order_by=a&limit=2&select=a');
      const [place, seal] = after.split('.');
      const flipped = (text: string) => text.slice(0, -2) + (text.at(-2) === 'A' ? 'B' : 'A') + text.slice(-1);
      const forged = Buffer.from(JSON.stringify([1, [999]])).toString('base64url');
      const cases: [string, string, string, Client][] = [
        ['another filter', name, `order_by=a&select=a&filter=${encodeURIComponent('{"n":1}')}&after=${after}`, client],
        ['another order', name, `order_by=a&order=desc&select=a&after=${after}`, client],
        ['more fields in the order', name, `order_by=a,b&select=a&after=${after}`, client],
        ['another select', name, `order_by=a&select=b&after=${after}`, client],
        ['no select', name, `order_by=a&after=${after}`, client],
        ['another collection', other, `order_by=a&select=a&after=${after}`, client],
        ['another account', strangers.name, `order_by=a&select=a&after=${after}`, stranger],
        ['an altered place', name, `order_by=a&select=a&after=${flipped(place)}.${seal}`, client],
        ['an altered seal', name, `order_by=a&select=a&after=${place}.${flipped(seal)}`, client],
        ['a place of its own making', name, `order_by=a&select=a&after=${forged}.${seal}`, client],
        ['no seal', name, `order_by=a&select=a&after=${place}`, client],
        ['text that is no cursor', name, `order_by=a&select=a&after=${encodeURIComponent('{"id":3}')}`, client],
      ];
      for (const [why, collection, query, owner] of cases) {
        const response = await list(collection, query, owner);
        expect(response.status, why).to.equal(400);
        const problem = response.body as unknown as Problem;
        expect(problem.code, why).to.equal('validation_failed');
        expect(problem.errors?.[0], why).to.include({ in: 'query', name: 'after' });
      }
    });

    it('refuses after with offset, even offset=0', async () => {
      const { name } = await collectionWith(4);
      const after = await cursorOf(name, 'limit=2');
      for (const offset of ['0', '2']) {
        const response = await list(name, `limit=2&offset=${offset}&after=${after}`);
        expect(response.status).to.equal(400);
        expect((response.body as unknown as Problem).errors?.[0]).to.include({ in: 'query', name: 'offset' });
      }
    });
  });

  describe('through sort indexes', () => {
    // Every page ordered by one field reads its sort index, and a page after a place seeks it there.
    let indexed: TestServer;
    let owner: Client;
    before(async () => {
      indexed = await startTestServer({ sortIndexMinRows: 0 }, { backend });
      owner = await indexed.client();
    });
    after(() => indexed?.stop());

    const single = orders.filter(([orderBy]) => !orderBy.includes(',') && orderBy !== 'id');
    for (const [orderBy, order, keys] of [...single, ['a', 'desc', [{ field: 'a', direction: 'desc' }]] as const]) {
      it(`never repeats or skips a row that stays in place by ${orderBy} ${order}`, async () => {
        const name = `i${++collections}`;
        await owner.post('/v1/collections', { name });
        // Strings as long as PostgreSQL's keys are cut at, too: a place there sorts the page whole.
        const rows = Array.from({ length: 60 }, (_, n) => (n % 9 === 4 ? { ...rowOf(n), a: `${'x'.repeat(450)}${n % 2}` } : rowOf(n)));
        expect((await owner.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
        await walkWithChanges(owner, name, orderBy, order, [...keys]);
      });
    }
  });

  describe('POST …/query', () => {
    const query = (name: string, body: unknown, owner = client) => owner.post<QueryPage>(`/v1/collections/${name}/query`, body);

    it('answers the rows a filter keeps, in the order given, selected, counted, with the cursor of the next page', async () => {
      const { name, stored } = await collectionWith(30);
      const keys: OrderKey[] = [
        { field: 'b', direction: 'asc' },
        { field: 'n', direction: 'desc' },
      ];
      const expected = sortRows(
        stored.filter((row) => row.tag !== 't0'),
        keys,
      ).map((row) => row.id);
      const walked: number[] = [];
      let after: string | null | undefined;
      let pages = 0;
      do {
        const response: Response<QueryPage> = await query(name, {
          filter: { $not: { tag: 't0' } },
          select: ['n', 'tag'],
          order: keys,
          limit: 6,
          count: 'exact',
          ...(after ? { after } : {}),
        });
        expect(response.status, response.text).to.equal(200);
        expect(response.body.total).to.equal(expected.length);
        for (const row of response.body.rows) expect(Object.keys(row).sort()).to.deep.equal(['id', 'n', 'tag']);
        walked.push(...response.body.rows.map((row) => row.id));
        after = response.body.next;
        expect(after !== null).to.equal(response.body.rows.length === 6);
        pages++;
      } while (after);
      expect(walked).to.deep.equal(expected);
      expect(pages).to.equal(Math.floor(expected.length / 6) + 1);
    });

    it('orders by id ascending, 100 rows a page, without a body’s members, and answers no total unless asked', async () => {
      const { name } = await collectionWith(3);
      const response = await query(name, {});
      expect(response.body).to.deep.equal({ rows: (await list(name, '')).body, next: null });
    });

    it('takes the cursor of a list, and a list takes its cursor', async () => {
      const { name } = await collectionWith(10);
      const listed = await list(name, 'order_by=a&order=desc&limit=3');
      const after = new URL(nextLink(listed) ?? '', server.url).searchParams.get('after') ?? '';
      const queried = await query(name, { order: [{ field: 'a', direction: 'desc' }], limit: 3, after });
      const listedNext = await client.get<Row[]>(nextLink(listed) ?? '');
      expect(queried.body.rows).to.deep.equal(listedNext.body);
      const followed = await list(name, `order_by=a&order=desc&limit=3&after=${queried.body.next}`);
      const queriedNext = await query(name, { order: [{ field: 'a', direction: 'desc' }], limit: 3, after: queried.body.next });
      expect(followed.body).to.deep.equal(queriedNext.body.rows);
    });

    it('changes nothing, counts toward usage, and answers Rowbase-Seq', async () => {
      const { name } = await collectionWith(5);
      const before = await client.get<{ seq: number; row_count: number }>(`/v1/collections/${name}`);
      const response = await query(name, { filter: { n: { $gt: 1 } } });
      const remaining = Number(response.headers.get('ratelimit-remaining'));
      const after = await client.get<{ seq: number; row_count: number }>(`/v1/collections/${name}`);
      expect(response.headers.get('rowbase-seq')).to.equal('5');
      expect(after.body).to.deep.include({ seq: before.body.seq, row_count: before.body.row_count });
      expect(Number(after.headers.get('ratelimit-remaining'))).to.equal(remaining - 1);
    });

    const refusals: [string, unknown, string][] = [
      ['a filter that does not parse', { filter: { n: { $between: 1 } } }, '/filter/n/$between'],
      ['an unknown member', { filters: {} }, '/filters'],
      ['a limit past 1000', { limit: 1001 }, '/limit'],
      ['a field twice in the order', { order: [{ field: 'a' }, { field: 'a', direction: 'desc' }] }, '/order'],
      ['an order of an empty field', { order: [{ field: '' }] }, '/order/0/field'],
      ['a cursor of another query', { filter: { n: 1 }, after: 'WzEsW11d.AAAAAAAAAAAAAAAAAAAAAA' }, '/after'],
      ['a body that is no object', [1], ''],
    ];
    for (const [why, body, pointer] of refusals) {
      it(`refuses ${why} with a 400 pointing at "${pointer}"`, async () => {
        const { name } = await collectionWith(2);
        const response = await query(name, body);
        expect(response.status, response.text).to.equal(400);
        const problem = response.body as unknown as Problem;
        expect(problem.code).to.equal('validation_failed');
        expect(problem.errors?.map((error) => error.name)).to.include(pointer);
        expect(problem.errors?.[0].in).to.equal('body');
      });
    }

    it('answers 404 for a collection that does not exist, and for another account’s', async () => {
      const stranger = await server.client();
      const { name } = await collectionWith(1, stranger);
      expect((await query('nope', {})).status).to.equal(404);
      expect((await query(name, {})).status).to.equal(404);
    });
  });
});
