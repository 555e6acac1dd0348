// openapi.yaml served as OpenAPI 3.2 (`GET /openapi.yaml?version=3.2`, contract/openapi-32.ts): the 3.1
// document with the item of each changes stream typed by `itemSchema`, linted clean by Redocly, which reads
// 3.2 (Spectral does not yet).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parse } from 'yaml';
import { accountOpenApi } from '../../src/contract/account.ts';
import { redoclyLint } from '../support/lint.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

// biome-ignore lint/suspicious/noExplicitAny: a parsed document, read by its paths
type Json = any;

/**
 * Checks that the 3.2 `document` gives `collection` (whose types are `<prefix>…`) its changes path, whose
 * page and streams' items are its own messages, their rows its `<prefix>Row`.
 */
function expectTypedChanges(document: Json, collection: string, prefix: string): void {
  const ref = (name: string) => ({ $ref: `#/components/schemas/${prefix}${name}` });
  const get = document.paths[`/v1/collections/${collection}/changes`].get;
  expect(get.operationId).to.equal(`get${prefix}Changes`);
  const content = get.responses['200'].content;
  expect(content['application/json'].schema).to.deep.equal(ref('ChangesPage'));
  expect(content['application/jsonl'].itemSchema).to.deep.equal(ref('FeedMessage'));
  expect(content['text/event-stream'].itemSchema.properties.data.contentSchema).to.deep.equal(ref('FeedMessage'));
  const schemas = document.components.schemas;
  expect(schemas[`${prefix}FeedMessage`].oneOf).to.deep.include(ref('InsertMessage'));
  expect(schemas[`${prefix}ChangesPage`].properties.changes.items).to.deep.equal(ref('ChangeMessage'));
  for (const kind of ['Insert', 'Update', 'Delete']) {
    expect(schemas[`${prefix}${kind}Message`].properties.row, kind).to.deep.equal(ref('Row'));
    expect(schemas[`${prefix}${kind}Message`].properties.collection, kind).to.deep.equal({ type: 'string', const: collection });
  }
  expect(schemas[`${prefix}UpdateMessage`].properties.previous).to.deep.equal(ref('Row'));
}

describe('openapi.yaml as OpenAPI 3.2', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.stop());

  it('types the items of the changes streams with itemSchema, and lints clean with Redocly', async function () {
    this.timeout(120_000);
    const answer = await server.anonymous().get('/openapi.yaml?version=3.2');
    expect(answer.status).to.equal(200);
    expect(answer.headers.get('content-type')).to.equal('application/yaml; charset=utf-8');
    const document = parse(answer.text);
    expect(document.openapi).to.equal('3.2.0');
    const content = document.paths['/v1/collections/{collection_name}/changes'].get.responses['200'].content;
    expect(content['application/jsonl'].itemSchema).to.deep.equal({ $ref: '#/components/schemas/FeedMessage' });
    expect(content['text/event-stream'].itemSchema.properties.data.contentSchema).to.deep.equal({
      $ref: '#/components/schemas/FeedMessage',
    });
    expect(answer.text, 'the extension, renamed').not.to.match(/^ *x-rowbase-item-schema:/m);
    const dir = await mkdtemp(join(tmpdir(), 'rowbase-openapi-32-'));
    try {
      await writeFile(join(dir, 'openapi.yaml'), answer.text);
      for (const [name, said] of await redoclyLint(dir, ['openapi.yaml'])) {
        // Redocly reads 3.2's structure: a misspelt itemSchema is "not expected here".
        expect(said, name).to.include('Your API description is valid');
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("serves the account's document as 3.2 too, with a tag of its own, linted clean by Redocly", async function () {
    this.timeout(120_000);
    const client = await server.client();
    await client.post('/v1/collections', { name: 'notes', schema: { type: 'object', properties: { text: { type: 'string' } } } });
    const v31 = await client.get<{ openapi: string }>('/v1/openapi.json');
    const v32 = await client.get<{ openapi: string; paths: Record<string, { get: { responses: Record<string, { content: object }> } }> }>(
      '/v1/openapi.json?version=3.2',
    );
    expect(v31.body.openapi).to.equal('3.1.0');
    expect(v32.body.openapi).to.equal('3.2.0');
    expect(v32.headers.get('etag')).to.not.equal(v31.headers.get('etag'));
    expect(v32.headers.get('etag')).to.match(/-32"$/);
    const again = await client.get('/v1/openapi.json?version=3.2', { headers: { 'if-none-match': v32.headers.get('etag') as string } });
    expect(again.status).to.equal(304);
    const content = v32.body.paths['/v1/collections/{collection_name}/changes'].get.responses['200'].content as Record<string, object>;
    expect(content['application/jsonl']).to.have.property('itemSchema');
    // The collection's own changes, its stream's items typed by its schema; not in 3.1.
    expect(v31.body).not.to.have.nested.property('paths./v1/collections/notes/changes');
    expectTypedChanges(v32.body, 'notes', 'Notes');
    expect((await client.get('/v1/openapi.json?version=3.0')).status).to.equal(400);
    const dir = await mkdtemp(join(tmpdir(), 'rowbase-openapi-32-'));
    try {
      await writeFile(join(dir, 'openapi.json'), v32.text);
      for (const [name, said] of await redoclyLint(dir, ['openapi.json'])) expect(said, name).to.include('Your API description is valid');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("types a publishable key's caller's stream items without the fields hidden from it, linted clean by Redocly", async function () {
    this.timeout(120_000);
    const base = parse(await readFile(new URL('../../openapi.yaml', import.meta.url), 'utf8'));
    const schema = { type: 'object', properties: { name: { type: 'string' }, salary: { type: 'integer' } } };
    const view = { operations: ['read'] as const, hidden: ['salary'], unwritable: [] };
    const document = accountOpenApi(base, [{ name: 'people', schema, view }], { publishable: true }, '3.2') as Json;
    expect(document.openapi).to.equal('3.2.0');
    expectTypedChanges(document, 'people', 'People');
    expect(Object.keys(document.components.schemas.PeopleRow.properties)).to.deep.equal(['id', 'name']);
    expect(document.paths['/v1/collections/people/changes'].head.operationId).to.equal('headPeopleChanges');
    const dir = await mkdtemp(join(tmpdir(), 'rowbase-openapi-32-'));
    try {
      await writeFile(join(dir, 'openapi.json'), JSON.stringify(document));
      for (const [name, said] of await redoclyLint(dir, ['openapi.json'])) {
        expect(said, name)
          .to.include('Your API description is valid')
          .and.not.match(/You have \d+ warning/);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('is served as written without a version, and refuses another version with 400', async () => {
    const client = server.anonymous();
    const written = await client.get('/openapi.yaml');
    expect(parse(written.text).openapi).to.equal('3.0.3');
    for (const version of ['3.1', '3.0.3', '']) {
      const refused = await client.get(`/openapi.yaml?version=${version}`);
      expect(refused.status, version).to.equal(400);
    }
    expect((await client.get('/openapi.yaml?v=3.2')).status).to.equal(400);
    expect((await client.request('HEAD', '/openapi.yaml?version=3.2')).status).to.equal(200);
  });
});
