// The rows over HTTP: read, inserted, patched and deleted, on both backends.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Row = { id: number } & Record<string, unknown>;

describeEachBackend('rows', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;
  /** A fresh collection of the client's account, holding `rows`. */
  async function collectionWith(rows: object[] = []): Promise<string> {
    const name = `c${++collections}`;
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    if (rows.length > 0) expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
    return name;
  }
  const list = async (name: string, query = '') => (await client.get<Row[]>(`/v1/collections/${name}/rows${query}`)).body;

  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
  });
  after(() => server.stop());

  describe('POST …/rows', () => {
    it('stores a batch and answers 201 with the rows in request order, with increasing ids', async () => {
      const name = await collectionWith();
      const response = await client.post<Row[]>(`/v1/collections/${name}/rows`, [{ text: 'a' }, { text: 'b' }, { nested: { x: [1, 2] } }]);
      expect(response.status).to.equal(201);
      expect(response.body).to.deep.equal([
        { id: 1, text: 'a' },
        { id: 2, text: 'b' },
        { id: 3, nested: { x: [1, 2] } },
      ]);
      const next = await client.post<Row[]>(`/v1/collections/${name}/rows`, [{ text: 'c' }]);
      expect(next.body[0].id).to.equal(4);
    });

    it('accepts 1000 rows in one request', async () => {
      const name = await collectionWith();
      const rows = Array.from({ length: 1000 }, (_, i) => ({ i }));
      const response = await client.post<Row[]>(`/v1/collections/${name}/rows`, rows);
      expect(response.status).to.equal(201);
      expect(response.body.map((r) => r.id)).to.deep.equal(rows.map((_, i) => i + 1));
      expect((await client.get<{ row_count: number }>(`/v1/collections/${name}`)).body.row_count).to.equal(1000);
    });

    it('stores every value exactly, however it must be escaped, and answers it the same everywhere', async () => {
      const name = await collectionWith();
      const items = [
        {},
        { s: 'nul \u0000 and \u0001, "quotes", \\ backslash, \n\t\r, é, e\u0301, 😀, \u2028' },
        { lone: '\ud800 and \udfff' },
        { n: [0, -1.5, 1e21, 1e-7, 9007199254740991], deep: { a: [{ b: null }], '': true } },
        { 'key "quoted"': 1, 'key\u0000nul': 2, '{}': '{}', '[': ']' },
      ];
      const response = await client.post<Row[]>(`/v1/collections/${name}/rows`, items);
      expect(response.status).to.equal(201);
      const expected = items.map((item, index) => ({ id: index + 1, ...item }));
      expect(response.body).to.deep.equal(expected);
      expect(await list(name)).to.deep.equal(expected);
      for (const row of expected) expect((await client.get(`/v1/collections/${name}/rows/${row.id}`)).body).to.deep.equal(row);
      // And each insert event carries its row, as the feed sends it.
      const { id } = await server.store.knex('collections').where({ name }).first('id');
      const events = await server.store.readEvents(Number(id), { after: 0, limit: 100 });
      expect(events.map((event) => event.row)).to.deep.equal(expected);
      // Stored as JSON.stringify wrote each row, byte for byte (a patch sets fields in that text).
      const stored = await server.store.knex('rows').where({ collection_id: id }).orderBy('id').select('data');
      expect(stored.map((row) => row.data)).to.deep.equal(items.map((item) => JSON.stringify(item)));
    });

    it('reads numbers as IEEE 754 doubles: past their precision rounded, too small for one 0', async () => {
      const name = await collectionWith();
      const raw = '[{"tiny":1e-400,"minus":-1e-400,"long":0.10000000000000000001,"big":12345678901234567890}]';
      const response = await client.request<Row[]>('POST', `/v1/collections/${name}/rows`, {
        raw,
        headers: { 'content-type': 'application/json' },
      });
      expect(response.status).to.equal(201);
      const expected = { id: 1, tiny: 0, minus: 0, long: 0.1, big: 12345678901234567000 };
      expect(response.body).to.deep.equal([expected]);
      expect(response.text).to.equal('[{"id":1,"tiny":0,"minus":0,"long":0.1,"big":12345678901234567000}]');
      expect((await client.get(`/v1/collections/${name}/rows/1`)).body).to.deep.equal(expected);
    });

    it('never reuses the id of a deleted row', async () => {
      const name = await collectionWith([{}, {}, {}]);
      await client.delete(`/v1/collections/${name}/rows/3`);
      const response = await client.post<Row[]>(`/v1/collections/${name}/rows`, [{}]);
      expect(response.body[0].id).to.equal(4);
    });

    it('answers 404 for an unknown collection', async () => {
      const response = await client.post('/v1/collections/missing/rows', [{}]);
      expect(response.status).to.equal(404);
      expect(response.body).to.include({ code: 'not_found' });
    });

    it('keeps concurrent batches whole and their ids unique', async () => {
      const name = await collectionWith();
      const batches = Array.from({ length: 20 }, (_, b) => Array.from({ length: 25 }, (_, i) => ({ b, i })));
      const responses = await Promise.all(batches.map((batch) => client.post<Row[]>(`/v1/collections/${name}/rows`, batch)));
      for (const response of responses) {
        const ids = response.body.map((r) => r.id);
        expect(ids).to.deep.equal(
          ids.map((_, i) => ids[0] + i),
          'a batch takes consecutive ids',
        );
      }
      const all = responses.flatMap((r) => r.body.map((row) => row.id));
      expect(new Set(all).size).to.equal(500);
      expect((await list(name, '?limit=1000')).length).to.equal(500);
    });
  });

  describe('GET …/rows', () => {
    it('answers rows by id ascending, 100 at most, by default', async () => {
      const name = await collectionWith(Array.from({ length: 150 }, (_, i) => ({ i })));
      const rows = await list(name);
      expect(rows).to.have.length(100);
      expect(rows[0]).to.deep.equal({ id: 1, i: 0 });
      expect(rows[99]).to.deep.equal({ id: 100, i: 99 });
    });

    it('pages with limit and offset', async () => {
      const name = await collectionWith(Array.from({ length: 10 }, (_, i) => ({ i })));
      expect((await list(name, '?limit=3&offset=4')).map((r) => r.id)).to.deep.equal([5, 6, 7]);
      expect((await list(name, '?limit=0')).length).to.equal(0);
      expect((await list(name, '?offset=10')).length).to.equal(0);
      expect((await list(name, '?order=desc&limit=2')).map((r) => r.id)).to.deep.equal([10, 9]);
    });

    it('answers an empty array for an empty collection and 404 for an unknown one', async () => {
      expect(await list(await collectionWith())).to.deep.equal([]);
      expect((await client.get('/v1/collections/missing/rows')).status).to.equal(404);
    });

    describe('ordering by a field', () => {
      // Every JSON type, a missing field and a null, in the order contract.md defines for asc.
      const values: [string, unknown][] = [
        ['-10.5', -10.5],
        ['-2', -2],
        ['0', 0],
        ['2', 2],
        ['10', 10],
        ['1e21', 1e21],
        ['""', ''],
        ['"B"', 'B'],
        ['"a"', 'a'],
        ['"aa"', 'aa'],
        ['"é"', 'é'],
        ['"😀"', '😀'],
        ['false', false],
        ['true', true],
      ];
      let name: string;
      let ids: Map<string, number>;
      before(async () => {
        // Stored shuffled, with an object, an array, a missing field and a null, and ties.
        const rows = [
          ...values.map(([label, value]) => ({ label, v: value })),
          { label: 'object', v: { a: 1 } },
          { label: 'array', v: [1] },
          { label: 'missing' },
          { label: 'null', v: null },
          { label: 'tie-2', v: 2 },
        ].sort((a, b) => String(a.label).localeCompare(String(b.label)));
        name = await collectionWith(rows);
        ids = new Map((await list(name, '?limit=1000')).map((r) => [r.label as string, r.id]));
      });
      const labels = async (query: string) => (await list(name, query)).map((r) => String(r.label));

      it('sorts ascending: numbers, strings by code point, false, true, objects and arrays, then missing and null', async () => {
        const got = await labels('?order_by=v&order=asc');
        const scalars = values.map(([label]) => label);
        scalars.splice(scalars.indexOf('2') + 1, 0, 'tie-2');
        const [first, second] = ids.get('object')! < ids.get('array')! ? ['object', 'array'] : ['array', 'object'];
        const [absent1, absent2] = ids.get('missing')! < ids.get('null')! ? ['missing', 'null'] : ['null', 'missing'];
        // Equal values tie-break by id in the same direction.
        if (ids.get('tie-2')! < ids.get('2')!) scalars.splice(scalars.indexOf('2'), 2, 'tie-2', '2');
        expect(got).to.deep.equal([...scalars, first, second, absent1, absent2]);
      });

      it('sorts descending in reverse, but still with missing and null last', async () => {
        const asc = await labels('?order_by=v&order=asc');
        const desc = await labels('?order_by=v&order=desc');
        expect(desc.slice(0, -2)).to.deep.equal(asc.slice(0, -2).reverse());
        expect(desc.slice(-2)).to.have.members(['missing', 'null']);
        const [a, b] = desc.slice(-2);
        expect(ids.get(a)!).to.be.greaterThan(ids.get(b)!, 'ties break by id descending');
      });

      it('pages through an ordered result without skipping or repeating', async () => {
        const whole = await labels('?order_by=v&order=desc');
        const pages = [];
        for (let offset = 0; offset < whole.length; offset += 4)
          pages.push(...(await labels(`?order_by=v&order=desc&limit=4&offset=${offset}`)));
        expect(pages).to.deep.equal(whole);
      });

      it('orders by a field no row has as by id', async () => {
        const got = await list(name, '?order_by=nobody&order=desc&limit=1000');
        expect(got.map((r) => r.id)).to.deep.equal([...ids.values()].sort((a, b) => b - a));
      });
    });

    it('orders by field names that need quoting', async () => {
      const name = await collectionWith([
        { 'a.b': 2, 'say "hi"': 'b', '$[0]': 1 },
        { 'a.b': 1, 'say "hi"': 'a', '$[0]': 2 },
      ]);
      expect((await list(name, `?order_by=${encodeURIComponent('a.b')}`)).map((r) => r.id)).to.deep.equal([2, 1]);
      expect((await list(name, `?order_by=${encodeURIComponent('say "hi"')}`)).map((r) => r.id)).to.deep.equal([2, 1]);
      expect((await list(name, `?order_by=${encodeURIComponent('$[0]')}`)).map((r) => r.id)).to.deep.equal([1, 2]);
    });

    it('reads a ? inside a query value as part of it, sent as is or encoded', async () => {
      const name = await collectionWith([
        { 'a?b': 2, ab: 1 },
        { 'a?b': 1, ab: 2 },
      ]);
      expect((await list(name, '?order_by=a?b')).map((r) => r.id)).to.deep.equal([2, 1]);
      expect((await list(name, '?order_by=a%3Fb')).map((r) => r.id)).to.deep.equal([2, 1]);
      expect((await list(name, '?order_by=ab')).map((r) => r.id)).to.deep.equal([1, 2]);
    });

    it('keeps fields named __proto__ and constructor as the client gave them', async () => {
      // JSON.parse makes `__proto__` an own property, as the service must read it; a literal would set the prototype.
      const rows = JSON.parse('[{"__proto__": {"polluted": true}, "constructor": 2}, {"__proto__": 1, "constructor": 1}]');
      const name = await collectionWith();
      const response = await client.post<Row[]>(`/v1/collections/${name}/rows`, rows);
      expect(response.status).to.equal(201);
      expect(response.text).to.equal('[{"id":1,"__proto__":{"polluted":true},"constructor":2},{"id":2,"__proto__":1,"constructor":1}]');
      expect((await list(name, '?order_by=__proto__')).map((r) => r.id)).to.deep.equal([2, 1]);
      expect((await list(name, '?order_by=constructor')).map((r) => r.id)).to.deep.equal([2, 1]);
      const patched = await client.patch<Row>(`/v1/collections/${name}/rows/2`, JSON.parse('{"__proto__": {"x": 1}}'));
      expect(patched.status).to.equal(200);
      expect(patched.text).to.equal('{"id":2,"__proto__":{"x":1},"constructor":1}');
      expect((await client.get(`/v1/collections/${name}/rows/2`)).text).to.equal(patched.text);
      expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
    });
  });

  describe('GET …/rows/{id}', () => {
    it('answers the row with its id and every field', async () => {
      const name = await collectionWith([{ text: 'hello', deep: { list: [1, { a: null }] } }]);
      const response = await client.get(`/v1/collections/${name}/rows/1`);
      expect(response.status).to.equal(200);
      expect(response.body).to.deep.equal({ id: 1, text: 'hello', deep: { list: [1, { a: null }] } });
    });

    it('answers 404 for an absent row, a deleted one, and one of another collection', async () => {
      const name = await collectionWith([{}, {}]);
      const other = await collectionWith([{}, {}, {}]);
      await client.delete(`/v1/collections/${name}/rows/2`);
      for (const path of [
        `/v1/collections/${name}/rows/2`,
        `/v1/collections/${name}/rows/3`,
        `/v1/collections/${name}/rows/9007199254740991`,
      ]) {
        expect((await client.get(path)).status, path).to.equal(404);
      }
      expect((await client.get(`/v1/collections/${other}/rows/3`)).status).to.equal(200);
    });
  });

  describe('PATCH …/rows/{id}', () => {
    it('merges at the top level: given fields replace, null stores null, nested objects are replaced whole', async () => {
      const name = await collectionWith([{ keep: 1, change: 'old', nested: { a: 1, b: 2 }, nulled: 'x' }]);
      const response = await client.patch(`/v1/collections/${name}/rows/1`, { change: 'new', nested: { c: 3 }, nulled: null, added: [1] });
      expect(response.status).to.equal(200);
      const expected = { id: 1, keep: 1, change: 'new', nested: { c: 3 }, nulled: null, added: [1] };
      expect(response.body).to.deep.equal(expected);
      expect((await client.get(`/v1/collections/${name}/rows/1`)).body).to.deep.equal(expected);
    });

    it('answers and stores the text JSON.stringify gives of the merged row, byte for byte, whatever the values and names', async () => {
      const old = JSON.parse('{"2":"two","n":1.5,"s":"é\\u2028\\ud800😀\\"\\\\\\n\\u0000","deep":{"a":[1e21,-0,0.1]},"__proto__":{"p":1}}');
      const patches = [
        { n: 0.30000000000000004, s: 'x', added: -1e-300 }, // set by field, in place and at the end
        { deep: { b: null }, big: 12345678901234567000, t: '\ud800\u0000"' },
        JSON.parse('{"__proto__":{"q":2},"emoji":"😀"}'),
        { '7': 'an array index: JavaScript puts it first', '10': 1 }, // made in Node
        { 'say "hi"': true, 'a\\b': [null] }, // made in Node: no JSON path spells them
      ];
      const name = await collectionWith();
      const inserted = await client.post<Row[]>(`/v1/collections/${name}/rows`, [old]);
      expect(inserted.status).to.equal(201);
      expect(inserted.text).to.equal(`[{"id":1,${JSON.stringify(old).slice(1)}]`);
      // The row is its id, then its fields as JavaScript orders them.
      let fields = old;
      for (const patch of patches) {
        fields = { ...fields, ...patch };
        const expected = `{"id":1,${JSON.stringify(fields).slice(1)}`;
        const response = await client.patch<Row>(`/v1/collections/${name}/rows/1`, patch);
        expect(response.status).to.equal(200);
        expect(response.text).to.equal(expected);
        expect((await client.get(`/v1/collections/${name}/rows/1`)).text).to.equal(expected);
      }
    });

    it('sets every number of fields, by path up to sixteen and made in Node past them, each patch its row as JSON.stringify gives it', async () => {
      const name = await collectionWith([{ keep: true, f3: 'old' }]);
      let fields: Record<string, unknown> = { keep: true, f3: 'old' };
      for (let count = 1; count <= 18; count++) {
        // Half of them fields the row has, half new ones, each value of another JSON type.
        const patch = Object.fromEntries(
          Array.from({ length: count }, (_, i) => [`f${(count + i) % 20}`, [count, `s${i}`, null, { i }, [i], i % 2 === 0][i % 6]]),
        );
        fields = { ...fields, ...patch };
        const response = await client.patch<Row>(`/v1/collections/${name}/rows/1`, patch);
        expect(response.status).to.equal(200);
        expect(response.text, `${count} fields`).to.equal(`{"id":1,${JSON.stringify(fields).slice(1)}`);
        expect((await client.get(`/v1/collections/${name}/rows/1`)).text).to.equal(response.text);
      }
    });

    it('adds and then replaces a field whose name holds a lone surrogate, stored as JSON.stringify writes it', async () => {
      const name = await collectionWith([{ a: 1 }]);
      const path = `/v1/collections/${name}/rows/1`;
      const lone = 'k\udbffz';
      for (const raw of ['{"k\\udbffz":1}', '{"k\\udbffz":2}']) {
        const response = await client.request<Row>('PATCH', path, { raw, headers: { 'content-type': 'application/json' } });
        expect(response.status, response.text).to.equal(200);
        expect(response.body).to.deep.equal({ id: 1, a: 1, ...JSON.parse(raw) });
      }
      const expected = { id: 1, a: 1, [lone]: 2 };
      const read = await client.get<Row>(path);
      expect(read.body).to.deep.equal(expected);
      expect(Object.keys(read.body).filter((key) => key.startsWith('k'))).to.deep.equal([lone]);
      expect(read.text).to.equal(JSON.stringify(expected));
      expect((await list(name)).map((row) => JSON.stringify(row))).to.deep.equal([JSON.stringify(expected)]);
      // The stored text is the one JSON.stringify gives, the name escaped as `\udbff`, not its bytes.
      const { data } = await server.store
        .knex('rows')
        .join('collections', 'collections.id', 'rows.collection_id')
        .where({ 'collections.name': name, 'rows.id': 1 })
        .first('rows.data');
      expect(data).to.equal(JSON.stringify({ a: 1, [lone]: 2 }));
    });

    it('answers 404 for an absent row or collection, each saying which, and 400 for a body with id', async () => {
      const name = await collectionWith([{}]);
      const absentRow = await client.patch(`/v1/collections/${name}/rows/2`, { a: 1 });
      expect(absentRow.status).to.equal(404);
      expect(absentRow.body).to.include({ detail: `There is no row 2 in collection ${name}.` });
      const absentCollection = await client.patch('/v1/collections/missing/rows/1', { a: 1 });
      expect(absentCollection.status).to.equal(404);
      expect(absentCollection.body).to.include({ detail: 'There is no collection named missing.' });
      const response = await client.patch(`/v1/collections/${name}/rows/1`, { id: 5 });
      expect(response.status).to.equal(400);
      expect(response.body).to.include({ code: 'validation_failed' });
      expect((await client.get(`/v1/collections/${name}/rows/1`)).body).to.deep.equal({ id: 1 });
    });
  });

  describe('DELETE …/rows/{id}', () => {
    it('answers 204, then 404 for the same row', async () => {
      const name = await collectionWith([{ a: 1 }, { a: 2 }]);
      expect((await client.delete(`/v1/collections/${name}/rows/1`)).status).to.equal(204);
      expect((await client.delete(`/v1/collections/${name}/rows/1`)).status).to.equal(404);
      expect(await list(name)).to.deep.equal([{ id: 2, a: 2 }]);
    });
  });

  describe('tenancy', () => {
    it("never lets one account read, change or delete another's rows", async () => {
      const name = await collectionWith([{ secret: true }]);
      const stranger = await server.client();
      const attempts = [
        () => stranger.get(`/v1/collections/${name}/rows`),
        () => stranger.get(`/v1/collections/${name}/rows/1`),
        () => stranger.post(`/v1/collections/${name}/rows`, [{}]),
        () => stranger.patch(`/v1/collections/${name}/rows/1`, { secret: false }),
        () => stranger.delete(`/v1/collections/${name}/rows/1`),
        () => stranger.delete(`/v1/collections/${name}`),
      ];
      for (const attempt of attempts) expect((await attempt()).status).to.equal(404);
      expect(await list(name)).to.deep.equal([{ id: 1, secret: true }]);
    });
  });
});
