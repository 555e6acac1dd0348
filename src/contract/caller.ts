// The account's documents for a caller holding a publishable key (docs/access.md, "The contract follows the
// caller"): of the account's documents (account.ts), only what that caller may use. An operation stays when
// openapi.yaml marks it `x-rowbase-publishable: true` and, if it acts on a collection's rows, when that
// collection's rules grant the caller the rule it needs (`read`, `create`, `update`, `delete`) for some rows
// at least; a collection's types leave out the fields hidden from the caller (row-schemas.ts). What no
// operation left names is left out too, and the security schemes are the publishable key's and the end
// user's token's. A client generated from the document cannot name what the caller may not use.
import { Grant } from '../rules/access.ts';
import type { Claims, CompiledRules } from '../rules/compile.ts';
import { OPERATIONS, type Operation } from '../rules/rules.ts';
import { rowOperationId, rowOperations } from './names.ts';
import { isObject, type JsonObject } from './row-schemas.ts';
import { mapValues } from './status-maps.ts';
import { withoutUnused } from './unused.ts';

/** What a caller holding a publishable key may use of a collection, as its rules say for the caller's claims. */
export interface CollectionView {
  /** The rules that grant the caller some rows at least (an access other than `deny`), in the order of `OPERATIONS`. */
  operations: readonly Operation[];
  /** Top-level fields hidden from the caller, whose `read` access is not `all` for it: left out of every type. */
  hidden: readonly string[];
  /** Top-level fields the caller sees but may not set (`write` access `deny`): left out of what it writes. */
  unwritable: readonly string[];
  /**
   * Top-level fields the rules fill from the caller's token in a row it inserts (`default`, its claim at
   * hand): not required in the row to insert. Present only when there is one.
   */
  filled?: readonly string[];
}

/** Whom a document is for: by default a secret key, which may use everything of its account's. */
export interface DocumentCaller {
  /**
   * A publishable key: the document holds what it may use, each collection's `view` saying what its rules
   * grant (a collection without one grants nothing). Default false.
   */
  publishable?: boolean;
  /** Of the AsyncAPI document: whether the feed takes a publishable key (openapi.yaml, `openFeed`). Default false. */
  feed?: boolean;
}

/** A collection of the document, as this module needs it. */
export interface ViewedCollection {
  name: string;
  view?: CollectionView;
}

/** Code point order, as collections and fields are listed. */
const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** What `rules` grant a caller with `claims` (null: anonymous), as the documents show it. */
export function collectionView(rules: CompiledRules, claims: Claims): CollectionView {
  // The Grant requests are held to (src/rules/access.ts), so that the documents show what requests may do;
  // it refuses nothing here, so it needs no collection's name for a refusal's detail.
  const grant = new Grant(rules, claims, '');
  const view = { operations: grant.granted, hidden: grant.hideable.sort(byCodePoint), unwritable: grant.unwritable.sort(byCodePoint) };
  const filled = grant.fillable.sort(byCodePoint);
  return filled.length > 0 ? { ...view, filled } : view;
}

/** Whether openapi.yaml (parsed) marks the operation `operationId` `x-rowbase-publishable: true`. */
export function takesPublishable(openapi: object, operationId: string): boolean {
  for (const item of Object.values(((openapi as JsonObject).paths ?? {}) as JsonObject)) {
    if (!isObject(item)) continue;
    for (const operation of Object.values(item)) {
      if (isObject(operation) && operation.operationId === operationId) return operation['x-rowbase-publishable'] === true;
    }
  }
  return false;
}

/**
 * The rule of a collection each operation on its rows needs, its generic one and the collection's own
 * copies alike (`listRows`, `listNotesRows`); the feed's subscription needs `read`.
 */
const RULE_OF: { [Id in keyof typeof rowOperations]: Operation } & Record<string, Operation> = {
  listRows: 'read',
  headRows: 'read',
  listVersionedRows: 'read',
  headVersionedRows: 'read',
  queryRows: 'read',
  getRow: 'read',
  headRow: 'read',
  aggregateRows: 'read',
  getAggregates: 'read',
  headAggregates: 'read',
  openFeed: 'read',
  headFeed: 'read',
  getChanges: 'read',
  headChanges: 'read',
  insertRows: 'create',
  updateRows: 'update',
  updateRow: 'update',
  deleteRows: 'delete',
  deleteRow: 'delete',
};

/** A batch writes the rows of any collection: it stays while one collection grants the caller a write. */
const BATCH = 'writeBatch';
const WRITES: readonly Operation[] = ['create', 'update', 'delete'];

/** The parameters that name the collection an operation acts on, the path's, as openapi.yaml writes them. */
const collectionParameter = (parameter: unknown): parameter is JsonObject =>
  isObject(parameter) &&
  (parameter.$ref === '#/components/parameters/CollectionNamePath' || (parameter.name === 'collection' && parameter.in === 'query'));

/** The query parameter of the end user's token, of the feed and the changes. */
const tokenParameter = (parameter: unknown) => isObject(parameter) && parameter.name === 'access_token' && parameter.in === 'query';

const METHODS = ['get', 'head', 'post', 'put', 'patch', 'delete'] as const;

/** The security schemes of the OpenAPI document for a publishable key: the key in a header, the end user's token as a bearer JWT. */
const OPENAPI_SCHEMES: Record<string, JsonObject> = {
  publishableKey: {
    type: 'apiKey',
    in: 'header',
    name: 'x-api-key',
    description: "The publishable key (`rb_pub_…`), alone in `x-api-key`: `Authorization` carries the end user's token.",
  },
  endUserToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      "The end user's token, signed by an issuer of the account (`Authorization: Bearer <jwt>`), beside the publishable key. Without one the caller is anonymous.",
  },
  publishableQueryKey: {
    type: 'apiKey',
    in: 'query',
    name: 'api_key',
    description:
      "Only on `GET /ws` and a collection's changes: the publishable key in the `api_key` query parameter, as browsers set no headers on a WebSocket or an EventSource.",
  },
  endUserQueryToken: {
    type: 'apiKey',
    in: 'query',
    name: 'access_token',
    description:
      "Only on `GET /ws` and a collection's changes: the end user's token in the `access_token` query parameter, as `Authorization: Bearer` would carry it.",
  },
};

/** The key with the end user's token, or the key alone (an anonymous caller). */
const SECURITY = [{ publishableKey: [], endUserToken: [] }, { publishableKey: [] }];
/** The feed's and the changes': their query parameters too. */
const FEED_SECURITY = [{ publishableQueryKey: [], endUserQueryToken: [] }, { publishableQueryKey: [] }, ...SECURITY];

/**
 * What a document for a publishable key says of itself, first in its `info.description`, and of what it
 * `holds` (Markdown).
 */
export const preamble = (holds: string) =>
  `**This document is the API as one caller holding a publishable key sees it**: the end user whose token came with the request, or an anonymous caller without one (docs/access.md, "The contract follows the caller"). ${holds}\n\n`;

const HOLDS =
  "It holds only the operations that key may call (`x-rowbase-publishable: true`) and, of each collection, those its rules grant this caller for some rows at least; its types leave out the fields hidden from this caller, and the types of what it writes the fields it may not set. The key goes in `x-api-key`, the end user's token in `Authorization: Bearer`.";

/**
 * `document` (the account's OpenAPI document, built for `collections` and their views; not changed) as a
 * publishable key's caller may use it: see the head of this module. A generic operation on rows
 * (`listRows`) names in its `collection_name` only the collections that grant its rule (an `enum`), and
 * goes when none does. Components, tags and security schemes no operation left uses go too.
 */
export function publishableOpenApi(document: JsonObject, collections: readonly ViewedCollection[]): JsonObject {
  const grants = grantsOf(collections);
  const views = new Map(collections.map(({ name, view }) => [name, view]));
  const copies = new Map<string, { collection: string; generic: keyof typeof rowOperations }>();
  for (const { name } of collections) {
    for (const generic of Object.keys(rowOperations) as (keyof typeof rowOperations)[]) {
      copies.set(rowOperationId(name, generic), { collection: name, generic });
    }
  }
  const components = document.components as JsonObject;
  const paths: JsonObject = {};
  for (const [path, item] of Object.entries(document.paths as JsonObject)) {
    if (!isObject(item)) continue;
    const kept: JsonObject = {};
    const pathParameter = ((item.parameters as unknown[]) ?? []).find(collectionParameter);
    let named = 0;
    for (const method of METHODS) {
      const operation = item[method];
      if (!isObject(operation) || operation['x-rowbase-publishable'] !== true) continue;
      const id = String(operation.operationId);
      const copy = copies.get(id);
      if (copy) {
        if (grantsCopy(views.get(copy.collection), copy.generic)) kept[method] = secured(operation);
        continue;
      }
      const rule = RULE_OF[id];
      if (id === BATCH) {
        if (WRITES.some((write) => grants(write).length > 0)) kept[method] = secured(operation);
      } else if (rule === undefined || pathParameter === undefined) kept[method] = secured(operation);
      else {
        const names = grants(rule);
        if (names.length === 0) continue;
        kept[method] = {
          ...secured(operation),
          parameters: [naming(pathParameter, names, components), ...((operation.parameters as unknown[]) ?? [])],
        };
        named += 1;
      }
    }
    const methods = Object.keys(kept).length;
    if (methods === 0) continue;
    const { parameters, ...rest } = Object.fromEntries(
      Object.entries(item).filter(([key]) => !(METHODS as readonly string[]).includes(key)),
    );
    // Every operation names the collection itself: the path's parameter, which names them all, goes. The
    // `access_token` of the feed and the changes is a security scheme here (endUserQueryToken), as their `api_key` is.
    const left = ((parameters as unknown[]) ?? []).filter(
      (parameter) => !(named === methods && collectionParameter(parameter)) && !tokenParameter(parameter),
    );
    paths[path] = { ...rest, ...(left.length > 0 && { parameters: left }), ...kept };
  }
  withoutDeadLinks(paths, components);
  const tagged = new Set(
    Object.values(paths).flatMap((item) =>
      Object.values(item as JsonObject).flatMap((each) => (isObject(each) && Array.isArray(each.tags) ? each.tags : [])),
    ),
  );
  const pruned: JsonObject = {
    ...document,
    info: { ...(document.info as JsonObject), description: preamble(HOLDS) + String((document.info as JsonObject).description ?? '') },
    tags: ((document.tags as JsonObject[]) ?? []).filter((tag) => tagged.has(tag.name)),
    security: SECURITY,
    paths,
    components: { ...components, securitySchemes: OPENAPI_SCHEMES },
  };
  return withoutUnused(pruned);
}

/**
 * Leaves out of the operations of `paths` (changed in place: each operation's `responses` and the
 * responses holding links are new objects) the links to operations `paths` no longer holds: a caller
 * may create rows it may not read or delete. A link of the components (`components.links`) is
 * resolved to see whom it names; what no link names any more withoutUnused leaves out.
 */
function withoutDeadLinks(paths: JsonObject, components: JsonObject): void {
  const operations = Object.values(paths).flatMap((item) => Object.values(item as JsonObject).filter(isObject));
  const present = new Set(operations.map((operation) => operation.operationId));
  const componentLinks = (components.links ?? {}) as JsonObject;
  const target = (link: unknown): unknown => {
    const ref = isObject(link) && typeof link.$ref === 'string' ? /^#\/components\/links\/(.+)$/.exec(link.$ref)?.[1] : undefined;
    const resolved = ref === undefined ? link : componentLinks[ref];
    return isObject(resolved) ? resolved.operationId : undefined;
  };
  for (const item of Object.values(paths) as JsonObject[]) {
    for (const [method, operation] of Object.entries(item)) {
      if (!isObject(operation) || !isObject(operation.responses)) continue;
      if (!Object.values(operation.responses).some((response) => isObject(response) && isObject(response.links))) continue;
      item[method] = {
        ...operation,
        responses: mapValues(operation.responses, (response) => {
          if (!isObject(response) || !isObject(response.links)) return response;
          const { links, ...rest } = response;
          const kept = Object.entries(links).filter(([, link]) => present.has(target(link)));
          return kept.length === 0 ? rest : { ...rest, links: Object.fromEntries(kept) };
        }),
      };
    }
  }
}

/**
 * Whether a publishable key's caller whose view of a collection is `view` may call the collection's copy of
 * the row operation `generic` (one openapi.yaml marks `x-rowbase-publishable`): its rule grants some rows.
 * The account's document makes no other copy for that caller (account.ts), and publishableOpenApi keeps no other.
 */
export const grantsCopy = (view: CollectionView | undefined, generic: keyof typeof rowOperations): boolean =>
  view?.operations.includes(RULE_OF[generic]) ?? false;

/** The operation with the publishable key's security, its query parameters too where it took the key there (the feed, the changes). */
function secured(operation: JsonObject): JsonObject {
  if (!Array.isArray(operation.security)) return operation;
  const queried = operation.security.some((requirement) => isObject(requirement) && 'queryKey' in requirement);
  return { ...operation, security: queried ? FEED_SECURITY : SECURITY };
}

/** The path's parameter that names a collection (`pathParameter`, or the component it refers to), naming only `names`. */
function naming(pathParameter: JsonObject, names: readonly string[], components: JsonObject): JsonObject {
  const ref = typeof pathParameter.$ref === 'string' ? /^#\/components\/parameters\/(.+)$/.exec(pathParameter.$ref)?.[1] : undefined;
  const parameter = ref === undefined ? pathParameter : ((components.parameters as JsonObject)[ref] as JsonObject);
  const { examples: _examples, ...rest } = parameter;
  return {
    ...rest,
    schema: { type: 'string', enum: [...names], description: "A collection whose rules grant this caller the operation's rule." },
    example: names[0],
  };
}

/** For each rule, the names of the collections that grant it (code point order). */
export function grantsOf(collections: readonly ViewedCollection[]): (rule: Operation) => readonly string[] {
  const names = Object.fromEntries(
    OPERATIONS.map((rule) => [
      rule,
      collections
        .filter(({ view }) => view?.operations.includes(rule))
        .map(({ name }) => name)
        .sort(byCodePoint),
    ]),
  ) as Record<Operation, string[]>;
  return (rule) => names[rule];
}
