// Requests generated from the schemas of openapi.yaml, valid and invalid, sent to the real server with a
// valid key: whatever they hold, the answer is never a 5xx (contract.md, "Errors": no input produces a
// 500) and always matches openapi.yaml (the Client throws a ContractError otherwise, which fails the
// property). fast-check prints the seed and the shrunk counterexample of any failure.
import { expect } from 'chai';
import fc from 'fast-check';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { ContractError, checkResponse } from '../support/contract.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/** Collections that exist before the properties run, each with rows 1 to 3. */
const seeded = ['notes', 'tasks'];
const runs = { numRuns: 60 };

// Strings are made mostly of the characters that break naive code (quotes, backslashes, JSON path and
// SQL syntax, NUL, RTL overrides, emoji, combining marks), then of any code point at all.
const unit = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...'aZ09_- ') },
  {
    weight: 3,
    arbitrary: fc.constantFrom('"', "'", '\\', '.', '$', '[', ']', '*', '%', '/', ';', '--', '\u0000', '\n', '\u202E', '😀', 'e\u0301'),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
);
const anyString = (maxLength = 40) => fc.string({ unit, maxLength });
// `.` and `..` are left out of path segments: fetch resolves them before sending, so the request sent
// would not be the one whose answer the Client checks.
const notDotSegment = (segment: string) => segment !== '.' && segment !== '..';

// CollectionName: names that exist, the pattern, and anything at all.
const collectionName = fc
  .oneof(
    { weight: 3, arbitrary: fc.constantFrom(...seeded) },
    { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z][A-Za-z0-9_-]{0,62}$/) },
    { weight: 1, arbitrary: anyString(70) },
  )
  .filter(notDotSegment);

// RowId: ids that exist, integers in and out of range, and strings that only look like integers.
const rowId = fc
  .oneof(
    { weight: 4, arbitrary: fc.integer({ min: 1, max: 12 }).map(String) },
    fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
    fc.double().map(String),
    fc.constantFrom('0', '-0', '1e3', '0x1', '+1', ' 1', '1.0', '01', '9007199254740991', '9007199254740992'),
    anyString(),
  )
  .filter(notDotSegment);

// NewRow and RowPatch: any field names and JSON values, sometimes with the refused `id`. Field names come
// mostly from a small pool, so that `order_by` often names a field rows really have.
const fieldName = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('text', 'n', '__proto__', 'constructor', 'a.b', '$', '[0]', 'x"y', 'a\\b', "'; --") },
  { weight: 2, arbitrary: fc.constantFrom('é', 'e\u0301', '😀', '\u202Ert', 'a b', '\n', '', 'NUL\u0000') },
  { weight: 1, arbitrary: anyString(12) },
);
// Inside JSON (values and field names, never a URL, which cannot carry them), also lone surrogates and
// U+D7FF, which PostgreSQL must escape to order (src/db/postgres/sql.ts, escapeString).
const jsonUnit = fc.oneof(
  { weight: 8, arbitrary: unit },
  { weight: 1, arbitrary: fc.constantFrom('\ud800', '\udfff', '\udc00', '\ud7ff') },
);
const jsonFieldName = fc.oneof(
  { weight: 8, arbitrary: fieldName },
  { weight: 1, arbitrary: fc.constantFrom('k\ud800', '\udfff', '\ud7ff') },
);
const jsonValue = fc.jsonValue({ maxDepth: 3, stringUnit: jsonUnit });
const fields = fc.dictionary(jsonFieldName, jsonValue, { maxKeys: 5 });
const fieldsWithId = fc.tuple(fields, jsonValue).map(([row, id]) => ({ ...row, id }));
const rowBatch = fc.oneof(
  { weight: 4, arbitrary: fc.array(fields, { minLength: 1, maxLength: 5 }) },
  { weight: 2, arbitrary: fc.array(fc.oneof({ weight: 4, arbitrary: fields }, fieldsWithId, jsonValue), { maxLength: 5 }) },
  { weight: 1, arbitrary: jsonValue },
);
const rowPatch = fc.oneof({ weight: 4, arbitrary: fields }, fieldsWithId, jsonValue);

// The list parameters: mostly values in range, then values out of range or not numbers at all, and
// sometimes unknown parameters.
const listParameters = ['limit', 'offset', 'order', 'order_by', 'after'];
// Cursors: text that looks like one (base64url, a dot, base64url), and anything at all.
const cursor = fc.oneof(
  fc.tuple(fc.base64String(), fc.base64String()).map(([place, seal]) => `${place.replaceAll('=', '')}.${seal.replaceAll('=', '')}`),
  fc.jsonValue().map((value) => `${Buffer.from(JSON.stringify(value)).toString('base64url')}.AAAAAAAAAAAAAAAAAAAAAA`),
  anyString(),
);
const orValid = <T>(valid: fc.Arbitrary<T>, ...invalid: fc.Arbitrary<T>[]) =>
  fc.oneof({ weight: 3 * invalid.length, arbitrary: valid }, ...invalid);
const listQuery = fc
  .record(
    {
      limit: orValid(fc.integer({ min: 0, max: 1000 }).map(String), fc.integer().map(String), fc.double().map(String), anyString()),
      offset: orValid(fc.integer({ min: 0, max: 20 }).map(String), fc.integer().map(String), fc.double().map(String), anyString()),
      order: orValid(fc.constantFrom('asc', 'desc', 'asc,desc', 'desc,desc,asc'), anyString()),
      order_by: orValid(
        fieldName,
        fc.array(fieldName, { minLength: 1, maxLength: 9 }).map((names) => names.join(',')),
        anyString(300),
      ),
      after: cursor,
      extra: fc.oneof({ weight: 4, arbitrary: fc.constant([]) }, fc.array(fc.tuple(anyString(8), anyString()), { maxLength: 2 })),
    },
    { requiredKeys: [] },
  )
  .map(({ extra = [], ...known }) => {
    const pairs = [...Object.entries(known), ...extra.filter(([name]) => !listParameters.includes(name))];
    return pairs.length === 0
      ? ''
      : `?${pairs.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join('&')}`;
  });

const collectionPath = (name: string) => `/v1/collections/${encodeURIComponent(name)}`;
const rowPath = (name: string, id: string) => `${collectionPath(name)}/rows/${encodeURIComponent(id)}`;

interface Request {
  method: string;
  path: string;
  /** Sent as JSON when present (undefined sends no body). */
  body?: unknown;
}

describeEachBackend('any request generated from openapi.yaml', (backend) => {
  let server: TestServer;
  let client: Client;

  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
    for (const name of seeded) {
      expect((await client.post('/v1/collections', { name })).status).to.equal(201);
      expect((await client.post(`/v1/collections/${name}/rows`, [{ text: 'a', n: 1 }, { text: 'b' }, { n: 2 }])).status).to.equal(201);
    }
  });
  after(() => server.stop());

  /** Sends `request`; the Client throws a ContractError if the answer breaks openapi.yaml. */
  async function answersWithinTheContract({ method, path, body }: Request) {
    const response = await client.request(method, path, { json: body });
    expect(response.status, `${method} ${path} → ${response.text.slice(0, 300)}`).to.be.below(500);
  }

  it('creates, reads and deletes collections of any name without a 5xx', async () => {
    const request = fc.oneof(
      fc
        .record({
          name: fc.oneof({ weight: 3, arbitrary: collectionName }, jsonValue),
          extra: fc.option(fields, { nil: undefined, freq: 4 }),
        })
        .map(({ name, extra }): Request => ({ method: 'POST', path: '/v1/collections', body: { ...extra, name } })),
      jsonValue.map((body): Request => ({ method: 'POST', path: '/v1/collections', body })),
      collectionName.map((name): Request => ({ method: 'GET', path: collectionPath(name) })),
      // The seeded collections stay, so that the other properties find rows.
      collectionName.filter((name) => !seeded.includes(name)).map((name): Request => ({ method: 'DELETE', path: collectionPath(name) })),
      fc.constant<Request>({ method: 'GET', path: '/v1/collections' }),
    );
    await fc.assert(fc.asyncProperty(request, answersWithinTheContract), runs);
  });

  it('inserts row batches of any JSON without a 5xx', async () => {
    const request = fc
      .record({ name: collectionName, body: rowBatch })
      .map(({ name, body }): Request => ({ method: 'POST', path: `${collectionPath(name)}/rows`, body }));
    await fc.assert(fc.asyncProperty(request, answersWithinTheContract), runs);
  });

  it('lists rows with any query without a 5xx', async () => {
    const request = fc
      .record({ name: collectionName, query: listQuery })
      .map(({ name, query }): Request => ({ method: 'GET', path: `${collectionPath(name)}/rows${query}` }));
    await fc.assert(fc.asyncProperty(request, answersWithinTheContract), runs);
  });

  it('queries rows with any body without a 5xx', async () => {
    const body = fc.oneof(
      fc.record(
        {
          filter: fc.oneof(fc.dictionary(jsonFieldName, jsonValue, { maxKeys: 3 }), jsonValue),
          select: fc.oneof(fc.array(fieldName, { maxLength: 3 }), jsonValue),
          order: fc.oneof(
            fc.array(fc.record({ field: fieldName, direction: fc.constantFrom('asc', 'desc') }), { maxLength: 3 }),
            jsonValue,
          ),
          limit: fc.oneof(fc.integer({ min: 0, max: 1000 }), jsonValue),
          after: fc.oneof(cursor, jsonValue),
          count: fc.oneof(fc.constant('exact'), jsonValue),
        },
        { requiredKeys: [] },
      ),
      jsonValue,
    );
    const request = fc
      .record({ name: collectionName, body })
      .map(({ name, body }): Request => ({ method: 'POST', path: `${collectionPath(name)}/query`, body }));
    await fc.assert(fc.asyncProperty(request, answersWithinTheContract), runs);
  });

  it('aggregates with any body or query without a 5xx', async () => {
    const aggregates = fc.oneof(
      fc.dictionary(
        fieldName,
        fc.oneof(
          fc.record({ count: fc.constant({}) }),
          fc.dictionary(fc.constantFrom('sum', 'avg', 'min', 'max', 'count_distinct', 'x'), fieldName, { maxKeys: 2 }),
          jsonValue,
        ),
        { maxKeys: 4 },
      ),
      jsonValue,
    );
    const body = fc.oneof(
      fc.record(
        {
          filter: fc.oneof(fc.dictionary(jsonFieldName, jsonValue, { maxKeys: 3 }), jsonValue),
          group_by: fc.oneof(fc.array(fc.oneof(fc.constantFrom('text', 'n'), fieldName), { maxLength: 3 }), jsonValue),
          aggregates,
          order: fc.oneof(
            fc.array(fc.record({ field: fieldName, direction: fc.constantFrom('asc', 'desc') }), { maxLength: 3 }),
            jsonValue,
          ),
          limit: fc.oneof(fc.integer({ min: 0, max: 1000 }), jsonValue),
        },
        { requiredKeys: [] },
      ),
      jsonValue,
    );
    const request = fc.oneof(
      fc
        .record({ name: collectionName, body })
        .map(({ name, body }): Request => ({ method: 'POST', path: `${collectionPath(name)}/aggregate`, body })),
      fc
        .record(
          {
            name: collectionName,
            group_by: anyString(),
            aggregates: fc.oneof(
              aggregates.map((value) => JSON.stringify(value)),
              anyString(),
            ),
          },
          { requiredKeys: ['name'] },
        )
        .map(
          ({ name, ...query }): Request => ({
            method: 'GET',
            path: `${collectionPath(name)}/aggregate?${new URLSearchParams(query as Record<string, string>)}`,
          }),
        ),
    );
    await fc.assert(fc.asyncProperty(request, answersWithinTheContract), runs);
  });

  it('reads, patches and deletes rows of any id with any patch without a 5xx', async () => {
    const request = fc.oneof(
      fc.record({ name: collectionName, id: rowId }).map(({ name, id }): Request => ({ method: 'GET', path: rowPath(name, id) })),
      fc
        .record({ name: collectionName, id: rowId, body: rowPatch })
        .map(({ name, id, body }): Request => ({ method: 'PATCH', path: rowPath(name, id), body })),
      fc.record({ name: collectionName, id: rowId }).map(({ name, id }): Request => ({ method: 'DELETE', path: rowPath(name, id) })),
    );
    await fc.assert(fc.asyncProperty(request, answersWithinTheContract), runs);
  });

  it('fails a property when an answer breaks openapi.yaml', async () => {
    // The same route to failure as above: a ContractError thrown inside the property.
    const broken = {
      method: 'GET',
      path: '/health',
      status: 200,
      headers: new Headers({ 'content-type': 'application/json' }),
      text: '{"ok":"yes"}',
    };
    let failure: unknown;
    try {
      await fc.assert(
        fc.asyncProperty(fc.constant(broken), async (response) => checkResponse(response)),
        { numRuns: 1 },
      );
    } catch (error) {
      failure = error;
    }
    expect(failure).to.be.an('error');
    expect((failure as Error).cause).to.be.an.instanceOf(ContractError);
  });
});
