// A client reading a collection's changes stream with the types of the account's OpenAPI 3.2 document
// (`GET /v1/openapi.json?version=3.2`), where `/v1/collections/people/changes` answers JSON Lines whose
// `itemSchema` is `PeopleFeedMessage`, its rows `PeopleRow`. openapi-typescript (7) reads the 3.2 document
// but not `itemSchema`: it types the components, and the item of each stream is taken from the document by
// its path (`streamItems`), as a client of a generator that does not read `itemSchema` yet would. tsc
// --strict compiles a program that reads the rows' fields, and refuses one that reads a field `people` has
// not; the program then reads a real server's stream on each backend, each line checked against the item
// schema of the document and against asyncapi.yaml's feed messages.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import { checkResponse } from '../support/contract.ts';
import { messageProblem } from '../support/feed.ts';
import { runTool } from '../support/process.ts';
import { sdkFolder, strictErrors } from '../support/sdk.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const people = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string' }, age: { type: 'integer' } },
  additionalProperties: false,
};

type Json = { [key: string]: unknown };

/**
 * TypeScript source of `StreamItems`: for each path of `document` and each media type of its `200` whose
 * `itemSchema` names a schema, the type of an item's JSON (for server-sent events, its `data`'s
 * `contentSchema`), from openapi-typescript's `components` at `schemaModule`.
 */
function streamItems(document: Json, schemaModule: string): string {
  const named = (schema: unknown) => /^#\/components\/schemas\/(.+)$/.exec(String((schema as Json | undefined)?.$ref))?.[1];
  const entries: string[] = [];
  for (const [path, item] of Object.entries(document.paths as Record<string, Json>)) {
    const content = ((item.get as Json | undefined)?.responses as Record<string, Json> | undefined)?.['200']?.content as
      | Record<string, Json>
      | undefined;
    const media: string[] = [];
    for (const [type, { itemSchema }] of Object.entries(content ?? {})) {
      const data = ((itemSchema as Json | undefined)?.properties as Record<string, Json> | undefined)?.data;
      const name = named(itemSchema) ?? named(data?.contentSchema);
      if (name !== undefined) media.push(`    ${JSON.stringify(type)}: components['schemas'][${JSON.stringify(name)}];`);
    }
    if (media.length > 0) entries.push(`  ${JSON.stringify(path)}: {\n${media.join('\n')}\n  };`);
  }
  return `import type { components } from ${JSON.stringify(schemaModule)};\n\nexport interface StreamItems {\n${entries.join('\n')}\n}\n`;
}

/** The client's program: it reads `count` changes of `people` from a JSON Lines response, reading `field` of each row. */
const program = (field: string) => `import type { StreamItems } from '../out/items.ts';

type PeopleChange = StreamItems['/v1/collections/people/changes']['application/jsonl'];

/** Reads the stream until it has seen \`count\` changes: each line, and what each change says. */
export async function readChanges(response: Response, count: number): Promise<{ lines: string[]; said: string[] }> {
  const lines: string[] = [];
  const said: string[] = [];
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    const complete = buffered.split('\\n');
    buffered = complete.pop() as string;
    for (const line of complete) {
      lines.push(line);
      const message = JSON.parse(line) as PeopleChange;
      if (message.type === 'insert') said.push(\`insert \${message.row.${field}} \${message.row.age ?? '-'}\`);
      else if (message.type === 'update') said.push(\`update \${message.row.name} \${message.previous?.age} -> \${message.row.age}\`);
      else if (message.type === 'delete') said.push(\`delete \${message.row.name}\`);
    }
    if (said.length >= count) break;
  }
  return { lines, said };
}
`;

describe("a client reading a changes stream with the types of the account's OpenAPI 3.2 document", function () {
  this.timeout(300_000);
  let dir: string;
  let remove: (() => Promise<void>) | undefined;
  let compiled: Map<string, string[]>;
  let document: Json;

  before(async () => {
    ({ dir, remove } = await sdkFolder());
    const server = await startTestServer();
    try {
      const client = await server.client();
      expect((await client.post('/v1/collections', { name: 'people', schema: people })).status).to.equal(201);
      const answer = await client.get<Json>('/v1/openapi.json?version=3.2');
      document = answer.body;
    } finally {
      await server.stop();
    }
    await mkdir(join(dir, 'out'), { recursive: true });
    await mkdir(join(dir, 'callers'), { recursive: true });
    await writeFile(join(dir, 'openapi.json'), JSON.stringify(document, null, 2));
    await runTool('openapi-typescript', [join(dir, 'openapi.json'), '-o', join(dir, 'out/schema.ts')]);
    await writeFile(join(dir, 'out/items.ts'), streamItems(document, './schema.ts'));
    await writeFile(join(dir, 'callers/stream.ts'), program('name'));
    await writeFile(join(dir, 'callers/stream-wrong.ts'), program('email'));
    compiled = await strictErrors(dir, ['callers']);
  });

  after(() => remove?.());

  it('takes the item type of the JSON Lines and the server-sent events by the path from itemSchema', () => {
    const changes = (document.paths as Record<string, Json>)['/v1/collections/people/changes']?.get as Json;
    expect(changes.operationId).to.equal('getPeopleChanges');
    const content = (changes.responses as Record<string, Json>)['200']?.content as Record<string, Json>;
    expect(content['application/jsonl']?.itemSchema).to.deep.equal({ $ref: '#/components/schemas/PeopleFeedMessage' });
    const text = streamItems(document, './schema.ts');
    expect(text).to.include(`"/v1/collections/people/changes": {
    "text/event-stream": components['schemas']["PeopleFeedMessage"];
    "application/jsonl": components['schemas']["PeopleFeedMessage"];`);
    expect(text).to.include(`"/v1/collections/{collection_name}/changes": {
    "text/event-stream": components['schemas']["FeedMessage"];`);
  });

  it('compiles the program reading the fields of a `people` row with tsc --strict', () => {
    expect(compiled.get('callers/stream.ts') ?? []).to.deep.equal([]);
    expect([...compiled.keys()].filter((file) => !file.startsWith('callers/'))).to.deep.equal([]);
  });

  it('refuses to compile the program reading `email`, which a `people` row has not', () => {
    const errors = compiled.get('callers/stream-wrong.ts') ?? [];
    expect(errors).to.have.length(1);
    expect(errors[0]).to.match(/TS2339: Property 'email' does not exist on type/);
  });

  describeEachBackend('the program, on a real stream', (backend) => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({}, { backend });
    });
    after(() => server.stop());

    it("reads the inserts, updates and deletes of `people`, each line the document's item", async () => {
      const client = await server.client();
      expect((await client.post('/v1/collections', { name: 'people', schema: people })).status).to.equal(201);
      await client.post('/v1/collections/people/rows', [{ name: 'Ada', age: 36 }, { name: 'Alan' }]);
      await client.patch('/v1/collections/people/rows/1', { age: 37 });
      await client.delete('/v1/collections/people/rows/2');

      const path = '/v1/collections/people/changes';
      const response = await fetch(`${server.url}${path}?since=0`, {
        headers: { authorization: `Bearer ${client.key}`, accept: 'application/jsonl' },
      });
      // The head, against openapi.yaml (the body is a stream: its lines are checked one by one below).
      checkResponse({ method: 'GET', path, status: response.status, headers: response.headers, text: '' });
      const { readChanges } = (await import(pathToFileURL(join(dir, 'callers/stream.ts')).href)) as {
        readChanges: (response: Response, count: number) => Promise<{ lines: string[]; said: string[] }>;
      };
      const { lines, said } = await readChanges(response, 4);
      expect(said).to.deep.equal(['insert Ada 36', 'insert Alan -', 'update Ada 36 -> 37', 'delete Alan']);

      const ajv = new Ajv2020({ strict: false, allErrors: true });
      addFormats.default(ajv);
      ajv.addSchema({ ...document, $id: 'account' });
      const item = ajv.getSchema('account#/components/schemas/PeopleFeedMessage');
      if (!item) throw new Error('no PeopleFeedMessage');
      for (const line of lines) {
        expect(item(JSON.parse(line)), `${line}: ${ajv.errorsText(item.errors)}`).to.equal(true);
        expect(messageProblem(line), line).to.equal(undefined);
      }
      const alan = {
        type: 'insert',
        collection: 'people',
        seq: 2,
        at: '2026-01-01T00:00:00.000Z',
        row: { id: 2, name: 'Alan', email: 'a@b' },
      };
      expect(item(alan), 'a field people has not').to.equal(false);
    });
  });
});
