// A client generated from openapi.yaml (openapi-typescript types + openapi-fetch), the way an SDK user
// would call rowbase. If a path, parameter or schema in openapi.yaml drifts from the server, these
// calls stop compiling or stop matching.
import { expect } from 'chai';
import createClient, { type Middleware } from 'openapi-fetch';
import type { operations, paths } from '../../generated/openapi.ts';
import { describeEachBackend } from '../support/backends.ts';
import { checkResponse } from '../support/contract.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

// Every response these clients see is checked against openapi.yaml too.
const contract: Middleware = {
  async onResponse({ request, response }) {
    const text = await response.clone().text();
    checkResponse({
      method: request.method,
      path: new URL(request.url).pathname,
      status: response.status,
      headers: response.headers,
      text,
    });
  },
};

describeEachBackend('a typed client generated from openapi.yaml', (backend) => {
  let server: TestServer;
  let api: ReturnType<typeof createClient<paths>>;
  let key: string;
  before(async () => {
    server = await startTestServer({}, { backend });
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

  it('calls every operation of openapi.yaml, each answered as declared', async () => {
    await api.POST('/v1/collections', { body: { name: 'every' } });
    const path = { collection_name: 'every' };
    // A Record over every operationId: an operation added to openapi.yaml does not compile until it is called here.
    const calls: Record<keyof operations, () => Promise<{ response: Response }>> = {
      getHealth: () => api.GET('/health'),
      getOpenApiDocument: () => api.GET('/openapi.yaml', { parseAs: 'text' }),
      getAsyncApiDocument: () => api.GET('/asyncapi.yaml', { parseAs: 'text' }),
      getDocs: () => api.GET('/docs', { parseAs: 'text' }),
      getDocsAsset: () => api.GET('/docs/{asset}', { params: { path: { asset: 'docs.js' } }, parseAs: 'text' }),
      getUsage: () => api.GET('/v1/usage'),
      listCollections: () => api.GET('/v1/collections'),
      createCollection: () => api.POST('/v1/collections', { body: { name: 'another' } }),
      getCollection: () => api.GET('/v1/collections/{collection_name}', { params: { path } }),
      deleteCollection: () => api.DELETE('/v1/collections/{collection_name}', { params: { path: { collection_name: 'another' } } }),
      insertRows: () => api.POST('/v1/collections/{collection_name}/rows', { params: { path }, body: [{ text: 'a' }] }),
      listRows: () => api.GET('/v1/collections/{collection_name}/rows', { params: { path, query: { limit: 0 } } }),
      getRow: () => api.GET('/v1/collections/{collection_name}/rows/{row_id}', { params: { path: { ...path, row_id: 1 } } }),
      updateRow: () =>
        api.PATCH('/v1/collections/{collection_name}/rows/{row_id}', { params: { path: { ...path, row_id: 1 } }, body: { n: 1 } }),
      deleteRow: () => api.DELETE('/v1/collections/{collection_name}/rows/{row_id}', { params: { path: { ...path, row_id: 1 } } }),
    };
    for (const [operationId, call] of Object.entries(calls)) {
      const { response } = await call();
      expect(response.status, operationId).to.be.oneOf([200, 201, 204]);
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
