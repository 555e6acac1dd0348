// What contract testers (Schemathesis, Portman, Dredd) need of every document the service serves (issue 56):
// openapi.yaml as written (OpenAPI 3.0.3) and as 3.2 (`?version=3.2`), and the account's (`GET
// /v1/openapi.json`, 3.1, and `?version=3.2`) for a secret key and for a publishable key's end user.
// Every operation declares a `default` problem response, so that a generated client types its errors
// (openapi-typescript#1386); a created row and a read row link to its read, patch and delete, which
// a tester follows here against the server; no example fails the schema beside it, nor an item of a
// stream's example the stream's item.

import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { expect } from 'chai';
import { createParser } from 'eventsource-parser';
import { parse } from 'yaml';
import { notesRules, notesSchema, scratchRules } from '../support/caller.ts';
import type { Client } from '../support/client.ts';
import { ContractError, checkResponse, checkStreamItem, openApi30Ajv, type SeenResponse } from '../support/contract.ts';
import { examplesOf, resolve } from '../support/documents.ts';
import { appKey, EndUser, tokenOf } from '../support/end-users.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

// biome-ignore lint/suspicious/noExplicitAny: a parsed document, read by its paths
type Json = any;

/** A document the service serves: what it is, and its text parsed. */
interface Served {
  name: string;
  document: Json;
}

/** An operation of a document, and where it is. */
interface Located {
  path: string;
  method: string;
  operation: Json;
  /** Its parameters and its path's, each resolved. */
  parameters: Json[];
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace', 'query'];

/** A value of `document`, its `$ref` followed (once: the components refer to no other component of their kind). */
const deref = (document: Json, node: Json): Json => (node && typeof node.$ref === 'string' ? resolve(document, node.$ref) : node);

/** The operations of `document`, by operationId. */
function operationsOf(document: Json): Map<string, Located> {
  const found = new Map<string, Located>();
  for (const [path, item] of Object.entries<Json>(document.paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) continue;
      const parameters = [...(item.parameters ?? []), ...(operation.parameters ?? [])].map((parameter) => deref(document, parameter));
      found.set(operation.operationId, { path, method, operation, parameters });
    }
  }
  return found;
}

/** Whether `schema` (of `document`) is the Problem, or one that is all of it and more (`OtherProblem`). */
function isProblem(document: Json, schema: Json): boolean {
  if (schema?.$ref === '#/components/schemas/Problem') return true;
  const resolved = deref(document, schema);
  return Array.isArray(resolved?.allOf) && resolved.allOf.some((each: Json) => isProblem(document, each));
}

/** The links of each response of each operation of `document`, each resolved: `[operationId, status, name, link]`. */
function linksOf(document: Json): [string, string, string, Json][] {
  const found: [string, string, string, Json][] = [];
  for (const [id, { operation }] of operationsOf(document)) {
    for (const [status, response] of Object.entries<Json>(operation.responses)) {
      for (const [name, link] of Object.entries<Json>(deref(document, response).links ?? {}))
        found.push([id, status, name, deref(document, link)]);
    }
  }
  return found;
}

/** The value of a link's runtime expression (OpenAPI, "Runtime Expressions") for a request's path parameters and its answer's body. */
function evaluate(expression: string, path: Record<string, string>, body: unknown): string {
  const parameter = /^\$request\.path\.(.+)$/.exec(expression)?.[1];
  if (parameter !== undefined) return path[parameter] as string;
  const pointer = /^\$response\.body#(.*)$/.exec(expression)?.[1];
  if (pointer === undefined) throw new Error(`no expression a test follows: ${expression}`);
  return String(pointer === '' ? body : resolve(body, `#${pointer}`));
}

describe('what contract testers need of every document the service serves', () => {
  let server: TestServer;
  let admin: Client;
  let user: EndUser;
  const served: Served[] = [];

  before(async function () {
    this.timeout(60_000);
    server = await startTestServer();
    admin = await server.client();
    for (const body of [{ name: 'notes', schema: notesSchema }, { name: 'scratch' }]) {
      expect((await admin.post('/v1/collections', body)).status).to.equal(201);
    }
    expect((await admin.put('/v1/collections/notes/rules', notesRules)).status).to.equal(200);
    expect((await admin.put('/v1/collections/scratch/rules', scratchRules)).status).to.equal(200);
    user = new EndUser(server.url, await appKey(admin), await tokenOf('ada'));
    const anonymous = server.anonymous();
    for (const [name, read] of [
      ['openapi.yaml (3.0.3)', async () => parse((await anonymous.get('/openapi.yaml')).text)],
      ['openapi.yaml?version=3.2', async () => parse((await anonymous.get('/openapi.yaml?version=3.2')).text)],
      ["the account's (3.1)", async () => (await admin.get('/v1/openapi.json')).body],
      ["the account's ?version=3.2", async () => (await admin.get('/v1/openapi.json?version=3.2')).body],
      ["a publishable key's end user's (3.1)", async () => (await user.get('/v1/openapi.json')).body],
      ["a publishable key's end user's ?version=3.2", async () => (await user.get('/v1/openapi.json?version=3.2')).body],
    ] as const) {
      served.push({ name, document: await read() });
    }
    expect(served.map(({ document }) => document.openapi)).to.deep.equal(['3.0.3', '3.2.0', '3.1.0', '3.2.0', '3.1.0', '3.2.0']);
  });
  after(() => server.stop());

  it('declare on every operation a default response: the problem, or for HEAD its head', () => {
    for (const { name, document } of served) {
      const operations = operationsOf(document);
      expect(operations.size, name).to.be.above(10);
      for (const [id, { method, operation }] of operations) {
        const fallback = deref(document, operation.responses.default);
        expect(fallback, `${name}: ${id}`).to.be.an('object');
        expect(fallback.headers, `${name}: ${id}`).to.have.property('X-Request-Id');
        if (method === 'head') {
          // A HEAD has no body to type (RFC 9110 §9.3.2).
          expect(fallback.content, `${name}: ${id}`).to.equal(undefined);
          continue;
        }
        expect(Object.keys(fallback.content ?? {}), `${name}: ${id}`).to.deep.equal(['application/problem+json']);
        expect(isProblem(document, fallback.content['application/problem+json'].schema), `${name}: ${id}`).to.equal(true);
      }
    }
  });

  it("link a created row and a read row to its read, patch and delete, each link naming an operation and parameters of the document's", () => {
    const expected = (prefix: string, names = ['getRow', 'updateRow', 'deleteRow']) =>
      names.map((name) => [name, name.replace('Row', `${prefix}Row`)]);
    for (const { name, document } of served) {
      const operations = operationsOf(document);
      const links = linksOf(document);
      for (const [from, status, linkName, link] of links) {
        const where = `${name}: ${from} ${status} ${linkName}`;
        const target = operations.get(link.operationId);
        expect(target, `${where} names ${link.operationId}`).to.not.equal(undefined);
        const source = operations.get(from) as Located;
        const accepted = new Set((target as Located).parameters.map((parameter) => parameter.name));
        const needed = (target as Located).parameters.filter((parameter) => parameter.in === 'path').map((parameter) => parameter.name);
        expect(Object.keys(link.parameters).sort(), where).to.deep.equal(needed.sort());
        for (const [parameter, expression] of Object.entries<string>(link.parameters)) {
          expect(accepted.has(parameter), `${where}: ${parameter}`).to.equal(true);
          const named = /^\$request\.path\.(.+)$/.exec(expression)?.[1];
          if (named !== undefined)
            expect(
              source.parameters.map((each) => each.name),
              `${where}: ${expression}`,
            ).to.include(named);
          else expect(expression, where).to.match(/^\$response\.body#\/(0\/)?id$/);
        }
      }
      const linked = (from: string, status: string) =>
        links.filter(([id, at]) => id === from && at === status).map(([, , linkName, link]) => [linkName, link.operationId]);
      const publishable = name.includes('publishable');
      // The rules of `notes` grant the end user no delete, and `scratch` only reads: no delete anywhere, so no link to one.
      const generic = publishable ? ['getRow', 'updateRow'] : undefined;
      for (const status of ['200', '201'])
        expect(linked('insertRows', status), `${name}: insertRows ${status}`).to.deep.equal(expected('', generic));
      expect(linked('getRow', '200'), `${name}: getRow`).to.deep.equal(expected('', generic));
      if (name.startsWith('openapi.yaml')) continue;
      expect(linked('insertNotesRows', '201'), name).to.deep.equal(expected('Notes', generic));
      expect(linked('getNotesRow', '200'), name).to.deep.equal(expected('Notes', generic));
      if (!publishable) expect(linked('insertScratchRows', '201'), name).to.deep.equal(expected('Scratch'));
    }
  });

  it('chain a created row to its read, patch and delete when a tester follows the links', async () => {
    const document = served.find(({ name }) => name === "the account's (3.1)")?.document as Json;
    const operations = operationsOf(document);
    for (const [insert, collection, body, patch] of [
      ['insertRows', 'scratch', [{ text: 'a' }, { text: 'b' }], { text: 'c' }],
      ['insertNotesRows', 'notes', [{ title: 'a' }], { title: 'b' }],
    ] as const) {
      const { path } = operations.get(insert) as Located;
      const pathParameters = { collection_name: collection };
      const created = await admin.post(path.replace('{collection_name}', collection), body);
      expect(created.status, insert).to.equal(201);
      const links = deref(document, document.paths[path].post.responses['201']).links;
      const said: [string, number, unknown][] = [];
      for (const [linkName, followed] of [
        ['getRow', 200],
        ['updateRow', 200],
        ['getRow', 200],
        ['deleteRow', 204],
        ['getRow', 404],
      ] as const) {
        const link = deref(document, links[linkName]);
        const target = operations.get(link.operationId) as Located;
        let url = target.path;
        for (const [parameter, expression] of Object.entries<string>(link.parameters)) {
          url = url.replace(`{${parameter}}`, encodeURIComponent(evaluate(expression, pathParameters, created.body)));
        }
        const answer = await admin.request(target.method.toUpperCase(), url, target.method === 'patch' ? { json: patch } : {});
        expect(answer.status, `${insert} → ${link.operationId} ${url}: ${answer.text}`).to.equal(followed);
        said.push([link.operationId, answer.status, (answer.body as { id?: number } | undefined)?.id]);
      }
      const id = (created.body as { id: number }[])[0].id;
      expect(said.map(([, , read]) => read)).to.deep.equal([id, id, id, undefined, undefined]);
    }
  });

  it('hold no example that fails the schema it sits beside', () => {
    const failures: string[] = [];
    let checked = 0;
    for (const { name, document } of served) {
      const ajv = document.openapi.startsWith('3.0') ? openApi30Ajv() : new Ajv2020({ strict: false, allErrors: true });
      if (!document.openapi.startsWith('3.0')) addFormats.default(ajv);
      const id = 'urn:rowbase:served';
      ajv.addSchema({ ...document, $id: id });
      const examples = examplesOf(document);
      expect(examples.length, name).to.be.above(50);
      for (const { where, value, schema } of examples) {
        const validate = ajv.getSchema(id + schema);
        if (!validate) throw new Error(`${name}: no schema at ${schema}`);
        checked++;
        if (!validate(value)) failures.push(`${name}: ${decodeURIComponent(where)}: ${ajv.errorsText(validate.errors)}`);
      }
    }
    expect(failures, failures.join('\n')).to.deep.equal([]);
    expect(checked).to.be.above(300);
  });

  it("hold stream examples whose every item is the stream's item", () => {
    const { document } = served[0] as Served;
    const path = '/v1/collections/{collection_name}/changes';
    const content = document.paths[path].get.responses['200'].content;
    const concrete = path.replace('{collection_name}', 'notes');
    const events: { id?: string; event?: string; data: string }[] = [];
    const parser = createParser({ onEvent: ({ id, event, data }) => events.push({ ...(id && { id }), ...(event && { event }), data }) });
    parser.feed(content['text/event-stream'].example);
    expect(events.map(({ event }) => event)).to.deep.equal(['ready', 'insert']);
    for (const event of events) checkStreamItem(concrete, 'text/event-stream', event);
    const lines = (content['application/jsonl'].example as string).split('\n');
    expect(lines.pop(), 'each line ends').to.equal('');
    expect(lines).to.have.length(2);
    for (const line of lines) checkStreamItem(concrete, 'application/jsonl', line);
    expect(() => checkStreamItem(concrete, 'application/jsonl', '{"type":"insert"}'), 'a message without its fields').to.throw(
      /does not match/,
    );
  });
});

describe("the tests' own response checker (test/support/contract.ts)", () => {
  const problem = (status: number, code: string) =>
    JSON.stringify({
      type: `urn:rowbase:problem:${code}`,
      title: code,
      status,
      detail: code,
      code,
      instance: 'urn:rowbase:request:1',
    });
  const headers = (more: Record<string, string> = {}) =>
    new Headers({
      'x-request-id': '1',
      'ratelimit-limit': '10',
      'ratelimit-remaining': '9',
      'ratelimit-reset': '60',
      ...more,
    });
  const problemHeaders = headers({ 'content-type': 'application/problem+json' });
  const row = '/v1/collections/notes/rows/1';
  const cases: [string, SeenResponse, RegExp | undefined][] = [
    [
      'a problem of the default',
      { method: 'GET', path: row, status: 503, headers: problemHeaders, text: problem(503, 'unavailable') },
      undefined,
    ],
    [
      'a status neither declared nor the default’s',
      { method: 'GET', path: row, status: 202, headers: problemHeaders, text: problem(503, 'unavailable') },
      /status not declared/,
    ],
    [
      'a problem of another status than the default’s',
      { method: 'GET', path: row, status: 422, headers: problemHeaders, text: problem(422, 'row_invalid') },
      /status not declared/,
    ],
    ['a HEAD of a status GET answers', { method: 'HEAD', path: row, status: 404, headers: problemHeaders, text: '' }, undefined],
    [
      'a HEAD of a status GET never answers',
      { method: 'HEAD', path: row, status: 409, headers: problemHeaders, text: '' },
      /status not declared/,
    ],
    [
      "a HEAD without a header GET's answer requires",
      { method: 'HEAD', path: row, status: 404, headers: new Headers({ 'content-type': 'application/problem+json' }), text: '' },
      /required header X-Request-Id/i,
    ],
    [
      'a HEAD of a media type GET does not answer',
      { method: 'HEAD', path: row, status: 404, headers: headers({ 'content-type': 'text/html' }), text: '' },
      /media type "text\/html" is not declared/,
    ],
    [
      'a media type the response does not declare',
      {
        method: 'GET',
        path: row,
        status: 200,
        headers: headers({
          'content-type': 'text/plain',
          etag: '"1.1"',
          'accept-patch': 'application/json, application/merge-patch+json, application/json-patch+json',
        }),
        text: '{"id":1}',
      },
      /media type "text\/plain" is not declared/,
    ],
    [
      'a required header missing',
      { method: 'GET', path: row, status: 200, headers: headers({ 'content-type': 'application/json' }), text: '{"id":1}' },
      /required header ETag is missing/,
    ],
  ];
  for (const [what, response, fails] of cases) {
    it(`${fails ? 'refuses' : 'takes'} ${what}`, () => {
      if (fails) expect(() => checkResponse(response)).to.throw(ContractError, fails);
      else expect(() => checkResponse(response)).to.not.throw();
    });
  }

  it("holds each item of a changes stream to the stream's item, an event's data to its contentSchema", () => {
    const changes = '/v1/collections/notes/changes';
    const ready = '{"type":"ready","collection":"notes","events":["insert"],"seq":0}';
    expect(() => checkStreamItem(changes, 'application/jsonl', ready)).to.not.throw();
    expect(() => checkStreamItem(changes, 'text/event-stream', { id: '0', event: 'ready', data: ready })).to.not.throw();
    expect(() => checkStreamItem(changes, 'application/jsonl', '{"type":"insert"}')).to.throw(ContractError, /a line does not match/);
    expect(() => checkStreamItem(changes, 'application/jsonl', 'ready')).to.throw(ContractError, /is not JSON/);
    expect(() => checkStreamItem(changes, 'text/event-stream', { data: ready })).to.throw(ContractError, /an event does not match/);
    expect(() => checkStreamItem(changes, 'text/event-stream', { event: 'insert', data: '{"type":"insert"}' })).to.throw(
      ContractError,
      /an event's data does not match/,
    );
    expect(() => checkStreamItem(changes, 'application/json', ready)).to.throw(ContractError, /no stream of items/);
  });
});
