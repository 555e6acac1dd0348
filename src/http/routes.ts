// openapi-backend routes each request to its handler by operationId, after checking it against the
// request validators `npm run generate` compiled from openapi.yaml.
import type { ErrorObject } from 'ajv';
import type { Context as KoaContext, Middleware } from 'koa';
import { type Context, type Document, OpenAPIBackend, type Request } from 'openapi-backend';
import type { OpenAPIV3 } from 'openapi-types';
import document from '../../generated/openapi.json' with { type: 'json' };
import { requestValidators } from '../../generated/validators.js';
import { ApiError, type FieldError, notFound, unauthorized, validationFailed } from '../errors.ts';
import { handlers } from '../handlers/index.ts';
import type { Deps, Handler, OperationId } from '../handlers/types.ts';
import { respond } from './respond.ts';
import { type Match, RouteTable } from './route-table.ts';
import { requestAjvOptions } from './validation-options.ts';

const methods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch'] as const;

export interface RouteState {
  /** The request's operation in openapi.yaml, or why there is none (answered 404 or 405 by `handle`). */
  route: Match;
}

export interface Router {
  /** Matches the request to its operation, once: later stages read `ctx.state.route`. */
  route: Middleware<RouteState>;
  /** openapi-backend: security, validation, the handler by operationId, then the one responder. */
  handle: Middleware<RouteState>;
}

export async function createRouter(deps: Deps): Promise<Router> {
  const api = new OpenAPIBackend({
    // Already validated and dereferenced by `npm run generate`: quick mode skips doing it again.
    definition: document as unknown as Document,
    quick: true,
    strict: true,
    coerceTypes: true,
    ajvOpts: requestAjvOptions,
  });
  await api.init();
  // The compiled validators stand in for the ones quick mode would compile on first use.
  Object.assign(api.validator.requestValidators, requestValidators);
  // The route table is compiled once; openapi-backend's router would rebuild it on every request. A
  // request that `route` has matched is not matched again: `handle` hands the match over.
  const table = new RouteTable(api.router.getOperations());
  const matched = new WeakMap<Request, Match>();
  api.router.getOperations = () => [...table.operations];
  api.router.matchOperation = ((request: Request, strict?: boolean) => {
    const { operation, miss } = matched.get(request) ?? table.match(request.method, request.path);
    if (operation || !strict) return operation;
    // handleRequest tells 404 from 405 by these messages' first three characters.
    throw new Error(
      miss === 405 ? '405-methodNotAllowed: this method is not registered for the route' : '404-notFound: no route matches request',
    );
  }) as typeof api.router.matchOperation;

  for (const [operationId, handler] of Object.entries(handlers)) {
    api.register(operationId, (c: Context, ctx: KoaContext) => {
      // openapi-backend re-parses the path after validating, undoing the coercion: the validated,
      // coerced and defaulted values are the ones in `validation.coerced`.
      const loose = looseIntegers(c, ctx.query);
      if (loose.length > 0) throw validationFailed('The request does not match the API description.', loose);
      const { params, query } = c.validation.coerced ?? {};
      const input = { path: params, query, body: c.request.requestBody, principal: ctx.state.principal };
      return (handler as Handler<OperationId>)(input as never, deps);
    });
  }
  // authenticate() has already checked the key; these let openapi-backend enforce each operation's
  // `security` as declared, so an operation that needs a key can never run without an account.
  const hasPrincipal = (_c: Context, ctx: KoaContext) => ctx.state.principal !== undefined;
  api.registerSecurityHandler('bearerKey', hasPrincipal);
  api.registerSecurityHandler('headerKey', hasPrincipal);
  api.register({
    unauthorizedHandler: () => {
      throw unauthorized();
    },
    validationFail: (c: Context) => {
      throw validationFailed('The request does not match the API description.', fieldErrors(c.validation.errors ?? []));
    },
    notFound: (c: Context) => {
      throw notFound(`There is no route ${c.request.path}.`);
    },
    methodNotAllowed: (c: Context) => {
      const allowed = methods.filter((method) => api.router.matchOperation({ ...c.request, method }));
      const allow = allowed.map((method) => method.toUpperCase()).join(', ');
      throw new ApiError('method_not_allowed', `${c.request.path} answers ${allow}.`, { headers: { Allow: allow } });
    },
  });

  return {
    route: (ctx, next) => {
      ctx.state.route = table.match(ctx.method, ctx.path);
      return next();
    },
    handle: async (ctx) => {
      const request: Request = {
        method: ctx.method,
        path: ctx.path,
        query: ctx.querystring,
        headers: ctx.headers as Record<string, string>,
        body: ctx.request.body,
      };
      matched.set(request, ctx.state.route);
      respond(ctx, await api.handleRequest(request, ctx));
    },
  };
}

/**
 * Ajv's type coercion reads "1e3", " 1", "0x1" or "1.0" as integers. An integer parameter must be
 * written as one: decimal digits, no leading zero, an optional minus.
 */
function looseIntegers(c: Context, query: Record<string, unknown>): FieldError[] {
  // openapi-backend hands over path parameters as sent but query parameters already coerced.
  const raw: Record<string, Record<string, unknown>> = { path: c.request.params, query };
  return (c.operation.parameters ?? []).flatMap((parameter) => {
    const { in: place, name, schema } = parameter as OpenAPIV3.ParameterObject;
    const value = raw[place]?.[name];
    if ((schema as OpenAPIV3.SchemaObject)?.type !== 'integer' || typeof value !== 'string' || /^-?(0|[1-9][0-9]*)$/.test(value)) return [];
    return [{ in: place as FieldError['in'], name, message: 'must be an integer in decimal digits' }];
  });
}

/**
 * Ajv reports against the object openapi-backend validates: `{ path, query, header, requestBody }`.
 * Its first path segment says where the problem is; the rest names the parameter or, in a body, is a
 * JSON Pointer.
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
    }
    const key = `${place} ${name} ${message}`;
    if (seen.has(key)) return [];
    seen.add(key);
    return [{ in: place, name, message }];
  });
}
