// The account's documents (openapi.yaml, getAccountOpenApi and getAccountAsyncApi): its collections typed,
// as its key sees them, with an ETag that moves when a collection or a schema does.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

type Document = { openapi?: string; asyncapi?: string; paths: Record<string, unknown>; components: { schemas: Record<string, unknown> } };

describeEachBackend("the account's documents", (backend) => {
  let server: TestServer;
  let client: Client;

  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client('documents');
  });
  after(() => server.stop());

  it('types each collection of the account, and moves its ETag when a collection or a schema changes', async () => {
    const first = await client.get<Document>('/v1/openapi.json');
    expect(first.status).to.equal(200);
    expect(first.body.openapi).to.equal('3.1.0');
    const tag = first.headers.get('etag') ?? '';
    expect((await client.get('/v1/openapi.json', { headers: { 'If-None-Match': tag } })).status).to.equal(304);

    const schema = { type: 'object', required: ['title'], properties: { title: { type: 'string' } } };
    expect((await client.post('/v1/collections', { name: 'tasks', schema })).status).to.equal(201);
    const typed = await client.get<Document>('/v1/openapi.json', { headers: { 'If-None-Match': tag } });
    expect(typed.status).to.equal(200);
    expect(typed.body.paths).to.have.property('/v1/collections/tasks/rows');
    expect((typed.body.components.schemas.TasksRow as { required: string[] }).required).to.have.members(['id', 'title']);
    const typedTag = typed.headers.get('etag');
    expect(typedTag).to.not.equal(tag);

    expect((await client.put('/v1/collections/tasks/schema', { ...schema, properties: { title: { type: 'integer' } } })).status).to.equal(
      200,
    );
    const changed = await client.get<Document>('/v1/openapi.json');
    expect(changed.headers.get('etag')).to.not.equal(typedTag);
    expect(JSON.stringify(changed.body.components.schemas.TasksInsert)).to.include('integer');
    // HEAD answers the same tag, without the body.
    const head = await client.request('HEAD', '/v1/openapi.json');
    expect([head.status, head.headers.get('etag'), head.text]).to.deep.equal([200, changed.headers.get('etag'), '']);
  });

  it('types the feed of each collection in the AsyncAPI document', async () => {
    const answer = await client.get<Document>('/v1/asyncapi.json');
    expect(answer.status).to.equal(200);
    expect(answer.body.asyncapi).to.equal('3.0.0');
    expect(JSON.stringify(answer.body)).to.include('TasksInsertMessage');
    expect((await client.get('/v1/asyncapi.json', { headers: { 'If-None-Match': answer.headers.get('etag') ?? '' } })).status).to.equal(
      304,
    );
  });

  it('shows a key limited to some collections only those, and any scope may read it', async () => {
    expect((await client.post('/v1/collections', { name: 'hidden' })).status).to.equal(201);
    const { key } = await server.store.createKey('documents', TEST_PLAN, { scope: 'read', collections: ['tasks'] });
    const limited = new Client(server.url, key);
    const document = await limited.get<Document>('/v1/openapi.json');
    expect(document.status).to.equal(200);
    expect(document.body.paths).to.have.property('/v1/collections/tasks/rows');
    expect(document.body.paths).to.not.have.property('/v1/collections/hidden/rows');
    expect((await client.get<Document>('/v1/openapi.json')).body.paths).to.have.property('/v1/collections/hidden/rows');
  });
});
