// A client generated from openapi.yaml (openapi-typescript types + openapi-fetch), the way an SDK user
// would call rowbase. If a path, parameter or schema in openapi.yaml drifts from the server, these
// calls stop compiling or stop matching.
import { expect } from 'chai';
import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from '../../generated/openapi.ts';
import { describeEachBackend } from '../support/backends.ts';
import { checkResponse } from '../support/contract.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

describeEachBackend('a typed client generated from openapi.yaml', (backend) => {
  let server: TestServer;
  let api: ReturnType<typeof createClient<paths>>;
  before(async () => {
    server = await startTestServer({}, { backend });
    const { key } = await server.store.createKey('sdk-user', TEST_PLAN);
    api = createClient<paths>({ baseUrl: server.url, headers: { Authorization: `Bearer ${key}` } });
    // Every response this client sees is checked against openapi.yaml too.
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

  it('reads /health without a key', async () => {
    const anonymous = createClient<paths>({ baseUrl: server.url });
    const { data } = await anonymous.GET('/health');
    expect(data).to.deep.equal({ ok: true, service: 'rowbase' });
  });
});
