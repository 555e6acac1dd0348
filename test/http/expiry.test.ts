// Rows that expire (openapi.yaml, the `expiry` tag; docs/expiry.md): a collection's time to live set,
// read and removed; the sweeper deleting each expired row once, with a delete event marked expired on the
// change log and the feed, and its relations' on_delete followed; expired rows gone from reads at once.
import { expect } from 'chai';
import { createDatabase, describeEachBackend, knexOf, skipWithoutPostgres } from '../support/backends.ts';
import type { ChangesPage } from '../support/changes.ts';
import type { Client } from '../support/client.ts';
import { changeLog, expired, madeCollection, nextLink, walkedN } from '../support/expiry.ts';
import { FeedClient } from '../support/feed.ts';
import { pollUntil } from '../support/process.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Problem = { code: string; errors?: { in: string; name: string; message: string }[] };
type Row = { id: number; [field: string]: unknown };

const past = '2001-01-01T00:00:00Z';

/** The row a change carries. */
const rowOf = (change: ChangesPage['changes'][number]) => ('row' in change ? change.row : {}) as Row;
/** Why a change happened: a delete's reason. */
const reasonOf = (change: ChangesPage['changes'][number]) => ('reason' in change ? change.reason : undefined);
const future = '2999-01-01T00:00:00.5+02:00';

describeEachBackend('rows that expire', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;
  const collection = (ttl = true) => madeCollection(client, `e${++collections}`, ttl);
  const changes = (name: string) => changeLog(client, name);

  before(async () => {
    // A sweep only when a test asks for one (runOnce); a page ordered by a field reads its sort index at once.
    server = await startTestServer({ expirySweepIntervalMs: 3_600_000, sortIndexMinRows: 0 }, { backend });
    client = await server.client();
  });
  after(() => server.stop());

  describe('PUT, GET and DELETE …/ttl', () => {
    it('sets the field, answers it (on the collection too), and removes it', async () => {
      const name = await collection(false);
      expect((await client.get<Problem>(`/v1/collections/${name}/ttl`)).status).to.equal(404);
      const put = await client.put(`/v1/collections/${name}/ttl`, { field: 'expires_at' });
      expect(put.status).to.equal(200);
      expect(put.body).to.deep.equal({ field: 'expires_at' });
      expect((await client.get(`/v1/collections/${name}/ttl`)).body).to.deep.equal({ field: 'expires_at' });
      expect((await client.get<{ ttl: unknown }>(`/v1/collections/${name}`)).body.ttl).to.deep.equal({ field: 'expires_at' });
      expect((await client.delete(`/v1/collections/${name}/ttl`)).status).to.equal(204);
      expect((await client.get(`/v1/collections/${name}/ttl`)).status).to.equal(404);
      expect((await client.delete(`/v1/collections/${name}/ttl`)).status).to.equal(404);
      expect((await client.get<{ ttl?: unknown }>(`/v1/collections/${name}`)).body.ttl).to.equal(undefined);
      expect((await client.put('/v1/collections/none/ttl', { field: 'expires_at' })).status).to.equal(404);
    });

    const refusals: [string, object, object][] = [
      ['a field that is no plain name', {}, { field: 'a.b' }],
      ['the id', {}, { field: 'id' }],
      ['a field the schema types as a number', { type: 'object', properties: { expires_at: { type: 'number' } } }, { field: 'expires_at' }],
      [
        'a string the schema does not say is a date-time',
        { type: 'object', properties: { expires_at: { type: 'string' } } },
        { field: 'expires_at' },
      ],
      [
        'a field a schema that forbids others does not name',
        { type: 'object', additionalProperties: false, properties: { a: {} } },
        { field: 'expires_at' },
      ],
    ];
    for (const [what, schema, body] of refusals)
      it(`refuses ${what} with a 400`, async () => {
        const name = await collection(false);
        if (Object.keys(schema).length > 0) expect((await client.put(`/v1/collections/${name}/schema`, schema)).status).to.equal(200);
        const put = await client.put<Problem>(`/v1/collections/${name}/ttl`, body);
        expect(put.status, put.text).to.equal(400);
        expect(put.body.code).to.equal('validation_failed');
      });

    it('takes a field the schema types as a date-time string (or null)', async () => {
      const name = await collection(false);
      const schema = {
        type: 'object',
        additionalProperties: false,
        properties: { expires_at: { type: ['string', 'null'], format: 'date-time' } },
      };
      expect((await client.put(`/v1/collections/${name}/schema`, schema)).status).to.equal(200);
      expect((await client.put(`/v1/collections/${name}/ttl`, { field: 'expires_at' })).status).to.equal(200);
    });

    it("says the field's meaning in the account's documents, on the typed collection's row types, and no more once it is removed", async () => {
      const name = await collection(false);
      const schema = {
        type: 'object',
        properties: { expires_at: { type: 'string', format: 'date-time', description: 'The end.' }, n: {} },
      };
      expect((await client.put(`/v1/collections/${name}/schema`, schema)).status).to.equal(200);
      const prefix = `${name[0].toUpperCase()}${name.slice(1)}`;
      const described = async () => {
        const openapi = await client.get<{
          components: { schemas: Record<string, { properties: Record<string, { description?: string }> }> };
        }>('/v1/openapi.json');
        const asyncapi = await client.get<{
          components: { schemas: Record<string, { properties: Record<string, { description?: string }> }> };
        }>('/v1/asyncapi.json');
        const { schemas } = openapi.body.components;
        return {
          openapi: ['Row', 'Insert', 'Patch'].map((kind) => schemas[`${prefix}${kind}`]?.properties.expires_at?.description),
          asyncapi: asyncapi.body.components.schemas[`${prefix}Row`]?.properties.expires_at?.description,
          other: schemas[`${prefix}Row`]?.properties.n?.description,
          tag: openapi.headers.get('etag'),
        };
      };
      const before = await described();
      expect(before.openapi).to.deep.equal(['The end.', 'The end.', 'The end.']);

      expect((await client.put(`/v1/collections/${name}/ttl`, { field: 'expires_at' })).status).to.equal(200);

      const after = await described();
      expect(after.tag).to.not.equal(before.tag);
      for (const said of [...after.openapi, after.asyncapi]) {
        expect(said).to.match(/^When the row expires: the collection's time to live \(docs\/expiry\.md\)\..* never expires\. The end\.$/);
      }
      expect(after.other).to.equal(undefined);
      expect((await client.delete(`/v1/collections/${name}/ttl`)).status).to.equal(204);
      expect((await described()).openapi).to.deep.equal(['The end.', 'The end.', 'The end.']);
    });

    it('refuses a later schema that could not hold the date-time, naming its keyword, until the time to live is removed', async () => {
      const name = await collection();
      const number = { type: 'object', properties: { expires_at: { type: 'number' } } };
      const closed = { type: 'object', additionalProperties: false, properties: { a: {} } };
      for (const [schema, pointer] of [
        [number, '/properties/expires_at'],
        [{ type: 'object', properties: { expires_at: { type: 'string' } } }, '/properties/expires_at'],
        [closed, '/additionalProperties'],
      ] as const) {
        const put = await client.put<Problem>(`/v1/collections/${name}/schema`, schema);
        expect(put.status, put.text).to.equal(400);
        expect(put.body.code).to.equal('validation_failed');
        expect(put.body.errors?.map((error) => error.name)).to.deep.equal([pointer]);
      }
      expect((await client.get(`/v1/collections/${name}/schema`)).status).to.equal(404);
      const dateTime = { type: 'object', additionalProperties: false, properties: { expires_at: { type: 'string', format: 'date-time' } } };
      expect((await client.put(`/v1/collections/${name}/schema`, dateTime)).status).to.equal(200);
      expect((await client.delete(`/v1/collections/${name}/ttl`)).status).to.equal(204);
      expect((await client.put(`/v1/collections/${name}/schema`, number)).status).to.equal(200);
    });

    it('refuses a relation that restricts deletes of rows that expire, both ways', async () => {
      const parents = await collection();
      const children = await collection(false);
      const restrict = await client.put<Problem>(`/v1/collections/${children}/relations/parent`, {
        field: 'parent_id',
        collection: parents,
      });
      expect(restrict.status, restrict.text).to.equal(400);
      expect(restrict.body.errors?.[0].name).to.equal('/on_delete');
      const others = await collection(false);
      expect((await client.put(`/v1/collections/${children}/relations/other`, { field: 'other_id', collection: others })).status).to.equal(
        200,
      );
      const ttl = await client.put<Problem>(`/v1/collections/${others}/ttl`, { field: 'expires_at' });
      expect(ttl.status, ttl.text).to.equal(409);
    });
  });

  describe('gone at once, before a sweep', () => {
    it('answers 404 to a read, a patch of any format and a delete of an expired row; a change or delete by filter passes it by', async () => {
      const name = await collection();
      const rows = `/v1/collections/${name}/rows`;
      await client.post(rows, [
        { n: 1, expires_at: past },
        { n: 2, expires_at: future },
      ]);
      expect((await client.get(`${rows}/1`)).status).to.equal(404);
      expect((await client.get(`${rows}/2`)).status).to.equal(200);
      expect((await client.patch(`${rows}/1`, { n: 10 })).status).to.equal(404);
      const jsonPatch = [{ op: 'replace', path: '/n', value: 10 }];
      const patched = await client.request('PATCH', `${rows}/1`, {
        raw: JSON.stringify(jsonPatch),
        headers: { 'content-type': 'application/json-patch+json' },
      });
      expect(patched.status).to.equal(404);
      expect((await client.delete(`${rows}/1`)).status).to.equal(404);
      const byFilter = await client.patch<Row[]>(`${rows}?filter=${encodeURIComponent('{"n":{"$gte":1}}')}`, { seen: true });
      expect(byFilter.status).to.equal(200);
      const deleted = await client.delete<Row[]>(`${rows}?filter=${encodeURIComponent('{"n":1}')}`);
      expect(deleted.status).to.equal(200);
      expect((await changes(name)).map((change) => [change.type, rowOf(change).id])).to.deep.equal([
        ['insert', 1],
        ['insert', 2],
        ['update', 2],
      ]);
      // The sweeper still deletes it, once, with its event.
      expect(await server.feed.sweeper.runOnce()).to.equal(1);
    });
  });

  describe('rows expiring mid-page and mid-cursor', () => {
    /**
     * The collection's rows n = 1 to 12, each even one expiring `inMs` from now: answers when they
     * expire, once the first of them reads 404 (a wait on the row, never a fixed delay).
     */
    async function expiringSoon(inMs: number): Promise<{ name: string; gone: () => Promise<void> }> {
      const name = await collection();
      const at = new Date(Date.now() + inMs).toISOString();
      const rows = Array.from({ length: 12 }, (_, index) => ({ n: index + 1, ...(index % 2 === 1 ? { expires_at: at } : {}) }));
      expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
      const gone = () => expired(client, `/v1/collections/${name}/rows/2`, at);
      return { name, gone };
    }

    /** Every row's n of a walk from `first` by its Links. */
    const walk = (first: string) => walkedN(client, first);

    for (const [what, order] of [
      ['by id', ''],
      ['by a field, through its sort index', '&order_by=n'],
      ['by a field, descending', '&order_by=n&order=desc'],
      ['by two fields, sorted whole', '&order_by=n,id'],
    ] as const)
      it(`walks by cursor ${what}: the rows that expired after the first page are absent from the rest, and the walk goes on to the end`, async () => {
        const { name, gone } = await expiringSoon(1500);
        const first = await client.get<Row[]>(`/v1/collections/${name}/rows?limit=3${order}`);
        expect(first.body).to.have.length(3);
        await gone();
        const rest = await walk(nextLink(first) as string);
        const odd = [1, 3, 5, 7, 9, 11];
        const expected = order.includes('desc') ? odd.reverse() : odd;
        const shown = first.body.map((row) => row.n as number);
        expect(rest).to.deep.equal(
          expected.filter((n) => !shown.includes(n) && (order.includes('desc') ? n < Math.min(...shown) : n > Math.max(...shown))),
        );
        // A page read whole now holds the rows that live, full pages to the end.
        expect(await walk(`/v1/collections/${name}/rows?limit=4${order}`)).to.deep.equal(expected);
      });

    it('counts, queries and aggregates the rows that live, and filters pass expired rows by', async () => {
      const { name, gone } = await expiringSoon(1000);
      await gone();
      const counted = await client.get<Row[]>(`/v1/collections/${name}/rows?count=exact&limit=2`);
      expect(counted.headers.get('rowbase-total-count')).to.equal('6');
      const filtered = await client.get<Row[]>(`/v1/collections/${name}/rows?filter=${encodeURIComponent('{"n":{"$lte":4}}')}&order_by=n`);
      expect(filtered.status, filtered.text).to.equal(200);
      expect(filtered.body.map((row) => row.n)).to.deep.equal([1, 3]);
      const queried = await client.post<{ rows: Row[]; total?: number }>(`/v1/collections/${name}/query`, {
        filter: { n: { $gte: 2 } },
        count: 'exact',
      });
      expect(queried.status, queried.text).to.equal(200);
      expect(queried.body.rows.map((row) => row.n)).to.deep.equal([3, 5, 7, 9, 11]);
      expect(queried.body.total).to.equal(5);
      const aggregated = await client.post<{ groups: { values: Record<string, number> }[] }>(`/v1/collections/${name}/aggregate`, {
        aggregates: { rows: { count: {} }, total: { sum: 'n' } },
      });
      expect(aggregated.status, aggregated.text).to.equal(200);
      expect(aggregated.text).to.include('36');
      expect(aggregated.text).to.not.include('78');
    });
    it("counts through a field's sort index only the rows that live: an aggregate's count of one value, and a descending page past the rows that have the field", async () => {
      const name = await collection();
      const index = await client.post(`/v1/collections/${name}/indexes`, { fields: ['tag'] });
      expect(index.status, index.text).to.equal(201);
      const rows = `/v1/collections/${name}/rows`;
      const made = await client.post(rows, [{ tag: 'x', expires_at: past }, { tag: 'x' }, {}, {}]);
      expect(made.status, made.text).to.equal(201);
      const counted = await client.post<{ groups: { rows: number }[] }>(`/v1/collections/${name}/aggregate`, {
        filter: { tag: 'x' },
        aggregates: { rows: { count: {} } },
      });
      expect(counted.status, counted.text).to.equal(200);
      expect(counted.body.groups).to.deep.equal([{ rows: 1 }]);
      // Descending: row 2, the one that has the field and lives, then rows 4 and 3, which have none.
      const pages = [];
      for (const offset of [0, 1, 2])
        pages.push((await client.get<Row[]>(`${rows}?order_by=tag&order=desc&limit=1&offset=${offset}`)).body.map((row) => row.id));
      expect(pages).to.deep.equal([[2], [4], [3]]);
    });
  });

  describe('unique indexes', () => {
    /** A collection unique by `code`, holding `a` in row 1, expired, and `b` in row 2, which lives. */
    const uniquelyCoded = async () => {
      const name = await collection();
      const index = await client.post(`/v1/collections/${name}/indexes`, { fields: ['code'], unique: true });
      expect(index.status, index.text).to.equal(201);
      const rows = `/v1/collections/${name}/rows`;
      await client.post(rows, [
        { code: 'a', expires_at: past },
        { code: 'b', expires_at: future },
      ]);
      return { name, rows };
    };

    it('takes an insert whose values an expired row holds: that row is swept first, with its event; a live row still conflicts', async () => {
      const { name, rows } = await uniquelyCoded();
      const inserted = await client.post<Row[]>(rows, [{ code: 'a' }]);
      expect(inserted.status, inserted.text).to.equal(201);
      expect((await client.post<Problem>(rows, [{ code: 'b' }])).body.code).to.equal('unique_violation');
      expect((await changes(name)).map((change) => [change.type, rowOf(change).id, reasonOf(change)])).to.deep.equal([
        ['insert', 1, undefined],
        ['insert', 2, undefined],
        ['delete', 1, 'expired'],
        ['insert', 3, undefined],
      ]);
    });
    it("frees an expired row's values for a patch, a patch by filter and a batch's insert and update: each holder swept first, with its event; a live row still conflicts", async () => {
      const { name, rows } = await uniquelyCoded();
      const write = async (status: number, response: Promise<{ status: number; text: string }>) =>
        expect((await response).status, (await response).text).to.equal(status);
      const expiredHolder = (code: string) => write(201, client.post(rows, [{ code, expires_at: past }]));
      await write(201, client.post(rows, [{ code: 'c' }])); // row 3
      await write(200, client.patch(`${rows}/3`, { code: 'a' })); // row 1's value
      await expiredHolder('d'); // row 4
      await write(200, client.patch(`${rows}?filter=${encodeURIComponent('{"code":"a"}')}`, { code: 'd' }));
      await expiredHolder('e'); // row 5
      await write(200, client.post('/v1/batch', { operations: [{ op: 'insert', collection: name, rows: [{ code: 'e' }] }] })); // row 6
      await expiredHolder('f'); // row 7
      await write(200, client.post('/v1/batch', { operations: [{ op: 'update', collection: name, id: 6, patch: { code: 'f' } }] }));
      const conflict = await client.patch<Problem & { existing_id: number }>(`${rows}/3`, { code: 'b' });
      expect([conflict.status, conflict.body.code, conflict.body.existing_id]).to.deep.equal([409, 'unique_violation', 2]);
      const deletes = (await changes(name)).filter((change) => change.type === 'delete');
      expect(deletes.map((change) => [rowOf(change).id, reasonOf(change)])).to.deep.equal([
        [1, 'expired'],
        [4, 'expired'],
        [5, 'expired'],
        [7, 'expired'],
      ]);
    });
    it('upserts over a row an expired row holds the values of: that row is swept first, with its event, and the row inserted; a live row is patched', async () => {
      const { name, rows } = await uniquelyCoded();
      const upserted = await client.post<Row[]>(`${rows}?on_conflict=code`, [
        { code: 'a', n: 1 },
        { code: 'b', n: 2 },
      ]);
      expect(upserted.status, upserted.text).to.equal(200);
      expect(upserted.body.map((row) => [row.id, row.code, row.n])).to.deep.equal([
        [3, 'a', 1],
        [2, 'b', 2],
      ]);
      expect((await changes(name)).map((change) => [change.type, rowOf(change).id, reasonOf(change)])).to.deep.equal([
        ['insert', 1, undefined],
        ['insert', 2, undefined],
        ['delete', 1, 'expired'],
        ['insert', 3, undefined],
        ['update', 2, undefined],
      ]);
    });
  });

  describe('through relations', () => {
    /** Declares the relation `name` of the collection `source`. */
    const related = async (source: string, name: string, relation: object) => {
      const put = await client.put(`/v1/collections/${source}/relations/${name}`, relation);
      expect(put.status, put.text).to.equal(200);
    };

    it('expands no expired row, and $match and $some find none', async () => {
      const people = await collection();
      const posts = await collection(false);
      await related(posts, 'author', { field: 'author_id', collection: people, on_delete: 'cascade', reverse: 'posts' });
      await client.post(`/v1/collections/${people}/rows`, [
        { name: 'ada', expires_at: future },
        { name: 'bob', expires_at: future },
      ]);
      expect((await client.post(`/v1/collections/${posts}/rows`, [{ author_id: 1 }, { author_id: 2 }])).status).to.equal(201);
      expect((await client.patch(`/v1/collections/${people}/rows/1`, { expires_at: past })).status).to.equal(200);
      const expanded = await client.get<Row[]>(`/v1/collections/${posts}/rows?expand=author`);
      expect(expanded.status, expanded.text).to.equal(200);
      expect(expanded.body.map((row) => (row._expand as { author: Row | null }).author?.name ?? null)).to.deep.equal([null, 'bob']);
      const matched = await client.get<Row[]>(`/v1/collections/${posts}/rows?filter=${encodeURIComponent('{"author":{"$match":{}}}')}`);
      expect(matched.status, matched.text).to.equal(200);
      expect(matched.body.map((row) => row.id)).to.deep.equal([2]);
      const reverse = await client.get<Row[]>(`/v1/collections/${people}/rows?expand=posts`);
      expect(reverse.body.map((row) => row.name)).to.deep.equal(['bob']);
    });

    it('refuses every write that names an expired row as one naming a row that does not exist, until its time to live is removed', async () => {
      const carts = await collection();
      const items = await collection(false);
      await related(items, 'cart', { field: 'cart_id', collection: carts, on_delete: 'cascade' });
      await client.post(`/v1/collections/${carts}/rows`, [{ expires_at: past }, { expires_at: future }]);
      expect((await client.post(`/v1/collections/${items}/indexes`, { fields: ['code'], unique: true })).status).to.equal(201);
      expect((await client.post(`/v1/collections/${items}/rows`, [{ cart_id: 2, code: 'a' }])).status).to.equal(201);
      const rows = `/v1/collections/${items}/rows`;
      const writes: [string, () => Promise<{ status: number; text: string; body: unknown }>][] = [
        ['an insert', () => client.post(rows, [{ cart_id: 1 }])],
        ['an insert of several, one naming it', () => client.post(rows, [{ cart_id: 2 }, { cart_id: 1 }])],
        ['a patch', () => client.patch(`${rows}/1`, { cart_id: 1 })],
        ['a patch by filter', () => client.patch(`${rows}?filter=${encodeURIComponent('{"code":"a"}')}`, { cart_id: 1 })],
        ['an upsert patching', () => client.post(`${rows}?on_conflict=code`, [{ code: 'a', cart_id: 1 }])],
        ['an upsert inserting', () => client.post(`${rows}?on_conflict=code`, [{ code: 'b', cart_id: 1 }])],
        ['a batch insert', () => client.post('/v1/batch', { operations: [{ op: 'insert', collection: items, rows: [{ cart_id: 1 }] }] })],
        [
          'a batch update',
          () => client.post('/v1/batch', { operations: [{ op: 'update', collection: items, id: 1, patch: { cart_id: 1 } }] }),
        ],
      ];
      for (const [what, write] of writes) {
        const refused = await write();
        expect(refused.status, `${what}: ${refused.text}`).to.equal(422);
        expect((refused.body as Problem).code, what).to.equal('row_invalid');
      }
      // Nothing written: the one row, still naming the cart that lives.
      expect((await client.get<Row[]>(rows)).body).to.deep.equal([{ id: 1, cart_id: 2, code: 'a' }]);
      // A relation declared over rows that name it counts them as naming a row that does not exist.
      const others = await collection(false);
      expect((await client.post(`/v1/collections/${others}/rows`, [{ cart_id: 1 }])).status).to.equal(201);
      const declared = await client.put<Problem>(`/v1/collections/${others}/relations/cart`, {
        field: 'cart_id',
        collection: carts,
        on_delete: 'cascade',
      });
      expect(declared.status, declared.text).to.equal(409);
      // No time to live, no expired row: the row lives again, and may be named.
      expect((await client.delete(`/v1/collections/${carts}/ttl`)).status).to.equal(204);
      expect((await client.post(rows, [{ cart_id: 1 }])).status).to.equal(201);
    });
  });

  describe('the sweeper', () => {
    it('deletes each expired row once, with a delete event marked expired; other rows stay', async () => {
      const name = await collection();
      const rows = [
        { n: 1, expires_at: past },
        { n: 2, expires_at: future },
        { n: 3, expires_at: null },
        { n: 4 },
        { n: 5, expires_at: 'soon' },
        { n: 6, expires_at: 12 },
        { n: 7, expires_at: '2001-02-30T00:00:00Z' },
        { n: 8, expires_at: '2001-01-01t00:00:00.123456z' },
        { n: 9, expires_at: '2001-01-01T03:00:00+01:00' },
      ];
      expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
      await server.feed.sweeper.runOnce();
      await server.feed.sweeper.runOnce();
      const left = (await client.get<Row[]>(`/v1/collections/${name}/rows`)).body.map((row) => row.n);
      expect(left).to.deep.equal([2, 3, 4, 5, 6, 7]);
      const deletes = (await changes(name)).filter((change) => change.type === 'delete');
      expect(deletes.map((change) => [rowOf(change).n, reasonOf(change)])).to.deep.equal([
        [1, 'expired'],
        [8, 'expired'],
        [9, 'expired'],
      ]);
      // Each message made of its row's text as stored, its reason last, as JSON.stringify writes the message.
      const page = await client.get<ChangesPage>(`/v1/collections/${name}/changes?since=0&limit=1000`);
      expect(page.text).to.equal(JSON.stringify(page.body));
    });

    it('tells a feed socket of each row it deletes as the batch commits, marked expired', async () => {
      const name = await collection();
      const rows = [
        { n: 1, expires_at: past },
        { n: 2, expires_at: future },
        { n: 3, expires_at: past },
      ];
      expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
      const feed = await FeedClient.open(server.url, client.key, { collection: name });
      try {
        await server.feed.sweeper.runOnce();
        const heard = await feed.changesCount(2);
        expect(heard.map((message) => [message.type, 'row' in message ? (message.row as Row).n : undefined])).to.deep.equal([
          ['delete', 1],
          ['delete', 3],
        ]);
        expect(heard.map((message) => ('reason' in message ? message.reason : undefined))).to.deep.equal(['expired', 'expired']);
      } finally {
        await feed.close();
      }
    });

    it('expires rows stored before the time to live was set, and rows patched into the past', async () => {
      const name = await collection(false);
      const rows = `/v1/collections/${name}/rows`;
      await client.post(rows, [{ expires_at: past }, { expires_at: future }, { expires_at: '2001-02-01T00:00:00Z' }]);
      // Row 3 expired when it was stored, with no time to live: it lives until one is set.
      expect((await client.patch(`${rows}/3`, { expires_at: future })).status).to.equal(200);
      expect((await client.put(`/v1/collections/${name}/ttl`, { field: 'expires_at' })).status).to.equal(200);
      expect((await client.patch(`${rows}/2`, { expires_at: past })).status).to.equal(200);
      await server.feed.sweeper.runOnce();
      expect((await client.get<Row[]>(rows)).body.map((row) => row.id)).to.deep.equal([3]);
    });

    it("applies a relation's cascade and set_null to an expired row, as to any delete", async () => {
      const carts = await collection();
      const items = await collection(false);
      const notes = await collection(false);
      expect(
        (await client.put(`/v1/collections/${items}/relations/cart`, { field: 'cart_id', collection: carts, on_delete: 'cascade' })).status,
      ).to.equal(200);
      expect(
        (await client.put(`/v1/collections/${notes}/relations/cart`, { field: 'cart_id', collection: carts, on_delete: 'set_null' }))
          .status,
      ).to.equal(200);
      await client.post(`/v1/collections/${carts}/rows`, [{ expires_at: future }, { expires_at: future }]);
      expect((await client.post(`/v1/collections/${items}/rows`, [{ cart_id: 1 }, { cart_id: 2 }, { cart_id: 1 }])).status).to.equal(201);
      expect((await client.post(`/v1/collections/${notes}/rows`, [{ cart_id: 1 }])).status).to.equal(201);
      expect((await client.patch(`/v1/collections/${carts}/rows/1`, { expires_at: past })).status).to.equal(200);
      await server.feed.sweeper.runOnce();
      expect((await client.get<Row[]>(`/v1/collections/${items}/rows`)).body.map((row) => row.id)).to.deep.equal([2]);
      expect((await client.get<Row[]>(`/v1/collections/${notes}/rows`)).body).to.deep.equal([{ id: 1, cart_id: null }]);
      const cascaded = (await changes(items)).filter((change) => change.type === 'delete');
      expect(cascaded.map((change) => [rowOf(change).id, reasonOf(change)])).to.deep.equal([
        [1, undefined],
        [3, undefined],
      ]);
    });

    it('sweeps what a removed time to live left no more', async () => {
      const name = await collection();
      await client.post(`/v1/collections/${name}/rows`, [{ expires_at: past }]);
      expect((await client.delete(`/v1/collections/${name}/ttl`)).status).to.equal(204);
      await server.feed.sweeper.runOnce();
      expect((await client.get<Row[]>(`/v1/collections/${name}/rows`)).body).to.have.length(1);
    });

    it('writes nothing in a pass that finds no row to delete, and keeps its expiry now in one that does', async () => {
      // Every instance sweeps every 10 s, with or without a time to live anywhere: an idle pass is a read.
      const knex = knexOf(backend, server.databaseUrl);
      const kept = async () =>
        ((await knex('expiry_clock').select('now_ms')) as { now_ms: number | string }[]).map((row) => Number(row.now_ms));
      try {
        const name = await collection();
        expect((await client.post(`/v1/collections/${name}/rows`, [{ expires_at: future }])).status).to.equal(201);
        expect(await server.feed.sweeper.runOnce()).to.equal(0);
        const before = await kept();
        // The expiry now moves with the clock: a pass that wrote it would write another value.
        for (const since = Date.now(); Date.now() <= since + 1; ) await new Promise((resolve) => setImmediate(resolve));
        expect(await server.feed.sweeper.runOnce()).to.equal(0);
        expect(await kept()).to.deep.equal(before);
        expect((await client.post(`/v1/collections/${name}/rows`, [{ expires_at: past }])).status).to.equal(201);
        expect(await server.feed.sweeper.runOnce()).to.equal(1);
        const after = await kept();
        expect(after).to.have.length(1);
        expect(after[0]).to.be.above(before[0] ?? 0);
      } finally {
        await knex.destroy();
      }
    });

    // On PostgreSQL a batch of a collection without relations holds the collection, then deletes in a
    // statement of its own (Dialect.sweepAlone), whose snapshot is taken once the hold is granted: a sort
    // index made while the batch waited has its keys in that snapshot, and they go with their rows.
    if (backend === 'postgres') {
      it('deletes the keys of a sort index made while its batch waited for the collection', async () => {
        // What earlier tests left expired goes first: the pass below sweeps this collection alone.
        await server.feed.sweeper.runOnce();
        const name = await collection();
        const rows = Array.from({ length: 30 }, (_, n) => ({ n, expires_at: n % 3 === 0 ? future : past }));
        expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
        const knex = knexOf(backend, server.databaseUrl);
        const holder = await knex.client.acquireConnection();
        try {
          const [{ id }] = await knex('collections').where({ name }).select('id');
          const waiting = async (n: number) =>
            (
              await knex.raw(
                "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
              )
            ).rows[0].n >= n;
          // A write of the collection under way: its row held until it commits.
          await holder.query('begin');
          await holder.query('select id from collections where id = $1 for no key update', [id]);
          // The page ordered by n makes n's sort index (sortIndexMinRows 0): it waits for the collection,
          // then the sweep's batch waits behind it.
          const page = client.get<Row[]>(`/v1/collections/${name}/rows?order_by=n&limit=100`);
          await pollUntil(() => waiting(1), 10_000);
          const swept = server.feed.sweeper.runOnce();
          await pollUntil(() => waiting(2), 10_000);
          await holder.query('commit');
          expect((await page).status).to.equal(200);
          expect(await swept).to.equal(20);
          const keys = await knex.raw(
            'select count(*)::int as n, count(r.id)::int as live from sort_keys k left join rows r on r.collection_id = k.collection_id and r.id = k.row_id where k.collection_id = ?',
            [id],
          );
          expect(keys.rows[0]).to.deep.equal({ n: 10, live: 10 });
          expect((await client.get<Row[]>(`/v1/collections/${name}/rows?order_by=n&limit=100`)).body.map((row) => row.n)).to.deep.equal([
            0, 3, 6, 9, 12, 15, 18, 21, 24, 27,
          ]);
        } finally {
          await knex.client.releaseConnection(holder);
          await knex.destroy();
        }
      });
    }

    it('deletes many rows in batches, each once', async () => {
      const name = await collection();
      const many = Array.from({ length: 450 }, (_, n) => ({ n, expires_at: n % 3 === 0 ? future : past }));
      expect((await client.post(`/v1/collections/${name}/rows`, many)).status).to.equal(201);
      expect(await server.feed.sweeper.runOnce()).to.be.at.least(300);
      expect((await client.get<Row[]>(`/v1/collections/${name}/rows?limit=1000`)).body).to.have.length(150);
      const deletes = (await changes(name)).filter((change) => change.type === 'delete');
      expect(new Set(deletes.map((change) => rowOf(change).id)).size).to.equal(300);
      expect(deletes).to.have.length(300);
    });
  });
});

describeEachBackend('rows that expire, across a restart', (backend) => {
  it('sweeps after a restart what expired before it, each row once, with its event', async () => {
    const database = await createDatabase(backend, { migrated: true });
    const overrides = { expirySweepIntervalMs: 3_600_000 };
    let server = await startTestServer(overrides, { backend, database });
    try {
      const client = await server.client('restarted');
      await client.post('/v1/collections', { name: 'sessions' });
      await client.put('/v1/collections/sessions/ttl', { field: 'expires_at' });
      await client.post('/v1/collections/sessions/rows', [{ expires_at: past }, { expires_at: future }, { expires_at: past }]);
      await server.close();
      server = await startTestServer(overrides, { backend, database });
      const again = await server.client('restarted');
      expect((await again.get('/v1/collections/sessions/rows/1')).status).to.equal(404);
      expect(await server.feed.sweeper.runOnce()).to.equal(2);
      expect(await server.feed.sweeper.runOnce()).to.equal(0);
      const page = (await again.get<ChangesPage>('/v1/collections/sessions/changes?since=0')).body;
      expect(page.changes.filter((change) => change.type === 'delete').map((change) => [rowOf(change).id, reasonOf(change)])).to.deep.equal(
        [
          [1, 'expired'],
          [3, 'expired'],
        ],
      );
    } finally {
      await server.stop();
    }
  });
});

describe('rows that expire, two instances on one PostgreSQL database', () => {
  before(async function () {
    await skipWithoutPostgres(this);
  });

  // A page through a sort index is read by one statement or another by whether its instance last saw the
  // collection with a time to live (src/db/collections/sort-indexes.ts, KnownCollection): the other
  // instance's change of it is not seen, and each statement still reads only the rows that live.
  it('pages through a sort index on one instance pass the expired rows by once the other sets a time to live, and show them once it is removed', async () => {
    const database = await createDatabase('postgres', { migrated: true });
    const overrides = { expirySweepIntervalMs: 3_600_000, sortIndexMinRows: 0 };
    const one = await startTestServer(overrides, { backend: 'postgres', database });
    const two = await startTestServer(overrides, { backend: 'postgres', database: { ...database, drop: async () => {} } });
    try {
      const [reader, owner] = [await one.client('shared'), await two.client('shared')];
      expect((await owner.post('/v1/collections', { name: 'carts' })).status).to.equal(201);
      const rows = Array.from({ length: 8 }, (_, n) => ({ n, expires_at: n % 2 === 0 ? past : future }));
      expect((await owner.post('/v1/collections/carts/rows', rows)).status).to.equal(201);
      const pages = async () => {
        const read = [];
        for (const order of ['asc', 'desc']) {
          const first = await reader.get<Row[]>(`/v1/collections/carts/rows?order_by=n&order=${order}&limit=3`);
          expect(first.status, first.text).to.equal(200);
          const rest = await walkedN(reader, nextLink(first) as string);
          const offset = await reader.get<Row[]>(`/v1/collections/carts/rows?order_by=n&order=${order}&limit=2&offset=2`);
          read.push(
            [...first.body.map((row) => row.n), ...rest],
            offset.body.map((row) => row.n),
          );
        }
        return read;
      };
      // Each order's walk, then its page past an offset of 2.
      const every = [
        [0, 1, 2, 3, 4, 5, 6, 7],
        [2, 3],
        [7, 6, 5, 4, 3, 2, 1, 0],
        [5, 4],
      ];
      const living = [
        [1, 3, 5, 7],
        [5, 7],
        [7, 5, 3, 1],
        [3, 1],
      ];
      expect(await pages()).to.deep.equal(every);
      expect((await owner.put('/v1/collections/carts/ttl', { field: 'expires_at' })).status).to.equal(200);
      expect(await pages()).to.deep.equal(living);
      // Seen by the reader now with its time to live (its own put), then removed by the other.
      expect((await reader.put('/v1/collections/carts/ttl', { field: 'expires_at' })).status).to.equal(200);
      expect(await pages()).to.deep.equal(living);
      expect((await owner.delete('/v1/collections/carts/ttl')).status).to.equal(204);
      expect(await pages()).to.deep.equal(every);
    } finally {
      await two.stop();
      await one.stop();
    }
  });

  it('deletes each expired row once, with one event, while both sweep at once', async () => {
    const database = await createDatabase('postgres', { migrated: true });
    const overrides = { expirySweepIntervalMs: 3_600_000 };
    const one = await startTestServer(overrides, { backend: 'postgres', database });
    const two = await startTestServer(overrides, { backend: 'postgres', database: { ...database, drop: async () => {} } });
    try {
      const client = await one.client('shared');
      await client.post('/v1/collections', { name: 'carts' });
      await client.put('/v1/collections/carts/ttl', { field: 'expires_at' });
      const rows = Array.from({ length: 900 }, (_, n) => ({ n, expires_at: n % 3 === 0 ? future : past }));
      expect((await client.post('/v1/collections/carts/rows', rows)).status).to.equal(201);
      const [a, b] = await Promise.all([one.feed.sweeper.runOnce(), two.feed.sweeper.runOnce()]);
      expect(a + b).to.equal(600);
      const deletes: number[] = [];
      for (let since = 0; ; ) {
        const page = (await client.get<ChangesPage>(`/v1/collections/carts/changes?since=${since}&limit=1000`)).body;
        deletes.push(...page.changes.filter((change) => change.type === 'delete').map((change) => rowOf(change).id));
        if (page.caught_up) break;
        since = page.next_since;
      }
      expect(deletes).to.have.length(600);
      expect(new Set(deletes).size).to.equal(600);
    } finally {
      await two.stop();
      await one.stop();
    }
  });
});
