// Requests made from openapi.yaml's own examples, each changed at a few random places (a value of another
// type, a name every object inherits, U+0000, a number past what a column holds, a member taken away or
// nested deeper), sent to every operation but the feed's (and HEAD, which shares GET's checks): none is
// answered a 5xx, every answer is the contract's (Client checks each), and the server answers as before
// after them all. What it found when it was a throwaway script: `?expand=__proto__` polluting
// Object.prototype, a batch operation that is no object, a webhook id past 32 bits on PostgreSQL, U+0000 in
// a webhook's description. Seeded: a failure names its seed and request, and runs again the same. Every URL
// sent points at 127.0.0.1.

import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { parse } from 'yaml';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { random } from '../support/random.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Json = null | boolean | number | string | Json[] | { [name: string]: Json };
type Schema = { $ref?: string; example?: Json; examples?: Json[]; type?: string };
type Parameter = { $ref?: string; name: string; in: string; example?: Json; examples?: Record<string, { value: Json }>; schema?: Schema };
type Media = { example?: Json; examples?: Record<string, { $ref?: string; value?: Json }>; schema?: Schema };
type Operation = { operationId?: string; parameters?: Parameter[]; requestBody?: { $ref?: string; content?: Record<string, Media> } };

const document = parse(readFileSync('openapi.yaml', 'utf8'));
/** `value`, or what its `$ref` names in openapi.yaml. */
const resolved = <T>(value: T & { $ref?: string }): T =>
  value?.$ref
    ? resolved(
        value.$ref
          .slice(2)
          .split('/')
          .reduce((at, key) => at[key], document),
      )
    : value;

/** How many requests each backend is sent, and the seed of their changes. */
const REQUESTS = 1500;
const SEED = 63;

/** What a changed place may become. */
// biome-ignore format: a list
const values: Json[] = [
  '', '\u0000', 'a\u0000b', '\ud800', '😀', '__proto__', 'constructor', 'toString', 'x'.repeat(3000), '$gt', 'a.b', '(a+)+$',
  '(a)\\1', 0, -1, 0.5, 1e308, 2 ** 31, 2 ** 53 + 2, 2 ** 63, 1e21, true, null, [], {}, [null], { '': 1 }, { $gt: 1 }, { $in: [] },
  { $match: {} }, { $some: {} }, { $or: [] }, JSON.parse('{"__proto__":{"expand":{}}}'),
];
const names = ['notes', 'people', 'person', 'n', 'text', 'email', 'id', '__proto__', 'constructor'];

/** Every operation with its parameters and the examples of its bodies, as `[type, example]`. */
const operations = Object.entries(document.paths as Record<string, Record<string, Operation>>).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([method, operation]) => operation?.operationId && path !== '/ws' && method !== 'head')
    .map(([method, operation]) => {
      const parameters = [...((item.parameters as unknown as Parameter[]) ?? []), ...(operation.parameters ?? [])].map(resolved);
      const content = resolved(operation.requestBody ?? {}).content ?? {};
      const bodies = Object.entries(content).flatMap(([type, media]) => {
        const schema = resolved(media.schema ?? {});
        const examples = [
          media.example,
          ...Object.values(media.examples ?? {}).map((e) => resolved(e).value),
          schema.example,
          ...(schema.examples ?? []),
        ];
        return examples.filter((example) => example !== undefined).map((example) => [type, example] as [string, Json]);
      });
      return { path, method, parameters, bodies };
    }),
);

describeEachBackend('requests made from the examples, changed at random places', (backend) => {
  let server: TestServer;
  let client: Client;
  before(async () => {
    server = await startTestServer({ webhooksAllowPrivate: true }, { backend });
    client = await server.client();
    for (const name of ['people', 'notes']) expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    expect((await client.post('/v1/collections/people/rows', [{ email: 'a@x' }, { email: 'b@x' }])).status).to.equal(201);
    expect((await client.put('/v1/collections/notes/relations/person', { field: 'person', collection: 'people' })).status).to.equal(200);
    expect((await client.post('/v1/collections/notes/rows', [{ text: 'hi', n: 1, person: 1 }])).status).to.equal(201);
  });
  after(() => server?.stop());

  it(`answers none of ${REQUESTS} a 5xx, each as the contract says, and the next plain read as before`, async function () {
    this.timeout(240_000);
    const below = random(SEED);
    const pick = <T>(list: readonly T[]): T => list[below(list.length)];
    const copy = (value: Json): Json => structuredClone(value);

    /** `value` changed at one to three places. */
    const changed = (value: Json): Json => {
      const root: { [name: string]: Json } = { value: copy(value) };
      for (let n = 1 + below(3); n > 0; n--) {
        const places: [Record<string, Json>, string][] = [];
        const walk = (at: Json, depth: number) => {
          if (at === null || typeof at !== 'object' || depth > 10) return;
          for (const key of Object.keys(at)) {
            places.push([at as Record<string, Json>, key]);
            walk((at as Record<string, Json>)[key], depth + 1);
          }
        };
        walk(root, 0);
        if (places.length === 0) break;
        const [parent, key] = pick(places);
        const kind = below(6);
        if (kind === 0) delete parent[key];
        else if (kind === 1) parent[key] = pick(names);
        else if (kind === 2) parent[key] = { [pick(names)]: parent[key] };
        else parent[key] = copy(pick(values));
      }
      return root.value ?? null;
    };
    const text = (value: Json) => (typeof value === 'string' ? value : JSON.stringify(value));
    // Only this machine: a URL anywhere in a request points at a port of 127.0.0.1 where nothing listens.
    const here = (sent: string) => sent.replace(/https?:\/\/[^"\\\s]*/g, 'http://127.0.0.1:9/x');

    for (let sent = 0; sent < REQUESTS; sent++) {
      const { path, method, parameters, bodies } = pick(operations);
      const query = new URLSearchParams();
      const headers: Record<string, string> = {};
      let target = path;
      for (const parameter of parameters) {
        const examples = [parameter.example, ...Object.values(parameter.examples ?? {}).map((e) => e.value), parameter.schema?.example];
        const example = examples.find((value) => value !== undefined) ?? pick(values);
        if (parameter.in === 'path') {
          const value =
            parameter.name === 'collection_name'
              ? pick(['notes', 'people', 'notes', String(pick(names))])
              : text(below(4) === 0 ? pick(values) : example);
          target = target.replace(`{${parameter.name}}`, encodeURIComponent(value.replace(/[\ud800-\udfff]/g, 'x')));
        } else if (parameter.in === 'query' && below(2) === 0) {
          // A long poll answers at once: the requests are sent one after another.
          const value = parameter.name === 'wait' ? 0 : [example, example, changed(example), pick(names)][below(4)];
          query.append(parameter.name, here(text(value)).replace(/[\ud800-\udfff]/g, 'x'));
        }
      }
      if (query.size > 0) target += `?${query}`;
      let raw: string | undefined;
      if (bodies.length > 0) {
        const [type, example] = pick(bodies);
        headers['content-type'] = type;
        raw = here(typeof example === 'string' ? example : (JSON.stringify(below(8) === 0 ? example : changed(example)) ?? 'null'));
      }
      const answer = await client.request(method.toUpperCase(), target, { raw, headers });
      expect(answer.status, `request ${sent} of seed ${SEED}: ${method} ${target} ${raw?.slice(0, 500)}`).to.be.below(500);
    }
    // The server as before: a collection made now is written and read as any (the requests may have deleted the others).
    expect((await client.post('/v1/collections', { name: 'after_all' })).status).to.equal(201);
    expect((await client.post('/v1/collections/after_all/rows', [{ n: 1 }])).status).to.equal(201);
    expect((await client.get<unknown[]>('/v1/collections/after_all/rows')).body).to.deep.equal([{ id: 1, n: 1 }]);
  });
});
