// The route table: which operation of openapi.yaml (or page beside it, site.ts) a method and path name,
// matched once per request (route.ts), with the 404 or 405 of a miss. What it matches: docs/development.md,
// "The router".
import type { Operation } from 'openapi-backend';
import { ApiError, notFound } from '../errors.ts';

const methods = ['get', 'head', 'put', 'post', 'delete', 'options', 'patch'] as const;

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

/** The methods the table has at `path`, in capitals (HEAD with GET); none for a path it does not have. */
export function methodsAt(table: RouteTable, path: string): string[] {
  return methods.filter((candidate) => table.match(candidate, path).operation).map((candidate) => candidate.toUpperCase());
}

/** 404 for a path openapi.yaml does not have, 405 (with `Allow`) for a method it does not have there. */
export function miss(table: RouteTable, status: 404 | 405, path: string): ApiError {
  // As openapi-backend's parseRequest shows the path.
  const shown = path.startsWith('/') ? path : `/${path}`;
  if (status === 404) return notFound(`There is no route ${shown}.`);
  const allow = methodsAt(table, path).join(', ');
  return new ApiError('method_not_allowed', `${shown} answers ${allow}.`, { headers: { Allow: allow } });
}
