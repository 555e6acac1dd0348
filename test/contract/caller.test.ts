// The account's contract for a caller holding a publishable key (src/contract/caller.ts; docs/access.md,
// "The contract follows the caller"): only the operations openapi.yaml lets a publishable key call and the
// collection's rules grant this caller, typed without the fields hidden from it. Which operations are there
// is computed from the marks `x-rowbase-publishable` of openapi.yaml, so that marking another operation
// changes no test here. The slow half lints the documents (Spectral, Redocly, the AsyncAPI parser), runs the
// three generators on the OpenAPI document, and compiles programs with each client: one that names a hidden
// field, or sets a field the caller may not, does not compile.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Parser } from '@asyncapi/parser';
import { expect } from 'chai';
import { parse } from 'yaml';
import { accountAsyncApi, accountOpenApi, type CollectionContract, documentTag } from '../../src/contract/account.ts';
import { collectionView } from '../../src/contract/caller.ts';
import { rowOperationId, rowOperations } from '../../src/contract/names.ts';
import { rowSchemas } from '../../src/contract/row-schemas.ts';
import { compileRules } from '../../src/rules/compile.ts';
import { checkRules } from '../../src/rules/rules.ts';
import { notesRules, notesSchema, viewedCollections, callerViews as views } from '../support/caller.ts';
import { refsOf, resolve } from '../support/documents.ts';
import { redoclyLint, spectralAsyncApi, spectralOpenApi } from '../support/lint.ts';
import { generateClients, sdkFolder, strictErrors } from '../support/sdk.ts';

const root = new URL('../../', import.meta.url).pathname;
const readYaml = async (name: string) => parse(await readFile(join(root, name), 'utf8'));

type Json = Record<string, unknown>;
type Operation = Json & { operationId: string; parameters?: Json[]; security?: unknown };

/** The operations on a collection's rows, by the rule of the collection each needs (docs/access.md). */
const OPERATIONS_OF_RULE = {
  read: [
    ...['listRows', 'headRows', 'listVersionedRows', 'headVersionedRows', 'queryRows', 'getRow', 'headRow'],
    ...['aggregateRows', 'getAggregates', 'headAggregates', 'openFeed', 'headFeed'],
  ],
  create: ['insertRows'],
  update: ['updateRows', 'updateRow'],
  delete: ['deleteRows', 'deleteRow'],
} as const;
const RULE: Record<string, keyof typeof OPERATIONS_OF_RULE> = Object.fromEntries(
  Object.entries(OPERATIONS_OF_RULE).flatMap(([rule, ids]) => ids.map((id) => [id, rule as keyof typeof OPERATIONS_OF_RULE])),
);

const operationsOf = (document: Json) =>
  Object.entries(document.paths as Record<string, Record<string, Operation>>).flatMap(([path, item]) =>
    Object.entries(item).flatMap(([method, operation]) => (operation.operationId ? [{ path, method, operation }] : [])),
  );

/** The operationIds `document` marks `x-rowbase-publishable: true`. */
const marksOf = (document: Json) =>
  new Set(operationsOf(document).flatMap(({ operation }) => (operation['x-rowbase-publishable'] === true ? [operation.operationId] : [])));

/** The components of `document` that nothing outside the components leads to by `$ref`, as `<kind>/<name>`. */
function unusedComponents(document: Json): string[] {
  const components = document.components as Record<string, Json>;
  const reached = new Set<string>();
  const follow = (refs: string[]) => {
    for (const ref of refs) {
      const [, kind, name] = /^#\/components\/([^/]+)\/([^/]+)/.exec(ref) ?? [];
      if (!kind || !name || reached.has(`${kind}/${name}`)) continue;
      reached.add(`${kind}/${name}`);
      follow(refsOf(components[kind]?.[name]));
    }
  };
  const { components: _components, ...rest } = document;
  follow(refsOf(rest));
  const named = JSON.stringify(rest);
  return Object.entries(components)
    .flatMap(([kind, members]) => Object.keys(members).map((name) => `${kind}/${name}`))
    .filter(
      (component) => !reached.has(component) && !(component.startsWith('securitySchemes/') && named.includes(`"${component.slice(16)}"`)),
    );
}

/** The operationIds a publishable key's document holds for `collections`, computed from the marks of `openapi`. */
function expectedOperations(openapi: Json, collections: readonly CollectionContract[]): string[] {
  const marks = marksOf(openapi);
  const granting = (rule: string) => collections.filter(({ view }) => view?.operations.includes(rule as never)).map(({ name }) => name);
  const generic = [...marks].filter((id) => {
    if (id === 'writeBatch') return ['create', 'update', 'delete'].some((rule) => granting(rule).length > 0);
    return RULE[id] === undefined || granting(RULE[id]).length > 0;
  });
  const copies = collections.flatMap(({ name, view }) =>
    (Object.keys(rowOperations) as (keyof typeof rowOperations)[])
      .filter((id) => marks.has(id) && view?.operations.includes(RULE[id] as never))
      .map((id) => rowOperationId(name, id)),
  );
  return [...generic, ...copies];
}

describe('the contract for a publishable key', () => {
  let openapi: Json;
  let asyncapi: Json;
  before(async () => {
    [openapi, asyncapi] = await Promise.all([readYaml('openapi.yaml'), readYaml('asyncapi.yaml')]);
  });

  describe('collectionView', () => {
    it('grants the rules that are not deny, hides the fields whose read is not all, and keeps apart those it may not set', () => {
      const rules = compileRules(checkRules(notesRules));
      expect(collectionView(rules, { sub: 'ada' })).to.deep.equal(views.user.notes);
      // A rule naming a claim matches nothing for an anonymous caller: it is denied.
      expect(collectionView(rules, null)).to.deep.equal({ operations: [], hidden: ['phone', 'salary'], unwritable: ['owner'] });
      // A field whose read is a filter, however it is met, is hidden; so is a field a claim of which is missing.
      const filtered = compileRules(
        checkRules({ read: true, fields: { b: { read: { owner: { $auth: 'sub' } } }, a: { write: 'authenticated' } } }),
      );
      expect(collectionView(filtered, { sub: 'ada' })).to.deep.equal({ operations: ['read'], hidden: ['b'], unwritable: [] });
      expect(collectionView(filtered, null)).to.deep.equal({ operations: ['read'], hidden: ['b'], unwritable: ['a'] });
      expect(collectionView(compileRules(checkRules({})), { sub: 'ada' }).operations).to.deep.equal([]);
    });

    it('names the fields the token fills in a row to insert, for a caller holding their claims', () => {
      const owned = compileRules(
        checkRules({
          read: true,
          create: true,
          fields: { owner: { default: { $auth: 'sub' }, write: false }, org: { default: { $auth: 'org' } } },
        }),
      );
      expect(collectionView(owned, { sub: 'ada' })).to.deep.equal({
        operations: ['read', 'create'],
        hidden: [],
        unwritable: ['owner'],
        filled: ['owner'],
      });
      expect(collectionView(owned, { sub: 'ada', org: 'acme' }).filled).to.deep.equal(['org', 'owner']);
      expect(collectionView(owned, null)).to.not.have.property('filled');
    });
  });

  describe('rowSchemas of a caller', () => {
    it('names a hidden field in no type, and a field the caller may not set in no type of what it writes', () => {
      const schema = {
        type: 'object',
        required: ['a', 'secret', 'fixed'],
        properties: { a: { type: 'string' }, secret: { type: 'string' }, fixed: { type: 'string' } },
        allOf: [{ required: ['secret'], properties: { secret: { minLength: 1 } } }],
        dependentRequired: { a: ['secret', 'fixed'], secret: ['a'] },
        examples: [{ a: 'x', secret: 's', fixed: 'f' }],
      };
      const { schemas } = rowSchemas('things', schema, { id: { type: 'integer' }, hidden: ['secret'], unwritable: ['fixed'] });
      expect(JSON.stringify(schemas)).to.not.include('secret');
      expect(schemas.ThingsRow).to.deep.include({ required: ['id', 'a', 'fixed'], dependentRequired: { a: ['fixed'] } });
      expect(Object.keys(schemas.ThingsRow!.properties as Json)).to.deep.equal(['id', 'a', 'fixed']);
      for (const name of ['ThingsInsert', 'ThingsPatch']) {
        expect(Object.keys(schemas[name]!.properties as Json), name).to.deep.equal(['id', 'a']);
      }
      expect(schemas.ThingsInsert).to.deep.include({ required: ['a'], examples: [{ a: 'x' }], allOf: [{ required: [], properties: {} }] });
    });

    it('requires no field the token fills in the row to insert, and keeps it in the row', () => {
      const schema = { type: 'object', required: ['owner', 'title'], properties: { owner: { type: 'string' }, title: { type: 'string' } } };
      const { schemas } = rowSchemas('things', schema, { id: { type: 'integer' }, filled: ['owner'] });
      expect(schemas.ThingsInsert).to.deep.include({ required: ['title'] });
      expect(Object.keys(schemas.ThingsInsert!.properties as Json)).to.deep.equal(['id', 'owner', 'title']);
      expect(schemas.ThingsRow).to.deep.include({ required: ['id', 'owner', 'title'] });
    });
  });

  describe('accountOpenApi for a publishable key', () => {
    let user: Json;
    let anonymous: Json;
    before(() => {
      user = accountOpenApi(openapi, viewedCollections('user'), { publishable: true }) as Json;
      anonymous = accountOpenApi(openapi, viewedCollections('anonymous'), { publishable: true }) as Json;
    });

    it('holds the operations openapi.yaml marks and the rules grant, and no other', () => {
      for (const [document, who] of [
        [user, 'user'],
        [anonymous, 'anonymous'],
      ] as const) {
        const ids = operationsOf(document).map(({ operation }) => operation.operationId);
        expect(ids, who).to.have.members(expectedOperations(openapi, viewedCollections(who)));
      }
      expect(operationsOf(user).map(({ operation }) => operation.operationId)).to.include.members([
        'getAccountOpenApi',
        'headAccountOpenApi',
        'getAccountAsyncApi',
        'headAccountAsyncApi',
      ]);
      // `notes` grants no delete, nor anything to an anonymous caller.
      expect(JSON.stringify(user)).to.not.include('deleteNotesRow');
      expect(Object.keys(anonymous.paths as Json).filter((path) => path.includes('/notes/'))).to.deep.equal([]);
    });

    it('names in a generic operation of rows only the collections that grant its rule', () => {
      for (const { path, method, operation } of operationsOf(user)) {
        const rule = RULE[operation.operationId];
        if (rule === undefined || !(path.includes('{collection_name}') || path === '/ws')) continue;
        const named = operation.parameters?.find((parameter) => parameter.name === 'collection_name' || parameter.name === 'collection');
        const granting = viewedCollections('user')
          .filter(({ view }) => view?.operations.includes(rule))
          .map(({ name }) => name);
        expect(named?.schema, `${method} ${path}`).to.deep.include({ enum: granting });
        expect(((user.paths as Json)[path] as Json).parameters ?? []).to.not.deep.include({
          $ref: '#/components/parameters/CollectionNamePath',
        });
      }
    });

    it('types the rows without the hidden fields, and what the caller writes without the fields it may not set', () => {
      expect(JSON.stringify(user)).to.not.include('salary');
      const schemas = (user.components as Json).schemas as Record<string, Json>;
      expect(Object.keys(schemas.NotesRow!.properties as Json)).to.deep.equal(['id', 'title', 'owner', 'phone']);
      expect(Object.keys(schemas.NotesInsert!.properties as Json)).to.deep.equal(['id', 'title', 'phone']);
      expect(Object.keys(schemas.NotesPatch!.properties as Json)).to.deep.equal(['id', 'title', 'phone']);
    });

    it('takes the publishable key in x-api-key and the end user’s token as an optional bearer JWT', () => {
      const schemes = (user.components as Json).securitySchemes as Record<string, Json>;
      expect(schemes.publishableKey).to.deep.include({ type: 'apiKey', in: 'header', name: 'x-api-key' });
      expect(schemes.endUserToken).to.deep.include({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
      expect(user.security).to.deep.equal([{ publishableKey: [], endUserToken: [] }, { publishableKey: [] }]);
      const feed = marksOf(openapi).has('openFeed');
      expect(Object.keys(schemes)).to.have.members([
        'publishableKey',
        'endUserToken',
        ...(feed ? ['publishableQueryKey', 'endUserQueryToken'] : []),
      ]);
      if (feed) {
        expect(schemes.endUserQueryToken).to.deep.include({ type: 'apiKey', in: 'query', name: 'access_token' });
        // The token is the scheme's, as the key is queryKey's: no parameter names it too.
        const ws = (user.paths as Json)['/ws'] as { parameters?: Json[] };
        expect((ws.parameters ?? []).map(({ name }) => name)).to.not.include('access_token');
        expect(((user.paths as Json)['/ws'] as Record<string, Operation>).get!.security).to.deep.include({
          publishableQueryKey: [],
          endUserQueryToken: [],
        });
      }
      for (const { operation } of operationsOf(user)) {
        expect(JSON.stringify(operation.security ?? []), operation.operationId).to.not.match(/bearerKey|headerKey|"queryKey/);
      }
    });

    it('keeps no component, tag or security scheme that nothing uses, and every $ref resolves', () => {
      for (const document of [user, anonymous]) {
        expect(unusedComponents(document)).to.deep.equal([]);
        expect(refsOf(document).filter((ref) => resolve(document, ref) === undefined)).to.deep.equal([]);
        const tags = new Set(operationsOf(document).flatMap(({ operation }) => operation.tags as string[]));
        expect((document.tags as Json[]).map(({ name }) => name)).to.have.members([...tags]);
      }
    });

    it('leaves openapi.yaml as parsed, and the document of a secret key as it was', async () => {
      expect(openapi).to.deep.equal(await readYaml('openapi.yaml'));
      const secret = accountOpenApi(openapi, viewedCollections('user')) as Json;
      const plain = accountOpenApi(
        openapi,
        viewedCollections('user').map(({ name, schema }) => ({ name, schema })),
      );
      expect(secret).to.deep.equal(plain);
    });
  });

  describe('accountAsyncApi for a publishable key', () => {
    it('holds the feed of the collections the caller may read, without the hidden fields, when the feed takes the key', () => {
      const document = accountAsyncApi(asyncapi, viewedCollections('user'), { publishable: true, feed: true }) as Json;
      const channel = (document.channels as Json).feed as Json;
      expect(Object.keys(channel.messages as Json)).to.have.members([
        'ready',
        'collectionDeleted',
        'NotesInsert',
        'NotesUpdate',
        'NotesDelete',
        'ScratchInsert',
        'ScratchUpdate',
        'ScratchDelete',
      ]);
      expect(Object.keys(document.channels as Json)).to.deep.equal(['feed']);
      expect(Object.keys(document.operations as Json)).to.have.members([
        'sendReady',
        'sendCollectionDeleted',
        'sendNotesRowChanges',
        'sendScratchRowChanges',
      ]);
      expect(JSON.stringify(document)).to.not.include('salary');
      const schemas = (document.components as Json).schemas as Record<string, Json>;
      const { messages } = document.components as Record<string, Json>;
      // The webhooks are the account's backend's.
      expect([...Object.keys(schemas), ...Object.keys(messages!)].filter((name) => /webhook/i.test(name))).to.deep.equal([]);
      expect(Object.keys(schemas.NotesRow!.properties as Json)).to.deep.equal(['id', 'title', 'owner', 'phone']);
      expect((schemas.FeedQuery!.properties as Json).collection).to.deep.include({ enum: ['notes', 'scratch'] });
      expect(schemas.FeedQuery!.properties).to.have.property('access_token');
      expect(Object.keys((document.components as Json).securitySchemes as Json)).to.have.members(['publishableQueryKey', 'publishableKey']);
      expect(unusedComponents(document)).to.deep.equal([]);
      expect(refsOf(document).filter((ref) => resolve(document, ref) === undefined)).to.deep.equal([]);
    });

    it('holds no channel when the feed takes no publishable key, or no collection grants read', () => {
      for (const [collections, feed] of [
        [viewedCollections('user'), false],
        [[{ name: 'notes', schema: notesSchema, view: { operations: ['create'], hidden: [], unwritable: [] } }], true],
      ] as const) {
        const document = accountAsyncApi(asyncapi, collections, { publishable: true, feed }) as Json;
        expect([document.channels, document.operations]).to.deep.equal([{}, {}]);
        expect(Object.keys(document.servers as Json)).to.deep.equal(['local']);
        expect(unusedComponents(document)).to.deep.equal([]);
      }
    });

    it('is a valid AsyncAPI 3.0.0 document either way (@asyncapi/parser reports no error)', async () => {
      for (const feed of [false, true]) {
        const document = accountAsyncApi(asyncapi, viewedCollections('user'), { publishable: true, feed });
        const { diagnostics } = await new Parser().parse(JSON.stringify(document));
        expect(diagnostics.filter((diagnostic) => diagnostic.severity === 0).map((error) => error.message)).to.deep.equal([]);
      }
    });
  });

  describe('documentTag of a caller', () => {
    it('moves with what the rules grant the caller, not with who the caller is', () => {
      const caller = { publishable: true };
      const user = documentTag(openapi, viewedCollections('user'), caller);
      expect(documentTag(openapi, viewedCollections('user'), caller)).to.equal(user);
      expect(documentTag(openapi, viewedCollections('anonymous'), caller)).to.not.equal(user);
      expect(documentTag(openapi, viewedCollections('user'))).to.not.equal(user);
      const plain = viewedCollections('user').map(({ name, schema }) => ({ name, schema }));
      // A secret key's document has no views, nor does its tag.
      expect(documentTag(openapi, viewedCollections('user'))).to.equal(documentTag(openapi, plain));
      expect(documentTag(asyncapi, viewedCollections('user'), { ...caller, feed: true })).to.not.equal(
        documentTag(asyncapi, viewedCollections('user'), caller),
      );
      const widened = viewedCollections('user').map((each) =>
        each.name === 'notes' ? { ...each, view: { ...each.view!, hidden: [] } } : each,
      );
      expect(documentTag(openapi, widened, caller)).to.not.equal(user);
    });
  });

  describe('the documents of a publishable key, linted, and clients generated from them', function () {
    this.timeout(300_000);
    let dir: string;
    let remove: (() => Promise<void>) | undefined;
    /** What tsc --strict said of the callers of the clients, by file. */
    let compiled: Map<string, string[]>;

    // The documents of an end user, the feed's as the feed takes a publishable key and as it would take none.
    before(async () => {
      ({ dir, remove } = await sdkFolder());
      const documents = {
        'openapi.json': accountOpenApi(openapi, viewedCollections('user'), { publishable: true }),
        'asyncapi.json': accountAsyncApi(asyncapi, viewedCollections('user'), { publishable: true, feed: true }),
        'asyncapi-closed.json': accountAsyncApi(asyncapi, viewedCollections('user'), { publishable: true, feed: false }),
      };
      for (const [name, document] of Object.entries(documents)) await writeFile(join(dir, name), JSON.stringify(document, null, 2));
      await generateClients(dir, join(dir, 'openapi.json'), join(dir, 'out'));
      compiled = await compileCallers(dir);
    });
    after(() => remove?.());

    it('lints the OpenAPI document clean with Spectral (spectral:oas, warnings included)', async () => {
      expect(await spectralOpenApi(dir, 'openapi.json')).to.include('No results');
    });

    it('lints every document clean with Redocly (recommended, warnings included)', async () => {
      for (const [name, said] of await redoclyLint(dir, ['openapi.json', 'asyncapi.json', 'asyncapi-closed.json'])) {
        expect(said, name)
          .to.include('Your API description is valid')
          .and.not.match(/You have \d+ warning/);
      }
    });

    it('lints the AsyncAPI documents clean with Spectral (spectral:asyncapi, warnings included)', async () => {
      for (const name of ['asyncapi.json', 'asyncapi-closed.json']) await spectralAsyncApi(dir, name);
    });

    it('generates clients that name no hidden field, nor an operation the rules deny', async () => {
      for (const file of ['openapi-typescript/schema.ts', 'hey-api/types.gen.ts', 'hey-api/sdk.gen.ts', 'orval/api.ts']) {
        const text = await readFile(join(dir, 'out', file), 'utf8');
        // hey-api's types name an operation in PascalCase (`GetNotesRowData`).
        expect(text, file)
          .to.match(/getNotesRow/i)
          .and.not.include('salary');
        expect(text, file).to.not.match(/deleteNotesRow/i);
        if (!file.endsWith('sdk.gen.ts'))
          expect(text, file)
            .to.include('NotesRow')
            .and.match(/\bphone\?: string/);
      }
    });

    it('compiles a program that reads and writes what the caller may, with each client, with tsc --strict', () => {
      for (const name of Object.keys(callers)) expect(compiled.get(`callers/${name}.ts`) ?? [], name).to.deep.equal([]);
      expect([...compiled.keys()].filter((file) => !file.startsWith('callers/'))).to.deep.equal([]);
    });

    it('refuses to compile a program that reads the hidden field, or sets one the caller may not, with each client', () => {
      for (const name of Object.keys(callers)) {
        expect(compiled.get(`callers/${name}-hidden.ts`) ?? [], `${name}, salary`).to.satisfy(
          (errors: string[]) => errors.length === 1 && /TS2339: Property 'salary' does not exist/.test(errors[0]!),
        );
        expect(compiled.get(`callers/${name}-unwritable.ts`) ?? [], `${name}, owner`).to.satisfy(
          (errors: string[]) =>
            errors.length === 1 && /TS2353: Object literal may only specify known properties, and 'owner' does not exist/.test(errors[0]!),
        );
      }
    });
  });
});

/**
 * Each client's program: it inserts a `notes` row whose fields are `insert` (TypeScript source), reads it
 * back, and answers its field `read`.
 */
const callers: Record<string, (insert: string, read: string) => string> = {
  'openapi-fetch': (insert, read) => `import createClient from 'openapi-fetch';
import type { components, paths } from '../out/openapi-typescript/schema.ts';

export async function insertNote(baseUrl: string): Promise<unknown> {
  const api = createClient<paths>({ baseUrl });
  // openapi-fetch infers the body's type, so that an object literal of more fields passes: the row is typed first.
  const rows: components['schemas']['NotesInsert'][] = [${insert}];
  const { data } = await api.POST('/v1/collections/notes/rows', { body: rows });
  const row = data?.[0];
  if (!row) return undefined;
  const { data: read } = await api.GET('/v1/collections/notes/rows/{row_id}', { params: { path: { row_id: row.id } } });
  return read?.${read};
}
`,
  'hey-api': (insert, read) => `import { getNotesRow, insertNotesRows } from '../out/hey-api/sdk.gen.ts';

export async function insertNote(): Promise<unknown> {
  const { data } = await insertNotesRows({ body: [${insert}] });
  const row = data?.[0];
  if (!row) return undefined;
  const { data: read } = await getNotesRow({ path: { row_id: row.id } });
  return read?.${read};
}
`,
  orval: (insert, read) => `import { getNotesRow, insertNotesRows } from '../out/orval/api.ts';

export async function insertNote(): Promise<unknown> {
  const answer = await insertNotesRows([${insert}]);
  const row = answer.status === 201 ? answer.data[0] : undefined;
  if (!row) return undefined;
  const read = await getNotesRow(row.id);
  return read.status === 200 ? read.data.${read} : undefined;
}
`,
};

/**
 * Writes each caller three times in `dir`/callers: as the caller may (it sets `title` and `phone`, reads
 * `phone`), reading `salary`, and setting `owner`; and compiles them all, with the clients they import,
 * with tsc --strict, once: its errors, by file.
 */
async function compileCallers(dir: string): Promise<Map<string, string[]>> {
  await mkdir(join(dir, 'callers'), { recursive: true });
  const fine = "{ title: 'hello', phone: '555' }";
  for (const [name, caller] of Object.entries(callers)) {
    await writeFile(join(dir, 'callers', `${name}.ts`), caller(fine, 'phone'));
    await writeFile(join(dir, 'callers', `${name}-hidden.ts`), caller(fine, 'salary'));
    await writeFile(join(dir, 'callers', `${name}-unwritable.ts`), caller("{ title: 'hello', owner: 'ada' }", 'title'));
  }
  return strictErrors(dir, ['callers']);
}
