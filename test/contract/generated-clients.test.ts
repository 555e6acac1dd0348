// Clients generated from openapi.yaml as SDK users generate them: openapi-typescript's types with
// openapi-fetch, @hey-api/openapi-ts's SDK and orval's fetch client, each generator run once, as a child
// process, into a temp folder. Beside them go the callers of test/sdk/, which call every operation with
// each client and read its answers through the client's types, without a cast; tsc --strict compiles them
// all, then each caller runs against a real server, every response it sees checked against openapi.yaml.
// Each client then PATCHes rows on each backend in every format its types let it send, a top-level merge
// naming no Content-Type, as a call sends it by default (docs/patches.md).
// The types each generator exports are named after the document (its schemas, request bodies, responses,
// parameters and operations), never after where an unnamed schema sits (`ErrorResponseAllOf`,
// `GetDocsAsset404`) nor numbered apart (`CollectionName2`).
import { cp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { parse } from 'yaml';
import type { Outcome, Patched } from '../sdk/calls.ts';
import { describeEachBackend } from '../support/backends.ts';
import { checkFetched } from '../support/contract.ts';
import { runTool } from '../support/process.ts';
import { generateClients, sdkFolder, writeStrictTsconfig } from '../support/sdk.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

const root = new URL('../../', import.meta.url).pathname;

/**
 * Each generator: how it is run into `out` (a folder of the temp folder's sdk/out/), its caller in
 * test/sdk/, and the formats of a PATCH of rows its types let a caller send (@hey-api/openapi-ts types the
 * body as its first media type's schema alone, an object, so not a JSON Patch).
 */
const generators = [
  {
    name: 'openapi-typescript + openapi-fetch',
    caller: 'openapi-fetch',
    out: 'openapi-typescript',
    patches: ['merge', 'merge-by-filter', 'merge-patch', 'json-patch'],
  },
  { name: '@hey-api/openapi-ts', caller: 'hey-api', out: 'hey-api', patches: ['merge', 'merge-by-filter', 'merge-patch'] },
  { name: 'orval', caller: 'orval', out: 'orval', patches: ['merge', 'merge-by-filter', 'merge-patch', 'json-patch'] },
] as const;

/** The rows after each caller's PATCHes (test/sdk/calls.ts, patching), with and without its JSON Patch. */
const patchedRows = (jsonPatch: boolean) => [
  { id: 1, text: 'a', n: jsonPatch ? 4 : 2, meta: { x: 1 } },
  { id: 2, text: 'b', n: 5 },
];

/** What every caller must see: each operation's status (the feed's refuse a request that is no upgrade). */
const expectedStatuses = {
  getHealth: 200,
  headHealth: 200,
  getReadiness: 200,
  headReadiness: 200,
  getUsage: 200,
  headUsage: 200,
  createCollection: 201,
  listCollections: 200,
  headCollections: 200,
  getCollection: 200,
  headCollection: 200,
  insertRows: 201,
  listRows: 200,
  headRows: 200,
  getChanges: 200,
  headChanges: 200,
  listVersionedRows: 200,
  headVersionedRows: 200,
  queryRows: 200,
  aggregateRows: 200,
  getAggregates: 200,
  headAggregates: 200,
  getRow: 200,
  headRow: 200,
  updateRow: 200,
  deleteRow: 204,
  updateRows: 200,
  deleteRows: 200,
  writeBatch: 200,
  listKeys: 200,
  headKeys: 200,
  createKey: 201,
  revokeKey: 204,
  createWebhook: 201,
  listWebhooks: 200,
  headWebhooks: 200,
  getWebhook: 200,
  headWebhook: 200,
  updateWebhook: 200,
  rotateWebhookSecret: 200,
  listWebhookDeliveries: 200,
  headWebhookDeliveries: 200,
  retryWebhookDelivery: 404,
  deleteWebhook: 204,
  putIssuer: 201,
  listIssuers: 200,
  headIssuers: 200,
  getIssuer: 200,
  headIssuer: 200,
  deleteIssuer: 204,
  getDeclaration: 200,
  headDeclaration: 200,
  planDeclaration: 200,
  applyDeclaration: 200,
  openFeed: 400,
  headFeed: 400,
  putCollectionSchema: 200,
  getCollectionSchema: 200,
  headCollectionSchema: 200,
  deleteCollectionSchema: 204,
  putCollectionRules: 200,
  getCollectionRules: 200,
  headCollectionRules: 200,
  checkCollectionRules: 200,
  deleteCollectionRules: 204,
  putCollectionTtl: 200,
  getCollectionTtl: 200,
  headCollectionTtl: 200,
  deleteCollectionTtl: 204,
  putRelation: 200,
  listRelations: 200,
  headRelations: 200,
  getRelation: 200,
  headRelation: 200,
  deleteRelation: 204,
  getAccountOpenApi: 200,
  headAccountOpenApi: 200,
  getAccountAsyncApi: 200,
  headAccountAsyncApi: 200,
  createIndex: 201,
  listIndexes: 200,
  headIndexes: 200,
  deleteIndex: 204,
  deleteCollection: 204,
};

describe('clients generated from openapi.yaml', function () {
  this.timeout(180_000);
  let dir: string;
  let remove: (() => Promise<void>) | undefined;
  let server: TestServer;
  let key: string;
  const fetchAsBefore = globalThis.fetch;

  before(async () => {
    ({ dir, remove } = await sdkFolder());
    await generateClients(dir, join(root, 'openapi.yaml'), join(dir, 'sdk/out'));
    await cp(join(root, 'test/sdk'), join(dir, 'sdk'), { recursive: true, filter: (source) => !source.includes('/out') });
    await writeStrictTsconfig(dir, ['sdk']);

    // Webhooks to this machine's addresses, which the callers make (test/sdk/calls.ts, webhookUrl).
    server = await startTestServer({ webhooksAllowPrivate: true });
    ({ key } = (await server.store.createKey('sdk-user', TEST_PLAN)) as { key: string });
    // Every response a generated client sees is checked against openapi.yaml, as the test client's are.
    globalThis.fetch = async (input, init) => {
      const request = new Request(input, init);
      const response = await fetchAsBefore(request.clone());
      await checkFetched(request, response);
      return response;
    };
  });

  after(async () => {
    globalThis.fetch = fetchAsBefore;
    delete process.env.ROWBASE_URL;
    await server?.stop();
    await remove?.();
  });

  it('compiles every generated client, and the calls made with each, with tsc --strict', async () => {
    expect(await runTool('tsc', ['-p', join(dir, 'tsconfig.json')])).to.equal('');
  });

  for (const { name, caller } of generators) {
    it(`calls every operation with ${name}, each answered as declared`, async () => {
      const { callEveryOperation } = (await import(pathToFileURL(join(dir, 'sdk', `${caller}.ts`)).href)) as {
        callEveryOperation: (baseUrl: string, key: string, collection: string) => Promise<Outcome>;
      };
      const { statuses, facts } = await callEveryOperation(server.url, key, `sdk-${caller}`);
      expect(statuses).to.deep.equal(expectedStatuses);
      expect(facts).to.deep.equal({
        service: 'rowbase',
        insertedIds: [1, 2],
        listedTexts: ['b', 'a'],
        queried: { texts: ['b'], total: 1, next: true },
        patched: { id: 1, text: 'a', n: 3 },
        feedCode: 'validation_failed',
        missingCode: 'not_found',
      });
    });
  }

  describeEachBackend('PATCH of rows', (backend) => {
    let patchServer: TestServer;
    let patchKey: string;
    before(async () => {
      patchServer = await startTestServer({}, { backend });
      ({ key: patchKey } = (await patchServer.store.createKey('sdk-patcher', TEST_PLAN)) as { key: string });
    });
    after(() => patchServer?.stop());

    for (const { name, caller, patches } of generators) {
      it(`patches rows with ${name} in ${patches.join(', ')}: a merge with no Content-Type named`, async () => {
        const { patchEachWay } = (await import(pathToFileURL(join(dir, 'sdk', `${caller}.ts`)).href)) as {
          patchEachWay: (baseUrl: string, key: string, collection: string) => Promise<Patched>;
        };
        const { statuses, rows } = await patchEachWay(patchServer.url, patchKey, `patch-${caller}`);
        expect(statuses).to.deep.equal(Object.fromEntries(patches.map((format) => [format, 200])));
        expect(rows).to.deep.equal(patchedRows((patches as readonly string[]).includes('json-patch')));
      });
    }
  });

  it('covers every operation of openapi.yaml', async () => {
    const document = parse(await readFile(join(root, 'openapi.yaml'), 'utf8'));
    const operationIds = Object.values<Record<string, { operationId?: string }>>(document.paths).flatMap((item) =>
      Object.values(item).flatMap((operation) => (operation.operationId ? [operation.operationId] : [])),
    );
    expect(Object.keys(expectedStatuses)).to.have.members(operationIds);
  });

  it('names every type after the document: no schema named after where it sits, none numbered apart', async () => {
    const document = parse(await readFile(join(root, 'openapi.yaml'), 'utf8'));
    const pascal = (name: string) => name.replace(/(^|[^A-Za-z0-9])([a-z])/g, (_, _separator, letter: string) => letter.toUpperCase());
    const schemas = Object.keys(document.components.schemas);
    const parameters = Object.keys(document.components.parameters);
    const responses = Object.keys(document.components.responses);
    const requestBodies = Object.keys(document.components.requestBodies);
    const operations = Object.values<Record<string, { operationId?: string }>>(document.paths).flatMap((item) =>
      Object.values(item).flatMap((operation) => (operation.operationId ? [pascal(operation.operationId)] : [])),
    );
    const exported = (text: string) => [...text.matchAll(/^export (?:type|interface) ([A-Za-z0-9_]+)/gm)].map(([, name]) => name);

    const heyApi = exported(await readFile(join(dir, 'sdk/out/hey-api/types.gen.ts'), 'utf8'));
    const heyApiNames = new Set([
      'ClientOptions',
      ...schemas,
      ...requestBodies,
      ...parameters,
      ...operations.flatMap((operation) => ['Data', 'Errors', 'Error', 'Responses', 'Response'].map((suffix) => `${operation}${suffix}`)),
    ]);
    expect(heyApi.filter((name) => !heyApiNames.has(name))).to.deep.equal([]);

    // orval names a request body `<name>Body`; its fetch client also names each operation's answers
    // (`getHealthResponse200`, lower case first), and its own status types (`HTTPStatusCode4xx`).
    const orval = exported(await readFile(join(dir, 'sdk/out/orval/api.ts'), 'utf8')).filter((name) => /^[A-Z]/.test(name));
    const orvalNames = new Set([
      ...schemas,
      ...requestBodies.map((requestBody) => `${requestBody}Body`),
      ...parameters.map((parameter) => `${parameter}Parameter`),
      ...responses.map((response) => `${response}Response`),
      ...operations.map((operation) => `${operation}Params`),
    ]);
    expect(orval.filter((name) => !orvalNames.has(name) && !name.startsWith('HTTPStatusCode'))).to.deep.equal([]);
  });
});
