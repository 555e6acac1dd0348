// Each request goes to its operation in openapi.yaml and to the handler bound by its operationId, in
// the order of openapi-backend's handleRequest: match (miss: 404 or 405), the operation's `security`
// (401), validation (400), the handler, the one responder. The operations are openapi-backend's reading
// of the document and the validators those `npm run generate` compiled from it; what handleRequest
// works out on every request (it parses each one three times, and its router rebuilds the routes on
// every match) is worked out here once, at start.
//
// The routes of openapi.yaml are compiled once (RouteTable). openapi-backend's own router rebuilds its
// list of operations (with lodash) and a regular expression per path template on every match; the table
// answers the same way from what it built at start. It matches as OpenAPIRouter.matchOperation does
// with our options (apiRoot `/`, trailing slashes ignored): an exact path with the method first, then
// every path template that matches, the most specific first (the longest once its parameters are
// removed, ties in document order); a path that none matches is a 404, a path without the method a 405.
// A match also reads the path's parameters, as openapi-backend's parseRequest would (with bath-es5),
// but still percent-encoded: decoding can fail, and that is the request's fault, said by whoever validates.
import type { Middleware } from 'koa';
import { type Document, OpenAPIRouter, type Operation } from 'openapi-backend';
import document from '../../generated/openapi.json' with { type: 'json' };
import { requestValidators } from '../../generated/validators.js';
import type { Principal } from '../db/keys.ts';
import { ApiError, notFound, unauthorized } from '../errors.ts';
import { handlers } from '../handlers/index.ts';
import type { Deps, Handler, OperationId } from '../handlers/types.ts';
import { respond } from './respond.ts';
import type { AuthState } from './stages.ts';
import { QueryMemo, type RequestChecks, requestChecks, validateRequest } from './validate.ts';

const methods = ['get', 'head', 'put', 'post', 'delete', 'options', 'patch'] as const;

export interface RouteState {
  /** The request's operation in openapi.yaml, or why there is none (answered 404 or 405 by `handle`). */
  route: Match;
}

export interface Router {
  /** Matches the request to its operation, once: later stages read `ctx.state.route`. */
  route: Middleware<RouteState>;
  /** 404 or 405; else the operation's security, validation, its handler by operationId, and the one responder. */
  handle: Middleware<RouteState & Partial<AuthState>>;
}

/** An operation with what its requests need, worked out at start. */
interface Bound {
  handler: Handler<OperationId>;
  /** The names of the schemes of each of its `security` requirements; one requirement met is enough. */
  security: string[][];
  checks: RequestChecks;
}

/**
 * authenticate() has already checked the key; these let each operation's `security` be enforced as
 * declared, so an operation that needs a key can never run without an account.
 */
const securityHandlers: Record<string, (principal: Principal | undefined) => boolean> = {
  bearerKey: (principal) => principal !== undefined,
  headerKey: (principal) => principal !== undefined,
};

export function createRouter(deps: Deps): Router {
  const router = new OpenAPIRouter({ definition: document as unknown as Document });
  const table = new RouteTable(router.getOperations());
  const bound = new Map<Operation, Bound>(table.operations.map((operation) => [operation, bind(operation)]));

  // parseRequestQuery drops the first `?` of the string it is given, meaning the one that starts a
  // query: given the query string without it, it would drop one inside a value (`a?b` → `ab`).
  const parseQuery = (querystring: string) => router.parseRequestQuery({ method: 'get', path: '/', headers: {}, query: `?${querystring}` });
  const parsedQueries = new QueryMemo((querystring) => {
    const parsed = parseQuery(querystring);
    return { parsed, flat: Object.values(parsed).every((value) => typeof value === 'string') };
  });
  /** The query as openapi-backend reads it, an object of this request's own: Ajv coerces its values in place. */
  const queryFor = (querystring: string): Record<string, unknown> => {
    const { parsed, flat } = parsedQueries.get(querystring);
    return flat ? { ...parsed } : parseQuery(querystring);
  };

  return {
    route: (ctx, next) => {
      // HEAD is GET without the body (RFC 9110 §9.3.2): the responder leaves the body out of the answer.
      ctx.state.route = table.match(ctx.method === 'HEAD' ? 'GET' : ctx.method, ctx.path);
      return next();
    },
    handle: async (ctx) => {
      const { operation, params, miss: status } = ctx.state.route;
      if (!operation) throw miss(table, status, ctx.path);
      const { handler, security, checks } = bound.get(operation) as Bound;
      const { principal } = ctx.state;
      // As openapi-backend: no requirement, or one whose every scheme's handler says yes.
      if (security.length > 0 && !security.some((schemes) => schemes.every((scheme) => securityHandlers[scheme]?.(principal)))) {
        throw unauthorized();
      }
      const { querystring } = ctx;
      // Most requests have no query, and nothing to parse.
      const query = querystring === '' ? {} : queryFor(querystring);
      const validated = validateRequest(checks, { params, query, querystring, body: ctx.request.body });
      const input = { path: validated.path, query: validated.query, body: validated.body, principal };
      respond(ctx, await handler(input as never, deps));
    },
  };
}

function bind(operation: Operation): Bound {
  const operationId = operation.operationId as OperationId;
  const handler = handlers[operationId] as Handler<OperationId> | undefined;
  const validators = (requestValidators as Record<string, RequestChecks['validators']>)[operationId];
  if (!handler || !validators) throw new Error(`operation ${operationId} has no ${handler ? 'validators: npm run generate' : 'handler'}`);
  return { handler, security: (operation.security ?? []).map(Object.keys), checks: requestChecks(operation, validators) };
}

/** 404 for a path openapi.yaml does not have, 405 (with `Allow`) for a method it does not have there. */
function miss(table: RouteTable, status: 404 | 405, path: string): ApiError {
  // As openapi-backend's parseRequest shows the path.
  const shown = path.startsWith('/') ? path : `/${path}`;
  if (status === 404) return notFound(`There is no route ${shown}.`);
  const allow = methods
    .filter((candidate) => table.match(candidate === 'head' ? 'get' : candidate, path).operation)
    .map((candidate) => candidate.toUpperCase())
    .join(', ');
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
