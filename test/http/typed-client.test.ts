// A client generated from openapi.yaml (openapi-typescript types + openapi-fetch), the way an SDK user
// would call rowbase. If a path, parameter or schema in openapi.yaml drifts from the server, these
// calls stop compiling or stop matching.
import { expect } from 'chai';
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, operations, paths } from '../../generated/openapi.ts';
import { describeEachBackend } from '../support/backends.ts';
import { checkFetched } from '../support/contract.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

// Every response these clients see is checked against openapi.yaml too.
const contract: Middleware = {
  onResponse: ({ request, response }) => checkFetched(request, response),
};

describeEachBackend('a typed client generated from openapi.yaml', (backend) => {
  let server: TestServer;
  let api: ReturnType<typeof createClient<paths>>;
  let key: string;
  before(async () => {
    // The webhook it makes points at a port of this machine.
    server = await startTestServer({ webhooksAllowPrivate: true }, { backend });
    ({ key } = (await server.store.createKey('sdk-user', TEST_PLAN)) as { key: string });
    api = createClient<paths>({ baseUrl: server.url, headers: { Authorization: `Bearer ${key}` } });
    api.use(contract);
  });
  after(() => server.stop());

  it('creates a collection, inserts, lists, reads, patches and deletes rows', async () => {
    const created = await api.POST('/v1/collections', { body: { name: 'typed' } });
    expect(created.response.status).to.equal(201);
    expect(created.data?.name).to.equal('typed');

    const path = { collection_name: 'typed' };
    const inserted = await api.POST('/v1/collections/{collection_name}/rows', {
      params: { path },
      body: [
        { text: 'a', n: 2 },
        { text: 'b', n: 1 },
      ],
    });
    expect(inserted.data?.map((row) => row.id)).to.deep.equal([1, 2]);

    const listed = await api.GET('/v1/collections/{collection_name}/rows', {
      params: { path, query: { order_by: 'n', order: 'asc', limit: 10, offset: 0 } },
    });
    expect(listed.data?.map((row) => row.text)).to.deep.equal(['b', 'a']);

    const read = await api.GET('/v1/collections/{collection_name}/rows/{row_id}', { params: { path: { ...path, row_id: 1 } } });
    expect(read.data).to.deep.equal({ id: 1, text: 'a', n: 2 });

    const patched = await api.PATCH('/v1/collections/{collection_name}/rows/{row_id}', {
      params: { path: { ...path, row_id: 1 } },
      body: { n: 3 },
    });
    expect(patched.data).to.deep.equal({ id: 1, text: 'a', n: 3 });

    const deleted = await api.DELETE('/v1/collections/{collection_name}/rows/{row_id}', { params: { path: { ...path, row_id: 2 } } });
    expect(deleted.response.status).to.equal(204);

    const collection = await api.GET('/v1/collections/{collection_name}', { params: { path } });
    expect(collection.data?.row_count).to.equal(1);
    const collections = await api.GET('/v1/collections');
    expect(collections.data?.map((c) => c.name)).to.deep.equal(['typed']);
  });

  it('receives problems as typed errors', async () => {
    const missing = await api.GET('/v1/collections/{collection_name}', { params: { path: { collection_name: 'absent' } } });
    expect(missing.response.status).to.equal(404);
    expect(missing.error?.code).to.equal('not_found');

    const duplicate = await api.POST('/v1/collections', { body: { name: 'twice' } });
    expect(duplicate.response.status).to.equal(201);
    const again = await api.POST('/v1/collections', { body: { name: 'twice' } });
    expect(again.error?.code).to.equal('conflict');
  });

  it('pages changes, then reads their stream as JSON Lines, each line typed as a FeedMessage', async () => {
    await api.POST('/v1/collections', { body: { name: 'streamed' } });
    const path = { collection_name: 'streamed' };
    await api.POST('/v1/collections/{collection_name}/rows', { params: { path }, body: [{ text: 'a' }, { text: 'b' }] });
    const page = await api.GET('/v1/collections/{collection_name}/changes', { params: { path, query: { since: 0, limit: 1 } } });
    // Typed by openapi.yaml: the page (its other forms, the streams, are strings), whose messages narrow on their type.
    if (typeof page.data !== 'object') throw new Error('no page');
    const [first] = page.data.changes;
    expect(first?.type === 'insert' ? first.row : undefined).to.deep.equal({ id: 1, text: 'a' });
    expect(page.data.next_since).to.equal(1);
    // The stream: its items are FeedMessage (the itemSchema of /openapi.yaml?version=3.2; x-rowbase-item-schema here).
    const response = await fetch(`${server.url}/v1/collections/streamed/changes?since=${page.data.next_since}`, {
      headers: { Authorization: `Bearer ${key}`, Accept: 'application/jsonl' },
    });
    const seen: string[] = [];
    const decoder = new TextDecoder();
    let buffered = '';
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      buffered += decoder.decode(chunk, { stream: true });
      const lines = buffered.split('\n');
      buffered = lines.pop() as string;
      for (const line of lines) {
        const message = JSON.parse(line) as components['schemas']['FeedMessage'];
        if (message.type === 'ready') seen.push(`ready ${message.seq}`);
        else if (message.type === 'insert') seen.push(`insert ${message.row.id}`);
      }
      if (seen.length === 2) break;
    }
    expect(seen).to.deep.equal(['ready 2', 'insert 2']);
  });

  it('calls every operation of openapi.yaml, each answered as declared', async () => {
    await api.POST('/v1/collections', { body: { name: 'every' } });
    const path = { collection_name: 'every' };
    const { prefix } = await server.store.createKey('sdk-user', TEST_PLAN, { scope: 'read' });
    const row = { params: { path: { ...path, row_id: 1 } } };
    const hook = { params: { path: { webhook_id: 1 } } };
    const issuer = { params: { path: { issuer_name: 'app' } } };
    // A Record over every operationId: an operation added to openapi.yaml does not compile until it is called here.
    // The feed's operations are answered 400: fetch cannot make a WebSocket upgrade (asyncapi.yaml).
    const calls: Record<keyof operations, [() => Promise<{ response: Response }>, number]> = {
      getHealth: [() => api.GET('/health'), 200],
      getAccountOpenApi: [() => api.GET('/v1/openapi.json'), 200],
      headAccountOpenApi: [() => api.HEAD('/v1/openapi.json'), 200],
      getAccountAsyncApi: [() => api.GET('/v1/asyncapi.json'), 200],
      headAccountAsyncApi: [() => api.HEAD('/v1/asyncapi.json'), 200],
      headHealth: [() => api.HEAD('/health'), 200],
      getReadiness: [() => api.GET('/health/ready'), 200],
      headReadiness: [() => api.HEAD('/health/ready'), 200],
      getUsage: [() => api.GET('/v1/usage'), 200],
      headUsage: [() => api.HEAD('/v1/usage'), 200],
      listCollections: [() => api.GET('/v1/collections'), 200],
      headCollections: [() => api.HEAD('/v1/collections'), 200],
      createCollection: [() => api.POST('/v1/collections', { body: { name: 'another' } }), 201],
      getCollection: [() => api.GET('/v1/collections/{collection_name}', { params: { path } }), 200],
      headCollection: [() => api.HEAD('/v1/collections/{collection_name}', { params: { path } }), 200],
      putCollectionSchema: [() => api.PUT('/v1/collections/{collection_name}/schema', { params: { path }, body: { type: 'object' } }), 200],
      getCollectionSchema: [() => api.GET('/v1/collections/{collection_name}/schema', { params: { path } }), 200],
      headCollectionSchema: [() => api.HEAD('/v1/collections/{collection_name}/schema', { params: { path } }), 200],
      deleteCollectionSchema: [() => api.DELETE('/v1/collections/{collection_name}/schema', { params: { path } }), 204],
      putCollectionRules: [
        () => api.PUT('/v1/collections/{collection_name}/rules', { params: { path }, body: { read: { owner: { $auth: 'sub' } } } }),
        200,
      ],
      getCollectionRules: [() => api.GET('/v1/collections/{collection_name}/rules', { params: { path } }), 200],
      putRelation: [
        () =>
          api.PUT('/v1/collections/{collection_name}/relations/{relation_name}', {
            params: { path: { ...path, relation_name: 'parent' } },
            body: { field: 'parent_id', collection: 'every', on_delete: 'set_null', reverse: 'children' },
          }),
        200,
      ],
      listRelations: [() => api.GET('/v1/collections/{collection_name}/relations', { params: { path } }), 200],
      headRelations: [() => api.HEAD('/v1/collections/{collection_name}/relations', { params: { path } }), 200],
      getRelation: [
        () =>
          api.GET('/v1/collections/{collection_name}/relations/{relation_name}', {
            params: { path: { ...path, relation_name: 'children' } },
          }),
        200,
      ],
      headRelation: [
        () =>
          api.HEAD('/v1/collections/{collection_name}/relations/{relation_name}', {
            params: { path: { ...path, relation_name: 'parent' } },
          }),
        200,
      ],
      deleteRelation: [
        () =>
          api.DELETE('/v1/collections/{collection_name}/relations/{relation_name}', {
            params: { path: { ...path, relation_name: 'parent' } },
          }),
        204,
      ],
      headCollectionRules: [() => api.HEAD('/v1/collections/{collection_name}/rules', { params: { path } }), 200],
      checkCollectionRules: [
        () =>
          api.POST('/v1/collections/{collection_name}/rules/check', {
            params: { path },
            body: { operation: 'read', claims: null, row: {} },
          }),
        200,
      ],
      deleteCollectionRules: [() => api.DELETE('/v1/collections/{collection_name}/rules', { params: { path } }), 204],
      putCollectionTtl: [() => api.PUT('/v1/collections/{collection_name}/ttl', { params: { path }, body: { field: 'expires_at' } }), 200],
      getCollectionTtl: [() => api.GET('/v1/collections/{collection_name}/ttl', { params: { path } }), 200],
      headCollectionTtl: [() => api.HEAD('/v1/collections/{collection_name}/ttl', { params: { path } }), 200],
      deleteCollectionTtl: [() => api.DELETE('/v1/collections/{collection_name}/ttl', { params: { path } }), 204],
      createIndex: [() => api.POST('/v1/collections/{collection_name}/indexes', { params: { path }, body: { fields: ['text'] } }), 201],
      listIndexes: [() => api.GET('/v1/collections/{collection_name}/indexes', { params: { path } }), 200],
      headIndexes: [() => api.HEAD('/v1/collections/{collection_name}/indexes', { params: { path } }), 200],
      deleteIndex: [
        () => api.DELETE('/v1/collections/{collection_name}/indexes/{index_name}', { params: { path: { ...path, index_name: 'text' } } }),
        204,
      ],
      deleteCollection: [() => api.DELETE('/v1/collections/{collection_name}', { params: { path: { collection_name: 'another' } } }), 204],
      insertRows: [() => api.POST('/v1/collections/{collection_name}/rows', { params: { path }, body: [{ text: 'a' }] }), 201],
      listRows: [() => api.GET('/v1/collections/{collection_name}/rows', { params: { path, query: { limit: 0 } } }), 200],
      getChanges: [() => api.GET('/v1/collections/{collection_name}/changes', { params: { path, query: { limit: 1 } } }), 200],
      headChanges: [() => api.HEAD('/v1/collections/{collection_name}/changes', { params: { path } }), 200],
      headRows: [() => api.HEAD('/v1/collections/{collection_name}/rows', { params: { path, query: { limit: 0 } } }), 200],
      listVersionedRows: [
        () => api.GET('/v1/collections/{collection_name}/versioned-rows', { params: { path, query: { limit: 0 } } }),
        200,
      ],
      headVersionedRows: [
        () => api.HEAD('/v1/collections/{collection_name}/versioned-rows', { params: { path, query: { limit: 0 } } }),
        200,
      ],
      queryRows: [
        () =>
          api.POST('/v1/collections/{collection_name}/query', { params: { path }, body: { filter: { text: { $prefix: 'a' } }, limit: 1 } }),
        200,
      ],
      aggregateRows: [
        () =>
          api.POST('/v1/collections/{collection_name}/aggregate', {
            params: { path },
            body: { group_by: ['text'], aggregates: { n: { count: {} } } },
          }),
        200,
      ],
      getAggregates: [() => api.GET('/v1/collections/{collection_name}/aggregate', { params: { path, query: { group_by: 'text' } } }), 200],
      headAggregates: [
        () => api.HEAD('/v1/collections/{collection_name}/aggregate', { params: { path, query: { group_by: 'text' } } }),
        200,
      ],
      getRow: [() => api.GET('/v1/collections/{collection_name}/rows/{row_id}', row), 200],
      headRow: [() => api.HEAD('/v1/collections/{collection_name}/rows/{row_id}', row), 200],
      updateRow: [() => api.PATCH('/v1/collections/{collection_name}/rows/{row_id}', { ...row, body: { n: 1 } }), 200],
      deleteRow: [() => api.DELETE('/v1/collections/{collection_name}/rows/{row_id}', row), 204],
      updateRows: [
        () =>
          api.PATCH('/v1/collections/{collection_name}/rows', {
            params: { path, query: { filter: '{}', return: 'rows' } },
            body: { n: 2 },
          }),
        200,
      ],
      deleteRows: [() => api.DELETE('/v1/collections/{collection_name}/rows', { params: { path, query: { filter: '{"n":2}' } } }), 200],
      writeBatch: [
        () => api.POST('/v1/batch', { body: { operations: [{ op: 'insert', collection: 'every', rows: [{ text: 'b' }] }] } }),
        200,
      ],
      openFeed: [() => api.GET('/ws', { params: { query: { collection: 'every', api_key: key } } }), 400],
      listKeys: [() => api.GET('/v1/keys'), 200],
      headKeys: [() => api.HEAD('/v1/keys'), 200],
      createKey: [() => api.POST('/v1/keys', { body: { scope: 'read', collections: ['every'], expires_at: '2099-01-01T00:00:00Z' } }), 201],
      revokeKey: [() => api.DELETE('/v1/keys/{prefix}', { params: { path: { prefix } } }), 204],
      headFeed: [() => api.HEAD('/ws', { params: { query: { collection: 'every' } } }), 400],
      // After the last write of rows, to a port of this machine: nothing is delivered anywhere else.
      createWebhook: [() => api.POST('/v1/webhooks', { body: { url: 'http://127.0.0.1:9/hook', collections: ['every'] } }), 201],
      listWebhooks: [() => api.GET('/v1/webhooks'), 200],
      headWebhooks: [() => api.HEAD('/v1/webhooks'), 200],
      getWebhook: [() => api.GET('/v1/webhooks/{webhook_id}', hook), 200],
      headWebhook: [() => api.HEAD('/v1/webhooks/{webhook_id}', hook), 200],
      updateWebhook: [() => api.PATCH('/v1/webhooks/{webhook_id}', { ...hook, body: { description: 'typed' } }), 200],
      rotateWebhookSecret: [() => api.POST('/v1/webhooks/{webhook_id}/rotate-secret', hook), 200],
      listWebhookDeliveries: [() => api.GET('/v1/webhooks/{webhook_id}/deliveries', hook), 200],
      headWebhookDeliveries: [() => api.HEAD('/v1/webhooks/{webhook_id}/deliveries', hook), 200],
      retryWebhookDelivery: [
        () => api.POST('/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry', { params: { path: { webhook_id: 1, delivery_id: 1 } } }),
        404,
      ],
      deleteWebhook: [() => api.DELETE('/v1/webhooks/{webhook_id}', hook), 204],
      // An issuer of a shared secret: nothing is fetched for it.
      putIssuer: [
        () =>
          api.PUT('/v1/auth/issuers/{issuer_name}', {
            ...issuer,
            body: { issuer: 'https://auth.example/', audiences: ['app'], secret: 's'.repeat(32) },
          }),
        201,
      ],
      listIssuers: [() => api.GET('/v1/auth/issuers'), 200],
      headIssuers: [() => api.HEAD('/v1/auth/issuers'), 200],
      getIssuer: [() => api.GET('/v1/auth/issuers/{issuer_name}', issuer), 200],
      headIssuer: [() => api.HEAD('/v1/auth/issuers/{issuer_name}', issuer), 200],
      deleteIssuer: [() => api.DELETE('/v1/auth/issuers/{issuer_name}', issuer), 204],
      // A declaration of no section: it leaves the account as it is.
      getDeclaration: [() => api.GET('/v1/declaration'), 200],
      headDeclaration: [() => api.HEAD('/v1/declaration'), 200],
      planDeclaration: [() => api.POST('/v1/declaration/plan', { body: { declaration: 'version: 1\n' } }), 200],
      applyDeclaration: [() => api.POST('/v1/declaration/apply', { body: { declaration: { version: 1 } } }), 200],
    };
    for (const [operationId, [call, status]] of Object.entries(calls)) {
      const { response } = await call();
      expect(response.status, operationId).to.equal(status);
    }
  });

  it('reads the usage with the key in x-api-key, and a validation problem with its errors', async () => {
    const viaHeader = createClient<paths>({ baseUrl: server.url, headers: { 'x-api-key': key } });
    viaHeader.use(contract);
    const usage = await viaHeader.GET('/v1/usage');
    expect(usage.data?.account).to.equal('sdk-user');
    expect(usage.data?.remaining).to.equal((usage.data?.quota ?? 0) - (usage.data?.used ?? 0));

    const refused = await viaHeader.GET('/v1/collections/{collection_name}/rows', {
      params: { path: { collection_name: 'typed' }, query: { limit: 1001 } },
    });
    expect(refused.response.status).to.equal(400);
    expect(refused.error?.code).to.equal('validation_failed');
    expect(refused.error?.errors).to.deep.include({ in: 'query', name: 'limit', message: 'must be <= 1000' });
  });

  it('reads /health without a key', async () => {
    const anonymous = createClient<paths>({ baseUrl: server.url });
    anonymous.use(contract);
    const { data } = await anonymous.GET('/health');
    expect(data).to.deep.equal({ ok: true, service: 'rowbase' });
  });
});
