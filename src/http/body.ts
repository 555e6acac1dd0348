import type { Middleware } from 'koa';
import bodyParser from 'koa-bodyparser';
import type { Config } from '../config.ts';
import { ApiError, validationFailed } from '../errors.ts';
import type { RouteState } from './routes.ts';

const methodsWithBody = new Set(['POST', 'PUT', 'PATCH']);

/**
 * Reads a JSON body where the method carries one: anything but `application/json` is 415, over
 * `maxBodyBytes` 413 (once decompressed: gzip, deflate and br are read), malformed, not what its
 * Content-Encoding says, or nested deeper than `maxJsonDepth` 400; an unknown Content-Encoding is 415. Bodies of other methods are
 * not read, nor bodies sent to a route and method that openapi.yaml does not have (as the router's
 * `route` stage found): routing answers those with 404 or 405, whatever their body.
 */
export function jsonBody(config: Config): Middleware<RouteState> {
  // Every top-level field name is the client's (contract.md), `__proto__` too: JSON.parse makes it an
  // own property like any other, and nothing copies a body by assignment (spread and JSON.stringify
  // define and read own properties). co-body's default refuses it as prototype poisoning.
  const proto = { onProtoPoisoning: 'ignore' }; // co-body's option, which koa-bodyparser passes on
  const parse = bodyParser({ enableTypes: ['json'], jsonLimit: `${config.maxBodyBytes}b`, strict: true, ...proto });
  return async (ctx, next) => {
    if (!methodsWithBody.has(ctx.method) || !hasBody(ctx.req.headers)) return next();
    if (!ctx.state.route.operation) return next();
    if (!ctx.is('application/json')) {
      throw new ApiError('unsupported_media_type', 'The request body must be application/json.');
    }
    try {
      await parse(ctx, async () => {});
    } catch (error) {
      if ((error as { status?: number }).status === 400) {
        throw validationFailed('The request body is not valid JSON.', [{ in: 'body', name: '', message: 'is not valid JSON' }]);
      }
      // An error with no status while reading a compressed body is zlib's (gzip, deflate, br): the
      // body is not what its Content-Encoding says.
      const encoding = ctx.get('content-encoding');
      if (encoding && (error as { status?: unknown }).status === undefined) {
        throw validationFailed(`The request body is not valid ${encoding}.`, [
          { in: 'body', name: '', message: `is not valid ${encoding}` },
        ]);
      }
      throw error;
    }
    if (nestedDeeperThan(ctx.request.body, config.maxJsonDepth)) {
      throw validationFailed(`The request body nests deeper than ${config.maxJsonDepth} levels.`, [
        { in: 'body', name: '', message: `nests deeper than ${config.maxJsonDepth} levels` },
      ]);
    }
    return next();
  };
}

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;
}

/** Walks without recursion, so no body can exhaust the stack. */
function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop() as [unknown, number];
    if (item === null || typeof item !== 'object') continue;
    if (depth > max) return true;
    for (const child of Object.values(item)) stack.push([child, depth + 1]);
  }
  return false;
}
