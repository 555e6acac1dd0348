// Checks a response against openapi.yaml, read and dereferenced here independently of the server:
// the status must be declared for the operation (or fall under `default`), the media type must be one
// it declares, the body must match that media type's schema, and declared headers must be present.
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
  const declared = (operation.responses[String(status)] ?? operation.responses.default) as OpenAPIV3.ResponseObject | undefined;
  if (!declared) throw new ContractError(`${where}: status not declared for ${operation.operationId}`);
  for (const [name, header] of Object.entries(declared.headers ?? {})) {
    const { required, schema } = header as OpenAPIV3.HeaderObject;
    const value = headers.get(name);
    if (value === null) {
      if (required) throw new ContractError(`${where}: required header ${name} is missing`);
      continue;
    }
    checkHeader(where, name, schema as OpenAPIV3.SchemaObject | undefined, value);
  }
  if (head) return;
  if (!declared.content) {
    if (text !== '') throw new ContractError(`${where}: declares no body, got ${JSON.stringify(text.slice(0, 200))}`);
    return;
  }
  const media = declared.content[mediaType];
  if (!media) throw new ContractError(`${where}: media type ${JSON.stringify(mediaType)} is not declared`);
  checkBody(where, media.schema as object, mediaType, mediaType, text, status);
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
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
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
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
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

/** Checks what fetch answered to `request` against openapi.yaml, as checkResponse does; the body is read from a clone. */
export async function checkFetched(request: Request, response: Response): Promise<void> {
  const text = await response.clone().text();
  checkResponse({ method: request.method, path: new URL(request.url).pathname, status: response.status, headers: response.headers, text });
}
