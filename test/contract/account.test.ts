// The account's contract (src/contract/): openapi.yaml and asyncapi.yaml as a key sees them, each
// collection typed by its JSON Schema. Built here from the real documents and a few collections: one
// without a schema, `my-notes` beside `my_notes`, `notes` (what the clients insert), one whose rows refer
// to themselves, `orders`, with enums, nested objects, arrays, `$defs` and `$ref`s, formats and nullable
// fields, and `people`, `posts` and `comments`, related (docs/relations.md). The slow half lints the
// documents (Spectral, Redocly, the AsyncAPI parser) and runs the three generators once on the OpenAPI
// document, then tsc --strict once over a program that inserts a `notes` row with each client, and the
// same program with a number for `title`, and a program that reads a post's author expanded into it, and
// the same reading the to-one relation as an array (or the to-many as a row); runs the reader on SQLite
// and PostgreSQL; and patches a `notes` row with orval's client, which once sent no Content-Type for a
// body of several media types.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Parser } from '@asyncapi/parser';
import { expect } from 'chai';
import fc from 'fast-check';
import { parse } from 'yaml';
import { accountAsyncApi, accountOpenApi, type CollectionContract, documentTag } from '../../src/contract/account.ts';
import { DocumentCache } from '../../src/contract/cache.ts';
import {
  collectionPrefix,
  decodePrefix,
  feedOperation,
  reservedPrefixes,
  rowOperationId,
  rowOperations,
  rowTypeSuffixes,
} from '../../src/contract/names.ts';
import { defName, rowSchemas } from '../../src/contract/row-schemas.ts';
import { Client } from '../support/client.ts';
import { refsOf, resolve } from '../support/documents.ts';
import { redoclyLint, spectralAsyncApi, spectralOpenApi } from '../support/lint.ts';
import { generateClients, sdkFolder, strictErrors } from '../support/sdk.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const root = new URL('../../', import.meta.url).pathname;
const readYaml = async (name: string) => parse(await readFile(join(root, name), 'utf8'));

type Json = Record<string, unknown>;

const notes = {
  type: 'object',
  required: ['title'],
  properties: { title: { type: 'string', minLength: 1 }, body: { type: 'string' }, pinned: { type: 'boolean' } },
};

const orders = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  title: 'Order',
  description: 'An order of the shop.',
  type: 'object',
  required: ['status', 'customer', 'lines'],
  additionalProperties: false,
  properties: {
    id: { type: 'integer' },
    status: { enum: ['open', 'paid', 'shipped'] },
    customer: { $ref: '#/$defs/customer' },
    shipping: { $ref: '#/$defs/address' },
    lines: { type: 'array', minItems: 1, items: { $ref: '#/$defs/line' } },
    placed_at: { type: 'string', format: 'date-time' },
    note: { type: ['string', 'null'], maxLength: 500 },
    tags: { type: 'array', items: { type: 'string' }, uniqueItems: true },
    total: { type: 'number', minimum: 0, exclusiveMaximum: 1000000 },
    category: { $ref: '#/$defs/product-category' },
  },
  $defs: {
    customer: {
      type: 'object',
      required: ['email'],
      additionalProperties: false,
      properties: { email: { type: 'string', format: 'email' }, name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
    },
    address: {
      type: 'object',
      required: ['line1', 'country'],
      properties: { line1: { type: 'string' }, city: { type: 'string' }, country: { type: 'string', pattern: '^[A-Z]{2}$' } },
    },
    line: {
      type: 'object',
      required: ['sku', 'quantity'],
      properties: { sku: { type: 'string' }, quantity: { type: 'integer', minimum: 1 }, unit: { enum: ['piece', 'kg'] } },
    },
    'product-category': {
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string' }, parent: { $ref: '#/$defs/product-category' } },
    },
  },
  examples: [{ status: 'open', customer: { email: 'ada@example.com' }, lines: [{ sku: 'A-1', quantity: 2 }] }],
};

/** Posts naming their author, comments naming their post (docs/relations.md), each typed by a schema. */
const related: CollectionContract[] = [
  {
    name: 'people',
    schema: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, email: { type: 'string' } } },
    relations: [{ name: 'posts', kind: 'to_many', collection: 'posts' }],
  },
  {
    name: 'posts',
    schema: { type: 'object', required: ['title'], properties: { title: { type: 'string' }, author_id: { type: ['integer', 'null'] } } },
    relations: [
      { name: 'author', kind: 'to_one', collection: 'people' },
      { name: 'comments', kind: 'to_many', collection: 'comments' },
    ],
  },
  {
    name: 'comments',
    schema: { type: 'object', required: ['text'], properties: { text: { type: 'string' }, post_id: { type: 'integer' } } },
    relations: [{ name: 'post', kind: 'to_one', collection: 'posts' }],
  },
];

/** The relations of `related`, as declared over the API: the to-one of each, with its reverse. */
const declared = [
  { collection: 'posts', name: 'author', body: { field: 'author_id', collection: 'people', reverse: 'posts' } },
  { collection: 'comments', name: 'post', body: { field: 'post_id', collection: 'posts', reverse: 'comments' } },
];

const collections: CollectionContract[] = [
  { name: 'scratch', schema: null },
  { name: 'notes', schema: notes },
  { name: 'my-notes', schema: { type: 'object', properties: { text: { type: 'string' } } } },
  { name: 'my_notes', schema: { type: 'object', properties: { text: { type: 'integer' } } } },
  {
    name: 'threads',
    schema: { type: 'object', properties: { text: { type: 'string' }, replies: { type: 'array', items: { $ref: '#' } } } },
  },
  { name: 'orders', schema: orders },
  ...related,
];

/** Every member of `node`, anywhere, named `key`: where it is, and its value. */
function membersNamed(node: unknown, key: string, where = '#'): [string, unknown][] {
  if (Array.isArray(node)) return node.flatMap((item, index) => membersNamed(item, key, `${where}/${index}`));
  if (typeof node !== 'object' || node === null) return [];
  return Object.entries(node).flatMap(([name, value]) => [
    ...(name === key ? [[where, value] as [string, unknown]] : []),
    ...membersNamed(value, key, `${where}/${name}`),
  ]);
}

const operationsOf = (document: Json) =>
  Object.entries(document.paths as Record<string, Record<string, { operationId?: string }>>).flatMap(([path, item]) =>
    Object.entries(item).flatMap(([method, operation]) => (operation.operationId ? [{ path, method, operation }] : [])),
  );

describe("the account's contract", () => {
  describe('names', () => {
    it('names a plain collection in PascalCase, and any other with Alt and the number of its spelling', () => {
      const prefixes = {
        notes: 'Notes',
        my_notes: 'MyNotes',
        'my-notes': 'MyNotesAlt7',
        myNotes: 'MyNotesAlt19',
        MyNotes: 'MyNotesAlt21',
        Notes: 'NotesAlt1',
        notes_v2: 'NotesV2',
        'notes-v2': 'NotesV2Alt7',
        order_line_items: 'OrderLineItems',
        'order-line-items': 'OrderLineItemsAlt55',
        a: 'A',
        A: 'AAlt1',
        a_b: 'AbAlt18',
        notes_2: 'Notes2Alt4098',
        new: 'NewAlt0',
        notes_alt3: 'NotesAlt3Alt0',
      };
      expect(Object.fromEntries(Object.keys(prefixes).map((name) => [name, collectionPrefix(name)]))).to.deep.equal(prefixes);
      expect(rowOperationId('notes', 'insertRows')).to.equal('insertNotesRows');
      expect(rowOperationId('my-notes', 'listVersionedRows')).to.equal('listMyNotesAlt7RowVersions');
    });

    it('gives every collection name a prefix of its own, which reads back to the name', () => {
      fc.assert(
        fc.property(fc.stringMatching(/^[A-Za-z][A-Za-z0-9_-]{0,62}$/), (name) => {
          const prefix = collectionPrefix(name);
          expect(prefix).to.match(/^[A-Z][A-Za-z0-9]*$/);
          expect(decodePrefix(prefix)).to.equal(name);
        }),
        { numRuns: 3000 },
      );
      expect(decodePrefix('MyNotesAlt0')).to.equal(undefined); // `my_notes` is plain: `MyNotes`
      expect(decodePrefix('NotesAlt3')).to.equal(undefined);
    });

    it('puts no suffix at the end of another, nor a verb at the start of another, so no two collections meet', () => {
      const endsAnother = (words: readonly string[]) =>
        words.flatMap((word) =>
          words.filter((other) => other !== word && other.endsWith(word)).map((other) => `${other} ends with ${word}`),
        );
      expect(endsAnother([...Object.values(rowTypeSuffixes), 'Def'])).to.deep.equal([]);
      const verbs = [...new Set(Object.values(rowOperations).map(([verb]) => verb))];
      expect(verbs.filter((verb) => verbs.some((other) => other !== verb && other.startsWith(verb)))).to.deep.equal([]);
      for (const verb of verbs) {
        expect(endsAnother(Object.values(rowOperations).flatMap(([each, noun]) => (each === verb ? [noun] : []))), verb).to.deep.equal([]);
      }
    });

    it("reserves the plain prefixes whose types or operations openapi.yaml's or asyncapi.yaml's names already are", async () => {
      const [openapi, asyncapi] = await Promise.all([readYaml('openapi.yaml'), readYaml('asyncapi.yaml')]);
      const names = [
        ...Object.values<Json>(openapi.components).flatMap((kind) => Object.keys(kind)),
        ...operationsOf(openapi).map(({ operation }) => operation.operationId as string),
        ...Object.values<Json>(asyncapi.components).flatMap((kind) => Object.keys(kind)),
        ...Object.keys(asyncapi.operations),
      ];
      expect(
        names.filter((name) => /[0-9]/.test(name)),
        'no name of the documents holds a digit',
      ).to.deep.equal([]);
      const forms = [...Object.values(rowTypeSuffixes).map((suffix) => ['', suffix]), ...Object.values(rowOperations), feedOperation];
      const taken = new Set(
        names.flatMap((name) =>
          forms.flatMap(([head, tail]) => {
            const middle = name.startsWith(head) && name.endsWith(tail) ? name.slice(head.length, name.length - tail.length) : '';
            return /^[A-Z]/.test(middle) ? [middle] : [];
          }),
        ),
      );
      expect([...taken].sort()).to.deep.equal([...reservedPrefixes].sort());
    });

    it('names a definition after it when it is in camelCase, else by its bytes, after the prefix and its number', () => {
      expect(defName('orders', 'address')).to.equal('OrdersAlt0AddressDef');
      expect(defName('my-notes', 'lineItem')).to.equal('MyNotesAlt7LineItemDef');
      expect(defName('orders', 'a-b')).to.equal('OrdersAlt0EscgbcngcDef');
      expect(defName('orders', 'escape')).to.equal('OrdersAlt0EscgfhdgdgbhagfDef');
    });
  });

  describe('accountOpenApi', () => {
    let openapi: Json;
    let document: Json;
    let schemas: Record<string, Json>;

    before(async () => {
      openapi = await readYaml('openapi.yaml');
      document = accountOpenApi(openapi, collections) as Json;
      schemas = (document.components as Json).schemas as Record<string, Json>;
    });

    it('is openapi.yaml as OpenAPI 3.1.0: no `nullable`, no boolean exclusive bound, no `example` in a schema', () => {
      expect(document.openapi).to.equal('3.1.0');
      expect(membersNamed(document, 'nullable')).to.deep.equal([]);
      expect(membersNamed(schemas, 'example')).to.deep.equal([]);
      for (const bound of ['exclusiveMinimum', 'exclusiveMaximum']) {
        expect(membersNamed(document, bound).filter(([, value]) => typeof value === 'boolean')).to.deep.equal([]);
      }
      expect((schemas.Key.properties as Json).name).to.deep.include({ type: ['string', 'null'] });
      expect(schemas.KeyCollections.type).to.deep.equal(['array', 'null']);
      expect(schemas.FilterNull).to.deep.include({ type: ['object', 'null'], enum: [null] });
      expect(schemas.CollectionName.examples).to.deep.equal(['notes']);
      expect(Object.keys(document.paths as Json)).to.include.members(Object.keys(openapi.paths as Json));
    });

    it('gives each collection its paths, whose operations take and answer its own types', () => {
      const paths = document.paths as Record<string, Record<string, Json>>;
      const rows = paths['/v1/collections/notes/rows']!;
      expect(Object.keys(rows)).to.have.members(['get', 'head', 'post', 'patch', 'delete']);
      expect(rows.post!.operationId).to.equal('insertNotesRows');
      expect(rows.post!.requestBody).to.deep.equal({
        required: true,
        content: { 'application/json': { schema: { type: 'array', minItems: 1, items: { $ref: '#/components/schemas/NotesInsert' } } } },
      });
      expect(refsOf(rows.get)).to.include('#/components/schemas/NotesRow').and.not.include('#/components/parameters/SelectParameter');
      // Both PATCH take the collection's own request body, a component as openapi.yaml's is, whose
      // top-level merge (application/json, first) is its own type; a merge patch and a JSON Patch are typed
      // as openapi.yaml types them (docs/patches.md).
      const patchRequest = { $ref: '#/components/requestBodies/NotesPatchRequest' };
      expect(rows.patch!.requestBody).to.deep.equal(patchRequest);
      expect(paths['/v1/collections/notes/rows/{row_id}']!.patch!.requestBody).to.deep.equal(patchRequest);
      const requestBodies = (document.components as Json).requestBodies as Record<string, Json>;
      expect(Object.keys(requestBodies.NotesPatchRequest!.content as Json)[0]).to.equal('application/json');
      expect(refsOf(requestBodies.NotesPatchRequest)).to.deep.equal([
        '#/components/schemas/NotesPatch',
        '#/components/schemas/MergePatch',
        '#/components/schemas/JsonPatch',
      ]);
      expect(membersNamed(requestBodies.NotesPatchRequest, 'example')).to.deep.equal([]);
      // A collection without a schema takes openapi.yaml's, as it is.
      expect(refsOf(requestBodies.RowPatchRequest)).to.deep.equal([
        '#/components/schemas/RowPatch',
        '#/components/schemas/MergePatch',
        '#/components/schemas/JsonPatch',
      ]);
      expect(paths['/v1/collections/scratch/rows']!.patch!.requestBody).to.deep.equal({
        $ref: '#/components/requestBodies/RowPatchRequest',
      });
      expect(refsOf(paths['/v1/collections/notes/query']!.post!.requestBody)).to.deep.equal(['#/components/schemas/WholeRowQuery']);
      expect(refsOf(paths['/v1/collections/notes/versioned-rows']!.get)).to.include('#/components/schemas/NotesRowVersion');
      expect(paths['/v1/collections/notes/rows/{row_id}']!.parameters).to.deep.equal([{ $ref: '#/components/parameters/RowIdPath' }]);

      expect(schemas.NotesRow).to.deep.include({
        type: 'object',
        required: ['id', 'title'],
        properties: { id: { $ref: '#/components/schemas/RowId' }, ...notes.properties },
      });
      expect(schemas.NotesInsert).to.deep.include({ type: 'object', required: ['title'] });
      expect((schemas.NotesInsert.properties as Json).id).to.deep.include({ not: {} });
      expect(schemas.NotesPatch).to.not.have.property('required');
      expect(schemas.NotesPatch.minProperties).to.equal(1);
      expect(refsOf(schemas.NotesQueryPage)).to.deep.equal(['#/components/schemas/NotesRow']);
      expect(refsOf(schemas.NotesChangedRows)).to.deep.equal(['#/components/schemas/NotesRow']);
      expect(schemas.WholeRowQuery.properties).to.not.have.property('select');
      expect(schemas.WholeRowQuery.examples).to.deep.equal([
        { filter: { $search: 'red sho', status: 'open' }, order: [{ field: '_score' }], limit: 20 },
      ]);
    });

    it('types filters, orders and selections as openapi.yaml does, `$search` and `_score` included', () => {
      // No enum of a collection's fields: `_score` is a field name to order by as any other, described where they are.
      expect((schemas.Filter.properties as Json).$search).to.deep.include({ type: 'string' });
      expect(((schemas.OrderKey.properties as Json).field as Json).description).to.include('`_score`');
      const parameters = (document.components as Json).parameters as Record<string, Json>;
      expect(parameters.OrderBy!.description).to.include('`_score`');
      expect(parameters.SelectParameter!.description).to.include('`_score`');
      const paths = document.paths as Record<string, Record<string, Json>>;
      expect(refsOf(paths['/v1/collections/notes/rows']!.get)).to.include('#/components/parameters/OrderBy');
    });

    it('keeps `my-notes` and `my_notes` apart', () => {
      expect(schemas.MyNotesRow?.properties).to.deep.include({ text: { type: 'integer' } });
      expect(schemas.MyNotesAlt7Row?.properties).to.deep.include({ text: { type: 'string' } });
      expect((document.paths as Json)['/v1/collections/my-notes/rows']).to.have.nested.property(
        'post.operationId',
        'insertMyNotesAlt7Rows',
      );
      expect((document.paths as Json)['/v1/collections/my_notes/rows']).to.have.nested.property('post.operationId', 'insertMyNotesRows');
    });

    it('types the rows of a collection without a schema as openapi.yaml types rows', () => {
      const rows = (document.paths as Json)['/v1/collections/scratch/rows'] as Record<string, Json>;
      expect(refsOf(rows.post)).to.include('#/components/schemas/NewRow').and.include('#/components/schemas/Row');
      expect(refsOf(rows.get)).to.include('#/components/parameters/SelectParameter');
      expect(Object.keys(schemas).filter((name) => name.startsWith('Scratch'))).to.deep.equal([]);
    });

    it("relocates a schema's `$defs`, and every `$ref` of the document resolves in it", () => {
      expect(Object.keys(schemas).filter((name) => name.startsWith('Orders'))).to.have.members([
        'OrdersRow',
        'OrdersInsert',
        'OrdersPatch',
        'OrdersRowVersion',
        'OrdersChangedRows',
        'OrdersQueryPage',
        'OrdersAlt0CustomerDef',
        'OrdersAlt0AddressDef',
        'OrdersAlt0LineDef',
        defName('orders', 'product-category'),
      ]);
      expect((schemas.OrdersRow.properties as Json).customer).to.deep.equal({ $ref: '#/components/schemas/OrdersAlt0CustomerDef' });
      expect((schemas.OrdersAlt0CustomerDef.properties as Json).address).to.deep.equal({
        $ref: '#/components/schemas/OrdersAlt0AddressDef',
      });
      expect(refsOf(schemas[defName('orders', 'product-category')])).to.deep.equal([
        `#/components/schemas/${defName('orders', 'product-category')}`,
      ]);
      expect(schemas.OrdersRow).to.not.have.any.keys('$schema', '$id', '$defs', 'title', 'examples');
      expect(schemas.OrdersInsert.examples).to.deep.equal(orders.examples);
      expect(schemas.OrdersRow.required).to.deep.equal(['id', 'status', 'customer', 'lines']);
      // A reference to the whole schema is a row to insert: a reply has no id of its own.
      expect(((schemas.ThreadsRow.properties as Json).replies as Json).items).to.deep.equal({ $ref: '#/components/schemas/ThreadsInsert' });
      const refs = refsOf(document);
      expect(refs.filter((ref) => !ref.startsWith('#/') || resolve(document, ref) === undefined)).to.deep.equal([]);
    });

    it("rewrites references to draft-07's `definitions` and to anchors, and one to outside the schema as any value", () => {
      const { schemas: made } = rowSchemas(
        'legacy',
        {
          type: 'object',
          definitions: { point: { $anchor: 'point', type: 'object', properties: { x: { type: 'number' } } } },
          properties: {
            at: { $ref: '#/definitions/point' },
            to: { $ref: '#point' },
            x: { $ref: '#/definitions/point/properties/x' },
            far: { $ref: 'https://example.com/far.json', description: 'elsewhere' },
            near: { $ref: '#/properties/at' },
          },
        },
        { id: { type: 'integer' } },
      );
      const point = `#/components/schemas/${defName('legacy', 'definitions/point')}`;
      expect(made.LegacyRow!.properties).to.deep.include({
        at: { $ref: point },
        to: { $ref: point },
        x: { $ref: `${point}/properties/x` },
        far: {},
        near: { $ref: '#/components/schemas/LegacyInsert/properties/at' },
      });
      expect(made[defName('legacy', 'definitions/point')]).to.deep.equal({ type: 'object', properties: { x: { type: 'number' } } });
    });

    it('gives every operation its own operationId, and keeps the generic operations', () => {
      const ids = operationsOf(document).map(({ operation }) => operation.operationId);
      expect(new Set(ids).size).to.equal(ids.length);
      expect(ids).to.include.members(operationsOf(openapi).map(({ operation }) => operation.operationId));
      // A collection's changes (`getChanges`, `headChanges`) have copies of their own in the 3.2 document only.
      const copied = Object.keys(rowOperations).length;
      expect(ids).to.have.length(operationsOf(openapi).length + collections.length * (copied - 2));
      const ids32 = operationsOf(accountOpenApi(openapi, collections, {}, '3.2') as Json).map(({ operation }) => operation.operationId);
      expect(new Set(ids32).size).to.equal(ids32.length);
      expect(ids32).to.have.length(operationsOf(openapi).length + collections.length * copied);
    });

    it("names and types a collection's rows alike whatever other collections there are", () => {
      const alone = accountOpenApi(openapi, [{ name: 'notes', schema: notes }]) as Json;
      const notesOf = (each: Json) => ({
        schemas: Object.entries((each.components as Json).schemas as Json).filter(([name]) => name.startsWith('Notes')),
        paths: Object.entries(each.paths as Json).filter(([path]) => path.startsWith('/v1/collections/notes/')),
      });
      expect(notesOf(alone)).to.deep.equal(notesOf(document));
    });

    it('types the rows of a schema that does not say they are objects as objects', () => {
      const loose = accountOpenApi(openapi, [
        { name: 'anything', schema: {} },
        { name: 'fields', schema: { properties: { a: { type: 'string' } } } },
      ]) as Json;
      const types = (loose.components as Json).schemas as Record<string, Json>;
      for (const name of ['AnythingRow', 'AnythingInsert', 'AnythingPatch', 'FieldsRow', 'FieldsInsert', 'FieldsPatch']) {
        expect(types[name]?.type, name).to.equal('object');
      }
    });

    it("types each relation's expansion exactly: `<Prefix>Expand`, the row's `_expand`, each level its own", () => {
      const row = (name: string) => ({ $ref: `#/components/schemas/${name}Row` });
      expect(schemas.PostsExpand).to.deep.equal({
        type: 'object',
        description:
          'The member `_expand` of a row of `posts` answered with `expand` (`Expanded`, docs/relations.md): the relations asked for, by name.',
        additionalProperties: false,
        properties: {
          author: {
            description: 'The row of `people` it names: null for none, or one the caller may not read.',
            oneOf: [row('People'), { type: 'null' }],
          },
          comments: {
            description: "The rows of `comments` naming it, at most the relation's limit.",
            type: 'array',
            items: row('Comments'),
          },
          $cut: {
            description: 'The to-many relations whose rows were more than the limit.',
            type: 'array',
            items: { type: 'string', enum: ['comments'] },
          },
        },
      });
      expect((schemas.PostsRow.properties as Json)._expand).to.deep.equal({ $ref: '#/components/schemas/PostsExpand' });
      // An expanded row is its collection's row, whose own `_expand` is typed in turn (comments.post.author).
      expect((schemas.CommentsRow.properties as Json)._expand).to.deep.equal({ $ref: '#/components/schemas/CommentsExpand' });
      expect((schemas.CommentsExpand.properties as Json).post).to.deep.include({ oneOf: [row('Posts'), { type: 'null' }] });
      expect(schemas.CommentsExpand.properties).to.not.have.property('$cut');
      expect(schemas.PeopleExpand.properties).to.have.keys('posts', '$cut');
      // A collection without relations has no `_expand` of its own.
      expect(schemas.NotesRow.properties).to.not.have.property('_expand');
      expect(schemas).to.not.have.property('NotesExpand');
      // The typed query expands whole rows, as it answers them: no `select` at any level.
      expect((schemas.WholeRowQuery.properties as Json).expand).to.deep.equal({ $ref: '#/components/schemas/WholeExpandQuery' });
      for (const name of ['WholeExpandOptions', 'WholeExpandNested', 'WholeExpandLast']) {
        expect(schemas[name]!.properties, name).to.not.have.property('select');
      }
      expect(membersNamed(schemas.WholeExpandQuery, 'select')).to.deep.equal([]);
      expect(refsOf(schemas.WholeExpandNested)).to.include('#/components/schemas/WholeExpandLastQuery');
    });

    it('leaves out a relation to a collection the key does not see, and one whose collection the caller may not read', () => {
      const postsAlone = accountOpenApi(openapi, [related[1]!, related[2]!]) as Json;
      const alone = (postsAlone.components as Json).schemas as Record<string, Json>;
      expect(alone.PostsExpand!.properties).to.have.keys('comments', '$cut');
      expect(refsOf(postsAlone).filter((ref) => resolve(postsAlone, ref) === undefined)).to.deep.equal([]);
      const noRelations = accountOpenApi(openapi, [related[1]!]) as Json;
      expect((noRelations.components as Json).schemas).to.not.have.property('PostsExpand');

      // A publishable key's caller who reads posts and people, without their `email`, and only writes comments.
      const view = (operations: ('read' | 'create')[], hidden: string[] = []) => ({ operations, hidden, unwritable: [] });
      const viewed = related.map((each) => ({
        ...each,
        view: each.name === 'comments' ? view(['create']) : view(['read'], each.name === 'people' ? ['email'] : []),
      }));
      const caller = accountOpenApi(openapi, viewed, { publishable: true }) as Json;
      const seen = (caller.components as Json).schemas as Record<string, Json>;
      expect(seen.PostsExpand!.properties).to.have.keys('author');
      expect(seen.PeopleRow!.properties).to.have.keys('id', 'name', '_expand');
      expect(refsOf(caller).filter((ref) => resolve(caller, ref) === undefined)).to.deep.equal([]);
    });

    it("outlines a collection's operations for a diff, keeping what a publishable key's document keeps of them", () => {
      // Posts and comments outlined, as a plan's diff makes a collection one side holds alone; people made whole.
      const view = (operations: ('read' | 'create' | 'update')[]) => ({ operations, hidden: [], unwritable: [] });
      const viewed = related.map((each) => ({
        ...each,
        view: each.name === 'comments' ? view(['create']) : each.name === 'posts' ? view(['read', 'update']) : view(['read']),
      }));
      const outlined = (list: CollectionContract[]) => list.map((each) => ({ ...each, outline: each.name !== 'people' }));
      const methods = (built: Json) =>
        Object.fromEntries(Object.entries(built.paths as Record<string, Json>).map(([path, item]) => [path, Object.keys(item)]));
      for (const [list, caller] of [
        [related, {}],
        [viewed, { publishable: true }],
      ] as const) {
        const whole = accountOpenApi(openapi, list, caller) as Json;
        const outline = accountOpenApi(openapi, outlined(list), caller) as Json;
        const who = caller.publishable ? 'publishable' : 'secret';
        expect(methods(outline), who).to.deep.equal(methods(whole));
        expect(outline.tags, who).to.deep.equal(whole.tags);
        expect(outline.components, who).to.deep.equal(whole.components);
        const paths = outline.paths as Record<string, Json>;
        expect(paths['/v1/collections/people/rows'], who).to.deep.equal((whole.paths as Json)['/v1/collections/people/rows']);
        expect(paths['/v1/collections/posts/rows/{row_id}']!.get, who).to.deep.equal({
          operationId: 'getPostsRow',
          tags: ['rows of posts'],
          'x-rowbase-publishable': true,
          'x-rowbase-names': [{ $ref: '#/components/schemas/PostsRow' }],
        });
      }
    });

    it('does not depend on the order of the collections, and leaves openapi.yaml as parsed', async () => {
      expect(accountOpenApi(openapi, [...collections].reverse())).to.deep.equal(document);
      expect(openapi).to.deep.equal(await readYaml('openapi.yaml'));
    });
  });

  describe('accountAsyncApi', () => {
    let asyncapi: Json;
    let document: Json;

    before(async () => {
      asyncapi = await readYaml('asyncapi.yaml');
      document = accountAsyncApi(asyncapi, collections) as Json;
    });

    it("types each collection's insert, update and delete messages by its schema", () => {
      const schemas = (document.components as Json).schemas as Record<string, Json>;
      expect(schemas.NotesInsertMessage!.properties).to.deep.include({
        collection: { type: 'string', const: 'notes' },
        row: { $ref: '#/components/schemas/NotesRow' },
      });
      expect(schemas.NotesUpdateMessage!.properties).to.deep.include({ previous: { $ref: '#/components/schemas/NotesRow' } });
      expect(schemas.NotesRow!.required).to.deep.equal(['id', 'title']);
      expect(schemas.ScratchDeleteMessage!.properties).to.deep.include({ row: { $ref: '#/components/schemas/Row' } });
      const channel = (document.channels as Json).feed as Json;
      expect(channel.messages).to.include.keys('ready', 'insert', 'NotesInsert', 'MyNotesAlt7Update', 'MyNotesDelete');
      expect((document.operations as Json).sendNotesRowChanges).to.deep.include({ action: 'send', channel: { $ref: '#/channels/feed' } });
      expect(refsOf(document).filter((ref) => resolve(document, ref) === undefined)).to.deep.equal([]);
    });

    it('is a valid AsyncAPI 3.0.0 document (@asyncapi/parser reports no error)', async () => {
      const { document: parsed, diagnostics } = await new Parser().parse(JSON.stringify(document));
      const errors = diagnostics.filter((diagnostic) => diagnostic.severity === 0);
      expect(errors.map((error) => `${error.path.join('.')}: ${error.message}`)).to.deep.equal([]);
      expect(parsed?.version()).to.equal('3.0.0');
      expect(parsed?.channels().get('feed')?.messages().length).to.equal(5 + 3 * collections.length);
    });

    it('leaves asyncapi.yaml as parsed', async () => {
      expect(asyncapi).to.deep.equal(await readYaml('asyncapi.yaml'));
    });
  });

  describe('documentTag', () => {
    it('changes with a collection, its schema or the base document, and not with the order of the collections', async () => {
      const [openapi, asyncapi] = await Promise.all([readYaml('openapi.yaml'), readYaml('asyncapi.yaml')]);
      const tag = documentTag(openapi, collections);
      expect(tag).to.match(/^"[A-Za-z0-9_-]{27}"$/);
      expect(documentTag(openapi, [...collections].reverse())).to.equal(tag);
      expect(documentTag(await readYaml('openapi.yaml'), collections)).to.equal(tag);
      expect(documentTag(openapi, collections.slice(1))).to.not.equal(tag);
      expect(documentTag(openapi, [...collections, { name: 'more', schema: null }])).to.not.equal(tag);
      const changed = collections.map((each) => (each.name === 'notes' ? { name: 'notes', schema: { ...notes, required: [] } } : each));
      expect(documentTag(openapi, changed)).to.not.equal(tag);
      const unrelated = collections.map((each) => (each.name === 'posts' ? { ...each, relations: [] } : each));
      expect(documentTag(openapi, unrelated)).to.not.equal(tag);
      expect(documentTag(asyncapi, collections)).to.not.equal(tag);
    });
  });

  describe('DocumentCache', () => {
    it('builds a document once for its tag, and keeps the most recently used up to its limit', () => {
      const cache = new DocumentCache(2);
      let built = 0;
      const build = (text: string) => () => {
        built += 1;
        return text;
      };
      expect(cache.get('"a"', build('A'))).to.equal('A');
      expect(cache.get('"a"', build('again'))).to.equal('A');
      cache.get('"b"', build('B'));
      cache.get('"a"', build('again'));
      cache.get('"c"', build('C')); // drops "b", the least recently used
      expect(cache.size).to.equal(2);
      expect(cache.get('"a"', build('again'))).to.equal('A');
      expect(cache.get('"b"', build('B again'))).to.equal('B again');
      expect(built).to.equal(4);
    });
  });

  describe('the documents, linted, and clients generated from them', function () {
    this.timeout(300_000);
    let dir: string;
    let remove: (() => Promise<void>) | undefined;
    /** What tsc --strict said of the callers of the clients, by file. */
    let compiled: Map<string, string[]>;
    let server: TestServer | undefined;
    /** The key of the account that holds the collections. */
    let key: string | undefined;

    // The documents as a real server serves them to a key of the account that holds the collections,
    // each made with its schema over the API.
    before(async () => {
      ({ dir, remove } = await sdkFolder());
      server = await startTestServer();
      const client = await server.client();
      key = client.key;
      for (const { name, schema } of collections) {
        const made = await client.post('/v1/collections', schema ? { name, schema } : { name });
        expect(made.status, `${name}: ${made.text}`).to.equal(201);
      }
      for (const { collection, name, body } of declared) {
        const put = await client.put(`/v1/collections/${collection}/relations/${name}`, body);
        expect(put.status, `${collection}.${name}: ${put.text}`).to.equal(200);
      }
      const [openapi, asyncapi] = await Promise.all([client.get('/v1/openapi.json'), client.get('/v1/asyncapi.json')]);
      expect([openapi.status, asyncapi.status]).to.deep.equal([200, 200]);
      await writeFile(join(dir, 'openapi.json'), JSON.stringify(openapi.body, null, 2));
      await writeFile(join(dir, 'asyncapi.json'), JSON.stringify(asyncapi.body, null, 2));
      await generateClients(dir, join(dir, 'openapi.json'), join(dir, 'out'));
      compiled = await compileCallers(dir);
    });

    after(async () => {
      delete process.env.ROWBASE_URL;
      await server?.stop();
      await remove?.();
    });

    it('is what the server answers at /v1/openapi.json and /v1/asyncapi.json: the documents of its collections', async () => {
      const [openapi, asyncapi] = await Promise.all([readYaml('openapi.yaml'), readYaml('asyncapi.yaml')]);
      expect(JSON.parse(await readFile(join(dir, 'openapi.json'), 'utf8'))).to.deep.equal(accountOpenApi(openapi, collections));
      expect(JSON.parse(await readFile(join(dir, 'asyncapi.json'), 'utf8'))).to.deep.equal(accountAsyncApi(asyncapi, collections));
    });

    it('lints the OpenAPI document clean with Spectral (spectral:oas, warnings included)', async () => {
      expect(await spectralOpenApi(dir, 'openapi.json')).to.include('No results');
    });

    it('lints both documents clean with Redocly (recommended, warnings included)', async () => {
      // Redocly also prints a notice of the Node.js versions it will support, whose box says "warning".
      for (const [name, said] of await redoclyLint(dir, ['openapi.json', 'asyncapi.json'])) {
        expect(said, name)
          .to.include('Your API description is valid')
          .and.not.match(/You have \d+ warning/);
      }
    });

    it('lints the AsyncAPI document clean with Spectral (spectral:asyncapi, warnings included)', async () => {
      await spectralAsyncApi(dir, 'asyncapi.json');
    });

    it("names each collection's types in @hey-api/openapi-ts's and orval's clients as the document does", async () => {
      const document = JSON.parse(await readFile(join(dir, 'openapi.json'), 'utf8'));
      const exported = async (file: string) =>
        new Set(
          [...(await readFile(join(dir, 'out', file), 'utf8')).matchAll(/^export (?:type|interface) ([A-Za-z0-9_]+)/gm)].map(
            ([, name]) => name,
          ),
        );
      const heyApi = await exported('hey-api/types.gen.ts');
      const orval = await exported('orval/api.ts');
      for (const name of Object.keys(document.components.schemas)) {
        expect(heyApi.has(name), `@hey-api/openapi-ts: ${name}`).to.equal(true);
        expect(orval.has(name), `orval: ${name}`).to.equal(true);
      }
      expect([...heyApi].filter((name) => /(Row|Insert|Patch|Def)[0-9]+$/.test(name))).to.deep.equal([]);
    });

    it('compiles a program that inserts a `notes` row with each client, with tsc --strict', () => {
      for (const name of Object.keys(callers)) expect(compiled.get(`callers/${name}.ts`) ?? [], name).to.deep.equal([]);
      for (const name of Object.keys(expandCallers)) expect(compiled.get(`callers/expand-${name}.ts`) ?? [], name).to.deep.equal([]);
      expect([...compiled.keys()].filter((file) => !file.startsWith('callers/'))).to.deep.equal([]);
    });

    it("patches a `notes` row with orval's client, a top-level merge with no Content-Type named (docs/patches.md)", async () => {
      const api = (await import(pathToFileURL(join(dir, 'out/orval/api.ts')).href)) as {
        insertNotesRows: (rows: object[], params: undefined, options: RequestInit) => Promise<{ status: number; data: { id: number }[] }>;
        updateNotesRow: (rowId: number, patch: object, options: RequestInit) => Promise<{ status: number; data: unknown }>;
      };
      process.env.ROWBASE_URL = server?.url;
      const options = { headers: { Authorization: `Bearer ${key}` } };
      const inserted = await api.insertNotesRows([{ title: 'hello' }], undefined, options);
      expect(inserted.status).to.equal(201);
      const [{ id }] = inserted.data;
      expect(await api.updateNotesRow(id, { pinned: true }, options)).to.deep.include({
        status: 200,
        data: { id, title: 'hello', pinned: true },
      });
    });

    it("reads a post's author, asked for with `expand=author`, through each client's types, without a cast (SQLite)", async () => {
      await readsAuthorWithEachClient(dir, server!, key!);
    });

    it("reads a post's author so on PostgreSQL too", async () => {
      const postgres = await startTestServer({}, { backend: 'postgres' });
      try {
        const client = await postgres.client();
        for (const { name, schema } of related) expect((await client.post('/v1/collections', { name, schema })).status).to.equal(201);
        for (const { collection, name, body } of declared) {
          expect((await client.put(`/v1/collections/${collection}/relations/${name}`, body)).status).to.equal(200);
        }
        await readsAuthorWithEachClient(dir, postgres, client.key!);
      } finally {
        await postgres.stop();
      }
    });

    it('refuses to compile a program that reads a to-one relation as an array, or a to-many one as a row, with each client', () => {
      for (const name of Object.keys(expandCallers)) {
        for (const file of ['expand-to-one-as-array', 'expand-to-many-as-row']) {
          const errors = compiled.get(`callers/${file}-${name}.ts`) ?? [];
          expect(errors, `${file} ${name}`).to.have.length(1);
          expect(errors[0], `${file} ${name}`).to.match(/TS(7053|2339)/);
        }
      }
    });

    it('refuses to compile the same program with a number for `title`, with each client', () => {
      for (const name of Object.keys(callers)) {
        const errors = compiled.get(`callers/${name}-wrong.ts`) ?? [];
        expect(errors, name).to.have.length(1);
        expect(errors[0], name).to.match(/TS2322: Type 'number' is not assignable to type 'string'/);
      }
    });
  });
});

/** Each client's program: it inserts a `notes` row whose `title` is `title` (TypeScript source), and reads the title back. */
const callers: Record<string, (title: string) => string> = {
  'openapi-fetch': (title) => `import createClient from 'openapi-fetch';
import type { components, paths } from '../out/openapi-typescript/schema.ts';

export async function insertNote(baseUrl: string): Promise<string | undefined> {
  const api = createClient<paths>({ baseUrl });
  const { data } = await api.POST('/v1/collections/notes/rows', { body: [{ title: ${title}, pinned: true }] });
  const row: components['schemas']['NotesRow'] | undefined = data?.[0];
  return row?.title;
}
`,
  'hey-api': (title) => `import { insertNotesRows } from '../out/hey-api/sdk.gen.ts';

export async function insertNote(): Promise<string | undefined> {
  const { data } = await insertNotesRows({ body: [{ title: ${title}, pinned: true }] });
  return data?.[0]?.title;
}
`,
  orval: (title) => `import { insertNotesRows } from '../out/orval/api.ts';

export async function insertNote(): Promise<string | undefined> {
  const answer = await insertNotesRows([{ title: ${title}, pinned: true }]);
  return answer.status === 201 ? answer.data[0]?.title : undefined;
}
`,
};

/**
 * Inserts Ada and her post with `key` into `server`'s `people` and `posts` (`related`, relations declared),
 * then reads her name through each program of `expandCallers` (in `dir`/callers), asking for `expand=author`.
 */
async function readsAuthorWithEachClient(dir: string, server: TestServer, key: string): Promise<void> {
  const client = new Client(server.url, key);
  const [ada] = (await client.post('/v1/collections/people/rows', [{ name: 'Ada' }])).body as { id: number }[];
  const [post] = (await client.post('/v1/collections/posts/rows', [{ title: 'Notes', author_id: ada!.id }])).body as { id: number }[];
  for (const name of Object.keys(expandCallers)) {
    const { authorName } = (await import(pathToFileURL(join(dir, 'callers', `expand-${name}.ts`)).href)) as {
      authorName: (baseUrl: string, key: string, id: number) => Promise<string | undefined>;
    };
    expect(await authorName(server.url, key, post!.id), name).to.equal('Ada');
  }
}

/**
 * Each client's program that reads the name of a post's author, asked for with `expand=author`: `read` is
 * what it reads of the post's `_expand` (TypeScript source), its answer a string or undefined.
 */
const expandCallers: Record<string, (read: string) => string> = {
  'openapi-fetch': (read) => `import createClient from 'openapi-fetch';
import type { paths } from '../out/openapi-typescript/schema.ts';

export async function authorName(baseUrl: string, key: string, id: number): Promise<string | undefined> {
  const api = createClient<paths>({ baseUrl, headers: { Authorization: \`Bearer \${key}\` } });
  const { data } = await api.GET('/v1/collections/posts/rows/{row_id}', { params: { path: { row_id: id }, query: { expand: 'author' } } });
  return data?._expand${read};
}
`,
  'hey-api': (read) => `import { client } from '../out/hey-api/client.gen.ts';
import { getPostsRow } from '../out/hey-api/sdk.gen.ts';

export async function authorName(baseUrl: string, key: string, id: number): Promise<string | undefined> {
  client.setConfig({ baseUrl, headers: { Authorization: \`Bearer \${key}\` } });
  const { data } = await getPostsRow({ path: { row_id: id }, query: { expand: 'author' } });
  return data?._expand${read};
}
`,
  orval: (read) => `import { getPostsRow } from '../out/orval/api.ts';

export async function authorName(baseUrl: string, key: string, id: number): Promise<string | undefined> {
  process.env.ROWBASE_URL = baseUrl;
  const answer = await getPostsRow(id, { expand: 'author' }, { headers: { Authorization: \`Bearer \${key}\` } });
  return answer.status === 200 ? answer.data._expand${read} : undefined;
}
`,
};

/** What the programs of `expandCallers` read: the author's name, and two wrong reads of the relations. */
const expandReads = {
  expand: '?.author?.name',
  'expand-to-one-as-array': '?.author?.[0]?.name',
  'expand-to-many-as-row': '?.comments?.text',
};

/**
 * Writes each caller twice in `dir`/callers, with a string for `title` and with a number, and each
 * program of `expandCallers` with each of `expandReads`, and compiles them all, with the clients they
 * import, with tsc --strict, once: its errors, by file.
 */
async function compileCallers(dir: string): Promise<Map<string, string[]>> {
  await mkdir(join(dir, 'callers'), { recursive: true });
  for (const [name, caller] of Object.entries(callers)) {
    await writeFile(join(dir, 'callers', `${name}.ts`), caller("'hello'"));
    await writeFile(join(dir, 'callers', `${name}-wrong.ts`), caller('42'));
  }
  for (const [name, caller] of Object.entries(expandCallers)) {
    for (const [file, read] of Object.entries(expandReads)) await writeFile(join(dir, 'callers', `${file}-${name}.ts`), caller(read));
  }
  return strictErrors(dir, ['callers']);
}
