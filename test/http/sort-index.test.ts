// Sort indexes (src/db/collections/sort-indexes.ts): pages ordered by a field come from an index once the collection
// is large enough, and must be exactly the pages that sorting the whole collection gives (contract.md,
// "Rows"), through every insert, patch and delete, from this instance or another.
import { expect } from 'chai';
import fc from 'fast-check';
import { openStore } from '../../src/db/open-store.ts';
import { jsonText } from '../../src/rows.ts';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Row = { id: number } & Record<string, unknown>;
type Order = 'asc' | 'desc';

/** Strings by code point: a surrogate pair is its astral code point, a lone surrogate its own (U+D800..U+DFFF). */
function byCodePoint(a: string, b: string): number {
  const [x, y] = [[...a], [...b]].map((s) => s.map((c) => c.codePointAt(0) as number));
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return Math.sign(x[i] - y[i]);
  return Math.sign(x.length - y.length);
}

/** contract.md's order, written out plainly: the model the service's pages are checked against. */
function modelOrder(rows: Row[], field: string, order: Order): number[] {
  const rank = (v: unknown) =>
    v === undefined || v === null ? 5 : typeof v === 'number' ? 1 : typeof v === 'string' ? 2 : typeof v === 'boolean' ? 3 : 4;
  const within = (a: unknown, b: unknown) => (typeof a === 'string' ? byCodePoint(a, b as string) : Math.sign(Number(a) - Number(b)));
  const dir = order === 'asc' ? 1 : -1;
  return [...rows]
    .sort((x, y) => {
      const [rx, ry] = [rank(x[field]), rank(y[field])];
      if ((rx === 5) !== (ry === 5)) return rx === 5 ? 1 : -1; // missing and null last, both ways
      const byValue = rx !== ry ? rx - ry : rx < 4 ? within(x[field], y[field]) : 0;
      return dir * (byValue || x.id - y.id);
    })
    .map((row) => row.id);
}

// Values of every JSON type, with ties, and missing (undefined: the field is left out).
const value = fc.oneof(
  fc.integer({ min: -5, max: 5 }),
  fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }),
  fc.constantFrom(1e21, -0.5, 0.5),
  fc.constantFrom('', 'a', 'B', 'aa', 'é', 'e\u0301', '😀', 'a\u0000', 'a\u0000b', 'a\u0001', '\u0001', 'Z'),
  fc.string({ maxLength: 4 }),
  // U+0000 and U+0001, which PostgreSQL must escape to order (src/db/postgres/sql.ts), beside the text of their JSON escapes.
  fc.string({ maxLength: 4, unit: fc.constantFrom('\u0000', '\u0001', '\u0002', 'a', '\\', 'u', '0') }),
  // Lone surrogates and U+D7FF, which PostgreSQL must escape too, beside pairs (a '\ud83d' then a '\ude00' is one).
  fc.constantFrom('\ud800', '\udfff', 'a\ud800b', '\ud7ff', '\ue000', '\ud7ff\u0001', '\ud83d\ude00'),
  fc.string({
    maxLength: 4,
    unit: fc.constantFrom('\ud7ff', '\ud800', '\udbff', '\udc00', '\udfff', '\ud83d', '\ude00', '\ue000', '\\', 'u', 'd'),
  }),
  fc.boolean(),
  fc.constantFrom(null, undefined, { a: 1 }, [1], [], {}),
);
const fields = ['a', 'b', 'c'];
const rowFields = fc.record({ a: value, b: value, c: value, other: fc.integer() }, { requiredKeys: [] });
const withoutUndefined = (row: Record<string, unknown>) => JSON.parse(JSON.stringify(row));
const operation = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('insert' as const), rows: fc.array(rowFields, { minLength: 1, maxLength: 12 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('patch' as const), pick: fc.nat(), patch: rowFields }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }) },
);

describeEachBackend('sort indexes', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;
  const path = (name: string) => `/v1/collections/${name}/rows`;
  async function newCollection(): Promise<string> {
    const name = `s${++collections}`;
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    return name;
  }
  const ids = async (name: string, query: string) => {
    const response = await client.get<Row[]>(`${path(name)}${query}`);
    expect(response.status).to.equal(200);
    return response.body.map((row) => row.id);
  };
  const sortedOf = async (name: string) =>
    JSON.parse((await server.store.knex('collections').where({ name }).first('sorted')).sorted) as string[];

  before(async () => {
    // Every field ordered by is indexed at once, two per collection: the third sorts whole.
    server = await startTestServer({ sortIndexMinRows: 0, sortIndexMax: 2 }, { backend });
    client = await server.client();
  });
  after(() => server.stop());

  it('gives the pages of the whole-collection sort through inserts, patches and deletes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(operation, { minLength: 1, maxLength: 12 }),
        fc.nat(40),
        fc.integer({ min: 1, max: 30 }),
        async (ops, offset, limit) => {
          const name = await newCollection();
          const model = new Map<number, Row>();
          // Index the first two fields before any write, so that every write has to keep them.
          for (const field of ['a', 'b']) await ids(name, `?order_by=${field}`);
          for (const op of ops) {
            const live = [...model.keys()];
            if (op.kind === 'insert') {
              const response = await client.post<Row[]>(path(name), op.rows.map(withoutUndefined));
              expect(response.status).to.equal(201);
              for (const row of response.body) model.set(row.id, row);
            } else if (live.length > 0) {
              const id = live[op.pick % live.length];
              if (op.kind === 'delete') {
                expect((await client.delete(`${path(name)}/${id}`)).status).to.equal(204);
                model.delete(id);
              } else if (Object.keys(withoutUndefined(op.patch)).length > 0) {
                const response = await client.patch<Row>(`${path(name)}/${id}`, withoutUndefined(op.patch));
                expect(response.status).to.equal(200);
                model.set(id, response.body);
              }
            }
          }
          for (const field of fields) {
            for (const order of ['asc', 'desc'] as const) {
              const whole = modelOrder([...model.values()], field, order);
              expect(await ids(name, `?order_by=${field}&order=${order}&limit=1000`)).to.deep.equal(whole, `${field} ${order}`);
              const page = await ids(name, `?order_by=${field}&order=${order}&limit=${limit}&offset=${offset}`);
              expect(page).to.deep.equal(whole.slice(offset, offset + limit), `${field} ${order} page`);
            }
          }
          expect(await sortedOf(name)).to.deep.equal(['a', 'b']);
        },
      ),
      { numRuns: 12 },
    );
  });

  it('orders strings holding U+0000 and U+0001 by code point, from an index and sorting whole, both ways', async () => {
    // In code point order; the last two are a backslash, then the text of a JSON escape.
    const values = [
      '',
      '\u0000',
      '\u0001',
      '\\u0000',
      '\\u0001',
      'a',
      'a\u0000',
      'a\u0000\u0000',
      'a\u0000b',
      'a\u0001',
      'a\u0001\u0000',
      'a\u0002',
    ];
    // Stored shuffled, with a tie, so that neither ids nor insertion order give the answer.
    const shuffled = [7, 2, 11, 0, 9, 4, 1, 10, 3, 8, 5, 6, 9].map((i) => values[i]);
    const byCodePoint = (ids: number[]) => ids.map((id) => shuffled[id - 1]);
    // Four fields with those values; two names that PostgreSQL's old escape took for one.
    const nul = 'k\u0000';
    const one = 'k\u0001';
    const rows = shuffled.map((v, i) => ({ a: v, c: v, [nul]: v, [one]: shuffled[shuffled.length - 1 - i] }));
    // The first two fields ordered by are indexed; the others sort the collection whole. Then the other way round.
    const roles = [
      { indexed: ['a', nul], whole: ['c', one] },
      { indexed: ['c', one], whole: ['a', nul] },
    ];
    for (const { indexed, whole } of roles) {
      const name = await newCollection();
      for (const field of indexed) await ids(name, `?order_by=${encodeURIComponent(field)}`);
      const inserted = await client.post<Row[]>(path(name), rows);
      expect(inserted.status).to.equal(201);
      for (const field of [...indexed, ...whole]) {
        const asc = await ids(name, `?order_by=${encodeURIComponent(field)}&order=asc`);
        const desc = await ids(name, `?order_by=${encodeURIComponent(field)}&order=desc`);
        const expected = modelOrder(inserted.body, field, 'asc');
        expect(asc, `${JSON.stringify(field)} asc`).to.deep.equal(expected);
        expect(desc, `${JSON.stringify(field)} desc`).to.deep.equal(modelOrder(inserted.body, field, 'desc'));
        expect(desc, `${JSON.stringify(field)} desc: the reverse, ties by id descending too`).to.deep.equal([...expected].reverse());
      }
      expect(await sortedOf(name)).to.deep.equal(indexed);
      // The model is the code point order written out above.
      const order = modelOrder(inserted.body, 'a', 'asc');
      expect(byCodePoint(order)).to.deep.equal([...values.slice(0, 10), values[9], ...values.slice(10)]);
    }
  });

  it('orders lone surrogates, U+D7FF and astral characters by code point, from an index and sorting whole, both ways', async () => {
    // In code point order: a lone surrogate is its own code point, between U+D7FF and U+E000; a pair
    // (stored as the character) is the astral code point it makes.
    const values = [
      '\u0000',
      'a\ud7ff',
      'a\ud800',
      'a\ud800b',
      'a\udfff',
      'x',
      '\ud7ff',
      '\ud7ff\u0001',
      '\ud7ff\u4e00',
      '\ud7ff\ud800',
      '\ud800',
      '\ud800\ud7ff',
      '\udbff',
      '\udc00',
      '\udfff',
      '\ue000',
      '\ud83d\ude00',
    ];
    const shuffled = [9, 2, 16, 0, 13, 4, 11, 1, 7, 15, 3, 10, 5, 14, 8, 12, 6, 10].map((i) => values[i]);
    const byPlace = (ids: number[]) => ids.map((id) => shuffled[id - 1]);
    // Field names HTTP cannot carry in order_by (a URL holds no lone surrogate): ordered by through the store.
    const lone = 'k\ud800';
    const other = '\udfff';
    const rows = shuffled.map((v, i) => ({
      a: v,
      c: shuffled[shuffled.length - 1 - i],
      [lone]: v,
      [other]: shuffled[(i + 5) % shuffled.length],
    }));
    const roles = [
      { indexed: ['a', lone], whole: ['c', other] },
      { indexed: ['c', other], whole: ['a', lone] },
    ];
    for (const { indexed, whole } of roles) {
      const name = await newCollection();
      const { account_id: accountId } = await server.store.knex('collections').where({ name }).first('account_id');
      const page = async (field: string, order: Order) => {
        if (field.isWellFormed()) return ids(name, `?order_by=${encodeURIComponent(field)}&order=${order}&limit=1000`);
        const { json } = await server.store.listRows(Number(accountId), name, {
          limit: 1000,
          offset: 0,
          order: [{ field, direction: order }],
        });
        return (JSON.parse(jsonText(json)) as Row[]).map((row) => row.id);
      };
      for (const field of indexed) await page(field, 'asc');
      const inserted = await client.post<Row[]>(path(name), rows);
      expect(inserted.status).to.equal(201);
      expect(inserted.body.map(({ id, ...row }) => row)).to.deep.equal(rows);
      // Patches that move rows, of indexed fields and others, in and out of the surrogates.
      for (const [id, patch] of [
        [2, { a: '\udfff', [lone]: '\ud7ff\u0002', z: '\udbff' }],
        [5, { c: '\ud800', [other]: 'a\ud800' }],
        [7, { [lone]: '\ud83d\ude00', a: '\u0000\ud800' }],
      ] as const) {
        const patched = await client.patch<Row>(`${path(name)}/${id}`, patch);
        expect(patched.status).to.equal(200);
        expect(patched.body).to.include(patch);
      }
      const listed = await client.get<Row[]>(`${path(name)}?limit=1000`);
      expect(listed.status).to.equal(200);
      const stored = listed.body;
      for (const field of [...indexed, ...whole]) {
        const asc = await page(field, 'asc');
        const desc = await page(field, 'desc');
        expect(asc, `${JSON.stringify(field)} asc`).to.deep.equal(modelOrder(stored, field, 'asc'));
        expect(desc, `${JSON.stringify(field)} desc`).to.deep.equal(modelOrder(stored, field, 'desc'));
      }
      expect(await sortedOf(name)).to.deep.equal(indexed);
      // The model is the code point order written out above.
      expect(byPlace(modelOrder(inserted.body, 'a', 'asc'))).to.deep.equal([...values.slice(0, 11), values[10], ...values.slice(11)]);
    }
  });

  it('pages descending across the rows that have the field into those that miss it', async () => {
    const name = await newCollection();
    await client.post(path(name), [{ a: 1 }, {}, { a: null }, { a: 'x' }, {}, { a: true }, {}]);
    const whole = [6, 4, 1, 7, 5, 3, 2];
    expect(await ids(name, '?order_by=a&order=desc')).to.deep.equal(whole);
    for (const [offset, limit] of [
      [0, 3],
      [2, 3],
      [3, 2],
      [4, 2],
      [6, 5],
      [7, 1],
    ]) {
      expect(await ids(name, `?order_by=a&order=desc&offset=${offset}&limit=${limit}`)).to.deep.equal(whole.slice(offset, offset + limit));
    }
  });

  // A quote, a backslash, a control character, NUL, a dot and a path: pairs of them indexed in one collection.
  const unspellable = [
    ['say "hi"', 'a\\b'],
    ['x\u0001y', 'n\u0000ul'],
    ['a.b', '$[0]'],
  ];
  /** The collection is indexed by exactly `fields`, and its pages by each, both ways, are those of the model over `rows`. */
  const expectIndexedOrders = async (name: string, rows: Row[], fields: string[]) => {
    for (const field of fields) {
      for (const order of ['asc', 'desc'] as const) {
        const got = await ids(name, `?order_by=${encodeURIComponent(field)}&order=${order}`);
        expect(got, `${JSON.stringify(field)} ${order}`).to.deep.equal(modelOrder(rows, field, order));
      }
    }
    expect(await sortedOf(name)).to.deep.equal(fields);
  };

  it('keeps indexes of field names no JSON path can spell through inserts and patches', async () => {
    for (const [x, y] of unspellable) {
      const name = await newCollection();
      for (const field of [x, y]) await ids(name, `?order_by=${encodeURIComponent(field)}`);
      const inserted = await client.post<Row[]>(path(name), [
        { [x]: 2, [y]: 'b' },
        { [x]: 'a', [y]: 1 },
        { other: 1 },
        { [x]: 1, [y]: null },
      ]);
      expect(inserted.status).to.equal(201);
      const patched = await Promise.all([
        client.patch<Row>(`${path(name)}/3`, { [x]: 0, [y]: 'a' }),
        client.patch<Row>(`${path(name)}/1`, { [y]: true }),
      ]);
      for (const response of patched) expect(response.status).to.equal(200);
      await expectIndexedOrders(name, (await client.get<Row[]>(`${path(name)}?limit=1000`)).body, [x, y]);
    }
  });

  it('makes indexes of field names no JSON path can spell over the rows already stored', async () => {
    for (const [x, y] of unspellable) {
      const name = await newCollection();
      const inserted = await client.post<Row[]>(path(name), [
        { [x]: 2, [y]: 'b' },
        { [x]: 'a', [y]: 1 },
        { other: 1 },
        { [x]: 1, [y]: null },
        { [x]: [1], [y]: false },
      ]);
      expect(inserted.status).to.equal(201);
      await expectIndexedOrders(name, inserted.body, [x, y]);
    }
  });

  it('keeps an index whole when it is made while batches are written', async () => {
    const name = await newCollection();
    const batches = Array.from({ length: 8 }, (_, b) => Array.from({ length: 40 }, (_, i) => ({ a: (b * 37 + i * 11) % 23 })));
    const lists = Array.from({ length: 4 }, () => client.get(`${path(name)}?order_by=a&order=desc`));
    const writes = batches.map((batch) => client.post(path(name), batch));
    for (const response of await Promise.all([...writes, ...lists])) expect(response.status).to.be.oneOf([200, 201]);
    const rows = (await client.get<Row[]>(`${path(name)}?limit=1000`)).body;
    expect(rows).to.have.length(320);
    expect(await ids(name, '?order_by=a&order=desc&limit=1000')).to.deep.equal(modelOrder(rows, 'a', 'desc'));
    expect(await sortedOf(name)).to.deep.equal(['a']);
  });

  it("keeps another instance's writes in the order of an index made here", async () => {
    const name = await newCollection();
    await client.post(path(name), [{ a: 3 }, { a: 1 }]);
    expect(await ids(name, '?order_by=a')).to.deep.equal([2, 1]);
    const other = await openStore(server.databaseUrl);
    try {
      const { accountId } = (await server.store.findPrincipal(client.key!))!;
      await other.insertRows(accountId, name, [{ a: 2 }, { a: 0 }]);
      await other.updateRow(accountId, name, 1, { format: 'merge', fields: { a: -1 } });
      await other.deleteRow(accountId, name, 2);
    } finally {
      await other.close();
    }
    expect(await ids(name, '?order_by=a')).to.deep.equal([1, 4, 3]);
    expect(await ids(name, '?order_by=a&order=desc')).to.deep.equal([3, 4, 1]);
  });

  it('never answers from an index of a collection another instance deleted, or deleted and made again', async () => {
    const name = await newCollection();
    await client.post(path(name), [{ a: 1 }, { a: 2 }]);
    expect(await ids(name, '?order_by=a&order=desc')).to.deep.equal([2, 1]);
    const other = await openStore(server.databaseUrl);
    try {
      const { accountId } = (await server.store.findPrincipal(client.key!))!;
      await other.deleteCollection(accountId, name);
      expect((await client.get(`${path(name)}?order_by=a&order=desc`)).status).to.equal(404);
      await other.createCollection(accountId, name);
      await other.insertRows(accountId, name, [{ a: 5 }, { a: 7 }, { a: 6 }]);
    } finally {
      await other.close();
    }
    expect(await ids(name, '?order_by=a&order=desc')).to.deep.equal([2, 3, 1]);
    expect(await ids(name, '?order_by=a&order=desc&offset=5')).to.deep.equal([]);
  });

  it('takes the keys of a deleted collection with it', async () => {
    const name = await newCollection();
    await client.post(path(name), [{ a: 1 }, { a: 2 }]);
    await ids(name, '?order_by=a');
    const { id } = await server.store.knex('collections').where({ name }).first('id');
    const keys = () => server.store.knex('sort_keys').where({ collection_id: id }).count({ n: '*' }).first();
    expect(Number((await keys())?.n)).to.equal(2);
    expect((await client.delete(`/v1/collections/${name}`)).status).to.equal(204);
    expect(Number((await keys())?.n)).to.equal(0);
  });

  describe('in a collection below the threshold', () => {
    let small: TestServer;
    let smallClient: Client;
    before(async () => {
      small = await startTestServer({ sortIndexMinRows: 5 }, { backend });
      smallClient = await small.client();
    });
    after(() => small.stop());

    it('sorts the whole collection until it holds sortIndexMinRows rows, then indexes the field', async () => {
      expect((await smallClient.post('/v1/collections', { name: 'few' })).status).to.equal(201);
      const sorted = async () =>
        JSON.parse((await small.store.knex('collections').where({ name: 'few' }).first('sorted')).sorted) as string[];
      const order = async () => (await smallClient.get<Row[]>('/v1/collections/few/rows?order_by=a&order=desc')).body.map((r) => r.id);
      await smallClient.post('/v1/collections/few/rows', [{ a: 1 }, { a: 3 }, { b: 1 }, { a: 2 }]);
      expect(await order()).to.deep.equal([2, 4, 1, 3]);
      expect(await sorted()).to.deep.equal([]);
      await smallClient.post('/v1/collections/few/rows', [{ a: 0 }]);
      expect(await order()).to.deep.equal([2, 4, 1, 5, 3]);
      expect(await sorted()).to.deep.equal(['a']);
    });
  });
});
