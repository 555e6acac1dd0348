// Each request goes to its operation in openapi.yaml and to the handler bound by its operationId, in
// the order of openapi-backend's handleRequest: match (miss: 404 or 405), the operation's `security`
// (401) and the scope it needs (403; `authorize`, before the body is read), validation (400), the
// key's collections (404), the handler, the one responder.
// What it works out once at start, how its route table matches and what it validates: docs/development.md,
// "The router".
import type { ServerResponse } from 'node:http';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { Middleware } from 'koa';
import { type Document, OpenAPIRouter, type Operation } from 'openapi-backend';
import type { OpenAPIV3 } from 'openapi-types';
import document from '../../generated/openapi.json' with { type: 'json' };
import { otherBodyValidators, requestValidators } from '../../generated/validators.js';
import { type Scope, scopes, scopesGranting } from '../auth/scopes.ts';
import type { Principal } from '../db/accounts/keys.ts';
import {
  ApiError,
  collectionNotFound,
  type FieldError,
  forbidden,
  notFound,
  secretKeyNeeded,
  unauthorized,
  validationFailed,
} from '../errors.ts';
import { handlers } from '../handlers/index.ts';
import { type SitePageId, siteHandlers } from '../handlers/site.ts';
import type { Deps, Handler, OperationId } from '../handlers/types.ts';
import { FEED_PATH, notAnUpgrade } from '../ws/upgrade.ts';
import type { AuthState } from './authentication.ts';
import type { OnceState } from './idempotency.ts';
import type { AdmissionState } from './metering.ts';
import { respond } from './responder.ts';
import { siteOperations } from './site.ts';

const methods = ['get', 'head', 'put', 'post', 'delete', 'options', 'patch'] as const;

export interface RouteState {
  /** The request's operation in openapi.yaml, or why there is none (answered 404 or 405 by `handle`). */
  route: Match;
}

export interface Router {
  /** Matches the request to its operation, once: later stages read `ctx.state.route`. */
  route: Middleware<RouteState>;
  /**
   * The operation's security (401) and the scope it needs of the key (403), before its input is read:
   * a request its key may not make is refused whatever its body.
   */
  authorize: Middleware<RouteState & Partial<AuthState>>;
  /** 404 or 405; else validation, the key's collections, the handler by operationId, and the one responder. */
  handle: Middleware<RouteState & Partial<AuthState> & OnceState & AdmissionState>;
  /** The methods openapi.yaml has at `path`, in capitals (HEAD with GET); none for a path it does not have. */
  methodsAt(path: string): string[];
}

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

/**
 * authenticate() has already checked the key; these let each operation's `security` be enforced as
 * declared, so an operation that needs a key can never run without an account.
 */
const securityHandlers: Record<string, (principal: Principal | undefined) => boolean> = {
  bearerKey: (principal) => principal !== undefined,
  headerKey: (principal) => principal !== undefined,
  queryKey: (principal) => principal !== undefined,
  // Optional beside a publishable key (an anonymous caller sends none); when sent, authenticate() verified it.
  endUserToken: (principal) => principal !== undefined,
};

export function createRouter(deps: Deps): Router {
  const router = new OpenAPIRouter({ definition: document as unknown as Document });
  // openapi.yaml's operations but the feed's, then the pages served beside them (site.ts).
  const table = new RouteTable([...router.getOperations().filter(routedHere), ...siteOperations()]);
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

  // parseRequestQuery drops the first `?` of the string it is given, meaning the one that starts a
  // query: given the query string without it, it would drop one inside a value (`a?b` → `ab`).
  const parseQuery = (querystring: string) => router.parseRequestQuery({ method: 'get', path: '/', headers: {}, query: `?${querystring}` });
  const noQuery = { parsed: {} as Record<string, unknown>, flat: true };
  const parsedQueries = new QueryMemo((querystring) => {
    const parsed = parseQuery(querystring);
    return { parsed, flat: Object.values(parsed).every((value) => typeof value === 'string') };
  });
  /**
   * The query as openapi-backend reads it, an object of this request's own (Ajv coerces its values in
   * place), holding each of the operation's query parameters in the order openapi.yaml lists them,
   * undefined where not sent. Every request of an operation then gives its validator an object of one
   * shape, whatever order its client wrote the parameters in and whichever it sent; objects of many
   * shapes would make each of the validator's reads a slow, generic one. The names the operation does
   * not know are refused before (validateRequest).
   */
  const queryFor = (querystring: string, names: ReadonlySet<string>): Record<string, unknown> => {
    const { parsed, flat } = querystring === '' ? noQuery : parsedQueries.get(querystring);
    const sent = flat ? parsed : parseQuery(querystring);
    const query: Record<string, unknown> = {};
    for (const name of names) query[name] = sent[name];
    return query;
  };

  return {
    route: (ctx, next) => {
      ctx.state.route = table.match(ctx.method, ctx.path);
      return next();
    },
    authorize: (ctx, next) => {
      const { operation } = ctx.state.route;
      if (!operation) return next(); // answered by handle
      const { security, scope, publishable } = bound.get(operation) as Bound;
      const { principal } = ctx.state;
      // As openapi-backend: no requirement, or one whose every scheme's handler says yes.
      if (security.length > 0 && !security.some((schemes) => schemes.every((scheme) => securityHandlers[scheme]?.(principal)))) {
        throw unauthorized();
      }
      if (publishable && !publishable.takes && principal?.kind === 'publishable') throw secretKeyNeeded(publishable.named);
      if (scope && !scope.granted.has((principal as Principal).scope)) {
        throw forbidden(`The key's scope is ${(principal as Principal).scope}; ${scope.needs}.`);
      }
      return next();
    },
    handle: async (ctx) => {
      const { operation, params, miss: status } = ctx.state.route;
      if (!operation) {
        // `/ws` is the feed's (asyncapi.yaml; openapi.yaml's openFeed describes its refusals), and the
        // server hands the feed every WebSocket upgrade (server.ts): a request for it that reaches the
        // HTTP API is no upgrade, and is told so.
        throw ctx.path === FEED_PATH ? notAnUpgrade(ctx.method, ctx.req) : miss(table, status, ctx.path);
      }
      const { handler, ofCollection, checks } = bound.get(operation) as Bound;
      const { principal } = ctx.state;
      const { querystring } = ctx;
      const query = queryFor(querystring, checks.queryNames);
      const { body, mediaType } = ctx.request;
      const validated = validateRequest(checks, { params, query, querystring, body, mediaType });
      // A collection the key is not limited to does not exist for it: the 404 of one that does not.
      const collections = principal?.collections;
      if (ofCollection && collections && !collections.has(validated.path.collection_name as string)) {
        throw collectionNotFound(validated.path.collection_name as string);
      }
      const { once, admission, claims, credentials } = ctx.state;
      const input = {
        path: validated.path,
        query: validated.query,
        body: validated.body,
        mediaType,
        principal,
        headers: ctx.req.headers,
        once,
        admission,
        claims,
        credentials,
        disconnected: () => disconnectedOf(ctx.res),
      };
      respond(ctx, await handler(input as never, deps));
    },
    methodsAt: (path) => methodsAt(table, path),
  };
}

/**
 * A signal aborted once the connection of `response` closes before its answer is written: the client
 * went away (Node emits `close` on the response then, and after an answer is written too).
 */
function disconnectedOf(response: ServerResponse): AbortSignal {
  const controller = new AbortController();
  if (response.destroyed || response.socket?.destroyed !== false) controller.abort();
  else
    response.once('close', () => {
      if (!response.writableFinished) controller.abort();
    });
  return controller.signal;
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

function methodsAt(table: RouteTable, path: string): string[] {
  return methods.filter((candidate) => table.match(candidate, path).operation).map((candidate) => candidate.toUpperCase());
}

/** 404 for a path openapi.yaml does not have, 405 (with `Allow`) for a method it does not have there. */
function miss(table: RouteTable, status: 404 | 405, path: string): ApiError {
  // As openapi-backend's parseRequest shows the path.
  const shown = path.startsWith('/') ? path : `/${path}`;
  if (status === 404) return notFound(`There is no route ${shown}.`);
  const allow = methodsAt(table, path).join(', ');
  return new ApiError('method_not_allowed', `${shown} answers ${allow}.`, { headers: { Allow: allow } });
}

export type Match =
  | { operation: Operation; params: Record<string, string>; miss?: undefined }
  | { operation?: undefined; params?: undefined; miss: 404 | 405 };

interface Route {
  /** Anchored, with each `{parameter}` capturing one non-empty path segment. */
  pattern: RegExp;
  /** The parameters' names, in the order `pattern` captures them. */
  names: string[];
  byMethod: Map<string, Operation>;
}

export class RouteTable {
  private readonly exact = new Map<string, Route>();
  private readonly routes: Route[];

  /** `operations` as OpenAPIRouter.getOperations() lists them: in document order. */
  constructor(readonly operations: readonly Operation[]) {
    const byPath = new Map<string, Route>();
    for (const operation of operations) {
      let route = byPath.get(operation.path);
      if (!route) {
        route = { ...templatePattern(operation.path), byMethod: new Map() };
        byPath.set(operation.path, route);
        this.exact.set(operation.path, route);
      }
      // The first operation of a path and method wins, as openapi-backend's find() does.
      if (!route.byMethod.has(operation.method)) route.byMethod.set(operation.method, operation);
    }
    const specificity = (path: string) => path.replace(/\{.*?\}/g, '').length;
    // Array.prototype.sort is stable: equally specific paths stay in document order.
    this.routes = [...byPath.entries()].sort(([a], [b]) => specificity(b) - specificity(a)).map(([, route]) => route);
  }

  /** The operation for `method` (any case) on `path` (a URL path, with or without its query). */
  match(method: string, path: string): Match {
    const normalized = normalizePath(path);
    const verb = method.trim().toLowerCase();
    const exact = this.exact.get(normalized);
    const operation = exact?.byMethod.get(verb);
    // A path may be exactly a template, `{parameter}` and all: its parameters are then read as sent.
    if (exact && operation) return { operation, params: paramsOf(exact, exact.pattern.exec(normalized) as RegExpExecArray) };
    let pathMatched = false;
    for (const route of this.routes) {
      const captured = route.pattern.exec(normalized);
      if (!captured) continue;
      pathMatched = true;
      const found = route.byMethod.get(verb);
      if (found) return { operation: found, params: paramsOf(route, captured) };
    }
    return { miss: pathMatched ? 405 : 404 };
  }
}

function paramsOf({ names }: Route, captured: RegExpExecArray): Record<string, string> {
  const params: Record<string, string> = {};
  for (let i = 0; i < names.length; i++) params[names[i]] = captured[i + 1];
  return params;
}

/** As OpenAPIRouter.normalizeRequest and normalizePath: trimmed, a leading slash, no query, no trailing slash. */
function normalizePath(raw: string): string {
  let path = raw.trim();
  if (!path.startsWith('/')) path = `/${path}`;
  path = path.split('?')[0].trim();
  while (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  return path;
}

function templatePattern(template: string): Pick<Route, 'pattern' | 'names'> {
  const escapeLiteral = (literal: string) => literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const names = [...template.matchAll(/\{([^}]+)\}/g)].map(([, name]) => name);
  const pattern = new RegExp(
    `^${template
      .replace(/\{[^}]+\}/g, '\0')
      .split('\0')
      .map(escapeLiteral)
      .join('([^/]+)')}$`,
  );
  return { pattern, names };
}

/** Query strings kept at most, and the longest kept: a longer one is read apart every time. */
const MAX_ENTRIES = 256;
const MAX_LENGTH = 512;

/**
 * What a query string says, worked out once per distinct string. Clients send the same few again and
 * again (a page's `limit=50&order_by=score&order=desc`), and reading one apart (openapi-backend's qs,
 * then URLSearchParams for its names and for its values as sent) is a large part of a page's work.
 * At most MAX_ENTRIES strings are kept, the oldest
 * dropped first. What it answers is shared by every request that sent the same string: read it, never
 * change it.
 */
class QueryMemo<T> {
  private readonly entries = new Map<string, T>();

  constructor(private readonly read: (querystring: string) => T) {}

  get(querystring: string): T {
    if (querystring.length > MAX_LENGTH) return this.read(querystring);
    let value = this.entries.get(querystring);
    if (value === undefined) {
      value = this.read(querystring);
      if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
      this.entries.set(querystring, value);
    }
    return value;
  }
}

export interface RequestParts {
  /** The path's parameters as the route table read them: still percent-encoded. */
  params: Record<string, string>;
  /** The query, parsed by openapi-backend's parseRequestQuery (qs) as it would. */
  query: Record<string, unknown>;
  /** The query string as sent, without its `?`: every name in it is checked, not only those the parsers keep. */
  querystring: string;
  /** The parsed JSON body, if one was read. */
  body: unknown;
  /** The body's media type (http/body.ts, jsonBody), if one was read. */
  mediaType?: string;
}

export interface Validated {
  path: Record<string, unknown>;
  query: Record<string, unknown>;
  body: unknown;
}

/** What an operation's requests are checked with, worked out once. */
export interface RequestChecks {
  validators: ValidateFunction[];
  /**
   * The validators of a body sent in another media type than `application/json` (a PATCH of rows'
   * `application/merge-patch+json`, …), by media type: its body's validator, then the parameters'.
   */
  byMediaType: ReadonlyMap<string, ValidateFunction[]>;
  /** The integer parameters, whose values must be written in decimal digits. */
  integers: { in: 'path' | 'query'; name: string }[];
  /** The names of the query's parameters. */
  queryNames: Set<string>;
  /** The query's names of its security schemes (`api_key`), read by authenticate(): known, and not validated here. */
  credentialNames: Set<string>;
  /**
   * The operation reads no query and refuses none (`x-rowbase-query: ignored` in openapi.yaml): GET /health,
   * which probes may call with a cache-busting `?t=…`.
   */
  ignoresQuery: boolean;
}

/**
 * Query parameters a request may carry at most. Both query parsers stop at 1,000 (qs's parameterLimit,
 * querystring's maxKeys) and drop the rest unseen: `limit=5` after 1,000 `&` would be ignored.
 */
const MAX_QUERY_PARTS = 1000;

export function requestChecks(
  operation: Operation,
  validators: ValidateFunction[],
  otherBodies: Record<string, ValidateFunction> = {},
): RequestChecks {
  // The last validator is the parameters' (openapi-backend's order); a body's, when there is one, comes first.
  const byMediaType = new Map(
    Object.entries(otherBodies).map(([mediaType, body]) => [mediaType, [body, validators[validators.length - 1]]]),
  );
  const integers: RequestChecks['integers'] = [];
  const queryNames = new Set<string>();
  for (const parameter of (operation.parameters ?? []) as OpenAPIV3.ParameterObject[]) {
    // Header parameters (If-Match, Idempotency-Key, …) are optional, and read by the operation's
    // handler or stage from the request's headers, each with the 400 of its own rules.
    if (parameter.in === 'header' && !parameter.required) continue;
    // openapi-backend reads these kinds apart from the rest; openapi.yaml has none, so neither do we.
    const type = (parameter.schema as OpenAPIV3.SchemaObject | undefined)?.type;
    const apart = parameter.in === 'query' && (parameter.content !== undefined || parameter.explode === false || type === 'array');
    if (parameter.in === 'header' || parameter.in === 'cookie' || apart) {
      throw new Error(`${operation.operationId}: parameter ${parameter.name} (in ${parameter.in}) is of a kind the router does not read`);
    }
    if (type === 'integer') integers.push({ in: parameter.in as 'path' | 'query', name: parameter.name });
    if (parameter.in === 'query') queryNames.add(parameter.name);
  }
  const ignoresQuery = (operation as { 'x-rowbase-query'?: unknown })['x-rowbase-query'] === 'ignored';
  if (ignoresQuery && queryNames.size > 0) throw new Error(`${operation.operationId}: ignores its query, yet has query parameters`);
  const schemes = (document.components.securitySchemes ?? {}) as Record<string, OpenAPIV3.SecuritySchemeObject>;
  const credentialNames = new Set(
    (operation.security ?? [])
      .flatMap(Object.keys)
      .map((name) => schemes[name])
      .flatMap((scheme) => (scheme?.type === 'apiKey' && scheme.in === 'query' ? [scheme.name] : [])),
  );
  return { validators, byMediaType, integers, queryNames, credentialNames, ignoresQuery };
}

const invalid = (errors: FieldError[]) => validationFailed('The request does not match the API description.', errors);

/** The request's input as validated, coerced and defaulted, or a 400 `validation_failed` saying what is wrong. */
export function validateRequest(checks: RequestChecks, request: RequestParts): Validated {
  const { integers, queryNames, credentialNames, ignoresQuery } = checks;
  // A plain JSON body is checked by the operation's own validators, found without a look-up.
  const validators =
    request.mediaType === undefined || request.mediaType === 'application/json'
      ? checks.validators
      : (checks.byMediaType.get(request.mediaType) ?? checks.validators);
  const unknown = ignoresQuery ? [] : unknownQueryNames(queryNames, credentialNames, request.querystring);
  if (unknown.length > 0) throw invalid(unknown);
  const path: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(request.params)) {
    try {
      path[name] = decodeURIComponent(value);
    } catch {
      throw invalid([{ in: 'path', name, message: 'is not valid percent-encoding' }]);
    }
  }
  // Read before Ajv coerces the values in place.
  const loose = looseIntegers(integers, { path, query: ignoresQuery ? {} : sentQuery(request.querystring) });
  // No body read: `requestBody` is undefined, which Ajv takes for missing, as when openapi-backend leaves it out.
  const parameters = { path, query: ignoresQuery ? {} : request.query, requestBody: request.body };
  const errors: ErrorObject[] = [];
  for (const validate of validators) if (!validate(parameters)) errors.push(...(validate.errors ?? []));
  if (errors.length > 0) throw invalid(fieldErrors(errors));
  if (loose.length > 0) throw invalid(loose);
  return { path, query: parameters.query, body: request.body };
}

/**
 * The query's names that are no parameter of the operation. Ajv sees only what qs kept, and qs drops
 * names such as `constructor`, `toString` or `__proto__[limit]` (it will not set what an object
 * inherits), and every parameter past its limit: here every name counts, as sent.
 */
function unknownQueryNames(known: Set<string>, credentials: Set<string>, querystring: string): FieldError[] {
  if (querystring === '') return []; // most requests: nothing to split or parse
  const { names } = readings.get(querystring);
  if (!names) return [{ in: 'query', name: '', message: `has more than ${MAX_QUERY_PARTS} parameters` }];
  const unknown: FieldError[] = [];
  for (const name of names)
    if (!known.has(name) && !credentials.has(name)) unknown.push({ in: 'query', name, message: 'is not a known parameter' });
  return unknown;
}

/**
 * The query's values exactly as sent, as Koa reads them (`ctx.query`): a name sent more than once
 * has all its values, in order. Shared by the requests of the same query string: read only.
 */
function sentQuery(querystring: string): Readonly<Record<string, string | string[]>> {
  return querystring === '' ? {} : readings.get(querystring).sent;
}

/** A query string's names, each once in the order sent (none past MAX_QUERY_PARTS parts), and its values as sent. */
const readings = new QueryMemo((querystring) => {
  const sent: Record<string, string | string[]> = Object.create(null);
  if (querystring.split('&').length > MAX_QUERY_PARTS) return { names: undefined, sent };
  const params = new URLSearchParams(querystring);
  const names = [...new Set(params.keys())];
  for (const name of names) {
    const values = params.getAll(name);
    sent[name] = values.length === 1 ? values[0] : values;
  }
  return { names, sent };
});

/**
 * Ajv's type coercion reads "1e3", " 1", "0x1" or "1.0" as integers. An integer parameter must be
 * written as one: decimal digits, no leading zero, an optional minus.
 */
function looseIntegers(integers: RequestChecks['integers'], sent: Record<'path' | 'query', Record<string, unknown>>): FieldError[] {
  return integers.flatMap((parameter) => {
    const value = sent[parameter.in][parameter.name];
    if (typeof value !== 'string' || /^-?(0|[1-9][0-9]*)$/.test(value)) return [];
    return [{ ...parameter, message: 'must be an integer in decimal digits' }];
  });
}

/**
 * Ajv reports against the object validated: `{ path, query, requestBody }`. Its first path segment
 * says where the problem is; the rest names the parameter or, in a body, is a JSON Pointer.
 */
function fieldErrors(errors: ErrorObject[]): FieldError[] {
  const seen = new Set<string>();
  return errors.flatMap((error) => {
    const [, section = '', ...rest] = error.instancePath.split('/');
    const place = ({ path: 'path', query: 'query', header: 'header', requestBody: 'body' } as const)[section] ?? 'body';
    let name = place === 'body' ? rest.map((part) => `/${part}`).join('') : rest.join('/');
    let message = error.message ?? 'is invalid';
    if (error.keyword === 'additionalProperties') {
      const extra = String(error.params.additionalProperty);
      name = place === 'body' ? `${name}/${extra}` : extra;
      message = place === 'body' ? 'is not a known field' : 'is not a known parameter';
    } else if (error.keyword === 'required') {
      const missing = String(error.params.missingProperty);
      name = missing === 'requestBody' ? '' : place === 'body' ? `${name}/${missing}` : missing;
      message = 'is required';
    } else if (error.keyword === 'not') {
      message = 'is not allowed: the service assigns ids';
    } else if (error.keyword === 'discriminator') {
      // A oneOf chosen by a member's value (openapi.yaml, JsonPatchOperation's `op`): that member is wrong.
      name = `${name}/${String(error.params.tag)}`;
      message = 'is none of the values this member may have';
    }
    const key = `${place} ${name} ${message}`;
    if (seen.has(key)) return [];
    seen.add(key);
    return [{ in: place, name, message }];
  });
}
