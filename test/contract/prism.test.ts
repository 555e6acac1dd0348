// A validating proxy between a client and the server agrees with both: Stoplight Prism (`prism proxy`,
// a child process) forwards every request to a real server and validates it, and the server's answer,
// against openapi.yaml, reporting what breaks the document in the `sl-violations` header of its answer.
// Every operation is called through it, HEAD and the feed's included, with requests the document calls
// valid (no violation at all) and with requests it does not (the server refuses them, and Prism finds
// nothing wrong with the answer: only with the request, when the document says enough to tell).
// Prism reads only openapi.yaml and this machine: test/support/prism-preload.cjs refuses it any other host,
// and lets it read a HEAD answer as having no body (Prism, 5.14 to 5.16, parses it as JSON and fails).
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { expect } from 'chai';
import { Client } from '../support/client.ts';
import { checkFetched } from '../support/contract.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

const root = new URL('../../', import.meta.url).pathname;
const prismCli = createRequire(import.meta.url).resolve('@stoplight/prism-cli/dist/index.js');

interface Violation {
  code?: string;
  location: string[];
  severity: string;
  message: string;
}

interface Scenario {
  name: string;
  method: string;
  path: string;
  /** Sent as JSON, as `contentType` (default application/json). */
  body?: unknown;
  contentType?: string;
  /** Default: the key, as `Authorization: Bearer`. */
  headers?: Record<string, string>;
  status: number;
  /** The request breaks openapi.yaml in a way Prism can tell, from the document alone. */
  refusedByPrism?: boolean;
  /**
   * A JSON Patch, which Prism (5.14) checks against the schema of `application/json` instead of its own:
   * it matches a media type by its subtype's suffix alone (`json-patch+json` as `json`), and the first
   * content of the operation that matches is `application/json`'s. So it reports that the body is no
   * object, and only that.
   */
  prismReadsAsJson?: boolean;
}

const rows = '/v1/collections/proxied/rows';
const versioned = '/v1/collections/proxied/versioned-rows';

/** What Prism reports of a JSON Patch (Scenario's prismReadsAsJson). */
const misreadAsJson: Violation = { location: ['request', 'body'], severity: 'Error', code: 'type', message: 'Request body must be object' };

/** Requests the document calls valid: every operation, in an order that makes each succeed. */
const valid: Scenario[] = [
  { name: 'getHealth', method: 'GET', path: '/health', status: 200 },
  { name: 'headHealth', method: 'HEAD', path: '/health', status: 200 },
  { name: 'getReadiness', method: 'GET', path: '/health/ready', status: 200 },
  { name: 'headReadiness', method: 'HEAD', path: '/health/ready', status: 200 },
  { name: 'getUsage', method: 'GET', path: '/v1/usage', status: 200 },
  { name: 'headUsage', method: 'HEAD', path: '/v1/usage', status: 200 },
  { name: 'createCollection', method: 'POST', path: '/v1/collections', body: { name: 'proxied' }, status: 201 },
  { name: 'listCollections', method: 'GET', path: '/v1/collections', status: 200 },
  { name: 'headCollections', method: 'HEAD', path: '/v1/collections', status: 200 },
  { name: 'getCollection', method: 'GET', path: '/v1/collections/proxied', status: 200 },
  { name: 'headCollection', method: 'HEAD', path: '/v1/collections/proxied', status: 200 },
  { name: 'insertRows', method: 'POST', path: rows, body: [{ text: 'a' }, { text: 'b', n: 2 }], status: 201 },
  { name: 'listRows', method: 'GET', path: `${rows}?limit=10&order_by=n&order=desc`, status: 200 },
  { name: 'headRows', method: 'HEAD', path: `${rows}?limit=10`, status: 200 },
  { name: 'getChanges', method: 'GET', path: '/v1/collections/proxied/changes?since=0&limit=1', status: 200 },
  { name: 'headChanges', method: 'HEAD', path: '/v1/collections/proxied/changes', status: 200 },
  { name: 'listVersionedRows', method: 'GET', path: `${versioned}?limit=10&order_by=n`, status: 200 },
  { name: 'headVersionedRows', method: 'HEAD', path: `${versioned}?limit=10`, status: 200 },
  {
    name: 'queryRows',
    method: 'POST',
    path: '/v1/collections/proxied/query',
    body: { filter: { n: { $gte: 2 } }, order: [{ field: 'n', direction: 'desc' }], limit: 1, count: 'exact' },
    status: 200,
  },
  {
    name: 'aggregateRows',
    method: 'POST',
    path: '/v1/collections/proxied/aggregate',
    body: { group_by: ['text'], aggregates: { n: { count: {} }, total: { sum: 'n' } }, order: [{ field: 'n', direction: 'desc' }] },
    status: 200,
  },
  {
    name: 'getAggregates',
    method: 'GET',
    path: `/v1/collections/proxied/aggregate?group_by=text&aggregates=${encodeURIComponent('{"n":{"max":"n"}}')}`,
    status: 200,
  },
  { name: 'headAggregates', method: 'HEAD', path: '/v1/collections/proxied/aggregate?group_by=text', status: 200 },
  { name: 'getRow', method: 'GET', path: `${rows}/1`, status: 200 },
  { name: 'headRow', method: 'HEAD', path: `${rows}/1`, status: 200 },
  { name: 'updateRow', method: 'PATCH', path: `${rows}/1`, body: { n: 3 }, status: 200 },
  {
    name: 'updateRow with a JSON Merge Patch',
    method: 'PATCH',
    path: `${rows}/1`,
    body: { m: { a: 1 }, text: null },
    contentType: 'application/merge-patch+json',
    status: 200,
  },
  {
    name: 'updateRow with a JSON Patch',
    method: 'PATCH',
    path: `${rows}/1`,
    body: [
      { op: 'test', path: '/n', value: 3 },
      { op: 'increment', path: '/n', value: 2 },
      { op: 'increment', path: '/n', value: -2 },
    ],
    contentType: 'application/json-patch+json',
    status: 200,
    prismReadsAsJson: true,
  },
  { name: 'deleteRow', method: 'DELETE', path: `${rows}/2`, status: 204 },
  {
    name: 'updateRows',
    method: 'PATCH',
    path: `${rows}?filter=${encodeURIComponent('{"n":3}')}&return=rows`,
    body: { done: true },
    status: 200,
  },
  { name: 'deleteRows', method: 'DELETE', path: `${rows}?filter=${encodeURIComponent('{"n":{"$gt":3}}')}`, status: 200 },
  {
    name: 'writeBatch',
    method: 'POST',
    path: '/v1/batch',
    body: {
      operations: [
        { op: 'insert', collection: 'proxied', rows: [{ text: 'c' }] },
        { op: 'delete', collection: 'proxied', id: 3 },
      ],
    },
    status: 200,
  },
  // A request to /ws that is no upgrade is refused, as the document says: fetch makes no upgrade.
  { name: 'openFeed', method: 'GET', path: '/ws?collection=proxied', status: 400 },
  { name: 'headFeed', method: 'HEAD', path: '/ws?collection=proxied', status: 400 },
  { name: 'deleteCollection', method: 'DELETE', path: '/v1/collections/another', status: 204 },
  // After the last write of rows, to a port of this machine: nothing is delivered anywhere else.
  {
    name: 'createWebhook',
    method: 'POST',
    path: '/v1/webhooks',
    body: { url: 'http://127.0.0.1:9/hook', collections: ['proxied'], filter: { n: { $gte: 2 } }, description: 'proxied' },
    status: 201,
  },
  { name: 'listWebhooks', method: 'GET', path: '/v1/webhooks', status: 200 },
  { name: 'headWebhooks', method: 'HEAD', path: '/v1/webhooks', status: 200 },
  { name: 'getWebhook', method: 'GET', path: '/v1/webhooks/1', status: 200 },
  { name: 'headWebhook', method: 'HEAD', path: '/v1/webhooks/1', status: 200 },
  { name: 'updateWebhook', method: 'PATCH', path: '/v1/webhooks/1', body: { enabled: false, events: ['delete'] }, status: 200 },
  { name: 'rotateWebhookSecret', method: 'POST', path: '/v1/webhooks/1/rotate-secret', status: 200 },
  { name: 'listWebhookDeliveries', method: 'GET', path: '/v1/webhooks/1/deliveries?limit=5', status: 200 },
  { name: 'headWebhookDeliveries', method: 'HEAD', path: '/v1/webhooks/1/deliveries', status: 200 },
  // Nothing was delivered to it: there is no attempt 1.
  { name: 'retryWebhookDelivery', method: 'POST', path: '/v1/webhooks/1/deliveries/1/retry', status: 404 },
  { name: 'deleteWebhook', method: 'DELETE', path: '/v1/webhooks/1', status: 204 },
  // An issuer of a shared secret: nothing is fetched for it.
  {
    name: 'putIssuer',
    method: 'PUT',
    path: '/v1/auth/issuers/app',
    body: { issuer: 'https://auth.example/', audiences: ['app'], secret: 's'.repeat(32) },
    status: 201,
  },
  { name: 'listIssuers', method: 'GET', path: '/v1/auth/issuers', status: 200 },
  { name: 'headIssuers', method: 'HEAD', path: '/v1/auth/issuers', status: 200 },
  { name: 'getIssuer', method: 'GET', path: '/v1/auth/issuers/app', status: 200 },
  { name: 'headIssuer', method: 'HEAD', path: '/v1/auth/issuers/app', status: 200 },
  { name: 'deleteIssuer', method: 'DELETE', path: '/v1/auth/issuers/app', status: 204 },
  { name: 'getDeclaration', method: 'GET', path: '/v1/declaration', status: 200 },
  { name: 'headDeclaration', method: 'HEAD', path: '/v1/declaration', status: 200 },
  { name: 'planDeclaration', method: 'POST', path: '/v1/declaration/plan', body: { declaration: 'version: 1\n' }, status: 200 },
  { name: 'applyDeclaration', method: 'POST', path: '/v1/declaration/apply', body: { declaration: 'version: 1\n' }, status: 200 },
  {
    name: 'putCollectionRules',
    method: 'PUT',
    path: '/v1/collections/proxied/rules',
    body: { read: { owner: { $auth: 'sub' } } },
    status: 200,
  },
  { name: 'getCollectionRules', method: 'GET', path: '/v1/collections/proxied/rules', status: 200 },
  { name: 'headCollectionRules', method: 'HEAD', path: '/v1/collections/proxied/rules', status: 200 },
  {
    name: 'checkCollectionRules',
    method: 'POST',
    path: '/v1/collections/proxied/rules/check',
    body: { operation: 'read', claims: { sub: 'u1' }, row: { id: 1, owner: 'u1' } },
    status: 200,
  },
  { name: 'deleteCollectionRules', method: 'DELETE', path: '/v1/collections/proxied/rules', status: 204 },
  { name: 'putCollectionTtl', method: 'PUT', path: '/v1/collections/proxied/ttl', body: { field: 'expires_at' }, status: 200 },
  { name: 'getCollectionTtl', method: 'GET', path: '/v1/collections/proxied/ttl', status: 200 },
  { name: 'headCollectionTtl', method: 'HEAD', path: '/v1/collections/proxied/ttl', status: 200 },
  { name: 'deleteCollectionTtl', method: 'DELETE', path: '/v1/collections/proxied/ttl', status: 204 },
  {
    name: 'putRelation',
    method: 'PUT',
    path: '/v1/collections/proxied/relations/parent',
    body: { field: 'parent_id', collection: 'proxied', on_delete: 'set_null', reverse: 'children' },
    status: 200,
  },
  { name: 'listRelations', method: 'GET', path: '/v1/collections/proxied/relations', status: 200 },
  { name: 'headRelations', method: 'HEAD', path: '/v1/collections/proxied/relations', status: 200 },
  { name: 'getRelation', method: 'GET', path: '/v1/collections/proxied/relations/children', status: 200 },
  { name: 'headRelation', method: 'HEAD', path: '/v1/collections/proxied/relations/parent', status: 200 },
  { name: 'deleteRelation', method: 'DELETE', path: '/v1/collections/proxied/relations/parent', status: 204 },
];

/** Requests the server refuses, each answered as the document says. */
const invalid: Scenario[] = [
  { name: 'getUsage without a key', method: 'GET', path: '/v1/usage', headers: {}, status: 401, refusedByPrism: true },
  { name: 'headUsage without a key', method: 'HEAD', path: '/v1/usage', headers: {}, status: 401, refusedByPrism: true },
  { name: 'getUsage with an unknown key', method: 'GET', path: '/v1/usage', headers: { 'x-api-key': 'rb_unknown' }, status: 401 },
  { name: 'listRows past its limit', method: 'GET', path: `${rows}?limit=1001`, status: 400, refusedByPrism: true },
  { name: 'headRows in no order', method: 'HEAD', path: `${rows}?order=up`, status: 400, refusedByPrism: true },
  { name: 'listRows with an unknown parameter', method: 'GET', path: `${rows}?limt=1`, status: 400 },
  { name: 'getRow of a row id that is no integer', method: 'GET', path: `${rows}/x`, status: 400, refusedByPrism: true },
  { name: 'getRow of an absent row', method: 'GET', path: `${rows}/99`, status: 404 },
  { name: 'headRow of an absent row', method: 'HEAD', path: `${rows}/99`, status: 404 },
  { name: 'getCollection of another name', method: 'GET', path: '/v1/collections/absent', status: 404 },
  { name: 'getCollection of no name', method: 'GET', path: '/v1/collections/1x', status: 400, refusedByPrism: true },
  {
    name: 'createCollection of a bad name',
    method: 'POST',
    path: '/v1/collections',
    body: { name: '1x' },
    status: 400,
    refusedByPrism: true,
  },
  { name: 'createCollection of a taken name', method: 'POST', path: '/v1/collections', body: { name: 'proxied' }, status: 409 },
  { name: 'insertRows with an id', method: 'POST', path: rows, body: [{ id: 5 }], status: 400, refusedByPrism: true },
  { name: 'insertRows of no row', method: 'POST', path: rows, body: [], status: 400, refusedByPrism: true },
  { name: 'updateRow with no field', method: 'PATCH', path: `${rows}/1`, body: {}, status: 400, refusedByPrism: true },
  {
    name: 'updateRow with an unknown JSON Patch op',
    method: 'PATCH',
    path: `${rows}/1`,
    body: [{ op: 'merge', path: '/n' }],
    contentType: 'application/json-patch+json',
    status: 400,
    refusedByPrism: true,
  },
  {
    name: 'updateRow with a failing JSON Patch test',
    method: 'PATCH',
    path: `${rows}/1`,
    body: [{ op: 'test', path: '/n', value: 0 }],
    contentType: 'application/json-patch+json',
    status: 409,
    prismReadsAsJson: true,
  },
  { name: 'updateRows without a filter', method: 'PATCH', path: rows, body: { n: 1 }, status: 400, refusedByPrism: true },
  { name: 'deleteRows with a filter that does not parse', method: 'DELETE', path: `${rows}?filter=%7B`, status: 400 },
  { name: 'openFeed without a collection', method: 'GET', path: '/ws', status: 400, refusedByPrism: true },
  { name: 'openFeed without a key', method: 'GET', path: '/ws?collection=proxied', headers: {}, status: 400, refusedByPrism: true },
  { name: 'headFeed without a key', method: 'HEAD', path: '/ws?collection=proxied', headers: {}, status: 400, refusedByPrism: true },
  { name: 'PUT, a method no route has', method: 'PUT', path: '/v1/collections', status: 405, refusedByPrism: true },
  { name: 'an unknown route', method: 'GET', path: '/v1/nothing', status: 404, refusedByPrism: true },
  { name: 'getWebhook that is not', method: 'GET', path: '/v1/webhooks/99', status: 404 },
  { name: 'createWebhook of an ftp URL', method: 'POST', path: '/v1/webhooks', body: { url: 'ftp://127.0.0.1/' }, status: 400 },
  { name: 'getIssuer that is not', method: 'GET', path: '/v1/auth/issuers/none', status: 404 },
  {
    name: 'putIssuer with two keys',
    method: 'PUT',
    path: '/v1/auth/issuers/app',
    body: { issuer: 'https://auth.example/', audiences: ['app'], secret: 's'.repeat(32), jwks_uri: 'https://auth.example/jwks' },
    status: 400,
  },
];

describe('a validating proxy (Prism) between a client and the server', function () {
  this.timeout(120_000);
  let server: TestServer;
  let prism: ChildProcess;
  let proxyUrl: string;
  let key: string;
  let stderr = '';

  before(async () => {
    // The webhook it makes points at a port of this machine.
    server = await startTestServer({ webhooksAllowPrivate: true });
    ({ key } = (await server.store.createKey('proxied', TEST_PLAN)) as { key: string });
    expect((await new Client(server.url, key).post('/v1/collections', { name: 'another' })).status).to.equal(201);
    prism = spawn(process.execPath, [prismCli, 'proxy', join(root, 'openapi.yaml'), server.url, '--host', '127.0.0.1', '--port', '0'], {
      cwd: root,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        NO_COLOR: '1',
        SCARF_ANALYTICS: 'false',
        NODE_OPTIONS: `--require ${join(root, 'test/support/prism-preload.cjs')}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    prism.stderr?.on('data', (chunk) => {
      stderr += chunk;
    });
    const lines = createInterface({ input: prism.stdout as NodeJS.ReadableStream });
    const exited = once(prism, 'exit').then(([code]) => {
      throw new Error(`prism exited (${code}) before it listened:\n${stderr}`);
    });
    const listening = (async () => {
      for await (const line of lines) {
        const url = /Prism is listening on (http:\/\/\S+)/.exec(line)?.[1];
        if (url) return url;
      }
      throw new Error(`prism said nothing of listening:\n${stderr}`);
    })();
    proxyUrl = await Promise.race([listening, exited]);
    // Prism logs every request: read on, or it stops once the pipe is full.
    prism.stdout?.resume();
  });

  after(async () => {
    if (prism && prism.exitCode === null) {
      const exit = once(prism, 'exit');
      prism.kill();
      await exit;
    }
    await server?.stop();
  });

  /** Sends `scenario` through Prism; gives the answer, checked against openapi.yaml, and Prism's violations. */
  async function throughPrism({ method, path, body, contentType = 'application/json', headers }: Scenario) {
    const request = new Request(proxyUrl + path, {
      method,
      headers: {
        ...(headers ?? { authorization: `Bearer ${key}` }),
        ...(body === undefined ? {} : { 'content-type': contentType }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const response = await fetch(request.clone());
    await checkFetched(request, response);
    const text = await response.text();
    const violations: Violation[] = JSON.parse(response.headers.get('sl-violations') ?? '[]');
    return { status: response.status, text, violations };
  }

  for (const scenario of valid) {
    const what = scenario.prismReadsAsJson ? "only Prism's misreading of a JSON Patch" : 'no violation';
    it(`reports ${what} of ${scenario.name} (${scenario.method} ${scenario.path} → ${scenario.status})`, async () => {
      const { status, text, violations } = await throughPrism(scenario);
      expect(violations).to.deep.equal(scenario.prismReadsAsJson ? [misreadAsJson] : []);
      expect(status, text).to.equal(scenario.status);
    });
  }

  for (const scenario of invalid) {
    const what = scenario.prismReadsAsJson
      ? "only Prism's misreading of a JSON Patch"
      : scenario.refusedByPrism
        ? 'a violation of the request alone'
        : 'no violation';
    it(`reports ${what} for ${scenario.name} (→ ${scenario.status})`, async () => {
      const { status, text, violations } = await throughPrism(scenario);
      // The answer is the server's, forwarded, not one Prism made of its own.
      expect(status, text).to.equal(scenario.status);
      expect(violations.filter((violation) => violation.location[0] !== 'request')).to.deep.equal([]);
      if (scenario.prismReadsAsJson) expect(violations).to.deep.equal([misreadAsJson]);
      else expect(violations.length > 0, JSON.stringify(violations)).to.equal(scenario.refusedByPrism ?? false);
    });
  }

  it('reaches no other host', () => {
    expect(stderr).not.to.include('rowbase-test: Prism looked up');
  });
});
