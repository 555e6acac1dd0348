// @hey-api/openapi-ts's SDK of openapi.yaml (its fetch client), called as an SDK user would.
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
import { client } from './out/hey-api/client.gen.ts';
import * as sdk from './out/hey-api/sdk.gen.ts';
import type { ListRowsData } from './out/hey-api/types.gen.ts';

export async function callEveryOperation(baseUrl: string, key: string, collection: string): Promise<Outcome> {
  client.setConfig({ baseUrl, headers: { Authorization: `Bearer ${key}` } });
  const path = { collection_name: collection };
  const row = (row_id: number) => ({ path: { ...path, row_id } });
  const query: ListRowsData['query'] = { limit: 10, order_by: 'n', order: 'desc' };
  let prefix = '';
  let webhook_id = 0;

  const answers = await inOrder({
    getHealth: () => sdk.getHealth(),
    headHealth: () => sdk.headHealth(),
    getReadiness: () => sdk.getReadiness(),
    headReadiness: () => sdk.headReadiness(),
    getUsage: () => sdk.getUsage(),
    headUsage: () => sdk.headUsage(),
    createCollection: () => sdk.createCollection({ body: { name: collection } }),
    listCollections: () => sdk.listCollections(),
    headCollections: () => sdk.headCollections(),
    getCollection: () => sdk.getCollection({ path }),
    headCollection: () => sdk.headCollection({ path }),
    insertRows: () => sdk.insertRows({ path, body: rows }),
    listRows: () => sdk.listRows({ path, query }),
    headRows: () => sdk.headRows({ path, query }),
    getChanges: () => sdk.getChanges({ path, query: { limit: 1 } }),
    headChanges: () => sdk.headChanges({ path }),
    listVersionedRows: () => sdk.listVersionedRows({ path, query }),
    headVersionedRows: () => sdk.headVersionedRows({ path, query }),
    queryRows: () => sdk.queryRows({ path, body: rowQuery }),
    aggregateRows: () => sdk.aggregateRows({ path, body: { group_by: ['text'], aggregates: { n: { count: {} }, total: { sum: 'n' } } } }),
    getAggregates: () => sdk.getAggregates({ path, query: { group_by: 'text', aggregates: '{"n":{"count":{}},"total":{"sum":"n"}}' } }),
    headAggregates: () => sdk.headAggregates({ path, query: { group_by: 'text' } }),
    getRow: () => sdk.getRow(row(1)),
    headRow: () => sdk.headRow(row(1)),
    updateRow: () => sdk.updateRow({ ...row(1), body: { n: 3 } }),
    deleteRow: () => sdk.deleteRow(row(2)),
    updateRows: () => sdk.updateRows({ path, query: { filter: '{"n":3}', return: 'rows' }, body: { done: true } }),
    deleteRows: () => sdk.deleteRows({ path, query: { filter: '{"n":{"$gt":3}}' } }),
    writeBatch: () => sdk.writeBatch({ body: { operations: [{ op: 'insert', collection, rows }] } }),
    listKeys: () => sdk.listKeys(),
    headKeys: () => sdk.headKeys(),
    createKey: async () => {
      const created = await sdk.createKey({ body: { scope: 'read', name: 'sdk' } });
      prefix = created.data?.prefix ?? '';
      return created;
    },
    revokeKey: () => sdk.revokeKey({ path: { prefix } }),
    // The webhook is made after the last write of rows, to a port of this machine: nothing leaves it.
    createWebhook: async () => {
      const created = await sdk.createWebhook({ body: { url: webhookUrl, collections: [collection], events: ['insert'] } });
      webhook_id = created.data?.id ?? 0;
      return created;
    },
    listWebhooks: () => sdk.listWebhooks(),
    headWebhooks: () => sdk.headWebhooks(),
    getWebhook: () => sdk.getWebhook({ path: { webhook_id } }),
    headWebhook: () => sdk.headWebhook({ path: { webhook_id } }),
    updateWebhook: () => sdk.updateWebhook({ path: { webhook_id }, body: { enabled: false } }),
    rotateWebhookSecret: () => sdk.rotateWebhookSecret({ path: { webhook_id } }),
    listWebhookDeliveries: () => sdk.listWebhookDeliveries({ path: { webhook_id }, query: { limit: 10 } }),
    headWebhookDeliveries: () => sdk.headWebhookDeliveries({ path: { webhook_id }, query: { limit: 10 } }),
    // Nothing was delivered to it: there is no attempt 1.
    retryWebhookDelivery: () => sdk.retryWebhookDelivery({ path: { webhook_id, delivery_id: 1 } }),
    deleteWebhook: () => sdk.deleteWebhook({ path: { webhook_id } }),
    putIssuer: () => sdk.putIssuer({ path: { issuer_name: collection }, body: issuerInput }),
    listIssuers: () => sdk.listIssuers(),
    headIssuers: () => sdk.headIssuers(),
    getIssuer: () => sdk.getIssuer({ path: { issuer_name: collection } }),
    headIssuer: () => sdk.headIssuer({ path: { issuer_name: collection } }),
    deleteIssuer: () => sdk.deleteIssuer({ path: { issuer_name: collection } }),
    getDeclaration: () => sdk.getDeclaration(),
    headDeclaration: () => sdk.headDeclaration(),
    planDeclaration: () => sdk.planDeclaration({ body: declarationInput }),
    applyDeclaration: () => sdk.applyDeclaration({ body: declarationInput }),
    openFeed: () => sdk.openFeed({ query: { collection } }),
    headFeed: () => sdk.headFeed({ query: { collection } }),
    putCollectionSchema: () => sdk.putCollectionSchema({ path, body: { type: 'object' } }),
    getCollectionSchema: () => sdk.getCollectionSchema({ path }),
    headCollectionSchema: () => sdk.headCollectionSchema({ path }),
    deleteCollectionSchema: () => sdk.deleteCollectionSchema({ path }),
    putCollectionRules: () => sdk.putCollectionRules({ path, body: { read: { owner: { $auth: 'sub' } } } }),
    getCollectionRules: () => sdk.getCollectionRules({ path }),
    headCollectionRules: () => sdk.headCollectionRules({ path }),
    checkCollectionRules: () => sdk.checkCollectionRules({ path, body: { operation: 'read', claims: null, row: {} } }),
    deleteCollectionRules: () => sdk.deleteCollectionRules({ path }),
    putCollectionTtl: () => sdk.putCollectionTtl({ path, body: { field: 'expires_at' } }),
    getCollectionTtl: () => sdk.getCollectionTtl({ path }),
    headCollectionTtl: () => sdk.headCollectionTtl({ path }),
    deleteCollectionTtl: () => sdk.deleteCollectionTtl({ path }),
    putRelation: () =>
      sdk.putRelation({
        path: { ...path, relation_name: 'parent' },
        body: { field: 'parent_id', collection, on_delete: 'set_null', reverse: 'children' },
      }),
    listRelations: () => sdk.listRelations({ path }),
    headRelations: () => sdk.headRelations({ path }),
    getRelation: () => sdk.getRelation({ path: { ...path, relation_name: 'parent' } }),
    headRelation: () => sdk.headRelation({ path: { ...path, relation_name: 'parent' } }),
    deleteRelation: () => sdk.deleteRelation({ path: { ...path, relation_name: 'parent' } }),
    getAccountOpenApi: () => sdk.getAccountOpenApi(),
    headAccountOpenApi: () => sdk.headAccountOpenApi(),
    getAccountAsyncApi: () => sdk.getAccountAsyncApi(),
    headAccountAsyncApi: () => sdk.headAccountAsyncApi(),
    createIndex: () => sdk.createIndex({ path, body: { fields: ['n'] } }),
    listIndexes: () => sdk.listIndexes({ path }),
    headIndexes: () => sdk.headIndexes({ path }),
    deleteIndex: () => sdk.deleteIndex({ path: { ...path, index_name: 'n' } }),
    deleteCollection: () => sdk.deleteCollection({ path }),
  } satisfies Record<keyof typeof sdk, () => Promise<{ response?: Response }>>);
  const missing = await sdk.getCollection({ path });

  return {
    statuses: Object.fromEntries(Object.entries(answers).map(([operation, { response }]) => [operation, response?.status ?? 0])),
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
 * PATCHes rows in every format @hey-api/openapi-ts's types let a caller send, naming a Content-Type only
 * for a merge patch: its body is typed as the first media type's schema alone (`RowPatch`, an object),
 * so a JSON Patch, an array, does not compile.
 */
export async function patchEachWay(baseUrl: string, key: string, collection: string): Promise<Patched> {
  client.setConfig({ baseUrl, headers: { Authorization: `Bearer ${key}` } });
  const path = { collection_name: collection };
  const first = { path: { ...path, row_id: 1 } };

  await sdk.createCollection({ body: { name: collection } });
  await sdk.insertRows({ path, body: patching.rows });
  const patches = await inOrder({
    merge: () => sdk.updateRow({ ...first, body: patching.merge }),
    'merge-by-filter': () => sdk.updateRows({ path, query: { filter: patching.filter }, body: patching.mergeByFilter }),
    'merge-patch': () => sdk.updateRow({ ...first, body: patching.mergePatch, headers: patching.mergePatchType }),
  });
  const listed = await sdk.listRows({ path });
  return {
    statuses: Object.fromEntries(Object.entries(patches).map(([format, { response }]) => [format, response?.status ?? 0])),
    rows: listed.data,
  };
}
