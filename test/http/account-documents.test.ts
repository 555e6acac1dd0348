// The account's documents (openapi.yaml, getAccountOpenApi and getAccountAsyncApi): its collections typed,
// as its key sees them, with an ETag that moves when a collection or a schema does. To a publishable key,
// what its caller may use (docs/access.md, "The contract follows the caller"), as the collections' rules
// grant it when the request is made: a change of the rules, on any instance, shows in the next answer.
import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import { SignJWT } from 'jose';
import { parse } from 'yaml';
import { accountAsyncApi, accountOpenApi } from '../../src/contract/account.ts';
import { takesPublishable } from '../../src/contract/caller.ts';
import { openStore, type Store } from '../../src/db/open-store.ts';
import { checkRules } from '../../src/rules/rules.ts';
import { describeEachBackend } from '../support/backends.ts';
import { callerViews, notesRules, notesSchema, scratchRules, viewedCollections } from '../support/caller.ts';
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

  it("types the expansions of a collection's relations, moves the ETag when one is declared or removed, and leaves out those the key does not see", async () => {
    const people = { type: 'object', required: ['name'], properties: { name: { type: 'string' } } };
    const posts = { type: 'object', properties: { title: { type: 'string' }, author_id: { type: ['integer', 'null'] } } };
    for (const body of [
      { name: 'people', schema: people },
      { name: 'posts', schema: posts },
    ]) {
      expect((await client.post('/v1/collections', body)).status).to.equal(201);
    }
    const before = await client.get<Document>('/v1/openapi.json');
    expect(before.body.components.schemas).to.not.have.property('PostsExpand');
    const author = { field: 'author_id', collection: 'people', reverse: 'posts' };
    expect((await client.put('/v1/collections/posts/relations/author', author)).status).to.equal(200);

    const related = await client.get<Document>('/v1/openapi.json', { headers: { 'If-None-Match': before.headers.get('etag') ?? '' } });
    expect(related.status).to.equal(200);
    const schemas = related.body.components.schemas as Record<string, { properties: Record<string, unknown> }>;
    expect(schemas.PostsExpand!.properties.author).to.deep.include({
      oneOf: [{ $ref: '#/components/schemas/PeopleRow' }, { type: 'null' }],
    });
    expect(schemas.PeopleExpand!.properties.posts).to.deep.include({ type: 'array', items: { $ref: '#/components/schemas/PostsRow' } });
    expect(schemas.PostsRow!.properties._expand).to.deep.equal({ $ref: '#/components/schemas/PostsExpand' });

    // A key limited to `posts` does not see `people`: no relation of `posts` is typed for it.
    const { key } = await server.store.createKey('documents', TEST_PLAN, { scope: 'read', collections: ['posts'] });
    const limited = await new Client(server.url, key).get<Document>('/v1/openapi.json');
    expect(limited.body.components.schemas).to.not.have.property('PostsExpand');
    expect((limited.body.components.schemas.PostsRow as { properties: object }).properties).to.not.have.property('_expand');

    expect((await client.delete('/v1/collections/posts/relations/author')).status).to.equal(204);
    const removed = await client.get<Document>('/v1/openapi.json');
    expect(removed.headers.get('etag')).to.not.equal(related.headers.get('etag'));
    expect(removed.body.components.schemas).to.not.have.property('PostsExpand');
  });
});

const SECRET = 'a shared secret of at least 32 bytes';
const ISSUER = 'https://backend.example/';

/** An HS256 token of the app's backend for `sub`. */
const tokenOf = (sub: string) =>
  new SignJWT({ sub })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(ISSUER)
    .setAudience('app')
    .setExpirationTime('5 minutes')
    .sign(new TextEncoder().encode(SECRET));

describeEachBackend("the account's documents for a publishable key", (backend) => {
  let server: TestServer;
  let admin: Client;
  /** A store of its own on the same database: another instance. */
  let other: Store;
  let accountId: number;
  let publishable: string;
  let openapi: object;
  let asyncapi: object;
  /** The publishable key's request for the document at `path`, with the token of `sub` (none: anonymous), and `headers`. */
  const asApp = async (path: string, sub?: string, headers: Record<string, string> = {}, key = publishable) =>
    new Client(server.url).get<Record<string, unknown>>(path, {
      headers: { 'x-api-key': key, ...(sub ? { authorization: `Bearer ${await tokenOf(sub)}` } : {}), ...headers },
    });

  before(async () => {
    server = await startTestServer({}, { backend });
    other = await openStore(server.databaseUrl);
    admin = await server.client();
    accountId = (await server.store.findPrincipal(admin.key!))!.accountId;
    [openapi, asyncapi] = await Promise.all(
      ['openapi.yaml', 'asyncapi.yaml'].map(async (name) => parse(await readFile(new URL(`../../${name}`, import.meta.url), 'utf8'))),
    );
    for (const body of [{ name: 'notes', schema: notesSchema }, { name: 'scratch' }, { name: 'drafts' }]) {
      expect((await admin.post('/v1/collections', body)).status).to.equal(201);
    }
    // `drafts` has no rules: it grants a publishable key nothing.
    expect((await admin.put('/v1/collections/notes/rules', notesRules)).status).to.equal(200);
    expect((await admin.put('/v1/collections/scratch/rules', scratchRules)).status).to.equal(200);
    expect((await admin.put('/v1/auth/issuers/backend', { issuer: ISSUER, audiences: ['app'], secret: SECRET })).status).to.equal(201);
    publishable = (await admin.post<{ key: string }>('/v1/keys', { kind: 'publishable', origins: ['https://app.example'] })).body.key;
  });
  after(async () => {
    await other.close();
    await server.stop();
  });

  it('answers an end user the operations and fields the rules grant them, with the security of a publishable key', async () => {
    const [open, feed] = await Promise.all([asApp('/v1/openapi.json', 'ada'), asApp('/v1/asyncapi.json', 'ada')]);
    expect([open.status, feed.status]).to.deep.equal([200, 200]);
    expect(open.body).to.deep.equal(accountOpenApi(openapi, viewedCollections('user'), { publishable: true }));
    const caller = { publishable: true, feed: takesPublishable(openapi, 'openFeed') };
    expect(feed.body).to.deep.equal(accountAsyncApi(asyncapi, viewedCollections('user'), caller));
    expect(open.text).to.not.include('salary').and.not.include('drafts');
    const { endUserToken } = (open.body.components as { securitySchemes: Record<string, object> }).securitySchemes;
    expect(endUserToken).to.deep.include({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
  });

  it('answers an end user the 3.2 document, whose changes of notes are typed without the hidden field', async () => {
    const answer = await asApp('/v1/openapi.json?version=3.2', 'ada');
    expect(answer.status).to.equal(200);
    expect(answer.body).to.deep.equal(accountOpenApi(openapi, viewedCollections('user'), { publishable: true }, '3.2'));
    const changes = (answer.body.paths as Record<string, { get: { operationId: string } }>)['/v1/collections/notes/changes'];
    expect(changes?.get.operationId).to.equal('getNotesChanges');
    expect(answer.text).to.include('"NotesFeedMessage"').and.not.include('salary').and.not.include('drafts');
  });

  it('answers an anonymous caller what the rules grant one, and two users the rules grant alike one document', async () => {
    const [ada, bob, anonymous] = await Promise.all([
      asApp('/v1/openapi.json', 'ada'),
      asApp('/v1/openapi.json', 'bob'),
      asApp('/v1/openapi.json'),
    ]);
    expect(anonymous.status).to.equal(200);
    expect(anonymous.body).to.deep.equal(accountOpenApi(openapi, viewedCollections('anonymous'), { publishable: true }));
    expect(bob.headers.get('etag')).to.equal(ada.headers.get('etag'));
    expect(anonymous.headers.get('etag')).to.not.equal(ada.headers.get('etag'));
    const secret = await admin.get('/v1/openapi.json');
    expect(secret.headers.get('etag')).to.not.equal(ada.headers.get('etag'));
    expect((await asApp('/v1/openapi.json', 'bob', { 'If-None-Match': ada.headers.get('etag')! })).status).to.equal(304);
    const head = await new Client(server.url).request('HEAD', '/v1/asyncapi.json', { headers: { 'x-api-key': publishable } });
    expect([head.status, head.headers.get('etag')]).to.deep.equal([200, (await asApp('/v1/asyncapi.json')).headers.get('etag')]);
  });

  it('answers a secret key every collection, as before', async () => {
    const secret = await admin.get<{ paths: object }>('/v1/openapi.json');
    expect(secret.body.paths).to.have.property('/v1/collections/drafts/rows');
    expect(secret.text).to.include('salary');
  });

  it('shows a change of the rules made on another instance in the next answer', async () => {
    const before = await asApp('/v1/openapi.json', 'ada');
    // The fields of `notes` no longer hidden: another instance sets the rules.
    await other.putRules(accountId, 'notes', checkRules({ ...notesRules, fields: {} }));
    const widened = await asApp('/v1/openapi.json', 'ada');
    expect(widened.headers.get('etag')).to.not.equal(before.headers.get('etag'));
    const notes = { operations: callerViews.user.notes.operations, hidden: [], unwritable: [] };
    const collections = viewedCollections('user').map((each) => (each.name === 'notes' ? { ...each, view: notes } : each));
    expect(widened.body).to.deep.equal(accountOpenApi(openapi, collections, { publishable: true }));

    // Without rules, `notes` grants nothing: it leaves the document.
    await other.deleteRules(accountId, 'notes');
    const gone = await asApp('/v1/openapi.json', 'ada');
    expect(gone.body).to.deep.equal(accountOpenApi(openapi, viewedCollections('anonymous'), { publishable: true }));
    expect(gone.headers.get('etag')).to.equal((await asApp('/v1/openapi.json')).headers.get('etag'));
    expect((await admin.put('/v1/collections/notes/rules', notesRules)).status).to.equal(200);
    expect((await asApp('/v1/openapi.json', 'ada')).headers.get('etag')).to.equal(before.headers.get('etag'));
  });

  it('shows a publishable key limited to some collections only those', async () => {
    const limited = (
      await admin.post<{ key: string }>('/v1/keys', { kind: 'publishable', origins: ['https://app.example'], collections: ['notes'] })
    ).body.key;
    const answer = await asApp('/v1/openapi.json', 'ada', {}, limited);
    const notes = viewedCollections('user').filter(({ name }) => name === 'notes');
    expect(answer.body).to.deep.equal(accountOpenApi(openapi, notes, { publishable: true }));
  });
});
