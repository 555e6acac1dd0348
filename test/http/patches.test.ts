// PATCH of rows in each format its Content-Type names (openapi.yaml, updateRow and updateRows; docs/patches.md):
// today's top-level merge, JSON Merge Patch (RFC 7396), JSON Patch (RFC 6902) with `increment`.
import { expect } from 'chai';
import { jsonPatchExamples, mergePatchExamples } from '../patches/rfc-examples.ts';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Row = { id: number } & Record<string, unknown>;
type Problem = { code: string; detail: string; errors?: { in: string; name: string; message: string }[] };

const JSON_TYPE = 'application/json';
const MERGE_PATCH = 'application/merge-patch+json';
const JSON_PATCH = 'application/json-patch+json';
const ACCEPT_PATCH = `${JSON_TYPE}, ${MERGE_PATCH}, ${JSON_PATCH}`;
const filter = (value: object) => `filter=${encodeURIComponent(JSON.stringify(value))}`;

/** A PATCH of one row, or of a collection's rows by filter: what it sends, and what it must answer. */
interface Scenario {
  name: string;
  /** The row's fields before (its text as sent: `__proto__` stays a field). */
  row: string;
  type: string;
  body?: unknown;
  /** Sent as it is instead of `body` (`__proto__` as a member of the JSON text). */
  raw?: string;
  status: number;
  /** 200: the row after, as its JSON text. */
  after?: string;
  /** 4xx: its problem code, and the names of its errors. */
  code?: string;
  places?: string[];
}

// One scenario a line, so that the table reads as a table.
// biome-ignore format: a table
const scenarios: Scenario[] = [
  { name: 'a top-level merge replaces each field whole and stores null', row: '{"a":{"y":1},"b":1,"c":1}', type: JSON_TYPE, body: { a: { x: 1 }, b: null }, status: 200, after: '{"a":{"x":1},"b":null,"c":1}' },
  { name: 'a merge patch merges nested objects and removes a field for null (RFC 7396 §3)', row: '{"title":"Goodbye!","author":{"givenName":"John","familyName":"Doe"},"tags":["example","sample"],"content":"This will be unchanged"}', type: MERGE_PATCH, body: { title: 'Hello!', phoneNumber: '+01-123-456-7890', author: { familyName: null }, tags: ['example'] }, status: 200, after: '{"title":"Hello!","author":{"givenName":"John"},"tags":["example"],"content":"This will be unchanged","phoneNumber":"+01-123-456-7890"}' },
  { name: 'a merge patch sets and removes __proto__ and constructor as fields', row: '{"__proto__":{"a":1,"b":2},"constructor":1}', type: MERGE_PATCH, raw: '{"__proto__":{"a":null},"constructor":null,"x":{"__proto__":{"p":true}}}', status: 200, after: '{"__proto__":{"b":2},"x":{"__proto__":{"p":true}}}' },
  { name: 'a JSON Patch inserts an array element (RFC 6902 A.2)', row: '{"foo":["bar","baz"]}', type: JSON_PATCH, body: [{ op: 'add', path: '/foo/1', value: 'qux' }], status: 200, after: '{"foo":["bar","qux","baz"]}' },
  { name: 'a JSON Patch moves a value (A.6)', row: '{"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}', type: JSON_PATCH, body: [{ op: 'move', from: '/foo/waldo', path: '/qux/thud' }], status: 200, after: '{"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}}' },
  { name: 'a JSON Patch tests, increments, removes, copies and appends in order', row: '{"status":"open","likes":41,"draft":true,"tags":["a"]}', type: JSON_PATCH, body: [{ op: 'test', path: '/status', value: 'open' }, { op: 'test', path: '/id', value: 1 }, { op: 'increment', path: '/likes', value: 1 }, { op: 'increment', path: '/views', value: -2 }, { op: 'remove', path: '/draft' }, { op: 'copy', from: '/tags/0', path: '/first' }, { op: 'add', path: '/tags/-', value: 'b' }], status: 200, after: '{"status":"open","likes":42,"tags":["a","b"],"views":-2,"first":"a"}' },
  { name: 'a JSON Patch adds __proto__ and constructor as fields', row: '{"__proto__":{"x":1}}', type: JSON_PATCH, body: [{ op: 'add', path: '/__proto__/y', value: 2 }, { op: 'add', path: '/constructor', value: { prototype: 1 } }], status: 200, after: '{"__proto__":{"x":1,"y":2},"constructor":{"prototype":1}}' },
  { name: 'a JSON Patch replaces the whole row but its id', row: '{"a":1}', type: JSON_PATCH, body: [{ op: 'replace', path: '', value: { b: 2 } }], status: 200, after: '{"b":2}' },
  { name: 'a failing test (A.9)', row: '{"baz":"qux"}', type: JSON_PATCH, body: [{ op: 'test', path: '/baz', value: 'bar' }], status: 409, code: 'patch_conflict', places: ['/0'] },
  { name: 'an add to a nonexistent target (A.12), after an operation that applied', row: '{"foo":"bar"}', type: JSON_PATCH, body: [{ op: 'add', path: '/a', value: 1 }, { op: 'add', path: '/baz/bat', value: 'qux' }], status: 409, code: 'patch_conflict', places: ['/1'] },
  { name: 'a path into a string', row: '{"a":"text"}', type: JSON_PATCH, body: [{ op: 'replace', path: '/a/b', value: 1 }], status: 409, code: 'patch_conflict', places: ['/0'] },
  { name: 'a remove of what is not there', row: '{"a":1}', type: JSON_PATCH, body: [{ op: 'remove', path: '/b' }], status: 409, code: 'patch_conflict', places: ['/0'] },
  { name: 'an array index out of range', row: '{"a":[1]}', type: JSON_PATCH, body: [{ op: 'add', path: '/a/5', value: 1 }], status: 409, code: 'patch_conflict', places: ['/0'] },
  { name: 'an increment of a string', row: '{"likes":"many"}', type: JSON_PATCH, body: [{ op: 'increment', path: '/likes', value: 1 }], status: 409, code: 'patch_conflict', places: ['/0'] },
  { name: 'a test of the wrong id', row: '{"a":1}', type: JSON_PATCH, body: [{ op: 'test', path: '/id', value: 2 }], status: 409, code: 'patch_conflict', places: ['/0'] },
  { name: 'a JSON Patch that is no array', row: '{"a":1}', type: JSON_PATCH, body: { op: 'remove', path: '/a' }, status: 400, code: 'validation_failed', places: [''] },
  { name: 'an operation without path', row: '{"a":1}', type: JSON_PATCH, body: [{ op: 'remove', path: '/a' }, { op: 'add', value: 1 }], status: 400, code: 'validation_failed', places: ['/1/path'] },
  { name: 'an unknown op', row: '{"a":1}', type: JSON_PATCH, body: [{ op: 'merge', path: '/a' }], status: 400, code: 'validation_failed', places: ['/0/op'] },
  { name: 'a path that is no JSON Pointer', row: '{"a":1}', type: JSON_PATCH, body: [{ op: 'remove', path: 'a' }], status: 400, code: 'validation_failed', places: ['/0/path'] },
  { name: 'an increment by a string', row: '{"a":1}', type: JSON_PATCH, body: [{ op: 'increment', path: '/a', value: '1' }], status: 400, code: 'validation_failed', places: ['/0/value'] },
  { name: 'a JSON Patch that replaces id', row: '{"a":1}', type: JSON_PATCH, body: [{ op: 'replace', path: '/id', value: 9 }], status: 400, code: 'validation_failed', places: ['/0/path'] },
  { name: 'a JSON Patch that moves id away', row: '{"a":1}', type: JSON_PATCH, body: [{ op: 'move', from: '/id', path: '/b' }], status: 400, code: 'validation_failed', places: ['/0/from'] },
  { name: 'a whole row that names id', row: '{"a":1}', type: JSON_PATCH, body: [{ op: 'replace', path: '', value: { id: 2 } }], status: 400, code: 'validation_failed', places: ['/0/value/id'] },
  { name: 'a merge patch that names id', row: '{"a":1}', type: MERGE_PATCH, body: { id: null }, status: 400, code: 'validation_failed', places: ['/id'] },
  { name: 'a merge patch that is no object', row: '{"a":1}', type: MERGE_PATCH, body: ['a'], status: 400, code: 'validation_failed', places: [''] },
];

describeEachBackend('patches', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;
  async function collectionWith(rows: object[] | string = []): Promise<string> {
    const name = `p${++collections}`;
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    const raw = typeof rows === 'string' ? rows : JSON.stringify(rows);
    if (raw !== '[]') {
      const inserted = await client.request('POST', `/v1/collections/${name}/rows`, { raw, headers: { 'content-type': JSON_TYPE } });
      expect(inserted.status).to.equal(201);
    }
    return name;
  }
  const send = <T = Row>(path: string, type: string, body: unknown, headers: Record<string, string> = {}) =>
    client.request<T>('PATCH', path, {
      raw: typeof body === 'string' ? body : JSON.stringify(body),
      headers: { 'content-type': type, ...headers },
    });
  const seqOf = async (name: string) => (await client.get<{ seq: number }>(`/v1/collections/${name}`)).body.seq;
  async function eventsOf(name: string) {
    const { id } = await server.store.knex('collections').where({ name }).first('id');
    return server.store.readEvents(Number(id), { after: 0, limit: 1000 });
  }

  before(async () => {
    server = await startTestServer({ sortIndexMinRows: 0 }, { backend });
    client = await server.client();
  });
  after(() => server.stop());

  describe('PATCH …/rows/{id}', () => {
    for (const scenario of scenarios) {
      const { name, row, type, status, code, places } = scenario;
      it(`${status === 200 ? 'applies' : `answers ${status} ${code} to`} ${name}`, async () => {
        const collection = await collectionWith(`[${row}]`);
        const path = `/v1/collections/${collection}/rows/1`;
        const before = await client.get(path);
        const seq = await seqOf(collection);
        const response = await send<Problem>(path, type, scenario.raw ?? JSON.stringify(scenario.body));
        expect(response.status, response.text).to.equal(status);
        const now = await client.get(path);
        if (status === 200) {
          expect(response.text).to.equal(`{"id":1,${(scenario.after as string).slice(1)}`);
          expect(now.text).to.equal(response.text);
          expect(response.headers.get('etag')).to.equal(now.headers.get('etag'));
          expect(response.headers.get('accept-patch')).to.equal(ACCEPT_PATCH);
          expect(await seqOf(collection)).to.equal(seq + 1);
          const [event] = (await eventsOf(collection)).slice(-1);
          expect(event).to.include({ type: 'update' });
          return;
        }
        expect(response.body.code).to.equal(code);
        expect((response.body.errors ?? []).map((error) => error.name)).to.include.members(places as string[]);
        if (code === 'patch_conflict') {
          expect(response.body.errors).to.have.length(1);
          expect(response.body.detail).to.match(/row 1/);
        }
        // Nothing written: the row, its version and the collection's events as they were.
        expect(now.text).to.equal(before.text);
        expect(now.headers.get('etag')).to.equal(before.headers.get('etag'));
        expect(await seqOf(collection)).to.equal(seq);
      });
    }

    it('names the three formats in Accept-Patch on GET, HEAD, 304, PATCH and the 415 of both PATCHes', async () => {
      const name = await collectionWith([{ a: 1 }]);
      const path = `/v1/collections/${name}/rows/1`;
      const got = await client.get(path);
      expect(got.headers.get('accept-patch')).to.equal(ACCEPT_PATCH);
      expect((await client.request('HEAD', path)).headers.get('accept-patch')).to.equal(ACCEPT_PATCH);
      const held = await client.get(path, { headers: { 'if-none-match': got.headers.get('etag') as string } });
      expect(held.status).to.equal(304);
      expect(held.headers.get('accept-patch')).to.equal(ACCEPT_PATCH);
      for (const target of [path, `/v1/collections/${name}/rows?${filter({})}`]) {
        const refused = await send<Problem>(target, 'text/plain', '{"a":2}');
        expect(refused.status).to.equal(415);
        expect(refused.body.code).to.equal('unsupported_media_type');
        expect(refused.headers.get('accept-patch')).to.equal(ACCEPT_PATCH);
      }
      expect((await client.get<Row>(path)).body).to.deep.equal({ id: 1, a: 1 });
    });

    it('takes application/json, which generated clients send unless told otherwise; fetch’s label for an unnamed body, or none, is 415', async () => {
      const name = await collectionWith([{ n: 1 }]);
      const path = `/v1/collections/${name}/rows/1`;
      for (const target of [path, `/v1/collections/${name}/rows?${filter({})}`]) {
        // A string body with no type named: fetch labels it text/plain;charset=UTF-8. Then bytes unlabelled.
        for (const raw of ['{"n":2}', Buffer.from('{"n":2}')]) {
          const refused = await client.request<Problem>('PATCH', target, { raw });
          expect(refused.status, refused.text).to.equal(415);
          expect(refused.body.code).to.equal('unsupported_media_type');
          expect(refused.headers.get('accept-patch')).to.equal(ACCEPT_PATCH);
        }
      }
      expect((await client.get<Row>(path)).body).to.deep.equal({ id: 1, n: 1 });
      const merged = await send(path, JSON_TYPE, { n: 2 });
      expect(merged.status, merged.text).to.equal(200);
      expect(merged.body).to.deep.equal({ id: 1, n: 2 });
    });

    it('reads the media type with parameters and in any case', async () => {
      const name = await collectionWith([{ n: 1 }]);
      const response = await send(`/v1/collections/${name}/rows/1`, 'Application/JSON-Patch+JSON; charset=utf-8', [
        { op: 'increment', path: '/n', value: 2 },
      ]);
      expect(response.status, response.text).to.equal(200);
      expect(response.body).to.deep.equal({ id: 1, n: 3 });
    });

    it('checks the row as patched against the collection’s schema: 422 row_invalid, nothing written', async () => {
      const name = await collectionWith([{ likes: 1 }]);
      const schema = { type: 'object', properties: { likes: { type: 'number' } }, required: ['likes'] };
      expect((await client.put(`/v1/collections/${name}/schema`, schema)).status).to.equal(200);
      const path = `/v1/collections/${name}/rows/1`;
      for (const [type, body] of [
        [JSON_PATCH, [{ op: 'replace', path: '/likes', value: 'x' }]],
        [JSON_PATCH, [{ op: 'remove', path: '/likes' }]],
        [MERGE_PATCH, { likes: null }],
      ] as const) {
        const refused = await send<Problem>(path, type, body);
        expect(refused.status, refused.text).to.equal(422);
        expect(refused.body.code).to.equal('row_invalid');
      }
      expect((await send(path, JSON_PATCH, [{ op: 'increment', path: '/likes', value: 1 }])).body).to.deep.equal({ id: 1, likes: 2 });
      expect((await client.get(path)).body).to.deep.equal({ id: 1, likes: 2 });
    });

    for (const [type, body] of [
      [JSON_TYPE, { n: 5 }],
      [MERGE_PATCH, { n: 5 }],
      [JSON_PATCH, [{ op: 'replace', path: '/n', value: 5 }]],
    ] as const) {
      it(`patches under If-Match with ${type}: 412 for a version that is not the row's`, async () => {
        const name = await collectionWith([{ n: 1 }]);
        const path = `/v1/collections/${name}/rows/1`;
        const etag = (await client.get(path)).headers.get('etag') as string;
        const patched = await send(path, type, body, { 'if-match': etag });
        expect(patched.status, patched.text).to.equal(200);
        const stale = await send<Problem>(path, type, body, { 'if-match': etag });
        expect(stale.status).to.equal(412);
        expect(stale.body.code).to.equal('precondition_failed');
      });

      it(`answers a retry with the same Idempotency-Key with ${type} as the first, writing once`, async () => {
        const name = await collectionWith([{ n: 1 }]);
        const path = `/v1/collections/${name}/rows/1`;
        const key = `retry-${type}-${backend}`;
        const increment = type === JSON_PATCH ? [{ op: 'increment', path: '/n', value: 4 }] : body;
        const first = await send(path, type, increment, { 'idempotency-key': key });
        const retry = await send(path, type, increment, { 'idempotency-key': key });
        expect(first.status).to.equal(200);
        expect(retry.status).to.equal(200);
        expect(retry.headers.get('idempotent-replayed')).to.equal('true');
        expect(retry.text).to.equal(first.text);
        expect(retry.headers.get('etag')).to.equal(first.headers.get('etag'));
        expect((await client.get(path)).body).to.deep.equal({ id: 1, n: 5 });
        expect(await seqOf(name)).to.equal(2);
      });
    }

    it('takes the same body sent as another format with the same Idempotency-Key for another request (422)', async () => {
      const name = await collectionWith([{ n: 1 }]);
      const path = `/v1/collections/${name}/rows/1`;
      expect((await send(path, JSON_TYPE, { n: null }, { 'idempotency-key': 'formats' })).status).to.equal(200);
      const other = await send<Problem>(path, MERGE_PATCH, { n: null }, { 'idempotency-key': 'formats' });
      expect(other.status).to.equal(422);
      expect(other.body.code).to.equal('idempotency_key_reused');
    });

    it('counts 100 concurrent increments of one field exactly, each an update event', async () => {
      const name = await collectionWith([{ likes: 7, other: 'kept' }]);
      const path = `/v1/collections/${name}/rows/1`;
      const seq = await seqOf(name);
      const responses = await Promise.all(
        Array.from({ length: 100 }, () => send<Row>(path, JSON_PATCH, [{ op: 'increment', path: '/likes', value: 1 }])),
      );
      expect(responses.map((response) => response.status)).to.deep.equal(Array(100).fill(200));
      // Each answer is the row as its own increment left it: every count from 8 to 107 once.
      expect(responses.map((response) => response.body.likes).sort((a, b) => Number(a) - Number(b))).to.deep.equal(
        Array.from({ length: 100 }, (_, n) => 8 + n),
      );
      expect((await client.get(path)).body).to.deep.equal({ id: 1, likes: 107, other: 'kept' });
      expect(await seqOf(name)).to.equal(seq + 100);
      const updates = (await eventsOf(name)).filter((event) => event.type === 'update');
      expect(updates).to.have.length(100);
      expect(updates.map((event) => (event.row as Row).likes)).to.deep.equal(Array.from({ length: 100 }, (_, n) => 8 + n));
    });

    it('re-keys a sorted field a JSON Patch changes, inside the field or by replacing the whole row', async () => {
      const name = await collectionWith([{ score: 1 }, { score: 2 }, { score: 3 }]);
      const order = async () =>
        (await client.get<Row[]>(`/v1/collections/${name}/rows?order_by=score&order=desc`)).body.map((row) => row.id);
      expect(await order()).to.deep.equal([3, 2, 1]);
      expect((await send(`/v1/collections/${name}/rows/1`, JSON_PATCH, [{ op: 'increment', path: '/score', value: 10 }])).status).to.equal(
        200,
      );
      expect(await order()).to.deep.equal([1, 3, 2]);
      expect(
        (await send(`/v1/collections/${name}/rows/3`, JSON_PATCH, [{ op: 'replace', path: '', value: { score: 0 } }])).status,
      ).to.equal(200);
      expect(await order()).to.deep.equal([1, 2, 3]);
      expect((await send(`/v1/collections/${name}/rows/2`, MERGE_PATCH, { score: null })).status).to.equal(200);
      expect((await client.get<Row[]>(`/v1/collections/${name}/rows?order_by=score&order=desc`)).body.map((row) => row.id)).to.have.members(
        [1, 2, 3],
      );
    });
  });

  describe('the examples of the RFCs, each a row', () => {
    for (const { name, doc, patch, text, result } of jsonPatchExamples) {
      it(`RFC 6902 ${name}`, async () => {
        const collection = await collectionWith([doc]);
        const path = `/v1/collections/${collection}/rows/1`;
        const before = await client.get(path);
        const response = await send<Problem>(path, JSON_PATCH, text ?? JSON.stringify(patch));
        if (result) {
          expect(response.status, response.text).to.equal(200);
          expect(response.body).to.deep.equal({ id: 1, ...result });
        } else {
          expect(response.status, response.text).to.equal(409);
          expect(response.body.errors?.map((error) => error.name)).to.deep.equal(['/0']);
          expect((await client.get(path)).headers.get('etag')).to.equal(before.headers.get('etag'));
        }
        expect((await client.get(path)).text).to.equal(result ? response.text : before.text);
      });
    }

    it('RFC 7396 Appendix A, every example whose target and patch are objects', async () => {
      const collection = await collectionWith(mergePatchExamples.map(([target]) => target));
      for (const [index, [target, patch, result]] of mergePatchExamples.entries()) {
        const response = await send(`/v1/collections/${collection}/rows/${index + 1}`, MERGE_PATCH, patch);
        expect(response.status, `${JSON.stringify(target)} ${JSON.stringify(patch)}: ${response.text}`).to.equal(200);
        expect(response.body).to.deep.equal({ id: index + 1, ...result });
      }
    });
  });

  describe('PATCH …/rows?filter=', () => {
    it('applies a merge patch to every matching row', async () => {
      const name = await collectionWith([
        { s: 'a', m: { x: 1, y: 2 } },
        { s: 'b', m: { x: 1 } },
        { s: 'a', m: {} },
      ]);
      const response = await send<{ count: number; rows: Row[] }>(
        `/v1/collections/${name}/rows?${filter({ s: 'a' })}&return=rows`,
        MERGE_PATCH,
        {
          m: { x: null, z: 3 },
        },
      );
      expect(response.status, response.text).to.equal(200);
      expect(response.body).to.deep.equal({
        count: 2,
        rows: [
          { id: 1, s: 'a', m: { y: 2, z: 3 } },
          { id: 3, s: 'a', m: { z: 3 } },
        ],
      });
      expect((await client.get(`/v1/collections/${name}/rows/2`)).body).to.deep.equal({ id: 2, s: 'b', m: { x: 1 } });
    });

    it('increments a field of many rows with a JSON Patch, one update event each', async () => {
      const name = await collectionWith(Array.from({ length: 20 }, (_, n) => ({ n, views: n % 2 === 0 ? n : undefined })));
      const seq = await seqOf(name);
      const response = await send<{ count: number }>(`/v1/collections/${name}/rows?${filter({})}`, JSON_PATCH, [
        { op: 'increment', path: '/views', value: 100 },
      ]);
      expect(response.body).to.deep.equal({ count: 20 });
      const rows = (await client.get<Row[]>(`/v1/collections/${name}/rows?limit=100`)).body;
      expect(rows.map((row) => row.views)).to.deep.equal(Array.from({ length: 20 }, (_, n) => (n % 2 === 0 ? n : 0) + 100));
      expect(await seqOf(name)).to.equal(seq + 20);
    });

    it('fails whole, naming the row, when the patch cannot apply to one matching row: nothing written', async () => {
      const name = await collectionWith([{ n: 1 }, { n: 'two' }, { n: 3 }]);
      const seq = await seqOf(name);
      const response = await send<Problem>(`/v1/collections/${name}/rows?${filter({})}`, JSON_PATCH, [
        { op: 'test', path: '/id', value: 2 },
      ]);
      expect(response.status).to.equal(409);
      expect(response.body.code).to.equal('patch_conflict');
      expect(response.body.detail).to.match(/row 1/);
      const refused = await send<Problem>(`/v1/collections/${name}/rows?${filter({})}`, JSON_PATCH, [
        { op: 'increment', path: '/n', value: 1 },
      ]);
      expect(refused.status).to.equal(409);
      expect(refused.body.detail).to.match(/row 2/);
      expect(refused.body.errors).to.deep.equal([{ in: 'body', name: '/0', message: '/n is not a number' }]);
      expect((await client.get<Row[]>(`/v1/collections/${name}/rows`)).body).to.deep.equal([
        { id: 1, n: 1 },
        { id: 2, n: 'two' },
        { id: 3, n: 3 },
      ]);
      expect(await seqOf(name)).to.equal(seq);
    });

    it('refuses a malformed patch with a 400 before matching a row', async () => {
      const name = await collectionWith([{ n: 1 }]);
      const response = await send<Problem>(`/v1/collections/${name}/rows?${filter({})}`, JSON_PATCH, [
        { op: 'add', path: '/id', value: 1 },
      ]);
      expect(response.status).to.equal(400);
      expect(response.body.errors?.map((error) => error.name)).to.deep.equal(['/0/path']);
    });
  });
});
