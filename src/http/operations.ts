// Every operation the HTTP API answers, bound once at start to what its requests need: its handler by
// operationId (one of openapi.yaml's, or a page beside it, site.ts), its security and scope
// (`x-rowbase-scope`), whether a publishable key may call it (`x-rowbase-publishable`), and its request
// checks (validation.ts). The request path's stages (route.ts, authorize.ts, handle.ts) read it.
import type { Operation } from 'openapi-backend';
import type { OpenAPIV3 } from 'openapi-types';
import { parse } from 'qs';
import document from '../../generated/openapi-server.json' with { type: 'json' };
import { otherBodyValidators, requestValidators } from '../../generated/validators.js';
import { type Scope, scopes, scopesGranting } from '../api-keys/scopes.ts';
import { FEED_PATH } from '../feed/upgrade.ts';
import { handlers } from '../handlers/index.ts';
import { type SitePageId, siteHandlers } from '../handlers/site.ts';
import type { Deps, Handler, OperationId } from '../handlers/types.ts';
import { methodsAt, RouteTable } from './route-table.ts';
import { siteOperations } from './site.ts';
import { QueryMemo, type RequestChecks, requestChecks } from './validation.ts';

/** An operation with what its requests need, worked out at start. */
interface Bound {
  /** Its handler, by operationId: one of openapi.yaml's operations, or one of the pages (site.ts). */
  handler: Handler<OperationId> | ((input: never, deps: Deps) => ReturnType<Handler<OperationId>>);
  /** The names of the schemes of each of its `security` requirements; one requirement met is enough. */
  security: string[][];
  /** The key scopes that grant what its `x-rowbase-scope` names, and the refusal of the others; none for the routes without a key. */
  scope?: { granted: ReadonlySet<Scope>; needs: string };
  /**
   * Whether a publishable key may call it (its `x-rowbase-publishable: true`), and the operation as a
   * refusal names it. Deny by default: an operation that does not say so answers a publishable key 403.
   */
  publishable?: { takes: boolean; named: string };
  /** Whether its path names a collection (`collection_name`): a key limited to others does not see it. */
  ofCollection: boolean;
  checks: RequestChecks;
}

/** The operations bound, the table that matches requests to them, and how a query string is read for them. */
export interface Operations {
  table: RouteTable;
  /** What the matched operation needs (every operation of the table has one). */
  bound(operation: Operation): Bound;
  /**
   * The query as openapi-backend reads it, an object of this request's own (Ajv coerces its values in
   * place), holding each of the operation's query parameters in the order openapi.yaml lists them,
   * undefined where not sent. Every request of an operation then gives its validator an object of one
   * shape, whatever order its client wrote the parameters in and whichever it sent; objects of many
   * shapes would make each of the validator's reads a slow, generic one. The names the operation does
   * not know are refused before (validateRequest).
   */
  queryFor(querystring: string, names: ReadonlySet<string>): Record<string, unknown>;
  /** The methods openapi.yaml has at `path`, in capitals (HEAD with GET); none for a path it does not have. */
  methodsAt(path: string): string[];
}

export function bindOperations(): Operations {
  // openapi.yaml's operations but the feed's, then the pages served beside them (site.ts).
  const table = new RouteTable([...operationsOf(document as unknown as OpenAPIV3.Document).filter(routedHere), ...siteOperations()]);
  const bound = new Map<Operation, Bound>();
  for (const operation of table.operations) if (operation.method !== 'head') bound.set(operation, bind(operation));
  // HEAD is GET without the body (RFC 9110 §9.3.2): a `head` operation is its path's `get`, whose
  // handler answers, and the responder leaves the body out.
  for (const operation of table.operations) {
    if (operation.method !== 'head') continue;
    const get = table.operations.find((candidate) => candidate.method === 'get' && candidate.path === operation.path);
    if (!get) throw new Error(`operation ${operation.operationId}: HEAD ${operation.path} has no GET to answer it`);
    bound.set(operation, bound.get(get) as Bound);
  }

  // As openapi-backend's parseRequestQuery reads a query string: qs, with its defaults.
  const parseQuery = (querystring: string) => parse(querystring) as Record<string, unknown>;
  const noQuery = { parsed: {} as Record<string, unknown>, flat: true };
  const parsedQueries = new QueryMemo((querystring) => {
    const parsed = parseQuery(querystring);
    return { parsed, flat: Object.values(parsed).every((value) => typeof value === 'string') };
  });
  return {
    table,
    bound: (operation) => bound.get(operation) as Bound,
    queryFor: (querystring, names) => {
      const { parsed, flat } = querystring === '' ? noQuery : parsedQueries.get(querystring);
      const sent = flat ? parsed : parseQuery(querystring);
      const query: Record<string, unknown> = {};
      for (const name of names) query[name] = sent[name];
      return query;
    },
    methodsAt: (path) => methodsAt(table, path),
  };
}

/**
 * The document's operations as openapi-backend's router lists them (OpenAPIRouter.getOperations), in
 * document order: each with its path and method, the path's parameters after its own, and the document's
 * security unless it has its own. Not the router itself: openapi-backend and lodash loaded for these few
 * lines would hold some 4 MB of an idle server's heap (docs/performance.md, "Memory").
 */
function operationsOf(document: OpenAPIV3.Document): Operation[] {
  const methods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
  return Object.entries(document.paths).flatMap(([path, item = {}]) =>
    methods.flatMap((method) => {
      const operation = item[method];
      if (!operation) return [];
      const parameters = [...(operation.parameters ?? []), ...(item.parameters ?? [])];
      return [{ ...operation, path, method, parameters, security: operation.security ?? document.security ?? [] } as Operation];
    }),
  );
}

/**
 * Whether the HTTP API answers `operation` with a handler: all of openapi.yaml's but the feed's, on `/ws`,
 * which the feed answers (a request for it that is no upgrade is refused by `handle`, as no route).
 */
function routedHere(operation: Operation): boolean {
  return operation.path !== FEED_PATH;
}

function bind(operation: Operation): Bound {
  const operationId = operation.operationId as OperationId;
  // A page has no validators: its path and query parameters (http/site.ts) are strings as sent.
  if (operationId in siteHandlers)
    return { handler: siteHandlers[operationId as SitePageId], security: [], ofCollection: false, checks: requestChecks(operation, []) };
  const handler = handlers[operationId] as Handler<OperationId> | undefined;
  const validators = (requestValidators as Record<string, RequestChecks['validators']>)[operationId];
  if (!handler || !validators) throw new Error(`operation ${operationId} has no ${handler ? 'validators: npm run generate' : 'handler'}`);
  const security = (operation.security ?? []).map(Object.keys);
  const ofCollection = ((operation.parameters ?? []) as OpenAPIV3.ParameterObject[]).some(
    (parameter) => parameter.in === 'path' && parameter.name === 'collection_name',
  );
  const checks = requestChecks(operation, validators, otherBodyValidators[operationId]);
  return { handler, security, scope: scopeOf(operation, security), publishable: publishableOf(operation, security), ofCollection, checks };
}

/** Whether the operation takes a publishable key (`x-rowbase-publishable: true` in openapi.yaml); none that needs no key says so. */
function publishableOf(operation: Operation, security: string[][]): Bound['publishable'] {
  const takes = (operation as { 'x-rowbase-publishable'?: unknown })['x-rowbase-publishable'];
  if (takes !== undefined && takes !== true) throw new Error(`${operation.operationId}: x-rowbase-publishable must be true, or absent`);
  if (security.length === 0) {
    if (takes) throw new Error(`${operation.operationId}: needs no key, yet says x-rowbase-publishable`);
    return undefined;
  }
  return { takes: takes === true, named: `${operation.method.toUpperCase()} ${operation.path}` };
}

/**
 * What the operation's `x-rowbase-scope` (openapi.yaml) asks of a key. Every operation that needs a key
 * names a scope: one that does not is a mistake of the document, found at start, not a route any key
 * may call.
 */
function scopeOf(operation: Operation, security: string[][]): Bound['scope'] {
  const scope = (operation as { 'x-rowbase-scope'?: Scope })['x-rowbase-scope'];
  if (security.length === 0) {
    if (scope !== undefined) throw new Error(`${operation.operationId}: needs no key, yet names the scope ${scope}`);
    return undefined;
  }
  if (!scopes.includes(scope as Scope)) throw new Error(`${operation.operationId}: x-rowbase-scope must be one of ${scopes.join(', ')}`);
  return { granted: scopesGranting(scope as Scope), needs: `${operation.method.toUpperCase()} ${operation.path} needs ${scope}` };
}
