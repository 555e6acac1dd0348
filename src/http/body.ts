// The JSON body of a matched operation (jsonBody, the stage of app.ts after the scope): read where the
// method carries one, decompressed, checked for its media type, its size, its encoding and its shape,
// and parsed once its bytes have their share of the body budget (body-budget.ts).
import type { IncomingMessage } from 'node:http';
import { pipeline, type Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Context, Middleware } from 'koa';
import type { Operation } from 'openapi-backend';
import type { OpenAPIV3 } from 'openapi-types';
import getRawBody from 'raw-body';
import type { Config } from '../config.ts';
import { ApiError, validationFailed } from '../errors.ts';
import type { BodyBudget } from './body-budget.ts';

declare module 'koa' {
  interface Request {
    /** The JSON body, as jsonBody() read it. */
    body?: unknown;
    /** The body's media type, without parameters: `application/json`, or another its operation takes. */
    mediaType?: string;
  }
}

const methodsWithBody = new Set(['POST', 'PUT', 'PATCH']);

/** What a Content-Encoding is undone with; `identity` (or none) is read as it is. */
const decoders: Record<string, () => Transform> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/** JSON text as RFC 8259 §8.1 has it: UTF-8. A BOM is kept, and refused by JSON.parse, as it always was. */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The first character of an object or array: the only JSON texts a body may be. */
const objectOrArray = /^[ \t\n\r]*[[{]/;

/**
 * Reads a JSON body where the method carries one: anything but `application/json` (or another JSON
 * media type the operation's requestBody lists, as a PATCH of rows takes RFC 7396's and RFC 6902's) in UTF-8 is 415,
 * over `maxBodyBytes` 413 (once decompressed: gzip, deflate and br are read; any other encoding is 415),
 * and 400 for a body that is not what its Content-Encoding says, not UTF-8 (never read as U+FFFD), not
 * a JSON object or array, nested deeper than `maxJsonDepth`, or holding a number no double can hold
 * (`1e400` would be stored as null). Bodies of other methods are not read, nor bodies sent to a route
 * and method that openapi.yaml does not have (as the router's `route` stage found): routing answers
 * those with 404 or 405, whatever their body.
 */
export function jsonBody(config: Config, budget: BodyBudget): Middleware<{ route: { operation?: Operation } }> {
  return (ctx, next) => {
    const kind = bodyKind(ctx.req);
    const { operation } = ctx.state.route;
    if (kind === 'none' || !operation) return next();
    const read = readJsonBody(ctx, kind, operation, config, budget, next);
    // A PATCH's 415 names the media types it takes (RFC 5789 §2.2), whatever it refused.
    return operation.method === 'patch' ? read.catch((error) => Promise.reject(withAcceptPatch(error, operation))) : read;
  };
}

/** The body's media type (a 415 for one `operation` does not take) and its JSON, then the stages after. */
async function readJsonBody(
  ctx: Context,
  kind: 'json' | 'other',
  operation: Operation,
  config: Config,
  budget: BodyBudget,
  next: () => Promise<unknown>,
): Promise<unknown> {
  ctx.request.mediaType = kind === 'json' ? 'application/json' : checkMediaType(ctx, operation);
  return withJsonBody(ctx.req, config, budget, (body) => {
    ctx.request.body = body;
    return next();
  });
}

/** The 415 `error` with Accept-Patch naming the media types `operation` takes; any other error as it is. */
function withAcceptPatch(error: unknown, operation: Operation): unknown {
  if (!(error instanceof ApiError) || error.code !== 'unsupported_media_type') return error;
  const headers = { ...error.options.headers, 'Accept-Patch': mediaTypesOf(operation).join(', ') };
  return new ApiError(error.code, error.detail, { ...error.options, headers });
}

/**
 * Whether a request has a body to read, and of what type: `none` for a method that carries none, or
 * none sent; `json` for a Content-Type known good as it is; `other` for one to check (checkMediaType).
 */
function bodyKind({ method, headers }: Pick<IncomingMessage, 'method' | 'headers'>): 'none' | 'json' | 'other' {
  if (!methodsWithBody.has(method as string) || !hasBody(headers)) return 'none';
  return plainJson.has(headers['content-type'] as string) ? 'json' : 'other';
}

/**
 * Reads the request's body as JSON, once its media type is known good (else 400, 413, or 415 for an
 * encoding not read), and answers what `use` makes of it. The body is parsed once its bytes
 * (decompressed) have their share of `budget`, which it holds until `use` is done, or the parse fails.
 */
async function withJsonBody<T>(
  request: IncomingMessage,
  config: Config,
  budget: BodyBudget,
  use: (body: unknown) => T | Promise<T>,
): Promise<T> {
  const bytes = await readBody(request, config.maxBodyBytes);
  const waiting = budget.take(bytes.length);
  if (waiting) await waiting;
  try {
    return await use(parseJson(bytes, config.maxJsonDepth));
  } finally {
    budget.give(bytes.length);
  }
}

/** A body's bytes as JSON: 400 for bytes that are not UTF-8, not a JSON object or array, or not of a shape we store. */
function parseJson(bytes: Buffer, maxJsonDepth: number): unknown {
  const text = decode(bytes);
  // Every top-level field name is the client's (openapi.yaml, Row), `__proto__` too: JSON.parse makes it an
  // own property like any other, and nothing copies a body by assignment (spread and JSON.stringify
  // define and read own properties).
  let body: unknown;
  try {
    if (!objectOrArray.test(text)) throw new SyntaxError('not an object or array');
    body = JSON.parse(text);
  } catch {
    throw validationFailed('The request body is not valid JSON.', [{ in: 'body', name: '', message: 'is not valid JSON' }]);
  }
  const problem = shapeProblem(body, maxJsonDepth);
  if (problem) throw validationFailed(`The request body ${problem}.`, [{ in: 'body', name: '', message: problem }]);
  return body;
}

/**
 * The Content-Types nearly every client sends, known good as they are: only another one is parsed
 * (type-is, content-type), which is work on every write.
 */
const plainJson = new Set([
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=utf-8',
  'application/json; charset=UTF-8',
]);

/**
 * Any other Content-Type: 415 unless it is one of the media types `operation` takes, with parameters,
 * in UTF-8; else the one it is.
 */
function checkMediaType(ctx: Context, operation: Operation): string {
  const accepted = mediaTypesOf(operation);
  const found = ctx.is(accepted);
  if (!found) {
    const types = accepted.length === 1 ? accepted[0] : `one of ${accepted.join(', ')}`;
    throw new ApiError('unsupported_media_type', `The request body must be ${types}.`);
  }
  const charset = ctx.request.charset.toLowerCase();
  if (charset !== '' && charset !== 'utf-8' && charset !== 'utf8') {
    throw new ApiError('unsupported_media_type', `The request body must be JSON in UTF-8, not ${charset}.`);
  }
  return found;
}

/** The media types of each operation's body, in the order openapi.yaml lists them: worked out once. */
const mediaTypes = new WeakMap<Operation, string[]>();
function mediaTypesOf(operation: Operation): string[] {
  let types = mediaTypes.get(operation);
  if (!types) {
    const listed = Object.keys((operation.requestBody as OpenAPIV3.RequestBodyObject | undefined)?.content ?? {});
    types = listed.length > 0 ? listed : ['application/json'];
    mediaTypes.set(operation, types);
  }
  return types;
}

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;
}

/**
 * The body's bytes, decompressed, at most `limit` of them (else raw-body's 413). Errors with a status
 * are raw-body's, or readPlain's made as raw-body makes them (413, an aborted or short body); a
 * decoder's own errors, which have none, mean a body that is not what its Content-Encoding says.
 */
async function readBody(request: IncomingMessage, limit: number): Promise<Buffer> {
  const encoding = (request.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity') return readPlain(request, limit);
  const decoder = decoders[encoding];
  if (!decoder)
    throw new ApiError('unsupported_media_type', `The request body's Content-Encoding ${encoding} is not one of gzip, deflate, br.`);
  try {
    // pipeline, not pipe: a request that ends early ends the decoder's read too, with an error.
    return await getRawBody(
      pipeline(request, decoder(), () => {}),
      { limit },
    );
  } catch (error) {
    if ((error as { status?: unknown }).status !== undefined) throw error;
    throw validationFailed(`The request body is not valid ${encoding}.`, [{ in: 'body', name: '', message: `is not valid ${encoding}` }]);
  }
}

/**
 * A body sent as it is, read as raw-body reads it, with its errors, for a fraction of its work: a
 * Content-Length over `limit` is refused before a byte is read, a body that grows past it as soon as it
 * does, and the request is then paused, as raw-body halts it. Node's parser ends the body at its Content-Length, or the request
 * is aborted: so no body can end short of what it announced, and the listeners can stay on the request
 * (which Node drops once answered) rather than be taken off one by one.
 */
function readPlain(request: IncomingMessage, limit: number): Promise<Buffer> {
  if (Number(request.headers['content-length']) > limit) return Promise.reject(tooLarge());
  if (!request.readable) return Promise.reject(bodyError(500, 'stream is not readable', 'stream.not.readable'));
  // The listeners are not named (`const onData = …`): tsx would name each again on every request (src/db/engine/grouping.ts, GroupedWrites.hold()).
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    request.on('data', (chunk: Buffer) => {
      if (received > limit) return; // refused already
      received += chunk.length;
      if (received <= limit) return void chunks.push(chunk);
      request.pause();
      reject(tooLarge());
    });
    // Once the promise is settled, another settlement does nothing.
    request.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received)));
    request.on('aborted', () => reject(bodyError(400, 'request aborted', 'request.aborted')));
    request.on('error', reject);
  });
}

/** An error as raw-body makes it (http-errors: `status` and `type`), for toApiError (problems.ts) to answer as it does raw-body's. */
const bodyError = (status: number, message: string, type: string) => Object.assign(new Error(message), { status, type });
const tooLarge = () => bodyError(413, 'request entity too large', 'entity.too.large');

function decode(bytes: Buffer): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw validationFailed('The request body is not valid UTF-8.', [{ in: 'body', name: '', message: 'is not valid UTF-8' }]);
  }
}

/**
 * What is wrong with the parsed body's shape, if anything: nesting deeper than `max`, or a number
 * JSON.parse read as ±Infinity. Walks without recursion, so no body can exhaust the stack, and with
 * nothing allocated per value (no `[value, depth]` pair, no `Object.values()` array): a batch's
 * body is walked once per request, and its garbage is the collector's work.
 */
function shapeProblem(value: unknown, max: number): string | undefined {
  // The objects still to walk, and the depth of each.
  const walk: Walk = { objects: [], depths: [] };
  let problem = visit(walk, value, 1);
  while (!problem && walk.objects.length > 0) {
    const item = walk.objects.pop() as Record<string, unknown>;
    const depth = walk.depths.pop() as number;
    if (depth > max) return `nests deeper than ${max} levels`;
    // An array by its values: for…in would make a string of each index.
    if (Array.isArray(item)) for (const child of item) problem ||= visit(walk, child, depth + 1);
    else for (const key in item) problem ||= visit(walk, item[key], depth + 1);
  }
  return problem;
}

type Walk = { objects: object[]; depths: number[] };

/**
 * Puts an object or array at `depth` on the walk, or answers what is wrong with any other value. Made
 * once, not per body: the sources are compiled with esbuild's keepNames (docs/development.md, Rules of the hot paths).
 */
function visit(walk: Walk, value: unknown, depth: number): string | undefined {
  if (typeof value === 'object' && value !== null) {
    walk.objects.push(value);
    walk.depths.push(depth);
    return undefined;
  }
  return typeof value === 'number' && !Number.isFinite(value) ? 'holds a number past ±1.8e308, which no double holds' : undefined;
}
