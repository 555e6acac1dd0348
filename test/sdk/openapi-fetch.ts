// openapi-typescript's types of openapi.yaml with openapi-fetch, called as an SDK user would.
import createClient from 'openapi-fetch';
import {
  declarationInput,
  inOrder,
  issuerInput,
  type Outcome,
  type Patched,
  patching,
  query as rowQuery,
  rows,
  webhookUrl,
} from './calls.ts';
import type { operations, paths } from './out/openapi-typescript/schema.ts';

export async function callEveryOperation(baseUrl: string, key: string, collection: string): Promise<Outcome> {
  const api = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${key}` } });
  const path = { collection_name: collection };
  const row = (row_id: number) => ({ params: { path: { ...path, row_id } } });
  const query: operations['listRows']['parameters']['query'] = { limit: 10, order_by: 'n', order: 'desc' };
  const page = { params: { path, query } };
  let prefix = '';
  let webhook_id = 0;
  const hook = () => ({ params: { path: { webhook_id } } });
  const issuer = { params: { path: { issuer_name: collection } } };

  const answers = await inOrder({
    getHealth: () => api.GET('/health'),
    headHealth: () => api.HEAD('/health'),
    getReadiness: () => api.GET('/health/ready'),
    headReadiness: () => api.HEAD('/health/ready'),
    getUsage: () => api.GET('/v1/usage'),
    headUsage: () => api.HEAD('/v1/usage'),
    createCollection: () => api.POST('/v1/collections', { body: { name: collection } }),
    listCollections: () => api.GET('/v1/collections'),
    headCollections: () => api.HEAD('/v1/collections'),
    getCollection: () => api.GET('/v1/collections/{collection_name}', { params: { path } }),
    headCollection: () => api.HEAD('/v1/collections/{collection_name}', { params: { path } }),
    insertRows: () => api.POST('/v1/collections/{collection_name}/rows', { params: { path }, body: rows }),
    listRows: () => api.GET('/v1/collections/{collection_name}/rows', page),
    headRows: () => api.HEAD('/v1/collections/{collection_name}/rows', page),
    getChanges: () => api.GET('/v1/collections/{collection_name}/changes', { params: { path, query: { limit: 1 } } }),
    headChanges: () => api.HEAD('/v1/collections/{collection_name}/changes', { params: { path } }),
    listVersionedRows: () => api.GET('/v1/collections/{collection_name}/versioned-rows', page),
    headVersionedRows: () => api.HEAD('/v1/collections/{collection_name}/versioned-rows', page),
    queryRows: () => api.POST('/v1/collections/{collection_name}/query', { params: { path }, body: rowQuery }),
    aggregateRows: () =>
      api.POST('/v1/collections/{collection_name}/aggregate', {
        params: { path },
        body: { group_by: ['text'], aggregates: { n: { count: {} }, total: { sum: 'n' } } },
      }),
    getAggregates: () =>
      api.GET('/v1/collections/{collection_name}/aggregate', {
        params: { path, query: { group_by: 'text', aggregates: '{"n":{"count":{}},"total":{"sum":"n"}}' } },
      }),
    headAggregates: () => api.HEAD('/v1/collections/{collection_name}/aggregate', { params: { path, query: { group_by: 'text' } } }),
    getRow: () => api.GET('/v1/collections/{collection_name}/rows/{row_id}', row(1)),
    headRow: () => api.HEAD('/v1/collections/{collection_name}/rows/{row_id}', row(1)),
    updateRow: () => api.PATCH('/v1/collections/{collection_name}/rows/{row_id}', { ...row(1), body: { n: 3 } }),
    deleteRow: () => api.DELETE('/v1/collections/{collection_name}/rows/{row_id}', row(2)),
    updateRows: () =>
      api.PATCH('/v1/collections/{collection_name}/rows', {
        params: { path, query: { filter: '{"n":3}', return: 'rows' } },
        body: { done: true },
      }),
    deleteRows: () => api.DELETE('/v1/collections/{collection_name}/rows', { params: { path, query: { filter: '{"n":{"$gt":3}}' } } }),
    writeBatch: () => api.POST('/v1/batch', { body: { operations: [{ op: 'insert', collection, rows }] } }),
    listKeys: () => api.GET('/v1/keys'),
    headKeys: () => api.HEAD('/v1/keys'),
    createKey: async () => {
      const created = await api.POST('/v1/keys', { body: { scope: 'read', name: 'sdk' } });
      prefix = created.data?.prefix ?? '';
      return created;
    },
    revokeKey: () => api.DELETE('/v1/keys/{prefix}', { params: { path: { prefix } } }),
    // The webhook is made after the last write of rows, to a port of this machine: nothing leaves it.
    createWebhook: async () => {
      const created = await api.POST('/v1/webhooks', { body: { url: webhookUrl, collections: [collection], events: ['insert'] } });
      webhook_id = created.data?.id ?? 0;
      return created;
    },
    listWebhooks: () => api.GET('/v1/webhooks'),
    headWebhooks: () => api.HEAD('/v1/webhooks'),
    getWebhook: () => api.GET('/v1/webhooks/{webhook_id}', hook()),
    headWebhook: () => api.HEAD('/v1/webhooks/{webhook_id}', hook()),
    updateWebhook: () => api.PATCH('/v1/webhooks/{webhook_id}', { ...hook(), body: { enabled: false } }),
    rotateWebhookSecret: () => api.POST('/v1/webhooks/{webhook_id}/rotate-secret', hook()),
    listWebhookDeliveries: () =>
      api.GET('/v1/webhooks/{webhook_id}/deliveries', { params: { path: { webhook_id }, query: { limit: 10 } } }),
    headWebhookDeliveries: () =>
      api.HEAD('/v1/webhooks/{webhook_id}/deliveries', { params: { path: { webhook_id }, query: { limit: 10 } } }),
    // Nothing was delivered to it: there is no attempt 1.
    retryWebhookDelivery: () =>
      api.POST('/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry', { params: { path: { webhook_id, delivery_id: 1 } } }),
    deleteWebhook: () => api.DELETE('/v1/webhooks/{webhook_id}', hook()),
    putIssuer: () => api.PUT('/v1/auth/issuers/{issuer_name}', { ...issuer, body: issuerInput }),
    listIssuers: () => api.GET('/v1/auth/issuers'),
    headIssuers: () => api.HEAD('/v1/auth/issuers'),
    getIssuer: () => api.GET('/v1/auth/issuers/{issuer_name}', issuer),
    headIssuer: () => api.HEAD('/v1/auth/issuers/{issuer_name}', issuer),
    deleteIssuer: () => api.DELETE('/v1/auth/issuers/{issuer_name}', issuer),
    getDeclaration: () => api.GET('/v1/declaration'),
    headDeclaration: () => api.HEAD('/v1/declaration'),
    planDeclaration: () => api.POST('/v1/declaration/plan', { body: declarationInput }),
    applyDeclaration: () => api.POST('/v1/declaration/apply', { body: declarationInput }),
    openFeed: () => api.GET('/ws', { params: { query: { collection } } }),
    headFeed: () => api.HEAD('/ws', { params: { query: { collection } } }),
    putCollectionSchema: () => api.PUT('/v1/collections/{collection_name}/schema', { params: { path }, body: { type: 'object' } }),
    getCollectionSchema: () => api.GET('/v1/collections/{collection_name}/schema', { params: { path } }),
    headCollectionSchema: () => api.HEAD('/v1/collections/{collection_name}/schema', { params: { path } }),
    deleteCollectionSchema: () => api.DELETE('/v1/collections/{collection_name}/schema', { params: { path } }),
    putCollectionRules: () =>
      api.PUT('/v1/collections/{collection_name}/rules', { params: { path }, body: { read: { owner: { $auth: 'sub' } } } }),
    getCollectionRules: () => api.GET('/v1/collections/{collection_name}/rules', { params: { path } }),
    headCollectionRules: () => api.HEAD('/v1/collections/{collection_name}/rules', { params: { path } }),
    checkCollectionRules: () =>
      api.POST('/v1/collections/{collection_name}/rules/check', { params: { path }, body: { operation: 'read', claims: null, row: {} } }),
    deleteCollectionRules: () => api.DELETE('/v1/collections/{collection_name}/rules', { params: { path } }),
    putCollectionTtl: () => api.PUT('/v1/collections/{collection_name}/ttl', { params: { path }, body: { field: 'expires_at' } }),
    getCollectionTtl: () => api.GET('/v1/collections/{collection_name}/ttl', { params: { path } }),
    headCollectionTtl: () => api.HEAD('/v1/collections/{collection_name}/ttl', { params: { path } }),
    deleteCollectionTtl: () => api.DELETE('/v1/collections/{collection_name}/ttl', { params: { path } }),
    putRelation: () =>
      api.PUT('/v1/collections/{collection_name}/relations/{relation_name}', {
        params: { path: { ...path, relation_name: 'parent' } },
        body: { field: 'parent_id', collection, on_delete: 'set_null', reverse: 'children' },
      }),
    listRelations: () => api.GET('/v1/collections/{collection_name}/relations', { params: { path } }),
    headRelations: () => api.HEAD('/v1/collections/{collection_name}/relations', { params: { path } }),
    getRelation: () =>
      api.GET('/v1/collections/{collection_name}/relations/{relation_name}', { params: { path: { ...path, relation_name: 'parent' } } }),
    headRelation: () =>
      api.HEAD('/v1/collections/{collection_name}/relations/{relation_name}', { params: { path: { ...path, relation_name: 'parent' } } }),
    deleteRelation: () =>
      api.DELETE('/v1/collections/{collection_name}/relations/{relation_name}', { params: { path: { ...path, relation_name: 'parent' } } }),
    getAccountOpenApi: () => api.GET('/v1/openapi.json'),
    headAccountOpenApi: () => api.HEAD('/v1/openapi.json'),
    getAccountAsyncApi: () => api.GET('/v1/asyncapi.json'),
    headAccountAsyncApi: () => api.HEAD('/v1/asyncapi.json'),
    createIndex: () => api.POST('/v1/collections/{collection_name}/indexes', { params: { path }, body: { fields: ['n'] } }),
    listIndexes: () => api.GET('/v1/collections/{collection_name}/indexes', { params: { path } }),
    headIndexes: () => api.HEAD('/v1/collections/{collection_name}/indexes', { params: { path } }),
    deleteIndex: () =>
      api.DELETE('/v1/collections/{collection_name}/indexes/{index_name}', { params: { path: { ...path, index_name: 'n' } } }),
    deleteCollection: () => api.DELETE('/v1/collections/{collection_name}', { params: { path } }),
  } satisfies Record<keyof operations, () => Promise<{ response: Response }>>);
  const missing = await api.GET('/v1/collections/{collection_name}', { params: { path } });

  return {
    statuses: Object.fromEntries(Object.entries(answers).map(([operation, { response }]) => [operation, response.status])),
    facts: {
      service: answers.getHealth.data?.service,
      insertedIds: answers.insertRows.data?.map((stored) => stored.id),
      listedTexts: answers.listRows.data?.map((stored) => stored.text),
      queried: {
        texts: answers.queryRows.data?.rows.map((stored) => stored.text),
        total: answers.queryRows.data?.total,
        next: typeof answers.queryRows.data?.next === 'string',
      },
      patched: answers.updateRow.data,
      feedCode: answers.openFeed.error?.code,
      missingCode: missing.error?.code,
    },
  };
}

/**
 * PATCHes rows in every format openapi-fetch's types let a caller send (its body is any of the three
 * media types' schemas), naming a Content-Type only for a merge patch and a JSON Patch.
 */
export async function patchEachWay(baseUrl: string, key: string, collection: string): Promise<Patched> {
  const api = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${key}` } });
  const path = { collection_name: collection };
  const first = { params: { path: { ...path, row_id: 1 } } };
  const one = '/v1/collections/{collection_name}/rows/{row_id}';

  await api.POST('/v1/collections', { body: { name: collection } });
  await api.POST('/v1/collections/{collection_name}/rows', { params: { path }, body: patching.rows });
  const patches = await inOrder({
    merge: () => api.PATCH(one, { ...first, body: patching.merge }),
    'merge-by-filter': () =>
      api.PATCH('/v1/collections/{collection_name}/rows', {
        params: { path, query: { filter: patching.filter } },
        body: patching.mergeByFilter,
      }),
    'merge-patch': () => api.PATCH(one, { ...first, body: patching.mergePatch, headers: patching.mergePatchType }),
    'json-patch': () => api.PATCH(one, { ...first, body: patching.jsonPatch, headers: patching.jsonPatchType }),
  });
  const listed = await api.GET('/v1/collections/{collection_name}/rows', { params: { path } });
  return {
    statuses: Object.fromEntries(Object.entries(patches).map(([format, { response }]) => [format, response.status])),
    rows: listed.data,
  };
}
