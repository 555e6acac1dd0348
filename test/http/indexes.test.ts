// Declared indexes (openapi.yaml, createIndex, listIndexes, deleteIndex): unique ones kept by every write,
// exactly one of concurrent writers of a value winning; refused over rows that share values already.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { watchHealth } from '../support/watchdog.ts';

type Row = { id: number } & Record<string, unknown>;
type Problem = {
  code: string;
  fields?: string[];
  existing_id?: number;
  duplicates?: { values: unknown[]; ids: number[] }[];
  errors?: { name: string }[];
};

const filter = (value: object) => `filter=${encodeURIComponent(JSON.stringify(value))}`;

describeEachBackend('indexes', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;
  async function collectionWith(rows: object[] = [], index?: { fields: string[]; unique?: boolean }): Promise<string> {
    const name = `i${++collections}`;
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    if (rows.length > 0) expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
    if (index) expect((await client.post(`/v1/collections/${name}/indexes`, index)).status).to.equal(201);
    return name;
  }
  const rowsOf = async (name: string) => (await client.get<Row[]>(`/v1/collections/${name}/rows`)).body;
  const seqOf = async (name: string) => (await client.get<{ seq: number }>(`/v1/collections/${name}`)).body.seq;

  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
  });
  after(() => server.stop());
  watchHealth(() => server);

  describe('POST, GET and DELETE …/indexes', () => {
    it('declares indexes named after their fields, lists them, and drops one', async () => {
      const name = await collectionWith();
      const made = await client.post(`/v1/collections/${name}/indexes`, { fields: ['email'], unique: true });
      expect(made.status).to.equal(201);
      expect(made.body).to.deep.equal({ name: 'email', fields: ['email'], unique: true });
      expect(made.headers.get('location')).to.equal(`/v1/collections/${name}/indexes/email`);
      expect((await client.post(`/v1/collections/${name}/indexes`, { fields: ['last', 'first'] })).status).to.equal(201);
      expect((await client.get(`/v1/collections/${name}/indexes`)).body).to.deep.equal([
        { name: 'email', fields: ['email'], unique: true },
        { name: 'last,first', fields: ['last', 'first'], unique: false },
      ]);
      expect((await client.delete(`/v1/collections/${name}/indexes/email`)).status).to.equal(204);
      expect((await client.get(`/v1/collections/${name}/indexes`)).body).to.deep.equal([
        { name: 'last,first', fields: ['last', 'first'], unique: false },
      ]);
      expect((await client.delete<Problem>(`/v1/collections/${name}/indexes/email`)).status).to.equal(404);
      // Dropped: the values may repeat.
      expect((await client.post(`/v1/collections/${name}/rows`, [{ email: 'a' }, { email: 'a' }])).status).to.equal(201);
    });

    it('refuses an index of the same fields twice, fields that are no plain names, and a missing collection', async () => {
      const name = await collectionWith([], { fields: ['email'] });
      expect((await client.post<Problem>(`/v1/collections/${name}/indexes`, { fields: ['email'], unique: true })).body.code).to.equal(
        'conflict',
      );
      for (const fields of [['a.b'], ['$x'], [''], ['a', 'a'], [], ['1a'], ['a', 'b', 'c', 'd', 'e']]) {
        const refused = await client.post<Problem>(`/v1/collections/${name}/indexes`, { fields });
        expect(refused.status, JSON.stringify(fields)).to.equal(400);
      }
      expect((await client.post<Problem>('/v1/collections/absent/indexes', { fields: ['a'] })).status).to.equal(404);
      expect((await client.get<Problem>('/v1/collections/absent/indexes')).status).to.equal(404);
    });

    it('refuses a unique index over rows that share values, naming them, and declares nothing', async () => {
      const name = await collectionWith([
        { email: 'a' },
        { email: 'b' },
        { email: 'a' },
        { email: null },
        { email: null },
        {},
        {},
        { email: 'b' },
      ]);
      const refused = await client.post<Problem>(`/v1/collections/${name}/indexes`, { fields: ['email'], unique: true });
      expect(refused.status).to.equal(409);
      expect(refused.body.code).to.equal('unique_conflict');
      expect(refused.body.duplicates).to.deep.equal([
        { values: ['a'], ids: [1, 3] },
        { values: ['b'], ids: [2, 8] },
      ]);
      expect((await client.get(`/v1/collections/${name}/indexes`)).body).to.deep.equal([]);
      expect((await client.post(`/v1/collections/${name}/rows`, [{ email: 'b' }])).status).to.equal(201);
    });
  });

  describe('a unique index', () => {
    it('refuses an insert of values a row holds, naming the fields and the row: nothing written, no event', async () => {
      const name = await collectionWith([{ email: 'a' }, { email: 'b' }], { fields: ['email'], unique: true });
      const before = await seqOf(name);
      const refused = await client.post<Problem>(`/v1/collections/${name}/rows`, [{ email: 'c' }, { email: 'b' }]);
      expect(refused.status).to.equal(409);
      expect(refused.body).to.include({ code: 'unique_violation', existing_id: 2 });
      expect(refused.body.fields).to.deep.equal(['email']);
      expect(await seqOf(name)).to.equal(before);
      expect((await rowsOf(name)).map((row) => row.email)).to.deep.equal(['a', 'b']);
    });

    it('refuses a batch whose own rows share values', async () => {
      const name = await collectionWith([], { fields: ['email'], unique: true });
      const refused = await client.post<Problem>(`/v1/collections/${name}/rows`, [{ email: 'x' }, { email: 'y' }, { email: 'x' }]);
      expect(refused.status).to.equal(409);
      expect(refused.body.code).to.equal('unique_violation');
      expect(refused.body.existing_id).to.equal(undefined);
      expect(await rowsOf(name)).to.deep.equal([]);
    });

    it('lets rows missing a field, or holding null there, repeat; and tells values of other types apart', async () => {
      const name = await collectionWith([], { fields: ['k'], unique: true });
      const rows = [{}, {}, { k: null }, { k: null }, { k: 1 }, { k: '1' }, { k: true }, { k: [1] }, { k: { a: 1 } }, { k: 'é' }];
      expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
      for (const k of [1, '1', true, [1], { a: 1 }, 'é', 1.0]) {
        const refused = await client.post<Problem>(`/v1/collections/${name}/rows`, [{ k }]);
        expect(refused.body.code, JSON.stringify(k)).to.equal('unique_violation');
      }
    });

    it('keeps several fields unique together', async () => {
      const name = await collectionWith([{ first: 'a', last: 'b' }], { fields: ['first', 'last'], unique: true });
      expect(
        (await client.post(`/v1/collections/${name}/rows`, [{ first: 'a', last: 'c' }, { first: 'a' }, { first: 'a' }])).status,
      ).to.equal(201);
      const refused = await client.post<Problem>(`/v1/collections/${name}/rows`, [{ last: 'b', first: 'a' }]);
      expect(refused.body).to.include({ code: 'unique_violation', existing_id: 1 });
      expect(refused.body.fields).to.deep.equal(['first', 'last']);
    });

    it('names the row holding a value to an upsert by another index and to a batch, and lets a row keep its own', async () => {
      const name = await collectionWith([{ email: 'a', handle: 'ha' }], { fields: ['email'], unique: true });
      expect((await client.post(`/v1/collections/${name}/indexes`, { fields: ['handle'], unique: true })).status).to.equal(201);
      const upsert = await client.post<Problem>(`/v1/collections/${name}/rows?on_conflict=handle`, [{ handle: 'hb', email: 'a' }]);
      expect(upsert.status).to.equal(409);
      expect(upsert.body).to.deep.include({ code: 'unique_violation', fields: ['email'], existing_id: 1 });
      const batch = await client.post<Problem>('/v1/batch', {
        operations: [
          { op: 'insert', collection: name, rows: [{ email: 'b' }] },
          { op: 'update', collection: name, id: 1, patch: { handle: 'ha', email: 'a' } },
          { op: 'insert', collection: name, rows: [{ email: 'c', handle: 'ha' }] },
        ],
      });
      expect(batch.status).to.equal(409);
      expect(batch.body).to.deep.include({ code: 'unique_violation', fields: ['handle'], existing_id: 1 });
      expect((await rowsOf(name)).map((row) => row.email)).to.deep.equal(['a']);
      // The upsert by the row's own values patches it.
      const own = await client.post<Row[]>(`/v1/collections/${name}/rows?on_conflict=handle`, [{ handle: 'ha', email: 'a', n: 1 }]);
      expect(own.body).to.deep.equal([{ id: 1, email: 'a', handle: 'ha', n: 1 }]);
    });

    it('keeps strings unique where the field had a sort index before its unique index, and refuses one over duplicates', async () => {
      // An index of two fields makes a sort index of each: the unique index of `email` is declared over a sorted field.
      const repeated = await collectionWith(
        [
          { email: 'a', x: 1 },
          { email: 'b', x: 2 },
          { email: 'a', x: 3 },
        ],
        { fields: ['email', 'x'] },
      );
      const refused = await client.post<Problem>(`/v1/collections/${repeated}/indexes`, { fields: ['email'], unique: true });
      expect(refused.status).to.equal(409);
      expect(refused.body).to.deep.include({ code: 'unique_conflict', duplicates: [{ values: ['a'], ids: [1, 3] }] });
      const name = await collectionWith([{ email: 'a', x: 1 }, { email: 1, x: 2 }, { x: 3 }], { fields: ['email', 'x'] });
      expect((await client.post(`/v1/collections/${name}/indexes`, { fields: ['email'], unique: true })).status).to.equal(201);
      for (const [email, holder] of [
        ['a', 1],
        [1.0, 2],
      ] as const) {
        const insert = await client.post<Problem>(`/v1/collections/${name}/rows`, [{ email }]);
        expect(insert.body, String(email)).to.include({ code: 'unique_violation', existing_id: holder });
        const patch = await client.patch<Problem>(`/v1/collections/${name}/rows/3`, { email });
        expect(patch.body, String(email)).to.include({ code: 'unique_violation', existing_id: holder });
      }
      // A row that moves from a number to a string and back frees each value it leaves.
      expect((await client.patch(`/v1/collections/${name}/rows/2`, { email: 'b' })).status).to.equal(200);
      expect((await client.post(`/v1/collections/${name}/rows`, [{ email: 1 }])).status).to.equal(201);
      expect((await client.patch(`/v1/collections/${name}/rows/2`, { email: 2 })).status).to.equal(200);
      expect((await client.post(`/v1/collections/${name}/rows`, [{ email: 'b' }])).status).to.equal(201);
      const taken = await client.patch<Problem>(`/v1/collections/${name}/rows/3`, { email: 'b' });
      expect(taken.body).to.include({ code: 'unique_violation', existing_id: 5 });
    });

    it('refuses a PATCH, and a PATCH by filter, that would repeat values: nothing written', async () => {
      const name = await collectionWith([{ email: 'a' }, { email: 'b' }, { email: 'c' }], { fields: ['email'], unique: true });
      const before = await seqOf(name);
      const patch = await client.patch<Problem>(`/v1/collections/${name}/rows/3`, { email: 'a' });
      expect(patch.status).to.equal(409);
      expect(patch.body).to.include({ code: 'unique_violation', existing_id: 1 });
      const many = await client.patch<Problem>(`/v1/collections/${name}/rows?${filter({ email: { $in: ['b', 'c'] } })}`, { email: 'z' });
      expect(many.status).to.equal(409);
      expect(many.body.code).to.equal('unique_violation');
      expect(await seqOf(name)).to.equal(before);
      expect((await rowsOf(name)).map((row) => row.email)).to.deep.equal(['a', 'b', 'c']);
      // A row keeps its own values: patching another field, or setting the same value, is fine.
      expect((await client.patch(`/v1/collections/${name}/rows/1`, { email: 'a', n: 1 })).status).to.equal(200);
      expect(
        (await client.patch(`/v1/collections/${name}/rows/1`, { email: 'd' }, { headers: { 'Idempotency-Key': 'k' } })).status,
      ).to.equal(200);
      // Its old value is free again.
      expect((await client.post(`/v1/collections/${name}/rows`, [{ email: 'a' }])).status).to.equal(201);
    });

    it('frees a value once its row is deleted, and holds no value of a collection made anew under its name', async () => {
      const name = await collectionWith([{ email: 'a' }], { fields: ['email'], unique: true });
      expect((await client.delete(`/v1/collections/${name}/rows/1`)).status).to.equal(204);
      expect((await client.post(`/v1/collections/${name}/rows`, [{ email: 'a' }])).status).to.equal(201);
      expect((await client.delete(`/v1/collections/${name}`)).status).to.equal(204);
      expect((await client.post('/v1/collections', { name })).status).to.equal(201);
      expect((await client.post(`/v1/collections/${name}/rows`, [{ email: 'a' }, { email: 'a' }])).status).to.equal(201);
      expect((await client.get(`/v1/collections/${name}/indexes`)).body).to.deep.equal([]);
    });

    it('frees its values once dropped, and keys the rows written meanwhile when declared again', async () => {
      const name = await collectionWith([{ email: 'a' }, { email: 'b' }], { fields: ['email'], unique: true });
      expect((await client.delete(`/v1/collections/${name}/indexes/email`)).status).to.equal(204);
      expect((await client.post(`/v1/collections/${name}/rows`, [{ email: 'a' }])).status).to.equal(201);
      const again = await client.post<Problem>(`/v1/collections/${name}/indexes`, { fields: ['email'], unique: true });
      expect(again.status).to.equal(409);
      expect(again.body).to.deep.include({ code: 'unique_conflict', duplicates: [{ values: ['a'], ids: [1, 3] }] });
      expect((await client.delete(`/v1/collections/${name}/rows/3`)).status).to.equal(204);
      expect((await client.post(`/v1/collections/${name}/indexes`, { fields: ['email'], unique: true })).status).to.equal(201);
      const repeated = await client.post<Problem>(`/v1/collections/${name}/rows`, [{ email: 'b' }]);
      expect(repeated.status).to.equal(409);
      expect(repeated.body).to.include({ code: 'unique_violation', existing_id: 2 });
    });

    it('keeps the values of each of two unique indexes of a collection apart, and of two collections', async () => {
      const name = await collectionWith([{ a: 1, b: 1 }], { fields: ['a'], unique: true });
      expect((await client.post(`/v1/collections/${name}/indexes`, { fields: ['b'], unique: true })).status).to.equal(201);
      const other = await collectionWith([{ a: 1, b: 1 }], { fields: ['a'], unique: true });
      const byB = await client.post<Problem>(`/v1/collections/${name}/rows`, [{ a: 2, b: 1 }]);
      expect(byB.status).to.equal(409);
      expect(byB.body).to.deep.include({ code: 'unique_violation', fields: ['b'], existing_id: 1 });
      // A patch of the other field's row moves its key: the value it left is free.
      expect((await client.patch(`/v1/collections/${name}/rows/1`, { b: 2 })).status).to.equal(200);
      expect((await client.post(`/v1/collections/${name}/rows`, [{ a: 2, b: 1 }])).status).to.equal(201);
      expect((await client.post(`/v1/collections/${other}/rows`, [{ a: 2, b: 2 }])).status).to.equal(201);
    });

    it('lets exactly one of 50 concurrent writers of one value win', async () => {
      const name = await collectionWith([], { fields: ['email'], unique: true });
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          i % 2 === 0
            ? client.post<Problem>(`/v1/collections/${name}/rows`, [{ email: 'same', writer: i }])
            : client.post<Problem>(`/v1/collections/${name}/rows`, [{ email: 'same', writer: i }], {
                headers: { 'Idempotency-Key': `w${i}` },
              }),
        ),
      );
      const statuses = answers.map(({ status }) => status);
      expect(statuses.filter((status) => status === 201)).to.have.length(1);
      expect(statuses.filter((status) => status === 409)).to.have.length(49);
      for (const answer of answers) if (answer.status === 409) expect(answer.body.code).to.equal('unique_violation');
      expect(await rowsOf(name)).to.have.length(1);
      expect(await seqOf(name)).to.equal(1);
    });

    it('lets exactly one of 50 concurrent patches to one value win', async () => {
      const name = await collectionWith(
        Array.from({ length: 50 }, (_, i) => ({ email: `e${i}` })),
        { fields: ['email'], unique: true },
      );
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) => client.patch<Problem>(`/v1/collections/${name}/rows/${i + 1}`, { email: 'same' })),
      );
      expect(answers.filter(({ status }) => status === 200)).to.have.length(1);
      expect(answers.filter(({ status }) => status === 409)).to.have.length(49);
    });
  });

  describe('upserts (POST …/rows?on_conflict=)', () => {
    async function eventsOf(name: string) {
      const { id } = await server.store.knex('collections').where({ name }).first('id');
      return server.store.readEvents(Number(id), { after: 0, limit: 1000 });
    }

    it('patches the rows whose values a row holds and inserts the others, answering them in the order sent, one event each', async () => {
      const name = await collectionWith(
        [
          { email: 'a', n: 1, keep: true },
          { email: 'b', n: 2 },
        ],
        { fields: ['email'], unique: true },
      );
      const answer = await client.post<Row[]>(`/v1/collections/${name}/rows?on_conflict=email`, [
        { email: 'c', n: 3 },
        { email: 'a', n: 10 },
        { n: 4 },
        { email: 'c', n: 30 },
      ]);
      expect(answer.status).to.equal(200);
      expect(answer.body).to.deep.equal([
        { id: 3, email: 'c', n: 3 },
        { id: 1, email: 'a', n: 10, keep: true },
        { id: 4, n: 4 },
        { id: 3, email: 'c', n: 30 },
      ]);
      expect(await rowsOf(name)).to.deep.equal([
        { id: 1, email: 'a', n: 10, keep: true },
        { id: 2, email: 'b', n: 2 },
        { id: 3, email: 'c', n: 30 },
        { id: 4, n: 4 },
      ]);
      const events = (await eventsOf(name)).slice(2);
      expect(events.map(({ type, seq, row }) => [type, seq, row.id])).to.deep.equal([
        ['insert', 3, 3],
        ['update', 4, 1],
        ['insert', 5, 4],
        ['update', 6, 3],
      ]);
    });

    it('refuses on_conflict that names no unique index: 400, nothing written', async () => {
      const name = await collectionWith([{ email: 'a' }], { fields: ['email'] });
      for (const onConflict of ['email', 'other', 'email,other']) {
        const refused = await client.post<Problem>(`/v1/collections/${name}/rows?on_conflict=${onConflict}`, [{ email: 'a' }]);
        expect(refused.status, onConflict).to.equal(400);
      }
      expect((await client.post<Problem>(`/v1/collections/${name}/rows?on_conflict=a.b`, [{ email: 'a' }])).status).to.equal(400);
      expect(await rowsOf(name)).to.have.length(1);
    });

    it('takes the fields of a unique index over several in any order', async () => {
      const name = await collectionWith([{ a: 1, b: 2, n: 0 }], { fields: ['a', 'b'], unique: true });
      const answer = await client.post<Row[]>(`/v1/collections/${name}/rows?on_conflict=b,a`, [{ a: 1, b: 2, n: 5 }]);
      expect(answer.body).to.deep.equal([{ id: 1, a: 1, b: 2, n: 5 }]);
    });

    it("checks each row against the collection's schema, as inserted or as patched: 422 naming its place, nothing written", async () => {
      const name = await collectionWith([{ email: 'a', n: 1 }], { fields: ['email'], unique: true });
      const schema = { type: 'object', properties: { email: { type: 'string' }, n: { type: 'integer' } } };
      expect((await client.put(`/v1/collections/${name}/schema`, schema)).status).to.equal(200);
      const before = await seqOf(name);
      const patched = await client.post<{ errors: { row: number }[] }>(`/v1/collections/${name}/rows?on_conflict=email`, [
        { email: 'b', n: 2 },
        { email: 'a', n: 'x' },
      ]);
      expect(patched.status).to.equal(422);
      expect(patched.body.errors[0].row).to.equal(1);
      const inserted = await client.post<{ errors: { row: number }[] }>(`/v1/collections/${name}/rows?on_conflict=email`, [
        { email: 'a', n: 2 },
        { email: 'c', n: 'x' },
      ]);
      expect(inserted.body.errors[0].row).to.equal(1);
      expect(await seqOf(name)).to.equal(before);
      expect(await rowsOf(name)).to.deep.equal([{ id: 1, email: 'a', n: 1 }]);
    });

    it('answers a retry with the same Idempotency-Key as the first, writing once', async () => {
      const name = await collectionWith([{ email: 'a', n: 1 }], { fields: ['email'], unique: true });
      const send = () =>
        client.post<Row[]>(`/v1/collections/${name}/rows?on_conflict=email`, [{ email: 'a', n: 2 }, { email: 'b' }], {
          headers: { 'Idempotency-Key': 'upsert-1' },
        });
      const first = await send();
      const again = await send();
      expect(again.status).to.equal(200);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(again.body).to.deep.equal(first.body);
      expect(await seqOf(name)).to.equal(3);
    });

    it('lets concurrent upserts of one value make one row', async () => {
      const name = await collectionWith([], { fields: ['email'], unique: true });
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => client.post<Row[]>(`/v1/collections/${name}/rows?on_conflict=email`, [{ email: 'same', i }])),
      );
      for (const answer of answers) expect(answer.status).to.equal(200);
      expect(await rowsOf(name)).to.have.length(1);
      expect(new Set(answers.map((answer) => answer.body[0].id))).to.deep.equal(new Set([1]));
    });
  });

  describe('an index that is not unique', () => {
    it('orders and filters pages by its fields, and lets values repeat', async () => {
      const name = await collectionWith([{ n: 3 }, { n: 1 }, { n: 2 }, { n: 1 }], { fields: ['n'] });
      expect((await client.get<Row[]>(`/v1/collections/${name}/rows?order_by=n`)).body.map((row) => row.id)).to.deep.equal([2, 4, 3, 1]);
      expect((await client.get<Row[]>(`/v1/collections/${name}/rows?${filter({ n: 1 })}`)).body.map((row) => row.id)).to.deep.equal([2, 4]);
      const { id } = await server.store.knex('collections').where({ name }).first('id');
      const { sorted } = await server.store.knex('collections').where({ id }).first('sorted');
      expect(JSON.parse(sorted)).to.deep.equal(['n']);
    });
  });
});
