// Checks a response against openapi.yaml, read and dereferenced here independently of the server:
// the status must be declared for the operation, or be one its `default` answers (the statuses of the
// problem codes it allows: no success nor redirection falls there), the media type must be one it
// declares, the body must match that media type's schema, and the headers it declares required must be
// present. A HEAD's `default` is GET's answer of that status without its body, held to what GET declares
// of it (headers, media type). The items of a changes stream are checked one by one (checkStreamItem).
// Unknown routes and wrong methods have no operation: their 404 and 405 must still be a Problem. A problem's
// `code` must be one the response declares, of its status, and its `type` must name it. The pages served
// beside the API (src/http/site.ts: the documents and /docs) are not in openapi.yaml: a 200 of one must be
// of a media type the page lists, anything else a Problem. A CORS preflight under /v1 is no operation of
// openapi.yaml either (its `info`, "CORS"): a 204 without a body that allows its origin.
import { readFile } from 'node:fs/promises';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { OpenAPIRouter } from 'openapi-backend';
import type { OpenAPIV3 } from 'openapi-types';
import { parse } from 'yaml';
import { sitePages } from '../../src/http/site.ts';

const source = parse(await readFile(new URL('../../openapi.yaml', import.meta.url), 'utf8'));
export const openapi = (await SwaggerParser.dereference(source)) as OpenAPIV3.Document;
const router = new OpenAPIRouter<OpenAPIV3.Document>({ definition: openapi });
const ajv = openApi30Ajv();
const compiled = new WeakMap<object, ValidateFunction>();

/**
 * An Ajv for the schemas of an OpenAPI 3.0 document (openapi.yaml): JSON Schema draft-07, which reads 3.0's
 * subset as 3.0 means it, with 3.0's `nullable` (Ajv knows it) and the formats; 3.0's other words
 * (`example`, `discriminator`, `x-…`) are not schema keywords, and are let through (`strict: false`).
 */
export function openApi30Ajv(): Ajv {
  const made = new Ajv({ strict: false, allErrors: true });
  addFormats.default(made);
  return made;
}

export interface SeenResponse {
  method: string;
  path: string;
  status: number;
  headers: Headers;
  text: string;
}

export class ContractError extends Error {}

/** Throws a ContractError naming every way `response` breaks openapi.yaml. */
export function checkResponse(response: SeenResponse): void {
  const { method, path, status, headers, text } = response;
  const where = `${method} ${path} → ${status}`;
  // HEAD answers as GET does, without the body: openapi.yaml's `head` operations declare no content.
  const head = method.toUpperCase() === 'HEAD';
  if (head && text !== '') throw new ContractError(`${where}: HEAD answered a body`);
  const operation = router.matchOperation({ method, path, headers: {} });
  const mediaType = (headers.get('content-type') ?? '').split(';')[0].trim();
  const page = pageAt(path);
  if (page && !operation) {
    if (![200, 400, 404, 405].includes(status)) throw new ContractError(`${where}: a page answers 200, 400, 404 or 405`);
    if (head) return;
    if (status !== 200)
      checkBody(where, openapi.components?.schemas?.Problem as object, mediaType, 'application/problem+json', text, status);
    else if (!page.mediaTypes.includes(mediaType)) throw new ContractError(`${where}: media type ${mediaType} is not one of ${page.path}`);
    return;
  }
  if (!operation && isPreflightAnswer(response)) return;
  if (!operation) {
    // Every /v1 route needs a key first (interface spec §5), known or not.
    const allowed = path === '/v1' || path.startsWith('/v1/') ? [401, 404, 405] : [404, 405];
    if (!allowed.includes(status)) throw new ContractError(`${where}: no operation in openapi.yaml answers this`);
    if (head) return;
    checkBody(where, openapi.components?.schemas?.Problem as object, mediaType, 'application/problem+json', text, status);
    return;
  }
  let declared = operation.responses[String(status)] as OpenAPIV3.ResponseObject | undefined;
  if (!declared && head) {
    // A HEAD's `default` is "the problem GET answers", without its body: held to GET's answer of the status.
    const get = router.matchOperation({ method: 'GET', path, headers: {} });
    if (!get) throw new ContractError(`${where}: no GET beside ${operation.operationId}`);
    if (status < 400) throw new ContractError(`${where}: status not declared for ${operation.operationId}`);
    declared = declaredResponse(where, get, status);
  } else declared ??= declaredResponse(where, operation, status);
  for (const [name, header] of Object.entries(declared.headers ?? {})) {
    const { required, schema } = header as OpenAPIV3.HeaderObject;
    const value = headers.get(name);
    if (value === null) {
      if (required) throw new ContractError(`${where}: required header ${name} is missing`);
      continue;
    }
    checkHeader(where, name, schema as OpenAPIV3.SchemaObject | undefined, value);
  }
  if (head) {
    // The Content-Type GET would answer, if any: one of the media types GET's answer declares.
    if (mediaType !== '' && declared.content && !declared.content[mediaType])
      throw new ContractError(`${where}: media type ${JSON.stringify(mediaType)} is not declared`);
    return;
  }
  if (!declared.content) {
    if (text !== '') throw new ContractError(`${where}: declares no body, got ${JSON.stringify(text.slice(0, 200))}`);
    return;
  }
  const media = declared.content[mediaType];
  if (!media) throw new ContractError(`${where}: media type ${JSON.stringify(mediaType)} is not declared`);
  checkBody(where, media.schema as object, mediaType, mediaType, text, status);
}

/**
 * The response `operation` declares for `status`: its own, or its `default`, which answers only the
 * statuses of the problem codes its schema allows (openapi.yaml's `Error`: 405, 408, 417, 431, 500,
 * 503), never an undeclared success or redirection.
 */
function declaredResponse(where: string, operation: OpenAPIV3.OperationObject, status: number): OpenAPIV3.ResponseObject {
  const own = operation.responses[String(status)] as OpenAPIV3.ResponseObject | undefined;
  if (own) return own;
  const fallback = operation.responses.default as OpenAPIV3.ResponseObject | undefined;
  if (!fallback || !defaultStatuses(fallback).has(status))
    throw new ContractError(`${where}: status not declared for ${operation.operationId}, nor one its default answers`);
  return fallback;
}

/** The statuses a `default` response answers: those of the codes its problem's `code` allows (statusOfCode). */
function defaultStatuses(fallback: OpenAPIV3.ResponseObject): Set<number> {
  const schema = fallback.content?.['application/problem+json']?.schema as OpenAPIV3.SchemaObject | undefined;
  const codes = (schema?.properties?.code as OpenAPIV3.SchemaObject | undefined)?.enum ?? [];
  return new Set(codes.map((code) => statusOfCode[code as string]));
}

/** An answer to a CORS preflight, as openapi.yaml's `info` describes it: OPTIONS under /v1, 204, no body, its origin allowed. */
function isPreflightAnswer({ method, path, status, headers, text }: SeenResponse): boolean {
  if (method.toUpperCase() !== 'OPTIONS' || !(path === '/v1' || path.startsWith('/v1/')) || status !== 204) return false;
  const where = `${method} ${path} → ${status}`;
  if (text !== '') throw new ContractError(`${where}: a preflight's answer has no body`);
  for (const name of ['access-control-allow-origin', 'access-control-allow-methods', 'access-control-allow-headers', 'vary']) {
    if (headers.get(name) === null) throw new ContractError(`${where}: a preflight's answer lacks ${name}`);
  }
  return true;
}

/** The page at `path` (trailing slashes ignored, as the router ignores them), if any. */
function pageAt(path: string) {
  const trimmed = path.length > 1 ? path.replace(/\/+$/, '') : path;
  return sitePages.find((page) => new RegExp(`^${page.path.replace(/\{[^}]+\}/g, '[^/]+').replaceAll('.', '\\.')}$`).test(trimmed));
}

function checkHeader(where: string, name: string, schema: OpenAPIV3.SchemaObject | undefined, value: string) {
  if (!schema) return;
  const typed = schema.type === 'integer' || schema.type === 'number' ? Number(value) : value;
  if (schema.type === 'integer' && !/^-?\d+$/.test(value)) throw new ContractError(`${where}: header ${name} is not an integer: ${value}`);
  const validate = compiledOf(schema);
  if (!validate(typed)) throw new ContractError(`${where}: header ${name}=${value} does not match: ${ajv.errorsText(validate.errors)}`);
}

function checkBody(where: string, schema: object, mediaType: string, expectedType: string, text: string, status: number) {
  if (mediaType !== expectedType) throw new ContractError(`${where}: media type ${mediaType}, expected ${expectedType}`);
  let body: unknown = text;
  if (mediaType.endsWith('json')) {
    try {
      body = JSON.parse(text);
    } catch {
      throw new ContractError(`${where}: body is not JSON: ${JSON.stringify(text.slice(0, 200))}`);
    }
  }
  const validate = compiledOf(schema);
  if (!validate(body)) {
    throw new ContractError(`${where}: body does not match its schema: ${ajv.errorsText(validate.errors)}\n${text.slice(0, 500)}`);
  }
  if (mediaType === 'application/problem+json') checkProblemCode(where, body as { status: number; code: string; type: string }, status);
}

/** The HTTP status of each problem `code` (contract.md, "Errors"; openapi.yaml's ProblemCode). */
const statusOfCode: Record<string, number> = {
  validation_failed: 400,
  unauthorized: 401,
  invalid_token: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  idempotency_key_in_use: 409,
  idempotency_key_reused: 422,
  gone: 410,
  precondition_failed: 412,
  payload_too_large: 413,
  unsupported_media_type: 415,
  not_acceptable: 406,
  expectation_failed: 417,
  headers_too_large: 431,
  quota_exceeded: 429,
  rate_limited: 429,
  too_many_connections: 429,
  internal: 500,
  unavailable: 503,
  query_timeout: 503,
  row_invalid: 422,
  schema_conflict: 409,
  unique_violation: 409,
  unique_conflict: 409,
  patch_conflict: 409,
  origin_not_allowed: 403,
};

/** A problem's status is the HTTP status, its code is the one of that status, and its type names its code. */
function checkProblemCode(where: string, { status: sent, code, type }: { status: number; code: string; type: string }, status: number) {
  if (sent !== status) throw new ContractError(`${where}: problem status ${sent} differs from the HTTP status`);
  if (statusOfCode[code] !== status) throw new ContractError(`${where}: problem code ${code} is not one of status ${status}`);
  if (type !== `urn:rowbase:problem:${code}`) throw new ContractError(`${where}: problem type ${type} does not name its code ${code}`);
}

/** Throws a ContractError unless `text`, sent with `contentType` and `status`, is openapi.yaml's Problem. */
export function checkProblem(where: string, status: number, contentType: string, text: string): void {
  const mediaType = contentType.split(';')[0].trim();
  checkBody(where, openapi.components?.schemas?.Problem as object, mediaType, 'application/problem+json', text, status);
}

/** An item of a changes stream: a line of JSON Lines, or a server-sent event as an EventSource reads its fields. */
export type StreamItem = string | { id?: string; event?: string; data: string; retry?: number };

/**
 * Throws a ContractError unless `item`, of the stream GET `path` answered with 200 in `mediaType`, is the
 * item openapi.yaml gives that stream (`x-rowbase-item-schema`, 3.2's `itemSchema`): a line, parsed, its
 * schema; an event, its schema, and its `data`, parsed, the `contentSchema` of its `data` (which JSON
 * Schema only notes, and Ajv does not apply).
 */
export function checkStreamItem(path: string, mediaType: string, item: StreamItem): void {
  const where = `GET ${path} → 200 ${mediaType}`;
  const operation = router.matchOperation({ method: 'GET', path, headers: {} });
  const media = (operation?.responses['200'] as OpenAPIV3.ResponseObject | undefined)?.content?.[mediaType];
  const schema = (media as { 'x-rowbase-item-schema'?: OpenAPIV3.SchemaObject } | undefined)?.['x-rowbase-item-schema'];
  if (!schema) throw new ContractError(`${where}: no stream of items is declared`);
  const parsed = (what: string, text: string): unknown => {
    try {
      return JSON.parse(text);
    } catch {
      throw new ContractError(`${where}: ${what} is not JSON: ${JSON.stringify(text.slice(0, 200))}`);
    }
  };
  const validated = (what: string, against: object, value: unknown) => {
    const validate = compiledOf(against);
    if (!validate(value)) throw new ContractError(`${where}: ${what} does not match its schema: ${ajv.errorsText(validate.errors)}`);
  };
  if (typeof item === 'string') {
    validated('a line', schema, parsed('a line', item));
    return;
  }
  validated('an event', schema, item);
  const data = (schema.properties?.data as { contentSchema?: object } | undefined)?.contentSchema;
  if (data) validated("an event's data", data, parsed("an event's data", item.data));
}

function compiledOf(schema: object): ValidateFunction {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  return validate;
}

/** Checks what fetch answered to `request` against openapi.yaml, as checkResponse does; the body is read from a clone. */
export async function checkFetched(request: Request, response: Response): Promise<void> {
  const text = await response.clone().text();
  checkResponse({ method: request.method, path: new URL(request.url).pathname, status: response.status, headers: response.headers, text });
}
