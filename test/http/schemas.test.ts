// Collections' schemas (openapi.yaml, putCollectionSchema, RowSchema): set, read and removed; enforced on
// every write of rows, with nothing written and no event for a row that breaks it; refused over stored
// rows that break it; and never slipped past by a write racing the change.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { watchHealth } from '../support/watchdog.ts';

type Row = { id: number } & Record<string, unknown>;
type Problem = {
  code: string;
  errors?: { row: number; pointer: string; keyword: string; message: string }[];
  violations?: { id: number; pointer: string; message: string }[];
  total?: number;
};

const filter = (value: object) => `filter=${encodeURIComponent(JSON.stringify(value))}`;

/** A schema of a task: a title, a done flag, a priority from 1 to 5. */
const task = {
  type: 'object',
  required: ['title'],
  additionalProperties: false,
  properties: {
    title: { type: 'string', minLength: 1 },
    done: { type: 'boolean' },
    priority: { type: 'integer', minimum: 1, maximum: 5 },
  },
};

describeEachBackend('schemas', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;
  async function collectionWith(rows: object[] = [], schema?: object): Promise<string> {
    const name = `s${++collections}`;
    expect((await client.post('/v1/collections', schema ? { name, schema } : { name })).status).to.equal(201);
    if (rows.length > 0) expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
    return name;
  }
  const rowsOf = async (name: string) => (await client.get<Row[]>(`/v1/collections/${name}/rows`)).body;
  async function seqOf(name: string) {
    return (await client.get<{ seq: number }>(`/v1/collections/${name}`)).body.seq;
  }

  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
  });
  after(() => server.stop());
  watchHealth(() => server);

  describe('PUT, GET and DELETE …/schema', () => {
    it('sets a schema, answers it, shows it on the collection, and removes it', async () => {
      const name = await collectionWith();
      expect((await client.get(`/v1/collections/${name}`)).body).to.include({ schema: null });
      expect((await client.get<Problem>(`/v1/collections/${name}/schema`)).status).to.equal(404);
      const put = await client.put(`/v1/collections/${name}/schema`, task);
      expect(put.status).to.equal(200);
      expect(put.body).to.deep.equal(task);
      expect((await client.get(`/v1/collections/${name}/schema`)).body).to.deep.equal(task);
      expect((await client.get<{ schema: object }>(`/v1/collections/${name}`)).body.schema).to.deep.equal(task);
      expect((await client.delete(`/v1/collections/${name}/schema`)).status).to.equal(204);
      expect((await client.get(`/v1/collections/${name}/schema`)).status).to.equal(404);
      expect((await client.delete(`/v1/collections/${name}/schema`)).status).to.equal(404);
      // Schemaless again: any object is a row.
      expect((await client.post(`/v1/collections/${name}/rows`, [{ title: 5 }])).status).to.equal(201);
    });

    it('makes a collection with a schema, which its answer shows', async () => {
      const created = await client.post<{ schema: object }>('/v1/collections', { name: 'made-typed', schema: task });
      expect(created.status).to.equal(201);
      expect(created.body.schema).to.deep.equal(task);
      expect((await client.post<Problem>('/v1/collections/made-typed/rows', [{ title: 1 }])).body.code).to.equal('row_invalid');
    });

    it('answers 404 for the schema of a collection that does not exist', async () => {
      expect((await client.put<Problem>('/v1/collections/absent/schema', task)).status).to.equal(404);
      expect((await client.get<Problem>('/v1/collections/absent/schema')).status).to.equal(404);
      expect((await client.delete<Problem>('/v1/collections/absent/schema')).status).to.equal(404);
    });

    it('refuses a schema that stored rows break, listing them, and changes nothing', async () => {
      const name = await collectionWith([{ title: 'a' }, { title: 7 }, { done: true }, { title: 'b', priority: 9 }]);
      const before = await seqOf(name);
      const refused = await client.put<Problem>(`/v1/collections/${name}/schema`, task);
      expect(refused.status).to.equal(409);
      expect(refused.body.code).to.equal('schema_conflict');
      expect(refused.body.total).to.equal(3);
      expect(refused.body.violations?.map((violation) => violation.id)).to.deep.equal([2, 3, 4]);
      expect(refused.body.violations?.[0].pointer).to.equal('/title');
      expect((await client.get(`/v1/collections/${name}/schema`)).status).to.equal(404);
      expect(await seqOf(name)).to.equal(before);
    });

    it('lists at most 100 violations, and counts them all', async () => {
      const name = await collectionWith(Array.from({ length: 130 }, () => ({ title: 1 })));
      const refused = await client.put<Problem>(`/v1/collections/${name}/schema`, task);
      expect(refused.body.violations).to.have.length(100);
      expect(refused.body.total).to.equal(130);
    });
  });

  describe('bad schemas', () => {
    const refusals: { name: string; schema: unknown; place: string }[] = [
      { name: 'an unsupported keyword, named', schema: { type: 'object', properties: { a: { if: {} } } }, place: '/properties/a/if' },
      {
        name: 'an unsupported format',
        schema: { properties: { a: { type: 'string', format: 'hostname' } } },
        place: '/properties/a/format',
      },
      {
        name: 'a $ref outside the schema, never fetched',
        schema: { properties: { a: { $ref: 'http://127.0.0.1:9/x.json' } } },
        place: '/properties/a/$ref',
      },
      { name: 'id declared as a string', schema: { properties: { id: { type: 'string' } } }, place: '/properties/id' },
      { name: 'no JSON Schema (a number where a type is)', schema: { type: 5 }, place: '/type' },
      {
        name: 'a pattern RE2 cannot run',
        schema: { properties: { a: { type: 'string', pattern: '(a)\\1' } } },
        place: '/properties/a/pattern',
      },
    ];
    for (const { name, schema, place } of refusals) {
      it(`refuses ${name}: 400 naming where, nothing set`, async () => {
        const collection = await collectionWith();
        const refused = await client.put<{ code: string; errors: { name: string }[] }>(`/v1/collections/${collection}/schema`, schema);
        expect(refused.status).to.equal(400);
        expect(refused.body.errors.map((error) => error.name)).to.include(place);
        expect((await client.get(`/v1/collections/${collection}/schema`)).status).to.equal(404);
      });
    }

    it('refuses a schema over 64 KiB, or nested deeper than 32, and one in POST /v1/collections alike', async () => {
      const collection = await collectionWith();
      const large = { type: 'object', description: 'x'.repeat(70_000) };
      expect((await client.put(`/v1/collections/${collection}/schema`, large)).status).to.equal(400);
      let deep: Record<string, unknown> = { type: 'object' };
      for (let i = 0; i < 20; i++) deep = { type: 'object', properties: { a: deep } };
      expect((await client.put(`/v1/collections/${collection}/schema`, deep)).status).to.equal(400);
      const made = await client.post<{ errors: { name: string }[] }>('/v1/collections', { name: 'refused-typed', schema: { if: {} } });
      expect(made.status).to.equal(400);
      expect(made.body.errors.map((error) => error.name)).to.include('/schema/if');
      expect((await client.get('/v1/collections/refused-typed')).status).to.equal(404);
    });

    it('matches a pattern in linear time: a backtracking pattern against 50,000 a and a ! answers within a second, others going on', async () => {
      const collection = await collectionWith([], { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } });
      const started = performance.now();
      const [refused, health] = await Promise.all([
        client.post<Problem>(`/v1/collections/${collection}/rows`, [{ s: `${'a'.repeat(50_000)}!` }]),
        client.get('/health'),
      ]);
      expect(performance.now() - started).to.be.below(1000);
      expect(refused.status).to.equal(422);
      expect(refused.body.errors?.[0]).to.include({ pointer: '/s', keyword: 'pattern' });
      expect(health.status).to.equal(200);
    });
  });

  describe('writes of a collection with a schema', () => {
    it('inserts rows that match it', async () => {
      const name = await collectionWith([], task);
      const answer = await client.post<Row[]>(`/v1/collections/${name}/rows`, [{ title: 'a', priority: 2 }, { title: 'b' }]);
      expect(answer.status).to.equal(201);
      expect(answer.body).to.deep.equal([
        { id: 1, title: 'a', priority: 2 },
        { id: 2, title: 'b' },
      ]);
    });

    it('refuses a batch with a row that breaks it: 422 naming each row and place, nothing written, no event', async () => {
      const name = await collectionWith([], task);
      const refused = await client.post<Problem>(`/v1/collections/${name}/rows`, [
        { title: 'fine' },
        { title: 'x', priority: 'high' },
        { title: 'y', extra: 1 },
      ]);
      expect(refused.status).to.equal(422);
      expect(refused.body.code).to.equal('row_invalid');
      const places = refused.body.errors?.map(({ row, pointer, keyword }) => ({ row, pointer, keyword }));
      expect(places).to.deep.include({ row: 1, pointer: '/priority', keyword: 'type' });
      expect(places?.some((place) => place.row === 2)).to.equal(true);
      expect(places?.some((place) => place.row === 0)).to.equal(false);
      expect(await rowsOf(name)).to.deep.equal([]);
      expect(await seqOf(name)).to.equal(0);
    });

    it('never checks id: a schema without it, additionalProperties false, still takes rows', async () => {
      const name = await collectionWith([], { ...task, required: ['title', 'id'] });
      expect((await client.post(`/v1/collections/${name}/rows`, [{ title: 'a' }])).status).to.equal(201);
      expect((await client.patch(`/v1/collections/${name}/rows/1`, { done: true })).status).to.equal(200);
    });

    it('checks a PATCH of one row as merged: 422 with row 0, the row unchanged, no event', async () => {
      const name = await collectionWith([{ title: 'a', priority: 1 }], task);
      const before = await seqOf(name);
      const refused = await client.patch<Problem>(`/v1/collections/${name}/rows/1`, { priority: 6 });
      expect(refused.status).to.equal(422);
      expect(refused.body.errors?.[0]).to.include({ row: 0, pointer: '/priority', keyword: 'maximum' });
      // Removing a required field through null is refused too: null is no string.
      expect((await client.patch<Problem>(`/v1/collections/${name}/rows/1`, { title: null })).status).to.equal(422);
      expect(await rowsOf(name)).to.deep.equal([{ id: 1, title: 'a', priority: 1 }]);
      expect(await seqOf(name)).to.equal(before);
      const fine = await client.patch<Row>(`/v1/collections/${name}/rows/1`, { priority: 5, done: true });
      expect(fine.body).to.deep.equal({ id: 1, title: 'a', priority: 5, done: true });
    });

    it('checks a PATCH sent with If-Match or an Idempotency-Key alike', async () => {
      const name = await collectionWith([{ title: 'a' }], task);
      const etag = (await client.get(`/v1/collections/${name}/rows/1`)).headers.get('etag') ?? '';
      const ifMatch = await client.patch<Problem>(`/v1/collections/${name}/rows/1`, { done: 'yes' }, { headers: { 'If-Match': etag } });
      expect(ifMatch.status).to.equal(422);
      const keyed = await client.patch<Problem>(
        `/v1/collections/${name}/rows/1`,
        { done: 'yes' },
        { headers: { 'Idempotency-Key': 'k1' } },
      );
      expect(keyed.status).to.equal(422);
      expect(await rowsOf(name)).to.deep.equal([{ id: 1, title: 'a' }]);
    });

    it('checks every row a PATCH by filter changes, naming each by its id: all or none', async () => {
      const name = await collectionWith(
        [
          { title: 'a', priority: 1 },
          { title: 'b', priority: 4 },
          { title: 'c', priority: 5 },
        ],
        task,
      );
      const before = await seqOf(name);
      const refused = await client.patch<Problem>(`/v1/collections/${name}/rows?${filter({ priority: { $gte: 4 } })}`, { priority: 7 });
      expect(refused.status).to.equal(422);
      expect(refused.body.errors?.map((error) => error.row)).to.deep.equal([2, 3]);
      expect((await rowsOf(name)).map((row) => row.priority)).to.deep.equal([1, 4, 5]);
      expect(await seqOf(name)).to.equal(before);
      const fine = await client.patch<{ count: number }>(`/v1/collections/${name}/rows?${filter({ priority: { $gte: 4 } })}`, {
        done: true,
      });
      expect(fine.body).to.deep.equal({ count: 2 });
    });

    it('takes effect for writes after it is set, and lets any row in once removed', async () => {
      const name = await collectionWith([{ title: 'a' }]);
      // Seen schemaless first: the next insert finds the schema set since, in its own statement.
      expect((await client.post(`/v1/collections/${name}/rows`, [{ title: 2 }])).status).to.equal(201);
      expect((await client.delete(`/v1/collections/${name}/rows/2`)).status).to.equal(204);
      expect((await client.put(`/v1/collections/${name}/schema`, task)).status).to.equal(200);
      expect((await client.post<Problem>(`/v1/collections/${name}/rows`, [{ title: 3 }])).status).to.equal(422);
      expect((await client.patch<Problem>(`/v1/collections/${name}/rows/1`, { title: 4 })).status).to.equal(422);
      // A stricter schema replaces it.
      expect(
        (await client.put(`/v1/collections/${name}/schema`, { ...task, properties: { ...task.properties, title: { const: 'a' } } })).status,
      ).to.equal(200);
      expect((await client.post<Problem>(`/v1/collections/${name}/rows`, [{ title: 'b' }])).status).to.equal(422);
      expect((await client.delete(`/v1/collections/${name}/schema`)).status).to.equal(204);
      expect((await client.post(`/v1/collections/${name}/rows`, [{ title: 3 }])).status).to.equal(201);
      expect((await client.patch(`/v1/collections/${name}/rows/1`, { title: 4 })).status).to.equal(200);
    });

    it('is seen by every write of a collection made anew under the same name', async () => {
      const name = await collectionWith([], task);
      expect((await client.post<Problem>(`/v1/collections/${name}/rows`, [{ title: 1 }])).status).to.equal(422);
      expect((await client.delete(`/v1/collections/${name}`)).status).to.equal(204);
      expect((await client.post('/v1/collections', { name })).status).to.equal(201);
      expect((await client.post(`/v1/collections/${name}/rows`, [{ title: 1 }])).status).to.equal(201);
      expect((await client.patch(`/v1/collections/${name}/rows/1`, { title: 2 })).status).to.equal(200);
    });
  });

  describe('a schema set while writes race it', () => {
    it('never lets a row that breaks the committed schema in', async () => {
      // Rows enough that checking them takes a moment, then rounds of the schema set at once with
      // inserts of rows that break it (a number as title), sent by writers that saw the collection
      // schemaless: each insert commits before the schema, and the schema is refused over it, or after,
      // and the insert is refused.
      const name = await collectionWith(Array.from({ length: 1000 }, (_, i) => ({ title: `t${i}` })));
      const breaking = `/v1/collections/${name}/rows?limit=1000&${filter({ title: { $gte: 0 } })}`;
      const outcomes = { set: 0, refused: 0, rowsRefused: 0 };
      for (let round = 0; round < 12; round++) {
        // Sent first in every other round, the schema is more likely to win the race.
        const putFirst = round % 2 === 0 ? client.put<Problem>(`/v1/collections/${name}/schema`, task) : undefined;
        const inserts = Array.from({ length: 6 }, (_, i) => client.post(`/v1/collections/${name}/rows`, [{ title: i }]));
        const put = await (putFirst ?? client.put<Problem>(`/v1/collections/${name}/schema`, task));
        const statuses = (await Promise.all(inserts)).map(({ status }) => status);
        const stored = (await client.get<Row[]>(breaking)).body;
        if (put.status === 200) {
          outcomes.set++;
          expect(stored).to.deep.equal([]);
          expect((await client.delete(`/v1/collections/${name}/schema`)).status).to.equal(204);
        } else {
          outcomes.refused++;
          expect(put.body.code).to.equal('schema_conflict');
          // Those committed before the schema's check; others may have committed after it.
          expect(put.body.total).to.be.within(1, stored.length);
          for (const { id } of stored) expect((await client.delete(`/v1/collections/${name}/rows/${id}`)).status).to.equal(204);
        }
        expect(statuses.filter((status) => status === 201).length).to.equal(put.status === 200 ? 0 : stored.length);
        outcomes.rowsRefused += statuses.filter((status) => status === 422).length;
      }
      // Every round ended one way or the other; which, the race decided.
      expect(outcomes.set + outcomes.refused).to.equal(12);
    });

    it('answers every request within 3 s while writes that break it race the schema (20 rounds)', async () => {
      // Issue 51's rounds: 48 rows; the schema set at once with 48 writes that break it, in turn an
      // insert of two rows, a patch of a row and a patch by filter. The watchdog probes /health and
      // /health/ready meanwhile; before the fix, a patch that compiled the schema in its transaction
      // waited for an insert's compile, which waited for the writer that patch held: the service stalled
      // for a minute in round 1. The bound is well under that and over what a loaded host takes (a
      // request took 1,040 ms at load 12–15, with other suites running beside this one).
      const name = await collectionWith();
      const schema = { type: 'object', properties: { v: { type: 'integer' }, bad: { type: 'boolean' }, grp: { type: 'integer' } } };
      const timed = async <T>(request: Promise<T & { status: number }>, what: string) => {
        const started = performance.now();
        const response = await request;
        expect(performance.now() - started, what).to.be.below(3000);
        return response;
      };
      const outcomes = { set: 0, refused: 0 };
      for (let round = 0; round < 20; round++) {
        expect([204, 404]).to.include((await client.delete(`/v1/collections/${name}/schema`)).status);
        expect((await client.delete(`/v1/collections/${name}/rows?${filter({ bad: true })}`)).status).to.equal(200);
        const kept = await rowsOf(name);
        const missing = Array.from({ length: 48 - kept.length }, (_, i) => ({ v: i, bad: false, grp: i % 3 }));
        if (missing.length > 0) expect((await client.post(`/v1/collections/${name}/rows`, missing)).status).to.equal(201);
        const ids = (await rowsOf(name)).map((row) => row.id);
        const put = timed(client.put(`/v1/collections/${name}/schema`, schema), 'PUT …/schema');
        const writes = ids.map((id, i) =>
          i % 3 === 0
            ? timed(
                client.post(`/v1/collections/${name}/rows`, [
                  { v: 'x7', bad: true, grp: 9 },
                  { v: 'x7', bad: true, grp: 9 },
                ]),
                'POST …/rows',
              )
            : i % 3 === 1
              ? timed(client.patch(`/v1/collections/${name}/rows/${id}`, { v: 's7', bad: true }), 'PATCH …/rows/{id}')
              : timed(
                  client.patch(`/v1/collections/${name}/rows?${filter({ grp: 1, bad: false })}`, { v: 'y', bad: true }),
                  'PATCH …/rows?filter',
                ),
        );
        const [set, ...written] = await Promise.all([put, ...writes]);
        expect([200, 409]).to.include(set.status);
        for (const { status } of written) expect([200, 201, 422]).to.include(status);
        outcomes[set.status === 200 ? 'set' : 'refused']++;
        // Every stored row meets the schema stored.
        if ((await client.get(`/v1/collections/${name}/schema`)).status === 200) {
          for (const row of await rowsOf(name)) expect(row.v, `row ${row.id}`).to.be.a('number');
        }
      }
      expect(outcomes.set + outcomes.refused).to.equal(20);
    });

    it('is enforced by another instance at once, which saw the collection without it, and lifted there at once', async () => {
      const other = await startTestServer(
        { databaseUrl: server.databaseUrl },
        { backend, database: { url: server.databaseUrl, drop: async () => {} } },
      );
      try {
        const name = await collectionWith([{ title: 'a' }]);
        const elsewhere = new Client(other.url, client.key);
        // The other instance writes the collection first, schemaless.
        expect((await elsewhere.post(`/v1/collections/${name}/rows`, [{ title: 1 }])).status).to.equal(201);
        expect((await elsewhere.delete(`/v1/collections/${name}/rows/2`)).status).to.equal(204);
        expect((await client.put(`/v1/collections/${name}/schema`, task)).status).to.equal(200);
        expect((await elsewhere.post<Problem>(`/v1/collections/${name}/rows`, [{ title: 2 }])).status).to.equal(422);
        expect((await elsewhere.patch<Problem>(`/v1/collections/${name}/rows/1`, { title: 3 })).status).to.equal(422);
        expect((await elsewhere.patch<Problem>(`/v1/collections/${name}/rows?${filter({})}`, { title: 3 })).status).to.equal(422);
        expect((await rowsOf(name)).map((row) => row.title)).to.deep.equal(['a']);
        // Lifted by this instance: the other, which saw the schema last, lets the rows in.
        expect((await client.delete(`/v1/collections/${name}/schema`)).status).to.equal(204);
        expect((await elsewhere.post(`/v1/collections/${name}/rows`, [{ title: 4 }])).status).to.equal(201);
      } finally {
        await other.stop();
      }
    });
  });
});
