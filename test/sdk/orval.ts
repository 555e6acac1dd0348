// orval's fetch client of openapi.yaml, called as an SDK user would. Its base URL is read when each
// request is made, from ROWBASE_URL (orval's `baseUrl.runtime`, set in the test's orval.config.mjs).
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
import * as api from './out/orval/api.ts';

/** Every operation of the client: its functions but the URL builders (`getGetHealthUrl`, …). */
type Operation = Exclude<
  { [Name in keyof typeof api]: (typeof api)[Name] extends (...args: never[]) => unknown ? Name : never }[keyof typeof api],
  `get${string}Url`
>;

export async function callEveryOperation(baseUrl: string, key: string, collection: string): Promise<Outcome> {
  process.env.ROWBASE_URL = baseUrl;
  const options = { headers: { Authorization: `Bearer ${key}` } };
  const page: api.ListRowsParams = { limit: 10, order_by: 'n', order: 'desc' };
  let prefix = '';
  let webhookId = 0;

  const answers = await inOrder({
    getHealth: () => api.getHealth(options),
    headHealth: () => api.headHealth(options),
    getReadiness: () => api.getReadiness(options),
    headReadiness: () => api.headReadiness(options),
    getUsage: () => api.getUsage(options),
    headUsage: () => api.headUsage(options),
    createCollection: () => api.createCollection({ name: collection }, options),
    listCollections: () => api.listCollections(options),
    headCollections: () => api.headCollections(options),
    getCollection: () => api.getCollection(collection, options),
    headCollection: () => api.headCollection(collection, options),
    insertRows: () => api.insertRows(collection, rows, undefined, options),
    listRows: () => api.listRows(collection, page, options),
    headRows: () => api.headRows(collection, page, options),
    getChanges: () => api.getChanges(collection, { limit: 1 }, options),
    headChanges: () => api.headChanges(collection, undefined, options),
    listVersionedRows: () => api.listVersionedRows(collection, page, options),
    headVersionedRows: () => api.headVersionedRows(collection, page, options),
    queryRows: () => api.queryRows(collection, rowQuery, options),
    aggregateRows: () =>
      api.aggregateRows(collection, { group_by: ['text'], aggregates: { n: { count: {} }, total: { sum: 'n' } } }, options),
    getAggregates: () => api.getAggregates(collection, { group_by: 'text', aggregates: '{"n":{"count":{}},"total":{"sum":"n"}}' }, options),
    headAggregates: () => api.headAggregates(collection, { group_by: 'text' }, options),
    getRow: () => api.getRow(collection, 1, undefined, options),
    headRow: () => api.headRow(collection, 1, undefined, options),
    updateRow: () => api.updateRow(collection, 1, { n: 3 }, options),
    deleteRow: () => api.deleteRow(collection, 2, options),
    updateRows: () => api.updateRows(collection, { done: true }, { filter: '{"n":3}', return: 'rows' }, options),
    deleteRows: () => api.deleteRows(collection, { filter: '{"n":{"$gt":3}}' }, options),
    writeBatch: () => api.writeBatch({ operations: [{ op: 'insert', collection, rows }] }, options),
    listKeys: () => api.listKeys(options),
    headKeys: () => api.headKeys(options),
    createKey: async () => {
      const created = await api.createKey({ scope: 'read', name: 'sdk' }, options);
      if (created.status === 201) prefix = created.data.prefix;
      return created;
    },
    revokeKey: () => api.revokeKey(prefix, options),
    // The webhook is made after the last write of rows, to a port of this machine: nothing leaves it.
    createWebhook: async () => {
      const created = await api.createWebhook({ url: webhookUrl, collections: [collection], events: ['insert'] }, options);
      webhookId = created.status === 201 ? created.data.id : 0;
      return created;
    },
    listWebhooks: () => api.listWebhooks(options),
    headWebhooks: () => api.headWebhooks(options),
    getWebhook: () => api.getWebhook(webhookId, options),
    headWebhook: () => api.headWebhook(webhookId, options),
    updateWebhook: () => api.updateWebhook(webhookId, { enabled: false }, options),
    rotateWebhookSecret: () => api.rotateWebhookSecret(webhookId, options),
    listWebhookDeliveries: () => api.listWebhookDeliveries(webhookId, { limit: 10 }, options),
    headWebhookDeliveries: () => api.headWebhookDeliveries(webhookId, { limit: 10 }, options),
    // Nothing was delivered to it: there is no attempt 1.
    retryWebhookDelivery: () => api.retryWebhookDelivery(webhookId, 1, options),
    deleteWebhook: () => api.deleteWebhook(webhookId, options),
    putIssuer: () => api.putIssuer(collection, issuerInput, options),
    listIssuers: () => api.listIssuers(options),
    headIssuers: () => api.headIssuers(options),
    getIssuer: () => api.getIssuer(collection, options),
    headIssuer: () => api.headIssuer(collection, options),
    deleteIssuer: () => api.deleteIssuer(collection, options),
    getDeclaration: () => api.getDeclaration(options),
    headDeclaration: () => api.headDeclaration(options),
    planDeclaration: () => api.planDeclaration(declarationInput, options),
    applyDeclaration: () => api.applyDeclaration(declarationInput, options),
    openFeed: () => api.openFeed({ collection }, options),
    headFeed: () => api.headFeed({ collection }, options),
    putCollectionSchema: () => api.putCollectionSchema(collection, { type: 'object' }, options),
    getCollectionSchema: () => api.getCollectionSchema(collection, options),
    headCollectionSchema: () => api.headCollectionSchema(collection, options),
    deleteCollectionSchema: () => api.deleteCollectionSchema(collection, options),
    putCollectionRules: () => api.putCollectionRules(collection, { read: { owner: { $auth: 'sub' } } }, options),
    getCollectionRules: () => api.getCollectionRules(collection, options),
    headCollectionRules: () => api.headCollectionRules(collection, options),
    checkCollectionRules: () => api.checkCollectionRules(collection, { operation: 'read', claims: null, row: {} }, options),
    deleteCollectionRules: () => api.deleteCollectionRules(collection, options),
    putCollectionTtl: () => api.putCollectionTtl(collection, { field: 'expires_at' }, options),
    getCollectionTtl: () => api.getCollectionTtl(collection, options),
    headCollectionTtl: () => api.headCollectionTtl(collection, options),
    deleteCollectionTtl: () => api.deleteCollectionTtl(collection, options),
    putRelation: () =>
      api.putRelation(collection, 'parent', { field: 'parent_id', collection, on_delete: 'set_null', reverse: 'children' }, options),
    listRelations: () => api.listRelations(collection, options),
    headRelations: () => api.headRelations(collection, options),
    getRelation: () => api.getRelation(collection, 'parent', options),
    headRelation: () => api.headRelation(collection, 'parent', options),
    deleteRelation: () => api.deleteRelation(collection, 'parent', options),
    getAccountOpenApi: () => api.getAccountOpenApi(undefined, options),
    headAccountOpenApi: () => api.headAccountOpenApi(undefined, options),
    getAccountAsyncApi: () => api.getAccountAsyncApi(options),
    headAccountAsyncApi: () => api.headAccountAsyncApi(options),
    createIndex: () => api.createIndex(collection, { fields: ['n'] }, options),
    listIndexes: () => api.listIndexes(collection, options),
    headIndexes: () => api.headIndexes(collection, options),
    deleteIndex: () => api.deleteIndex(collection, 'n', options),
    deleteCollection: () => api.deleteCollection(collection, options),
  } satisfies Record<Operation, () => Promise<{ status: number }>>);
  const missing = await api.getCollection(collection, options);
  const { getHealth, insertRows, listRows, queryRows, updateRow, openFeed } = answers;

  return {
    statuses: Object.fromEntries(Object.entries(answers).map(([operation, { status }]) => [operation, status])),
    facts: {
      service: getHealth.status === 200 ? getHealth.data.service : undefined,
      insertedIds: insertRows.status === 201 ? insertRows.data.map((stored) => stored.id) : undefined,
      listedTexts: listRows.status === 200 ? listRows.data.map((stored) => stored.text) : undefined,
      queried:
        queryRows.status === 200
          ? {
              texts: queryRows.data.rows.map((stored) => stored.text),
              total: queryRows.data.total,
              next: typeof queryRows.data.next === 'string',
            }
          : { texts: undefined, total: undefined, next: undefined },
      patched: updateRow.status === 200 ? updateRow.data : undefined,
      feedCode: openFeed.status === 400 ? openFeed.data.code : undefined,
      missingCode: missing.status === 404 ? missing.data.code : undefined,
    },
  };
}

/**
 * PATCHes rows in every format orval's types let a caller send (its body is any of the three media types'
 * schemas), naming a Content-Type only for a merge patch and a JSON Patch.
 */
export async function patchEachWay(baseUrl: string, key: string, collection: string): Promise<Patched> {
  process.env.ROWBASE_URL = baseUrl;
  const options = { headers: { Authorization: `Bearer ${key}` } };
  const as = (type: Record<string, string>) => ({ headers: { ...options.headers, ...type } });

  await api.createCollection({ name: collection }, options);
  await api.insertRows(collection, patching.rows, undefined, options);
  const patches = await inOrder({
    merge: () => api.updateRow(collection, 1, patching.merge, options),
    'merge-by-filter': () => api.updateRows(collection, patching.mergeByFilter, { filter: patching.filter }, options),
    'merge-patch': () => api.updateRow(collection, 1, patching.mergePatch, as(patching.mergePatchType)),
    'json-patch': () => api.updateRow(collection, 1, patching.jsonPatch, as(patching.jsonPatchType)),
  });
  const listed = await api.listRows(collection, undefined, options);
  return {
    statuses: Object.fromEntries(Object.entries(patches).map(([format, { status }]) => [format, status])),
    rows: listed.status === 200 ? listed.data : undefined,
  };
}
