// What a key may reach (openapi.yaml, `x-rowbase-scope` and Key): every operation under /v1, and the
// feed, for a key of each scope, in and out of the collections it is limited to, and for a key of each
// scope limited to none. Out of its collections, a key may still list keys, but not make or revoke a
// key of a collection it does not reach; token issuers and the declaration are managed by admin keys of every collection alone. Each key runs the whole table, in order (reads, then writes, then the
// collection's deletion), and the statuses it met are compared whole with the table's.
import { expect } from 'chai';
import type { OpenAPIV3 } from 'openapi-types';
import { type Scope, scopes } from '../../src/api-keys/scopes.ts';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { openapi } from '../support/contract.ts';
import { FeedClient, refusal } from '../support/feed.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

type ByScope = Record<Scope, number>;
const each = (status: number): ByScope => ({ read: status, write: status, admin: status });
const scoped = (read: number, write: number, admin: number): ByScope => ({ read, write, admin });

/** Where a key runs the table: `c`, an existing collection with rows 1 to 3, and `fresh`, a name to create. */
interface Target {
  c: string;
  fresh: string;
}

interface Operation {
  name: string;
  /** Its operationId in openapi.yaml; the feed is asyncapi.yaml's. */
  operationId: string;
  /** Answers the status the key met. */
  run(client: Client, target: Target, server: TestServer): Promise<number>;
  /** For a key in its collections (or limited to none), and out of them. */
  in: ByScope;
  out: ByScope;
  /** For a key limited to none, where it differs from `in`: the account's own settings (token issuers). */
  all?: ByScope;
}

const http =
  (method: string, path: (target: Target) => string, json?: (target: Target) => unknown) => async (client: Client, target: Target) =>
    (await client.request(method, path(target), { json: json?.(target) })).status;

async function feedStatus(client: Client, { c }: Target, server: TestServer): Promise<number> {
  try {
    await (await FeedClient.open(server.url, client.key, { collection: c })).close();
    return 101;
  } catch {
    return (await refusal(server.url, client.key, { collection: c })).status;
  }
}

/** Revokes a new read key of the account limited to `c`: one the key asking could have made if it may reach `c`. */
async function revokeKeyOf(client: Client, { c }: Target, server: TestServer): Promise<number> {
  const { prefix } = await server.store.createKey('scoped', TEST_PLAN, { scope: 'read', collections: [c] });
  return (await client.delete(`/v1/keys/${prefix}`)).status;
}

/** Webhooks point at a port of this machine: nothing is delivered anywhere else. */
const WEBHOOK_URL = 'http://127.0.0.1:9/hook';

/** A token issuer of a shared secret, which no limited key may manage: its tokens reach the whole account. */
const ISSUER = { issuer: 'https://auth.example/', audiences: ['app'], secret: 's'.repeat(32) };

/** A declaration (docs/declarations.md), which no limited key may plan or apply: it reaches the whole account. */
const DECLARATION = { declaration: 'version: 1\n' };
const none = each(403);

/** Runs `method` on a webhook of `c` (`suffix` after its path) that an admin key of every collection made, and deletes it. */
const onWebhook =
  (method: string, suffix = '', json?: unknown) =>
  async (client: Client, { c }: Target, server: TestServer) => {
    const admin = await server.client('scoped');
    const { body } = await admin.post<{ id: number }>('/v1/webhooks', { url: WEBHOOK_URL, collections: [c] });
    try {
      return (await client.request(method, `/v1/webhooks/${body.id}${suffix}`, { json })).status;
    } finally {
      await admin.delete(`/v1/webhooks/${body.id}`);
    }
  };

const reads: [string, string, (target: Target) => string, ByScope][] = [
  ['getUsage', '/v1/usage', () => '/v1/usage', each(200)],
  ['listCollections', '/v1/collections', () => '/v1/collections', each(200)],
  ['getCollection', '/v1/collections/{c}', ({ c }) => `/v1/collections/${c}`, each(404)],
  ['listRows', '/v1/collections/{c}/rows', ({ c }) => `/v1/collections/${c}/rows`, each(404)],
  ['listVersionedRows', '/v1/collections/{c}/versioned-rows', ({ c }) => `/v1/collections/${c}/versioned-rows`, each(404)],
  ['getRow', '/v1/collections/{c}/rows/1', ({ c }) => `/v1/collections/${c}/rows/1`, each(404)],
  ['getAggregates', '/v1/collections/{c}/aggregate', ({ c }) => `/v1/collections/${c}/aggregate?group_by=n`, each(404)],
  ['getChanges', '/v1/collections/{c}/changes', ({ c }) => `/v1/collections/${c}/changes`, each(404)],
];

// biome-ignore format: a table
const operations: Operation[] = [
  ...reads.flatMap(([operationId, name, path, out]): Operation[] => [
    { name: `GET ${name}`, operationId, run: http('GET', path), in: each(200), out },
    { name: `HEAD ${name}`, operationId, run: http('HEAD', path), in: each(200), out },
  ]),
  { name: 'POST /v1/collections/{c}/query', operationId: 'queryRows', run: http('POST', ({ c }) => `/v1/collections/${c}/query`, () => ({ limit: 1 })), in: each(200), out: each(404) },
  { name: 'POST /v1/collections/{c}/aggregate', operationId: 'aggregateRows', run: http('POST', ({ c }) => `/v1/collections/${c}/aggregate`, () => ({ aggregates: { n: { sum: 'n' } } })), in: each(200), out: each(404) },
  { name: 'POST /v1/batch', operationId: 'writeBatch', run: http('POST', () => '/v1/batch', ({ c }) => ({ operations: [{ op: 'insert', collection: c, rows: [{ n: 7 }] }] })), in: scoped(403, 200, 200), out: scoped(403, 404, 404) },
  { name: 'GET /ws?collection={c}', operationId: 'feed', run: feedStatus, in: each(101), out: each(404) },
  { name: 'GET /v1/keys', operationId: 'listKeys', run: http('GET', () => '/v1/keys'), in: scoped(403, 403, 200), out: scoped(403, 403, 200) },
  { name: 'HEAD /v1/keys', operationId: 'listKeys', run: http('HEAD', () => '/v1/keys'), in: scoped(403, 403, 200), out: scoped(403, 403, 200) },
  { name: 'POST /v1/keys {collections: [c]}', operationId: 'createKey', run: http('POST', () => '/v1/keys', ({ c }) => ({ scope: 'read', collections: [c] })), in: scoped(403, 403, 201), out: scoped(403, 403, 403) },
  { name: 'DELETE /v1/keys/{a key of c}', operationId: 'revokeKey', run: revokeKeyOf, in: scoped(403, 403, 204), out: scoped(403, 403, 404) },
  { name: 'POST /v1/collections/{c}/rows', operationId: 'insertRows', run: http('POST', ({ c }) => `/v1/collections/${c}/rows`, () => [{ n: 4 }]), in: scoped(403, 201, 201), out: scoped(403, 404, 404) },
  { name: 'PATCH /v1/collections/{c}/rows/1', operationId: 'updateRow', run: http('PATCH', ({ c }) => `/v1/collections/${c}/rows/1`, () => ({ n: 5 })), in: scoped(403, 200, 200), out: scoped(403, 404, 404) },
  { name: 'PATCH /v1/collections/{c}/rows?filter={}', operationId: 'updateRows', run: http('PATCH', ({ c }) => `/v1/collections/${c}/rows?filter=%7B%22n%22%3A5%7D`, () => ({ n: 6 })), in: scoped(403, 200, 200), out: scoped(403, 404, 404) },
  { name: 'DELETE /v1/collections/{c}/rows?filter={"n":6}', operationId: 'deleteRows', run: http('DELETE', ({ c }) => `/v1/collections/${c}/rows?filter=%7B%22n%22%3A6%7D`), in: scoped(403, 200, 200), out: scoped(403, 404, 404) },
  { name: 'DELETE /v1/collections/{c}/rows/2', operationId: 'deleteRow', run: http('DELETE', ({ c }) => `/v1/collections/${c}/rows/2`), in: scoped(403, 204, 204), out: scoped(403, 404, 404) },
  { name: 'GET /v1/openapi.json', operationId: 'getAccountOpenApi', run: http('GET', () => '/v1/openapi.json'), in: each(200), out: each(200) },
  { name: 'GET /v1/asyncapi.json', operationId: 'getAccountAsyncApi', run: http('GET', () => '/v1/asyncapi.json'), in: each(200), out: each(200) },
  { name: 'POST /v1/collections/{c}/indexes', operationId: 'createIndex', run: http('POST', ({ c }) => `/v1/collections/${c}/indexes`, () => ({ fields: ['n'] })), in: scoped(403, 403, 201), out: scoped(403, 403, 404) },
  { name: 'GET /v1/collections/{c}/indexes', operationId: 'listIndexes', run: http('GET', ({ c }) => `/v1/collections/${c}/indexes`), in: each(200), out: each(404) },
  { name: 'DELETE /v1/collections/{c}/indexes/n', operationId: 'deleteIndex', run: http('DELETE', ({ c }) => `/v1/collections/${c}/indexes/n`), in: scoped(403, 403, 204), out: scoped(403, 403, 404) },
  { name: 'PUT /v1/collections/{c}/schema', operationId: 'putCollectionSchema', run: http('PUT', ({ c }) => `/v1/collections/${c}/schema`, () => ({ type: 'object' })), in: scoped(403, 403, 200), out: scoped(403, 403, 404) },
  { name: 'GET /v1/collections/{c}/schema (none but set by an admin)', operationId: 'getCollectionSchema', run: http('GET', ({ c }) => `/v1/collections/${c}/schema`), in: scoped(404, 404, 200), out: each(404) },
  { name: 'DELETE /v1/collections/{c}/schema', operationId: 'deleteCollectionSchema', run: http('DELETE', ({ c }) => `/v1/collections/${c}/schema`), in: scoped(403, 403, 204), out: scoped(403, 403, 404) },
  { name: 'PUT /v1/collections/{c}/rules', operationId: 'putCollectionRules', run: http('PUT', ({ c }) => `/v1/collections/${c}/rules`, () => ({ read: true })), in: scoped(403, 403, 200), out: scoped(403, 403, 404) },
  { name: 'GET /v1/collections/{c}/rules', operationId: 'getCollectionRules', run: http('GET', ({ c }) => `/v1/collections/${c}/rules`), in: scoped(403, 403, 200), out: scoped(403, 403, 404) },
  { name: 'POST /v1/collections/{c}/rules/check', operationId: 'checkCollectionRules', run: http('POST', ({ c }) => `/v1/collections/${c}/rules/check`, () => ({ operation: 'read', claims: null, row: { n: 1 } })), in: scoped(403, 403, 200), out: scoped(403, 403, 404) },
  { name: 'PUT /v1/collections/{c}/ttl', operationId: 'putCollectionTtl', run: http('PUT', ({ c }) => `/v1/collections/${c}/ttl`, () => ({ field: 'expires_at' })), in: scoped(403, 403, 200), out: scoped(403, 403, 404) },
  { name: 'GET /v1/collections/{c}/ttl', operationId: 'getCollectionTtl', run: http('GET', ({ c }) => `/v1/collections/${c}/ttl`), in: scoped(403, 403, 200), out: scoped(403, 403, 404) },
  { name: 'DELETE /v1/collections/{c}/ttl', operationId: 'deleteCollectionTtl', run: http('DELETE', ({ c }) => `/v1/collections/${c}/ttl`), in: scoped(403, 403, 204), out: scoped(403, 403, 404) },
  { name: 'DELETE /v1/collections/{c}/rules', operationId: 'deleteCollectionRules', run: http('DELETE', ({ c }) => `/v1/collections/${c}/rules`), in: scoped(403, 403, 204), out: scoped(403, 403, 404) },
  { name: 'PUT /v1/collections/{c}/relations/parent', operationId: 'putRelation', run: http('PUT', ({ c }) => `/v1/collections/${c}/relations/parent`, ({ c }) => ({ field: 'parent_id', collection: c, on_delete: 'set_null', reverse: 'children' })), in: scoped(403, 403, 200), out: scoped(403, 403, 404) },
  { name: 'GET /v1/collections/{c}/relations', operationId: 'listRelations', run: http('GET', ({ c }) => `/v1/collections/${c}/relations`), in: each(200), out: each(404) },
  { name: 'HEAD /v1/collections/{c}/relations', operationId: 'listRelations', run: http('HEAD', ({ c }) => `/v1/collections/${c}/relations`), in: each(200), out: each(404) },
  { name: 'GET /v1/collections/{c}/relations/parent (none but set by an admin)', operationId: 'getRelation', run: http('GET', ({ c }) => `/v1/collections/${c}/relations/parent`), in: scoped(404, 404, 200), out: each(404) },
  { name: 'HEAD /v1/collections/{c}/relations/parent (none but set by an admin)', operationId: 'getRelation', run: http('HEAD', ({ c }) => `/v1/collections/${c}/relations/parent`), in: scoped(404, 404, 200), out: each(404) },
  { name: 'DELETE /v1/collections/{c}/relations/parent', operationId: 'deleteRelation', run: http('DELETE', ({ c }) => `/v1/collections/${c}/relations/parent`), in: scoped(403, 403, 204), out: scoped(403, 403, 404) },
  { name: 'POST /v1/collections {fresh}', operationId: 'createCollection', run: http('POST', () => '/v1/collections', ({ fresh }) => ({ name: fresh })), in: scoped(403, 403, 201), out: scoped(403, 403, 403) },
  { name: 'DELETE /v1/collections/{c}', operationId: 'deleteCollection', run: http('DELETE', ({ c }) => `/v1/collections/${c}`), in: scoped(403, 403, 204), out: scoped(403, 403, 404) },
  { name: 'POST /v1/webhooks {collections: [c]}', operationId: 'createWebhook', run: http('POST', () => '/v1/webhooks', ({ c }) => ({ url: WEBHOOK_URL, collections: [c] })), in: scoped(403, 403, 201), out: scoped(403, 403, 403) },
  { name: 'GET /v1/webhooks', operationId: 'listWebhooks', run: http('GET', () => '/v1/webhooks'), in: scoped(403, 403, 200), out: scoped(403, 403, 200) },
  { name: 'HEAD /v1/webhooks', operationId: 'listWebhooks', run: http('HEAD', () => '/v1/webhooks'), in: scoped(403, 403, 200), out: scoped(403, 403, 200) },
  { name: 'GET /v1/webhooks/{a webhook of c}', operationId: 'getWebhook', run: onWebhook('GET'), in: scoped(403, 403, 200), out: scoped(403, 403, 404) },
  { name: 'PATCH /v1/webhooks/{a webhook of c}', operationId: 'updateWebhook', run: onWebhook('PATCH', '', { description: 'scoped' }), in: scoped(403, 403, 200), out: scoped(403, 403, 404) },
  { name: 'POST /v1/webhooks/{a webhook of c}/rotate-secret', operationId: 'rotateWebhookSecret', run: onWebhook('POST', '/rotate-secret'), in: scoped(403, 403, 200), out: scoped(403, 403, 404) },
  { name: 'GET /v1/webhooks/{a webhook of c}/deliveries', operationId: 'listWebhookDeliveries', run: onWebhook('GET', '/deliveries'), in: scoped(403, 403, 200), out: scoped(403, 403, 404) },
  { name: 'POST /v1/webhooks/{a webhook of c}/deliveries/1/retry', operationId: 'retryWebhookDelivery', run: onWebhook('POST', '/deliveries/1/retry'), in: scoped(403, 403, 404), out: scoped(403, 403, 404) },
  { name: 'DELETE /v1/webhooks/{a webhook of c}', operationId: 'deleteWebhook', run: onWebhook('DELETE'), in: scoped(403, 403, 204), out: scoped(403, 403, 404) },
  { name: 'PUT /v1/auth/issuers/{c}', operationId: 'putIssuer', run: http('PUT', ({ c }) => `/v1/auth/issuers/${c}`, () => ISSUER), in: none, out: none, all: scoped(403, 403, 201) },
  { name: 'GET /v1/auth/issuers', operationId: 'listIssuers', run: http('GET', () => '/v1/auth/issuers'), in: none, out: none, all: scoped(403, 403, 200) },
  { name: 'HEAD /v1/auth/issuers', operationId: 'listIssuers', run: http('HEAD', () => '/v1/auth/issuers'), in: none, out: none, all: scoped(403, 403, 200) },
  { name: 'GET /v1/auth/issuers/{c}', operationId: 'getIssuer', run: http('GET', ({ c }) => `/v1/auth/issuers/${c}`), in: none, out: none, all: scoped(403, 403, 200) },
  { name: 'DELETE /v1/auth/issuers/{c}', operationId: 'deleteIssuer', run: http('DELETE', ({ c }) => `/v1/auth/issuers/${c}`), in: none, out: none, all: scoped(403, 403, 204) },
  // A declaration of no section: it leaves the account as it is.
  { name: 'GET /v1/declaration', operationId: 'getDeclaration', run: http('GET', () => '/v1/declaration'), in: none, out: none, all: scoped(403, 403, 200) },
  { name: 'HEAD /v1/declaration', operationId: 'getDeclaration', run: http('HEAD', () => '/v1/declaration'), in: none, out: none, all: scoped(403, 403, 200) },
  { name: 'POST /v1/declaration/plan', operationId: 'planDeclaration', run: http('POST', () => '/v1/declaration/plan', () => DECLARATION), in: none, out: none, all: scoped(403, 403, 200) },
  { name: 'POST /v1/declaration/apply', operationId: 'applyDeclaration', run: http('POST', () => '/v1/declaration/apply', () => DECLARATION), in: none, out: none, all: scoped(403, 403, 200) },
];

describeEachBackend('what a key may reach', (backend) => {
  let server: TestServer;
  let owner: Client;
  before(async () => {
    server = await startTestServer({ webhooksAllowPrivate: true }, { backend });
    owner = await server.client('scoped');
    for (const scope of scopes) {
      for (const c of [`in-${scope}`, `out-${scope}`, `all-${scope}`]) {
        expect((await owner.post('/v1/collections', { name: c })).status).to.equal(201);
        expect((await owner.post(`/v1/collections/${c}/rows`, [{ n: 1 }, { n: 2 }, { n: 3 }])).status).to.equal(201);
      }
    }
  });
  after(() => server.stop());

  /** Runs every operation of the table with `client` on `target`; answers the status of each, by name. */
  async function statuses(client: Client, target: Target): Promise<Record<string, number>> {
    const met: Record<string, number> = {};
    for (const operation of operations) met[operation.name] = await operation.run(client, target, server);
    return met;
  }
  const expected = (scope: Scope, side: 'in' | 'out' | 'all') =>
    Object.fromEntries(operations.map((operation) => [operation.name, (operation[side] ?? operation.in)[scope]]));

  for (const scope of scopes) {
    describe(`${scope === 'admin' ? 'an' : 'a'} ${scope} key`, () => {
      it('limited to collections, answers as the table says in them, and as if the others did not exist', async () => {
        const limits = { scope, collections: [`in-${scope}`, `fresh-in-${scope}`] };
        const client = await server.client('scoped', TEST_PLAN, limits);
        expect(await statuses(client, { c: `in-${scope}`, fresh: `fresh-in-${scope}` }), 'in').to.deep.equal(expected(scope, 'in'));
        expect(await statuses(client, { c: `out-${scope}`, fresh: `fresh-out-${scope}` }), 'out').to.deep.equal(expected(scope, 'out'));
      });

      it('of every collection, answers as the table says in them', async () => {
        const client = await server.client('scoped', TEST_PLAN, { scope });
        expect(await statuses(client, { c: `all-${scope}`, fresh: `fresh-all-${scope}` })).to.deep.equal(expected(scope, 'all'));
      });
    });
  }

  it('covers every operation of openapi.yaml that needs a key', () => {
    // A HEAD is its GET's operation here (the table sends both), and the feed's two are the table's `feed`.
    const needingKey = Object.entries(openapi.paths).flatMap(([path, item]) =>
      Object.entries(item ?? {}).flatMap(([method, operation]) =>
        path !== '/ws' &&
        method !== 'head' &&
        typeof operation === 'object' &&
        'operationId' in operation &&
        operation.security?.length !== 0
          ? [operation as OpenAPIV3.OperationObject]
          : [],
      ),
    );
    expect(needingKey.map(({ operationId }) => operationId)).to.have.members(
      [...new Set(operations.map(({ operationId }) => operationId))].filter((id) => id !== 'feed'),
    );
  });

  it('lists to a key limited to collections only those of them that exist', async () => {
    await owner.post('/v1/collections', { name: 'listed' });
    const client = await server.client('scoped', TEST_PLAN, { scope: 'read', collections: ['listed', 'never-made', 'out-read'] });
    const listed = await client.get<{ name: string }[]>('/v1/collections');
    expect(listed.body.map(({ name }) => name)).to.deep.equal(['listed', 'out-read']);
  });

  it("answers a collection out of the key's collections exactly as one that does not exist, and counts it, and a 403, toward usage", async () => {
    await owner.post('/v1/collections', { name: 'hidden' });
    const client = await server.client('counted', TEST_PLAN, { scope: 'read', collections: ['seen'] });
    // One request id for both: each answer names its own (the problem's instance).
    const hidden = await client.get('/v1/collections/hidden/rows/1', { headers: { 'x-request-id': 'same' } });
    const missing = await client.get('/v1/collections/seen/rows/1', { headers: { 'x-request-id': 'same' } });
    expect(hidden.status).to.equal(404);
    expect(JSON.parse(hidden.text.replace('hidden', 'seen'))).to.deep.equal(missing.body);
    const refused = await client.delete('/v1/collections/seen/rows/1');
    expect(refused.status).to.equal(403);
    expect(refused.body).to.include({
      code: 'forbidden',
      detail: "The key's scope is read; DELETE /v1/collections/{collection_name}/rows/{row_id} needs write.",
    });
    const remaining = [hidden, missing, refused].map((response) => Number(response.headers.get('ratelimit-remaining')));
    expect(remaining).to.deep.equal([remaining[0], remaining[0] - 1, remaining[0] - 2]);
    const { body } = await client.get<{ used: number }>('/v1/usage');
    expect(body.used).to.equal(4);
  });

  it("refuses an operation out of the key's scope before it reads the request: 403, not 400, for a body that is not even JSON", async () => {
    const client = await server.client('scoped', TEST_PLAN, { scope: 'read' });
    const response = await client.request('POST', '/v1/collections/nowhere/rows?bogus=1', {
      raw: '{',
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).to.equal(403);
  });
});
