// A request's input checked against its operation in openapi.yaml (handle.ts): the query's names, the
// path's percent-encoding, integers written as such, and the generated validators (400 validation_failed
// naming each place). What each operation's requests are checked with is worked out once at start.
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { Operation } from 'openapi-backend';
import type { OpenAPIV3 } from 'openapi-types';
import document from '../../generated/openapi-server.json' with { type: 'json' };
import { type FieldError, validationFailed } from '../errors.ts';

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
export class QueryMemo<T> {
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
