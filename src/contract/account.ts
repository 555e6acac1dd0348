// The account's contract: openapi.yaml and asyncapi.yaml as an API key sees them, each collection it can
// see with paths, operations and messages of its own, typed by the collection's JSON Schema. Pure
// functions of the parsed documents and the collections: no database, no HTTP. docs/contract.md says
// what the documents hold; names.ts how the types are named.
//
// The base documents are converted once (a WeakMap keyed by the parsed document), so a call costs what
// its collections cost; `documentTag` costs a hash of the collections, so that a server can answer
// `304 Not Modified`, or serve the document it built for the same tag (cache.ts), before building one.
import { createHash } from 'node:crypto';
import { EXPANDED } from '../rows.ts';
import { type CollectionView, type DocumentCaller, grantsCopy, publishableOpenApi } from './caller.ts';
import { publishableAsyncApi } from './caller-feed.ts';
import { collectionPrefix, feedOperation, rowOperationId, rowOperations, rowTypeName } from './names.ts';
import { openApiTo31 } from './openapi-31.ts';
import { openApiTo32 } from './openapi-32.ts';
import { componentRef, type JsonObject, rowSchemas } from './row-schemas.ts';
import { mapValues } from './status-maps.ts';

/** A collection as the documents need it: its name, and its JSON Schema (2020-12), or null for none. */
export interface CollectionContract {
  name: string;
  schema: Record<string, unknown> | null;
  /** For a document of a publishable key: what its caller may use of the collection (caller.ts). */
  view?: CollectionView;
  /** Its relations, both directions (docs/relations.md), which its `<Prefix>Expand` types. Default: none. */
  relations?: readonly ContractRelation[];
  /** The field of its time to live (docs/expiry.md), whose meaning its row types say. Default: none. */
  ttl?: string | null;
  /**
   * Its operations made as outlines (outlineOf), for a diff that lists them added or removed and does not
   * look into them (the plan's, of a collection one side holds alone: src/declarations/comparable.ts,
   * withPathStandIns). Default: made whole.
   */
  outline?: boolean;
}

/** A relation of a collection, as its `<Prefix>Expand` needs it: its name, its kind, and the collection of its rows. */
interface ContractRelation {
  name: string;
  kind: 'to_one' | 'to_many';
  collection: string;
}

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Collections in code point order of their names, so that the documents do not depend on the order given. */
const inOrder = (collections: readonly CollectionContract[]) =>
  [...collections].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

/** The generic schemas of openapi.yaml a typed collection has its own of, by the kind of row type. */
const typedSchemas = {
  Row: 'row',
  NewRow: 'insert',
  RowPatch: 'patch',
  VersionedRow: 'rowVersion',
  ChangedRows: 'changedRows',
  RowQueryPage: 'queryPage',
} as const;

/**
 * The request bodies of openapi.yaml a typed collection has its own of, by kind: `RowPatchRequest`, the
 * body of both PATCH of rows, whose top-level merge is the collection's `<Prefix>Patch`.
 */
const typedRequestBodies = { RowPatchRequest: 'patchRequest' } as const;

/** The query of a typed collection's `query…Rows`: openapi.yaml's `RowQuery` without `select`. */
const WHOLE_ROW_QUERY = 'WholeRowQuery';

/** The expansions of `WholeRowQuery`: openapi.yaml's, without `select`, by the name of each. */
const WHOLE_EXPAND = {
  ExpandQuery: 'WholeExpandQuery',
  ExpandOptions: 'WholeExpandOptions',
  ExpandNestedQuery: 'WholeExpandNestedQuery',
  ExpandNested: 'WholeExpandNested',
  ExpandLastQuery: 'WholeExpandLastQuery',
  ExpandLast: 'WholeExpandLast',
} as const;

/** The paths of rows in openapi.yaml, and what takes the place of `{collection_name}`. */
const ROW_PATHS = [
  '/v1/collections/{collection_name}/rows',
  '/v1/collections/{collection_name}/versioned-rows',
  '/v1/collections/{collection_name}/query',
  '/v1/collections/{collection_name}/rows/{row_id}',
] as const;

/** The path of a collection's changes over HTTP in openapi.yaml: the 3.2 document gives each collection its own. */
const CHANGES_PATH = '/v1/collections/{collection_name}/changes';

/**
 * The generic schemas of the changes over HTTP a typed collection has its own of in the 3.2 document, by
 * kind: its messages, whose `row` and `previous` are its `<Prefix>Row`, the page of them, and the item of
 * its streams (`itemSchema`).
 */
const typedChangeSchemas = {
  InsertMessage: 'insertMessage',
  UpdateMessage: 'updateMessage',
  DeleteMessage: 'deleteMessage',
  ChangeMessage: 'changeMessage',
  FeedMessage: 'feedMessage',
  ChangesPage: 'changesPage',
} as const;

/** The messages of a change, whose `collection` is the collection's name in a typed collection's own. */
const changeMessages: readonly string[] = ['InsertMessage', 'UpdateMessage', 'DeleteMessage'];

const METHODS = ['get', 'head', 'post', 'put', 'patch', 'delete'] as const;

/** The OpenAPI version of the account's document: 3.1, or 3.2, whose streams type their items. */
export type AccountVersion = '3.1' | '3.2';

const converted = { '3.1': new WeakMap<object, JsonObject>(), '3.2': new WeakMap<object, JsonObject>() };

/** openapi.yaml as OpenAPI 3.1 or 3.2 (openapi-32.ts), converted once per parsed document and version. */
function baseOf(base: object, version: AccountVersion): JsonObject {
  let document = converted[version].get(base);
  if (!document) {
    document = version === '3.2' ? openApiTo32(base) : openApiTo31(base);
    converted[version].set(base, document);
  }
  return document;
}

/** A `$ref` to a schema or a request body of the document: its kind of component, and its name. */
const localComponent = /^#\/components\/(schemas|requestBodies)\/(.+)$/;

/**
 * The schemas and request bodies that the `$ref`s within `node` name, each name with its kind of
 * component, found once for each node: the base documents' parts, which every collection's copies are
 * made of, are walked once.
 */
const namedWithin = new WeakMap<object, ReadonlyMap<string, string>>();

function namesWithin(node: object): ReadonlyMap<string, string> {
  let names = namedWithin.get(node);
  if (names === undefined) {
    const found = new Map<string, string>();
    for (const [key, value] of Object.entries(node)) {
      const [, kind, name] = (key === '$ref' && typeof value === 'string' && localComponent.exec(value)) || [];
      if (kind !== undefined && name !== undefined) found.set(name, kind);
      else if (value !== null && typeof value === 'object') for (const [each, itsKind] of namesWithin(value)) found.set(each, itsKind);
    }
    names = found;
    namedWithin.set(node, names);
  }
  return names;
}

/**
 * `node` with every `$ref` to a schema or request body named in `renamed` pointing at its new name
 * (of the same kind) instead: new objects on the way to each such `$ref`, the rest of `node` itself
 * (a collection's copy of a generic operation shares its parameters and error responses with it). Not
 * to be changed: copy what is changed.
 */
function retarget(node: unknown, renamed: Record<string, string>): unknown {
  if (node === null || typeof node !== 'object' || !renames(node, renamed)) return node;
  if (Array.isArray(node)) return node.map((item) => retarget(item, renamed));
  return mapValues(node as JsonObject, (value, key) => {
    const [, kind, name] = (key === '$ref' && typeof value === 'string' && localComponent.exec(value)) || [];
    return name !== undefined && name in renamed ? `#/components/${kind}/${renamed[name]}` : retarget(value, renamed);
  });
}

/** Whether a `$ref` within `node` names one of `renamed`. */
function renames(node: object, renamed: Record<string, string>): boolean {
  for (const name of namesWithin(node).keys()) if (name in renamed) return true;
  return false;
}

/** The generic request body `generic` of openapi.yaml as a typed collection's own: its types, no examples. */
function collectionRequestBody(generic: JsonObject, collection: string, renamed: Record<string, string>): JsonObject {
  const copy = {
    ...(retarget(generic, renamed) as JsonObject),
    description: `${String(generic.description).trimEnd()}\n\nOf the collection \`${collection}\`, its top-level merge typed by its schema.\n`,
  };
  return withoutExamples(copy) as JsonObject;
}

/** `holder` (a request body or a response) without the examples of its media types: a new value when it has content, else itself. */
function withoutExamples(holder: unknown): unknown {
  if (!isObject(holder) || !isObject(holder.content)) return holder;
  const content = Object.fromEntries(
    Object.entries(holder.content).map(([type, media]) => {
      if (!isObject(media)) return [type, media];
      const { example: _example, examples: _examples, ...rest } = media;
      return [type, rest];
    }),
  );
  return { ...holder, content };
}

/**
 * The generic operation of openapi.yaml as the copy of one collection: its path, its types, its names,
 * and its links (`links`: the document's components) to the collection's own copies (collectionLinks).
 */
function collectionOperation(
  operation: JsonObject,
  collection: string,
  typed: boolean,
  renamed: Record<string, string>,
  links: JsonObject,
): JsonObject {
  const generic = operation.operationId as keyof typeof rowOperations;
  const copy = { ...(retarget(operation, renamed) as JsonObject) };
  if (isObject(copy.responses)) copy.responses = eachResponse(copy.responses, (response) => collectionLinks(response, collection, links));
  copy.operationId = rowOperationId(collection, generic);
  copy.tags = [collectionTag(collection)];
  copy.summary = `${String(operation.summary).replace(/\.$/, '')} (\`${collection}\`).`;
  copy.description = !typed
    ? `\`${generic}\` of the collection \`${collection}\`, which has no schema: its rows are typed as \`${generic}\` types them.`
    : generic === 'getChanges' || generic === 'headChanges'
      ? `\`${generic}\` of the collection \`${collection}\`, the rows of its messages typed by the collection's schema, in its page and in the items of its streams (\`itemSchema\`).`
      : `\`${generic}\` of the collection \`${collection}\`, its rows typed by the collection's schema. It answers whole rows: to ask for some fields of each (\`select\`), use \`${generic}\`.`;
  if (typed) {
    if (Array.isArray(copy.parameters)) {
      copy.parameters = copy.parameters.filter(
        (parameter) => !(isObject(parameter) && parameter.$ref === '#/components/parameters/SelectParameter'),
      );
    }
    // The examples of openapi.yaml are rows of no schema, which this collection's schema may refuse.
    if (copy.requestBody !== undefined) copy.requestBody = withoutExamples(copy.requestBody) as JsonObject;
    if (isObject(copy.responses)) copy.responses = eachResponse(copy.responses, withoutExamples);
  }
  return copy;
}

/**
 * A collection's copy of the generic operation `operation` as what the document's pruning reads of it
 * (caller.ts, unused.ts): its operationId, its tag, whether a publishable key may call it, and a `$ref`
 * to each type of the collection's own it names (`renamed`'s), in `x-rowbase-names`. Its other `$ref`s
 * are those of `operation`, which stays in every document where the copy does. A publishable key's
 * document keeps the same operations, tags and components of it as of the copy made whole
 * (collectionOperation); a diff of it reports the same, as long as it does not look into it.
 */
function outlineOf(operation: JsonObject, collection: string, renamed: Record<string, string>): JsonObject {
  const named = [...namesWithin(operation)].flatMap(([name, kind]) => (name in renamed ? [`#/components/${kind}/${renamed[name]}`] : []));
  return {
    operationId: rowOperationId(collection, operation.operationId as keyof typeof rowOperations),
    tags: [collectionTag(collection)],
    ...(operation['x-rowbase-publishable'] !== undefined && { 'x-rowbase-publishable': operation['x-rowbase-publishable'] }),
    ...(named.length > 0 && { 'x-rowbase-names': named.map(($ref) => ({ $ref })) }),
  };
}

/** `responses` with `change` made to each: a new object. */
const eachResponse = (responses: JsonObject, change: (response: unknown) => unknown): JsonObject => mapValues(responses, change);

/** A `$ref` to a link of the document's components. */
const localLink = /^#\/components\/links\/(.+)$/;

/**
 * `response` (of a collection's copy of an operation) with its links, if it has any (a new value, else
 * itself), each to the collection's own copy of the row operation it names (`getRow` → `get<Prefix>Row`), without
 * `collection_name`, which that copy's path names: so a stateful tester chains a created row of the
 * collection to its read, patch and delete, typed as the collection's. `links` resolves a `$ref`.
 */
function collectionLinks(response: unknown, collection: string, links: JsonObject): unknown {
  if (!isObject(response) || !isObject(response.links)) return response;
  const linked = Object.fromEntries(
    Object.entries(response.links).map(([name, link]) => {
      const ref = isObject(link) && typeof link.$ref === 'string' ? localLink.exec(link.$ref)?.[1] : undefined;
      const resolved = (ref === undefined ? link : links[ref]) as JsonObject;
      const generic = resolved.operationId as keyof typeof rowOperations;
      if (!Object.hasOwn(rowOperations, generic)) return [name, link];
      const { collection_name: _named, ...parameters } = resolved.parameters as JsonObject;
      return [name, { ...resolved, operationId: rowOperationId(collection, generic), parameters }];
    }),
  );
  return { ...response, links: linked };
}

/** The tag of a collection's operations. Tags of openapi.yaml are one word: this one never is. */
const collectionTag = (collection: string) => `rows of ${collection}`;

/**
 * openapi.yaml (parsed; `base`, which is not changed) as OpenAPI 3.1.0, with, for each collection of
 * `collections`, the paths `/v1/collections/<name>/rows`, `…/rows/{row_id}`, `…/versioned-rows` and
 * `…/query`, whose operations are those of openapi.yaml (`insertRows` → `insert<Prefix>Rows`; names.ts)
 * typed by the collection's schema: `<Prefix>Row`, `<Prefix>Insert`, `<Prefix>Patch`, `<Prefix>RowVersion`,
 * `<Prefix>ChangedRows`, `<Prefix>QueryPage`, and the schema's `$defs` (row-schemas.ts), and the request
 * body of its PATCH operations, `<Prefix>PatchRequest` (a component, as openapi.yaml's). A typed operation
 * answers whole rows: it takes no `select`. A collection without a schema gets the same paths, typed as
 * openapi.yaml types rows. The generic operations stay. Collections come in name order, whatever the
 * order given. A new document each call; its parts may be shared with earlier ones: do not change it.
 *
 * As `version` 3.2 (openapi-32.ts: its streams' items are `itemSchema`), each collection also has the path
 * `/v1/collections/<name>/changes` (`get<Prefix>Changes`, `head<Prefix>Changes`), whose messages' rows a
 * typed collection's `<Prefix>Row` types: `<Prefix>InsertMessage`, `<Prefix>UpdateMessage`,
 * `<Prefix>DeleteMessage`, `<Prefix>ChangeMessage` (one of them), `<Prefix>ChangesPage` (its page) and
 * `<Prefix>FeedMessage`, the item of its streams.
 *
 * For a publishable key (`caller.publishable`), only what its caller may use, as each collection's `view`
 * says, the types without the fields hidden from it (caller.ts, publishableOpenApi).
 */
export function accountOpenApi(
  base: object,
  collections: readonly CollectionContract[],
  caller: DocumentCaller = {},
  version: AccountVersion = '3.1',
): object {
  const document = baseOf(base, version);
  const copiedPaths = version === '3.2' ? [...ROW_PATHS, CHANGES_PATH] : ROW_PATHS;
  const baseSchemas = (document.components as JsonObject).schemas as JsonObject;
  const baseRequestBodies = (document.components as JsonObject).requestBodies as JsonObject;
  const baseLinks = ((document.components as JsonObject).links ?? {}) as JsonObject;
  const basePaths = document.paths as JsonObject;
  const paths: JsonObject = { ...basePaths };
  const schemas: JsonObject = { ...baseSchemas };
  const requestBodies: JsonObject = { ...baseRequestBodies };
  const tags = [...((document.tags as unknown[]) ?? [])];
  let anyTyped = false;

  for (const { name, schema, view, relations, ttl, outline } of inOrder(collections)) {
    const typed = schema !== null;
    const renamed: Record<string, string> = {};
    if (typed) {
      anyTyped = true;
      const fields = caller.publishable ? { hidden: view?.hidden, unwritable: view?.unwritable, filled: view?.filled } : {};
      Object.assign(schemas, rowSchemas(name, schema, { id: { $ref: componentRef('RowId') }, ...fields }).schemas);
      describeTtl(schemas, name, ttl, ['row', 'insert', 'patch']);
      for (const [generic, kind] of Object.entries({ ...typedSchemas, ...typedRequestBodies })) renamed[generic] = rowTypeName(name, kind);
      renamed.RowQuery = WHOLE_ROW_QUERY;
      if (version === '3.2') {
        for (const [generic, kind] of Object.entries(typedChangeSchemas)) renamed[generic] = rowTypeName(name, kind);
        for (const generic of Object.keys(typedChangeSchemas))
          schemas[renamed[generic]!] = changeSchema(baseSchemas, generic, name, renamed);
      }
      for (const generic of Object.keys(typedRequestBodies)) {
        requestBodies[renamed[generic]!] = collectionRequestBody(baseRequestBodies[generic] as JsonObject, name, renamed);
      }
      Object.assign(schemas, expandSchemas(name, relations ?? [], schemas, collections, caller));
      for (const generic of ['VersionedRow', 'ChangedRows', 'RowQueryPage'] as const) {
        schemas[renamed[generic]!] = {
          ...(retarget(baseSchemas[generic], renamed) as JsonObject),
          description: `${String((baseSchemas[generic] as JsonObject).description).replace(/\.$/, '')}, of \`${name}\`.`,
        };
      }
    }
    for (const path of copiedPaths) {
      const item = basePaths[path] as JsonObject;
      const copy: JsonObject = {};
      const parameters = ((item.parameters as unknown[]) ?? []).filter(
        (parameter) => !(isObject(parameter) && parameter.$ref === '#/components/parameters/CollectionNamePath'),
      );
      if (parameters.length > 0) copy.parameters = parameters;
      for (const method of METHODS) {
        const generic = item[method];
        if (!isObject(generic)) continue;
        // A publishable key's caller is left only the copies it may call (caller.ts): the others are not made.
        const made =
          !caller.publishable ||
          (generic['x-rowbase-publishable'] === true && grantsCopy(view, generic.operationId as keyof typeof rowOperations));
        if (!made) continue;
        copy[method] = outline ? outlineOf(generic, name, renamed) : collectionOperation(generic, name, typed, renamed, baseLinks);
      }
      paths[path.replace('{collection_name}', name)] = copy;
    }
    tags.push({ name: collectionTag(name), description: `The rows of the collection \`${name}\`${typed ? ', typed by its schema' : ''}.` });
  }
  if (anyTyped) {
    const query = baseSchemas.RowQuery as JsonObject;
    const { select: _select, ...properties } = query.properties as JsonObject;
    schemas[WHOLE_ROW_QUERY] = {
      ...query,
      description: 'A query of a collection typed by its schema: `RowQuery` without `select`, as its answers are whole rows.',
      properties: { ...properties, expand: { $ref: componentRef(WHOLE_EXPAND.ExpandQuery) } },
      ...(Array.isArray(query.examples) ? { examples: query.examples.map(withoutSelect) } : {}),
    };
    // Its expansions answer whole rows too, typed as their collections' rows: no `select` at any level.
    for (const [generic, whole] of Object.entries(WHOLE_EXPAND)) {
      const { properties: options, examples, ...rest } = retarget(baseSchemas[generic], WHOLE_EXPAND) as JsonObject;
      schemas[whole] = {
        ...rest,
        description: `${String(rest.description).trimEnd()}\n\nOf a collection typed by its schema: whole rows, no \`select\`.`,
        ...(isObject(options) && { properties: withoutSelect(options) }),
        ...(Array.isArray(examples) && {
          examples: examples.map((example) =>
            isObject(example) ? Object.fromEntries(Object.entries(example).map(([name, each]) => [name, withoutSelect(each)])) : example,
          ),
        }),
      };
    }
  }
  const account = { ...document, tags, paths, components: { ...(document.components as JsonObject), schemas, requestBodies } };
  return caller.publishable ? publishableOpenApi(account, collections) : account;
}

/**
 * The type `<Prefix>Expand` of the member `_expand` of a typed collection's rows, and its `<Prefix>Row` (of
 * `schemas`) with `_expand` of that type, optional: each relation whose collection is in the document
 * (and, to a publishable key, grants its caller `read`) by name, a to-one as that collection's row type
 * or null, a to-many as an array of it, and `$cut` naming the to-many relations. A related row's own
 * `_expand` is its own collection's `<Prefix>Expand`, so each level of an expansion is typed.
 * Nothing when no relation is shown.
 */
function expandSchemas(
  collection: string,
  relations: readonly ContractRelation[],
  schemas: JsonObject,
  collections: readonly CollectionContract[],
  caller: DocumentCaller,
): JsonObject {
  const shown = relations.flatMap((relation) => {
    const target = collections.find(({ name }) => name === relation.collection);
    if (!target || (caller.publishable && !target.view?.operations.includes('read'))) return [];
    // A collection without a schema has rows as openapi.yaml's `Row`.
    return [{ ...relation, row: componentRef(target.schema === null ? 'Row' : rowTypeName(target.name, 'row')) }];
  });
  if (shown.length === 0) return {};
  const expand = rowTypeName(collection, 'expand');
  const toMany = shown.filter(({ kind }) => kind === 'to_many').map(({ name }) => name);
  const properties: JsonObject = Object.fromEntries(
    shown.map(({ name, kind, collection: target, row }) => [
      name,
      kind === 'to_one'
        ? {
            description: `The row of \`${target}\` it names: null for none, or one the caller may not read.`,
            oneOf: [{ $ref: row }, { type: 'null' }],
          }
        : { description: `The rows of \`${target}\` naming it, at most the relation's limit.`, type: 'array', items: { $ref: row } },
    ]),
  );
  if (toMany.length > 0) {
    properties.$cut = {
      description: 'The to-many relations whose rows were more than the limit.',
      type: 'array',
      items: { type: 'string', enum: toMany },
    };
  }
  const rowName = rowTypeName(collection, 'row');
  const row = schemas[rowName] as JsonObject;
  return {
    [rowName]: {
      ...row,
      ...(Array.isArray(row.required) && { required: row.required.filter((field) => field !== EXPANDED) }),
      properties: { ...(row.properties as JsonObject), [EXPANDED]: { $ref: componentRef(expand) } },
    },
    [expand]: {
      type: 'object',
      description: `The member \`_expand\` of a row of \`${collection}\` answered with \`expand\` (\`Expanded\`, docs/relations.md): the relations asked for, by name.`,
      additionalProperties: false,
      properties,
    },
  };
}

/** The feed's generic payloads a collection has its own of, and the message of each. */
const feedMessages = [
  { message: 'insert', schema: 'InsertMessage', kind: 'insertMessage', key: 'Insert' },
  { message: 'update', schema: 'UpdateMessage', kind: 'updateMessage', key: 'Update' },
  { message: 'delete', schema: 'DeleteMessage', kind: 'deleteMessage', key: 'Delete' },
] as const;

/**
 * asyncapi.yaml (AsyncAPI 3.0.0, parsed; `base`, which is not changed) with, for each collection of
 * `collections`, the feed's `insert`, `update` and `delete` messages of that collection: payloads
 * `<Prefix>InsertMessage`, `<Prefix>UpdateMessage` and `<Prefix>DeleteMessage`, whose `collection` is the
 * collection's name and whose `row` and `previous` are `<Prefix>Row` (the collection's schema, with `id`;
 * asyncapi.yaml's `Row` and `PreviousRow` for a collection without one), messages `<Prefix>Insert`, … on the channel
 * `feed`, and the operation `send<Prefix>RowChanges`. The generic messages stay. A new document each call.
 *
 * For a publishable key (`caller.publishable`), the feed of the collections its caller may read, if the
 * feed takes a publishable key (`caller.feed`), their rows without the fields hidden from it (caller.ts,
 * publishableAsyncApi).
 */
export function accountAsyncApi(base: object, collections: readonly CollectionContract[], caller: DocumentCaller = {}): object {
  const document = base as JsonObject;
  const components = document.components as JsonObject;
  const baseSchemas = components.schemas as JsonObject;
  const schemas: JsonObject = { ...baseSchemas };
  const messages: JsonObject = { ...(components.messages as JsonObject) };
  const channels = document.channels as JsonObject;
  const feed = channels.feed as JsonObject;
  const channelMessages: JsonObject = { ...(feed.messages as JsonObject) };
  const operations: JsonObject = { ...(document.operations as JsonObject) };
  const idSchema = ((baseSchemas.Row as JsonObject).properties as JsonObject).id as JsonObject;

  for (const { name, schema, view, ttl } of inOrder(collections)) {
    if (caller.publishable && !view?.operations.includes('read')) continue;
    const hidden = caller.publishable ? view?.hidden : undefined;
    const prefix = collectionPrefix(name);
    const row = rowTypeName(name, 'row');
    // A collection without a schema has rows as asyncapi.yaml's `Row`, and no row type of its own.
    const renamed: Record<string, string> = schema === null ? {} : { Row: row, PreviousRow: row };
    if (schema !== null) {
      Object.assign(schemas, rowSchemas(name, schema, { id: idSchema, kinds: ['row'], hidden }).schemas);
      describeTtl(schemas, name, ttl, ['row']);
    }
    const operationMessages: unknown[] = [];
    for (const { message, schema: payload, kind, key } of feedMessages) {
      const generic = baseSchemas[payload] as JsonObject;
      const typedPayload = { ...(retarget(generic, renamed) as JsonObject) };
      typedPayload.description = `${String(generic.description).replace(/\.$/, '')}, in \`${name}\`.`;
      typedPayload.properties = { ...(typedPayload.properties as JsonObject), collection: { type: 'string', const: name } };
      schemas[rowTypeName(name, kind)] = typedPayload;
      const messageKey = prefix + key;
      const genericMessage = (components.messages as JsonObject)[message] as JsonObject;
      messages[messageKey] = {
        name: message,
        title: `${String(genericMessage.title)} (${name})`,
        summary: `${String(genericMessage.summary).replace(/\.$/, '')}, in \`${name}\`.`,
        contentType: genericMessage.contentType,
        payload: { $ref: componentRef(rowTypeName(name, kind)) },
      };
      channelMessages[messageKey] = { $ref: `#/components/messages/${messageKey}` };
      operationMessages.push({ $ref: `#/channels/feed/messages/${messageKey}` });
    }
    const [verb, noun] = feedOperation;
    operations[verb + prefix + noun] = {
      action: 'send',
      channel: { $ref: '#/channels/feed' },
      title: `A row of ${name} changed`,
      summary: `The feed of \`${name}\` (\`collection=${name}\`): one message for each committed change of the kinds chosen in \`events\`.`,
      description: `\`sendRowChanges\` of the collection \`${name}\`, its rows typed by the collection's schema.`,
      messages: operationMessages,
    };
  }
  const account = {
    ...document,
    channels: { ...channels, feed: { ...feed, messages: channelMessages } },
    operations,
    components: { ...components, schemas, messages },
  };
  return caller.publishable ? publishableAsyncApi(account, collections, caller.feed ?? false) : account;
}

/**
 * The generic schema `generic` of the changes over HTTP as a typed collection's own (`renamed` names its
 * types): a message of a change names the collection (`const`).
 */
function changeSchema(baseSchemas: JsonObject, generic: string, collection: string, renamed: Record<string, string>): JsonObject {
  const schema = baseSchemas[generic] as JsonObject;
  const copy = { ...(retarget(schema, renamed) as JsonObject) };
  copy.description = `${String(schema.description).trimEnd()}\n\nOf the collection \`${collection}\`, its rows typed by its schema.`;
  if (changeMessages.includes(generic)) {
    copy.properties = { ...(copy.properties as JsonObject), collection: { type: 'string', const: collection } };
  }
  return copy;
}

const baseTags = new WeakMap<object, string>();

/**
 * A strong entity tag (RFC 9110 §8.8.3) of the document `accountOpenApi(base, collections, caller)` or
 * `accountAsyncApi(base, collections, caller)` answers: equal for equal inputs, different when a
 * collection, its schema, its relations, what it grants a publishable key's caller (its `view`), the caller or the base
 * document differs. A hash of the inputs (the base's hashed once per parsed document), so it costs far less
 * than the document: compare it with `If-None-Match` first. Two end users whose claims the rules grant the
 * same share a tag, and so a document.
 */
export function documentTag(base: object, collections: readonly CollectionContract[], caller: DocumentCaller = {}): string {
  let baseHash = baseTags.get(base);
  if (baseHash === undefined) {
    baseHash = createHash('sha256').update(JSON.stringify(base)).digest('base64url');
    baseTags.set(base, baseHash);
  }
  const hash = createHash('sha256')
    .update(baseHash)
    .update(
      JSON.stringify(
        inOrder(collections).map(({ name, schema, view, relations = [], ttl = null }) =>
          caller.publishable ? [name, schema, relations, ttl, view ?? null] : [name, schema, relations, ttl],
        ),
      ),
    );
  if (caller.publishable) hash.update(JSON.stringify({ publishable: true, feed: caller.feed ?? false }));
  return `"${hash.digest('base64url').slice(0, 27)}"`;
}

/**
 * Says, on the field of the collection's time to live in each of its row types of `kinds`, what the field
 * means (docs/expiry.md): its own description kept after. A type that does not list the field among its
 * properties (the schema leaves it to `additionalProperties`, or it is hidden from a publishable key's
 * caller) is left as it is.
 */
function describeTtl(
  schemas: JsonObject,
  collection: string,
  field: string | null | undefined,
  kinds: readonly ('row' | 'insert' | 'patch')[],
) {
  if (!field) return;
  for (const kind of kinds) {
    const type = schemas[rowTypeName(collection, kind)];
    if (!isObject(type) || !isObject(type.properties)) continue;
    const property = type.properties[field];
    if (!isObject(property)) continue;
    const own = typeof property.description === 'string' ? ` ${property.description}` : '';
    type.properties[field] = { ...property, description: `${TTL_MEANING}${own}` };
  }
}

/** What the field of a collection's time to live means, on its row types (docs/expiry.md). */
const TTL_MEANING =
  "When the row expires: the collection's time to live (docs/expiry.md). An RFC 3339 date-time; from that instant the row is gone from every read, and deleted within a minute with a delete event marked expired. A row whose field is missing, null or not a date-time never expires.";

/** An example of `RowQuery` as one of `WholeRowQuery`: without its `select`. */
function withoutSelect(example: unknown): unknown {
  if (!isObject(example)) return example;
  const { select: _select, ...rest } = example;
  return rest;
}
