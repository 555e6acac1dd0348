// Each request goes to its operation in openapi.yaml and to the handler bound by its operationId, in
// the order of openapi-backend's handleRequest: match (miss: 404 or 405), the operation's `security`
// (401), validation (400), the handler, the one responder. The operations are openapi-backend's reading
// of the document and the validators those `npm run generate` compiled from it; what handleRequest
// works out on every request (it parses each one three times, and its router rebuilds the routes on
// every match) is worked out here once, at start.
import type { Middleware } from 'koa';
import { type Document, OpenAPIRouter, type Operation } from 'openapi-backend';
import document from '../../generated/openapi.json' with { type: 'json' };
import { requestValidators } from '../../generated/validators.js';
import type { Principal } from '../db/keys.ts';
import { ApiError, notFound, unauthorized } from '../errors.ts';
import { handlers } from '../handlers/index.ts';
import type { Deps, Handler, OperationId } from '../handlers/types.ts';
import type { AuthState } from './auth.ts';
import { QueryMemo } from './query-memo.ts';
import { respond } from './respond.ts';
import { type Match, RouteTable } from './route-table.ts';
import { type RequestChecks, requestChecks, validateRequest } from './validate.ts';

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
