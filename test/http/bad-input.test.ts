// Bad input of every kind gets the exact 4xx and problem code of contract.md ("Errors", "Rows"), changes
// no data, and never crashes the process. Inputs that only look bad are stored and read back exactly.
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const MiB = 1024 * 1024;
const json = { 'content-type': 'application/json' };
const unknownKey = `rb_${'0'.repeat(32)}`;

/** A JSON object nested exactly `levels` deep: `{}` is one level, `{"n":{}}` two. */
const nested = (levels: number): object => (levels <= 1 ? {} : { n: nested(levels - 1) });
/** `count` rows `{n}`; the row at `withIdAt` (0-based) also carries an `id`. */
const batch = (count: number, withIdAt = -1) => Array.from({ length: count }, (_, n) => (n === withIdAt ? { n, id: 1 } : { n }));
/** Valid JSON text of exactly `bytes` bytes: a batch of one row with one long text field. */
const batchOfBytes = (bytes: number) => `[{"text":"${'x'.repeat(bytes - '[{"text":""}]'.length)}"}]`;

interface Scenario {
  name: string;
  method: string;
  path: string;
  /** Sent as JSON, with Content-Type application/json. */
  body?: unknown;
  /** Sent as it is, with `headers`. */
  raw?: string | Buffer;
  headers?: Record<string, string>;
  /**
   * Who asks: the account's own key as Bearer (the default), nobody, or the own key as Bearer beside
   * another account's key as x-api-key.
   */
  as?: 'anonymous' | 'two accounts';
  status: number;
  code: string;
  /** For validation_failed: one entry of `errors` must point here. */
  invalid?: { in: string; name: string };
  /** For 405: the methods the `Allow` header must list. */
  allow?: string[];
}

const rows = '/v1/collections/notes/rows';
const collections = '/v1/collections';
const bad = 'validation_failed';
const plain = { 'content-type': 'text/plain' };
const rowMethods = ['GET', 'PATCH', 'DELETE'];

// One scenario a line, so that the table reads as a table.
// biome-ignore format: a table
const scenarios: Scenario[] = [
  // Bodies that are not JSON, or not JSON we read.
  { name: 'malformed JSON in a row batch', method: 'POST', path: rows, raw: '[{"text":', headers: json, status: 400, code: bad },
  { name: 'JSON followed by garbage', method: 'POST', path: rows, raw: '[{"text":"a"}] x', headers: json, status: 400, code: bad },
  { name: 'malformed JSON in a new collection', method: 'POST', path: collections, raw: '{"name":', headers: json, status: 400, code: bad },
  { name: 'malformed JSON in a patch', method: 'PATCH', path: `${rows}/1`, raw: '{text: 1}', headers: json, status: 400, code: bad },
  { name: 'a text/plain row batch', method: 'POST', path: rows, raw: '[{"text":"a"}]', headers: plain, status: 415, code: 'unsupported_media_type' },
  { name: 'a form-urlencoded row batch', method: 'POST', path: rows, raw: 'text=a', headers: { 'content-type': 'application/x-www-form-urlencoded' }, status: 415, code: 'unsupported_media_type' },
  { name: 'a row batch with no content type', method: 'POST', path: rows, raw: Buffer.from('[{"text":"a"}]'), status: 415, code: 'unsupported_media_type' },
  { name: 'a text/plain patch', method: 'PATCH', path: `${rows}/1`, raw: '{"text":"b"}', headers: plain, status: 415, code: 'unsupported_media_type' },
  { name: 'a JSON Merge Patch of a new row batch, which only PATCH takes', method: 'POST', path: rows, raw: '[{"text":null}]', headers: { 'content-type': 'application/merge-patch+json' }, status: 415, code: 'unsupported_media_type' },
  { name: 'a JSON Patch in a charset other than UTF-8', method: 'PATCH', path: `${rows}/1`, raw: '[]', headers: { 'content-type': 'application/json-patch+json; charset=iso-8859-1' }, status: 415, code: 'unsupported_media_type' },
  { name: 'a text/plain new collection', method: 'POST', path: collections, raw: '{"name":"plain"}', headers: plain, status: 415, code: 'unsupported_media_type' },
  { name: 'a row batch one byte over 1 MiB', method: 'POST', path: rows, raw: batchOfBytes(MiB + 1), headers: json, status: 413, code: 'payload_too_large' },
  { name: 'a patch over 1 MiB', method: 'PATCH', path: `${rows}/1`, body: { text: 'x'.repeat(MiB) }, status: 413, code: 'payload_too_large' },
  { name: 'a new collection over 1 MiB', method: 'POST', path: collections, body: { name: 'big', pad: 'x'.repeat(MiB) }, status: 413, code: 'payload_too_large' },
  { name: 'a row batch nested 65 levels deep', method: 'POST', path: rows, body: [nested(64)], status: 400, code: bad },
  { name: 'a patch nested 65 levels deep', method: 'PATCH', path: `${rows}/1`, body: nested(65), status: 400, code: bad },
  ...['gzip', 'deflate', 'br'].map((encoding): Scenario => (
    { name: `a row batch that is not the ${encoding} it says`, method: 'POST', path: rows, raw: '[{"text":"a"}]', headers: { ...json, 'content-encoding': encoding }, status: 400, code: bad, invalid: { in: 'body', name: '' } }
  )),
  // Bytes that are not UTF-8, and charsets that are not it: refused, never read as U+FFFD.
  ...[
    ['a byte 0xFF', [0xff]],
    ['an overlong encoding of /', [0xc0, 0xaf]],
    ['a UTF-16 surrogate in UTF-8', [0xed, 0xa0, 0x80]],
    ['a multi-byte character cut short', [0xe2, 0x82]],
  ].map(([what, bytes]): Scenario => (
    { name: `a row batch with ${what}`, method: 'POST', path: rows, raw: Buffer.concat([Buffer.from('[{"text":"'), Buffer.from(bytes as number[]), Buffer.from('"}]')]), headers: json, status: 400, code: bad, invalid: { in: 'body', name: '' } }
  )),
  { name: 'a row batch in ISO-8859-1', method: 'POST', path: rows, raw: Buffer.from('[{"text":"\xe9"}]', 'latin1'), headers: { 'content-type': 'application/json; charset=iso-8859-1' }, status: 415, code: 'unsupported_media_type' },
  { name: 'a patch in a charset that does not exist', method: 'PATCH', path: `${rows}/1`, raw: '{"text":"b"}', headers: { 'content-type': 'application/json; charset=bogus' }, status: 415, code: 'unsupported_media_type' },
  // Numbers no double holds: JSON.parse reads them as ±Infinity, which would be stored as null.
  { name: 'a row batch with 1e400', method: 'POST', path: rows, raw: '[{"n":1e400}]', headers: json, status: 400, code: bad, invalid: { in: 'body', name: '' } },
  { name: 'a patch with -1e400 deep inside', method: 'PATCH', path: `${rows}/1`, raw: '{"a":{"b":[1,-1e400]}}', headers: json, status: 400, code: bad },
  { name: 'a truncated gzip row batch', method: 'POST', path: rows, raw: gzipSync('[{"text":"a"}]').subarray(0, 15), headers: { ...json, 'content-encoding': 'gzip' }, status: 400, code: bad },
  { name: 'a row batch in an unknown Content-Encoding', method: 'POST', path: rows, raw: '[{"text":"a"}]', headers: { ...json, 'content-encoding': 'zstd-ish' }, status: 415, code: 'unsupported_media_type' },
  { name: 'a gzip row batch over 1 MiB once decompressed', method: 'POST', path: rows, raw: gzipSync(batchOfBytes(MiB + 1)), headers: { ...json, 'content-encoding': 'gzip' }, status: 413, code: 'payload_too_large' },
  { name: 'a body nested 100,000 levels deep', method: 'POST', path: rows, raw: `${'['.repeat(100_000)}${']'.repeat(100_000)}`, headers: json, status: 400, code: bad },

  // Row batches that are not 1..1000 objects without ids.
  { name: 'a missing row batch', method: 'POST', path: rows, status: 400, code: bad, invalid: { in: 'body', name: '' } },
  { name: 'an empty row batch', method: 'POST', path: rows, body: [], status: 400, code: bad, invalid: { in: 'body', name: '' } },
  { name: 'an object instead of a row batch', method: 'POST', path: rows, body: { text: 'a' }, status: 400, code: bad },
  { name: 'a string instead of a row batch', method: 'POST', path: rows, body: 'text', status: 400, code: bad },
  { name: 'a number instead of a row batch', method: 'POST', path: rows, body: 42, status: 400, code: bad },
  { name: 'null instead of a row batch', method: 'POST', path: rows, body: null, status: 400, code: bad },
  { name: 'a batch of 1001 rows', method: 'POST', path: rows, body: batch(1001), status: 400, code: bad, invalid: { in: 'body', name: '' } },
  { name: 'a number as a row', method: 'POST', path: rows, body: [{ text: 'a' }, 1], status: 400, code: bad, invalid: { in: 'body', name: '/1' } },
  { name: 'a string as a row', method: 'POST', path: rows, body: ['text'], status: 400, code: bad, invalid: { in: 'body', name: '/0' } },
  { name: 'null as a row', method: 'POST', path: rows, body: [null], status: 400, code: bad, invalid: { in: 'body', name: '/0' } },
  { name: 'an array as a row', method: 'POST', path: rows, body: [[{ text: 'a' }]], status: 400, code: bad, invalid: { in: 'body', name: '/0' } },
  { name: 'a row carrying an id', method: 'POST', path: rows, body: [{ id: 9, text: 'a' }], status: 400, code: bad, invalid: { in: 'body', name: '/0/id' } },
  { name: 'a row carrying a null id', method: 'POST', path: rows, body: [{ id: null }], status: 400, code: bad, invalid: { in: 'body', name: '/0/id' } },
  { name: 'a batch of 1000 rows whose 500th carries an id', method: 'POST', path: rows, body: batch(1000, 499), status: 400, code: bad, invalid: { in: 'body', name: '/499/id' } },

  // Collection names outside ^[A-Za-z][A-Za-z0-9_-]{0,62}$, and names that are valid but not the account's.
  { name: 'a collection name starting with a digit', method: 'GET', path: `${collections}/1notes/rows`, status: 400, code: bad, invalid: { in: 'path', name: 'collection_name' } },
  { name: 'a collection name of 64 characters', method: 'GET', path: `${collections}/${'n'.repeat(64)}`, status: 400, code: bad },
  { name: 'a collection name with a space', method: 'POST', path: `${collections}/my%20notes/rows`, body: [{ text: 'a' }], status: 400, code: bad },
  { name: 'a collection name with a semicolon', method: 'DELETE', path: `${collections}/notes%3B`, status: 400, code: bad },
  { name: 'a SQL-looking collection name', method: 'GET', path: `${collections}/${encodeURIComponent("x' OR '1'='1")}/rows`, status: 400, code: bad },
  { name: 'a collection name that drops a table', method: 'DELETE', path: `${collections}/${encodeURIComponent('notes; DROP TABLE rows')}`, status: 400, code: bad },
  { name: 'a collection name with an encoded slash', method: 'GET', path: `${collections}/notes%2Frows/rows`, status: 400, code: bad },
  { name: 'a row id with an encoded slash', method: 'GET', path: `${rows}/1%2F2`, status: 400, code: bad },
  { name: 'a collection name with broken percent-encoding', method: 'GET', path: `${collections}/no%E0tes/rows/1`, status: 400, code: bad, invalid: { in: 'path', name: 'collection_name' } },
  { name: 'a row id with broken percent-encoding', method: 'DELETE', path: `${rows}/1%`, status: 400, code: bad, invalid: { in: 'path', name: 'row_id' } },
  { name: 'a new collection named with a digit first', method: 'POST', path: collections, body: { name: '1notes' }, status: 400, code: bad, invalid: { in: 'body', name: '/name' } },
  { name: 'a new collection named with 64 characters', method: 'POST', path: collections, body: { name: 'n'.repeat(64) }, status: 400, code: bad },
  { name: 'a new collection named with a space', method: 'POST', path: collections, body: { name: 'my notes' }, status: 400, code: bad },
  { name: 'a new collection named like SQL', method: 'POST', path: collections, body: { name: 'notes; DROP TABLE rows' }, status: 400, code: bad },
  { name: 'a new collection named with a slash', method: 'POST', path: collections, body: { name: 'a/b' }, status: 400, code: bad },
  { name: 'a new collection with an empty name', method: 'POST', path: collections, body: { name: '' }, status: 400, code: bad },
  { name: 'a new collection with a numeric name', method: 'POST', path: collections, body: { name: 7 }, status: 400, code: bad },
  { name: 'a new collection without a name', method: 'POST', path: collections, body: {}, status: 400, code: bad, invalid: { in: 'body', name: '/name' } },
  { name: 'a new collection with an unknown field', method: 'POST', path: collections, body: { name: 'extra', color: 'red' }, status: 400, code: bad, invalid: { in: 'body', name: '/color' } },
  { name: 'a new collection whose name is taken', method: 'POST', path: collections, body: { name: 'notes' }, status: 409, code: 'conflict' },
  { name: 'rows of a collection that does not exist', method: 'GET', path: `${collections}/nosuch/rows`, status: 404, code: 'not_found' },
  { name: 'a row batch for a collection that does not exist', method: 'POST', path: `${collections}/nosuch/rows`, body: [{ text: 'a' }], status: 404, code: 'not_found' },
  { name: "another account's collection", method: 'GET', path: `${collections}/theirs`, status: 404, code: 'not_found' },
  { name: "a row batch for another account's collection", method: 'POST', path: `${collections}/theirs/rows`, body: [{ text: 'a' }], status: 404, code: 'not_found' },

  // List parameters outside their ranges, or unknown: refused, never clamped or ignored.
  ...[
    ['limit=-1', 'limit'],
    ['limit=1001', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=', 'limit'],
    ['limit=1&limit=2', 'limit'],
    ['offset=-1', 'offset'],
    ['offset=abc', 'offset'],
    ['order=sideways', 'order'],
    ['order=', 'order'],
    ['order_by=', 'order_by'],
    [`order_by=${'f'.repeat(257)}`, 'order_by'],
    ['limt=1', 'limt'],
    ['limit=0x10', 'limit'],
    ['limit=1e2', 'limit'],
    ['limit=%201', 'limit'],
    ['offset=01', 'offset'],
    // Names qs drops before validation (it sets nothing an object inherits): still unknown.
    ['constructor=1', 'constructor'],
    ['toString=1', 'toString'],
    ['hasOwnProperty=1', 'hasOwnProperty'],
    ['__proto__=1', '__proto__'],
    ['__proto__[limit]=5000', '__proto__[limit]'],
    ['limit=5&constructor[x]=1', 'constructor[x]'],
    // Past 1,000 parameters both parsers drop the rest: the limit=1 would be ignored.
    [`${'&'.repeat(1000)}limit=1`, ''],
    [`${'a=1&'.repeat(1000)}limit=1`, ''],
  ].map(([query, name]): Scenario => (
    { name: `the list query ${query.length > 40 ? `${query.slice(0, 20)}…` : query}`, method: 'GET', path: `${rows}?${query}`, status: 400, code: bad, invalid: { in: 'query', name } }
  )),

  // Row ids that are not integers in decimal digits, on every row route; then ids that are absent,
  // among them integers the service never assigns (contract.md: "A non-integer id: 400. Absent: 404").
  ...['abc', '1.5', '1e3', '1.0', '0x1', '01', '+1', '%201', '- 1'].flatMap((id): Scenario[] => [
    { name: `reading row id ${id}`, method: 'GET', path: `${rows}/${id}`, status: 400, code: bad, invalid: { in: 'path', name: 'row_id' } },
    { name: `patching row id ${id}`, method: 'PATCH', path: `${rows}/${id}`, body: { text: 'b' }, status: 400, code: bad, invalid: { in: 'path', name: 'row_id' } },
    { name: `deleting row id ${id}`, method: 'DELETE', path: `${rows}/${id}`, status: 400, code: bad, invalid: { in: 'path', name: 'row_id' } },
  ]),
  ...['0', '-0', '-1', '9007199254740992', '99999999999999999999', '-99999999999999999999'].flatMap((id): Scenario[] => [
    { name: `reading row id ${id}`, method: 'GET', path: `${rows}/${id}`, status: 404, code: 'not_found' },
    { name: `patching row id ${id}`, method: 'PATCH', path: `${rows}/${id}`, body: { text: 'b' }, status: 404, code: 'not_found' },
    { name: `deleting row id ${id}`, method: 'DELETE', path: `${rows}/${id}`, status: 404, code: 'not_found' },
    { name: `reading row id ${id} of a collection that does not exist`, method: 'GET', path: `${collections}/nosuch/rows/${id}`, status: 404, code: 'not_found' },
  ]),
  { name: 'reading an absent row', method: 'GET', path: `${rows}/999`, status: 404, code: 'not_found' },
  { name: 'patching an absent row', method: 'PATCH', path: `${rows}/999`, body: { text: 'b' }, status: 404, code: 'not_found' },
  { name: 'deleting an absent row', method: 'DELETE', path: `${rows}/999`, status: 404, code: 'not_found' },

  // Patches that are not a non-empty object without id.
  { name: 'a patch carrying an id', method: 'PATCH', path: `${rows}/1`, body: { id: 2, text: 'b' }, status: 400, code: bad, invalid: { in: 'body', name: '/id' } },
  { name: 'an array as a patch', method: 'PATCH', path: `${rows}/1`, body: [{ text: 'b' }], status: 400, code: bad },
  { name: 'an empty patch', method: 'PATCH', path: `${rows}/1`, body: {}, status: 400, code: bad },
  { name: 'null as a patch', method: 'PATCH', path: `${rows}/1`, body: null, status: 400, code: bad },
  { name: 'a missing patch', method: 'PATCH', path: `${rows}/1`, status: 400, code: bad },

  // Routes and methods openapi.yaml does not have; a body, good or bad, does not change the answer.
  { name: 'the bare /v1', method: 'GET', path: '/v1', status: 404, code: 'not_found' },
  { name: 'an unknown route under /v1', method: 'GET', path: '/v1/nope', status: 404, code: 'not_found' },
  { name: 'an unknown route below a row', method: 'GET', path: `${rows}/1/extra`, status: 404, code: 'not_found' },
  { name: 'an unknown route below a collection', method: 'GET', path: `${collections}/notes/fields`, status: 404, code: 'not_found' },
  { name: 'malformed JSON to an unknown route', method: 'POST', path: '/v1/nope', raw: '{', headers: json, status: 404, code: 'not_found' },
  { name: 'an unknown route outside /v1', method: 'GET', path: '/nope', as: 'anonymous', status: 404, code: 'not_found' },
  { name: 'PUT on a row', method: 'PUT', path: `${rows}/1`, body: { text: 'b' }, status: 405, code: 'method_not_allowed', allow: rowMethods },
  { name: 'PUT with malformed JSON on a row', method: 'PUT', path: `${rows}/1`, raw: '{', headers: json, status: 405, code: 'method_not_allowed', allow: rowMethods },
  { name: 'POST with text/plain on a row', method: 'POST', path: `${rows}/1`, raw: 'x', headers: plain, status: 405, code: 'method_not_allowed', allow: rowMethods },
  { name: 'DELETE on the collections', method: 'DELETE', path: collections, status: 405, code: 'method_not_allowed', allow: ['GET', 'POST'] },
  { name: 'PATCH on a collection', method: 'PATCH', path: `${collections}/notes`, body: { name: 'other' }, status: 405, code: 'method_not_allowed', allow: ['GET', 'DELETE'] },
  { name: 'PUT on the rows', method: 'PUT', path: rows, body: [], status: 405, code: 'method_not_allowed', allow: ['GET', 'POST', 'PATCH', 'DELETE'] },

  // Keys: missing, unknown, malformed or contradictory all get the same 401, before any body is read.
  { name: 'no key', method: 'GET', path: collections, as: 'anonymous', status: 401, code: 'unauthorized' },
  { name: 'no key on a row batch', method: 'POST', path: rows, body: [{ text: 'a' }], as: 'anonymous', status: 401, code: 'unauthorized' },
  { name: 'no key on malformed JSON', method: 'POST', path: rows, raw: '{', headers: json, as: 'anonymous', status: 401, code: 'unauthorized' },
  { name: 'an unknown bearer key', method: 'DELETE', path: `${rows}/1`, headers: { authorization: `Bearer ${unknownKey}` }, status: 401, code: 'unauthorized' },
  { name: 'an unknown x-api-key', method: 'GET', path: rows, headers: { 'x-api-key': unknownKey }, as: 'anonymous', status: 401, code: 'unauthorized' },
  { name: 'an empty x-api-key', method: 'GET', path: rows, headers: { 'x-api-key': '' }, as: 'anonymous', status: 401, code: 'unauthorized' },
  { name: 'an x-api-key longer than any key', method: 'GET', path: rows, headers: { 'x-api-key': `${unknownKey}${'0'.repeat(30)}` }, as: 'anonymous', status: 401, code: 'unauthorized' },
  { name: 'Bearer without a key', method: 'GET', path: rows, headers: { authorization: 'Bearer' }, status: 401, code: 'unauthorized' },
  { name: 'Bearer with two words', method: 'GET', path: rows, headers: { authorization: `Bearer ${unknownKey} ${unknownKey}` }, status: 401, code: 'unauthorized' },
  { name: 'a key without the Bearer scheme', method: 'GET', path: rows, headers: { authorization: unknownKey }, status: 401, code: 'unauthorized' },
  { name: "another account's x-api-key beside one's own Bearer key", method: 'GET', path: rows, as: 'two accounts', status: 401, code: 'unauthorized' },
  { name: 'Authorization: Basic', method: 'PATCH', path: `${rows}/1`, body: { text: 'b' }, headers: { authorization: 'Basic dXNlcjpwYXNzd29yZA==' }, status: 401, code: 'unauthorized' },
];

describeEachBackend('bad input', (backend) => {
  let server: TestServer;
  let client: Client;
  let other: Client;

  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
    other = await server.client();
    for (const [who, name] of [
      [client, 'notes'],
      [other, 'theirs'],
    ] as const) {
      expect((await who.post('/v1/collections', { name })).status).to.equal(201);
      expect(
        (await who.post(`/v1/collections/${name}/rows`, [{ text: 'a', n: 1 }, { text: 'b', n: 2 }, { nested: { deep: [1] } }])).status,
      ).to.equal(201);
    }
  });
  after(() => server.stop());

  /** Everything a bad request could have changed: both accounts' collections and rows. */
  async function data() {
    const read = async (who: Client, path: string) => {
      const response = await who.get(path);
      expect(response.status, `GET ${path}`).to.equal(200);
      return response.body;
    };
    return {
      collections: await read(client, '/v1/collections'),
      notes: await read(client, '/v1/collections/notes'),
      rows: await read(client, `${rows}?limit=1000`),
      theirs: await read(other, '/v1/collections/theirs'),
      theirRows: await read(other, '/v1/collections/theirs/rows?limit=1000'),
    };
  }

  describe('answers 4xx with a problem and changes nothing', () => {
    for (const scenario of scenarios) {
      const shown = scenario.path.length > 60 ? `${scenario.path.slice(0, 60)}…` : scenario.path;
      it(`${scenario.name}: ${scenario.method} ${shown} → ${scenario.status} ${scenario.code}`, async () => {
        const before = await data();
        expect(before.rows).to.have.length.above(0);

        const who = scenario.as === 'anonymous' ? server.anonymous() : client;
        const headers = scenario.as === 'two accounts' ? { 'x-api-key': other.key! } : scenario.headers;
        const response = await who.request<{ code: string; status: number; errors?: { in: string; name: string }[] }>(
          scenario.method,
          scenario.path,
          { json: scenario.body, raw: scenario.raw, headers },
        );

        expect(response.status, response.text.slice(0, 300)).to.equal(scenario.status);
        expect(response.headers.get('content-type')).to.match(/^application\/problem\+json/);
        expect(response.body.code).to.equal(scenario.code);
        expect(response.body.status).to.equal(scenario.status);
        if (scenario.invalid) {
          expect(response.body.errors?.map((error) => ({ in: error.in, name: error.name }))).to.deep.include(scenario.invalid);
        }
        if (scenario.status === 401) expect(response.headers.get('www-authenticate')).to.equal('Bearer realm="rowbase"');
        if (scenario.allow) {
          const allow = (response.headers.get('allow') ?? '').split(/,\s*/);
          expect(allow).to.include.members(scenario.allow);
          expect(allow).not.to.include(scenario.method);
        }
        expect(await data()).to.deep.equal(before);
      });
    }

    it('and the process is still up afterwards', async () => {
      const response = await server.anonymous().get('/health');
      expect(response.status).to.equal(200);
      expect(response.body).to.deep.equal({ ok: true, service: 'rowbase' });
    });
  });

  describe('accepts input that only looks bad, and gives it back exactly', () => {
    let collection = 0;
    /** A new collection of the account holding `items`; returns the stored rows. */
    async function store(items: object[]) {
      const name = `accepted${++collection}`;
      expect((await client.post('/v1/collections', { name })).status).to.equal(201);
      const response = await client.post<{ id: number }[]>(`/v1/collections/${name}/rows`, items);
      expect(response.status, response.text.slice(0, 300)).to.equal(201);
      return { path: `/v1/collections/${name}/rows`, stored: response.body };
    }

    it('stores a row batch nested exactly 64 levels deep', async () => {
      const row = nested(63); // inside the batch: 64 levels
      const { path, stored } = await store([row]);
      const read = await client.get(`${path}/${stored[0].id}`);
      expect(read.status).to.equal(200);
      expect(read.body).to.deep.equal({ id: stored[0].id, ...row });
    });

    it('applies a patch nested exactly 64 levels deep', async () => {
      const { path, stored } = await store([{ text: 'a' }]);
      const patch = nested(64);
      const response = await client.patch(`${path}/${stored[0].id}`, patch);
      expect(response.status, response.text.slice(0, 300)).to.equal(200);
      expect(response.body).to.deep.equal({ id: stored[0].id, text: 'a', ...patch });
    });

    it('stores a row batch of exactly 1 MiB', async () => {
      const name = `accepted${++collection}`;
      await client.post('/v1/collections', { name });
      const response = await client.request('POST', `/v1/collections/${name}/rows`, { raw: batchOfBytes(MiB), headers: json });
      expect(response.status).to.equal(201);
    });

    it('stores a batch of exactly 1000 rows, in request order', async () => {
      const { path, stored } = await store(batch(1000));
      expect(stored.map((row) => row.id)).to.deep.equal(Array.from({ length: 1000 }, (_, n) => n + 1));
      const listed = await client.get(`${path}?limit=1000`);
      expect(listed.body).to.deep.equal(batch(1000).map((row, index) => ({ id: index + 1, ...row })));
    });

    it('reads a row batch sent gzip, deflate or br', async () => {
      const text = '[{"text":"packed"}]';
      for (const [encoding, raw] of [
        ['gzip', gzipSync(text)],
        ['deflate', deflateSync(text)],
        ['br', brotliCompressSync(text)],
      ] as const) {
        const response = await client.request<{ text: string }[]>('POST', rows, {
          raw,
          headers: { ...json, 'content-encoding': encoding },
        });
        expect(response.status, `${encoding}: ${response.text}`).to.equal(201);
        expect(response.body.map((row) => row.text)).to.deep.equal(['packed']);
      }
    });

    it('stores U+FFFD, a BMP character and an astral one sent as UTF-8 exactly, and 1e308', async () => {
      const text = '\ufffd é 😀';
      const raw = Buffer.from(`[{"text":"${text}","n":1e308,"tiny":1e-300}]`, 'utf8');
      const response = await client.request<{ id: number }[]>('POST', rows, {
        raw,
        headers: { 'content-type': 'application/json; charset=UTF-8' },
      });
      expect(response.status, response.text).to.equal(201);
      const read = await client.get<{ text: string; n: number; tiny: number }>(`${rows}/${response.body[0].id}`);
      expect(read.body).to.include({ text, n: 1e308, tiny: 1e-300 });
    });

    it('reads application/json with a charset', async () => {
      const name = `accepted${++collection}`;
      await client.post('/v1/collections', { name });
      const response = await client.request('POST', `/v1/collections/${name}/rows`, {
        raw: '[{"text":"a"}]',
        headers: { 'content-type': 'application/json; charset=utf-8' },
      });
      expect(response.status).to.equal(201);
    });

    it('accepts the same key as Bearer and as x-api-key', async () => {
      const response = await client.get('/v1/collections', { headers: { 'x-api-key': client.key! } });
      expect(response.status).to.equal(200);
    });

    it('creates a collection with a name of 63 characters', async () => {
      const name = `N${'n'.repeat(62)}`;
      expect((await client.post('/v1/collections', { name })).status).to.equal(201);
      expect((await client.get(`/v1/collections/${name}`)).status).to.equal(200);
    });

    it('gives back unicode and NUL in values and field names exactly', async () => {
      const row = {
        emoji: '👩🏽‍💻 🏳️‍🌈 😀',
        rtl: 'שלום עולם مرحبا بالعالم',
        combining: 'e\u0301 vs é, Å vs A\u030a, Z\u0351\u0352\u0353',
        nul: 'before\u0000after',
        'field\u0000with NUL': 'value',
        '😀 field': '\u0000',
        حقل: 'ltr and \u202Ertl\u202C override',
        nested: { 'e\u0301': ['\u0000', '💩', 'ﷺ'] },
      };
      const { path, stored } = await store([row]);
      expect(stored[0]).to.deep.equal({ id: stored[0].id, ...row });
      const read = await client.get<Record<string, unknown>>(`${path}/${stored[0].id}`);
      expect(read.status).to.equal(200);
      // Deep equality compares strings code unit by code unit: no normalization, no NUL truncation.
      expect(read.body).to.deep.equal({ id: stored[0].id, ...row });
      for (const [field, value] of Object.entries(row)) {
        expect(Buffer.from(JSON.stringify(read.body[field])), field).to.deep.equal(Buffer.from(JSON.stringify(value)));
      }
    });

    it('stores SQL-looking field names and values as data, and orders rows by them', async () => {
      const quoted = 'x" from rows; --';
      const dropped = "'; DROP TABLE rows; --";
      const items = [{ [quoted]: 'b', [dropped]: 2 }, { [quoted]: dropped, [dropped]: 1 }, { other: quoted }];
      const { path, stored } = await store(items);
      for (const [index, row] of stored.entries()) {
        const read = await client.get(`${path}/${row.id}`);
        expect(read.body).to.deep.equal({ id: row.id, ...items[index] });
      }
      const [first, second, third] = stored.map((row) => row.id);
      // Strings by code point ("'" < "b"); the row without the field last in both directions.
      for (const [field, order, ids] of [
        [quoted, 'asc', [second, first, third]],
        [quoted, 'desc', [first, second, third]],
        [dropped, 'asc', [second, first, third]],
        [dropped, 'desc', [first, second, third]],
      ] as const) {
        const response = await client.get<{ id: number }[]>(`${path}?order_by=${encodeURIComponent(field)}&order=${order}`);
        expect(response.status, `${field} ${order}`).to.equal(200);
        expect(
          response.body.map((row) => row.id),
          `${field} ${order}`,
        ).to.deep.equal(ids);
      }
      expect((await client.get(`${rows}?limit=1000`)).status).to.equal(200);
    });
  });

  describe('with a batch bound of 3 (ROWBASE_MAX_BATCH_ROWS)', () => {
    let bounded: TestServer;
    let boundedClient: Client;
    before(async () => {
      bounded = await startTestServer({ maxBatchRows: 3 }, { backend });
      boundedClient = await bounded.client();
      expect((await boundedClient.post('/v1/collections', { name: 'few' })).status).to.equal(201);
    });
    after(() => bounded.stop());
    const stored = async () => (await boundedClient.get<object[]>('/v1/collections/few/rows?limit=1000')).body;

    it('refuses 4 rows with 400 validation_failed at the body, and stores nothing', async () => {
      const response = await boundedClient.post<{ code: string; errors: object[] }>('/v1/collections/few/rows', batch(4));
      expect(response.status).to.equal(400);
      expect(response.headers.get('content-type')).to.match(/^application\/problem\+json/);
      expect(response.body.code).to.equal(bad);
      expect(response.body.errors).to.deep.equal([{ in: 'body', name: '', message: 'must NOT have more than 3 items' }]);
      expect(await stored()).to.deep.equal([]);
    });

    it('accepts 3 rows', async () => {
      const response = await boundedClient.post('/v1/collections/few/rows', batch(3));
      expect(response.status).to.equal(201);
      expect(await stored()).to.deep.equal(batch(3).map((row, index) => ({ id: index + 1, ...row })));
    });
  });
});
