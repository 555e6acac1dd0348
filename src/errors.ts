// Every error the API answers with: one class, one code each, and one way to write it as RFC 9457
// problem details (https://www.rfc-editor.org/rfc/rfc9457). Last, the errors of the store's operations
// that only the CLI meets, each reported in one line.
import type { components } from '../generated/openapi.ts';

export type Problem = components['schemas']['Problem'];
export type ProblemCode = components['schemas']['ProblemCode'];
export type FieldError = components['schemas']['ValidationError'];
export type RowError = components['schemas']['RowError'];
export type SchemaViolation = components['schemas']['SchemaViolation'];
type Duplicate = components['schemas']['Duplicate'];

const kinds: Record<ProblemCode, { status: number; title: string }> = {
  validation_failed: { status: 400, title: 'Validation failed' },
  unauthorized: { status: 401, title: 'Unauthorized' },
  forbidden: { status: 403, title: 'Forbidden' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  conflict: { status: 409, title: 'Conflict' },
  idempotency_key_in_use: { status: 409, title: 'Idempotency key in use' },
  request_timeout: { status: 408, title: 'Request timeout' },
  gone: { status: 410, title: 'Gone' },
  precondition_failed: { status: 412, title: 'Precondition failed' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  not_acceptable: { status: 406, title: 'Not acceptable' },
  idempotency_key_reused: { status: 422, title: 'Idempotency key reused' },
  expectation_failed: { status: 417, title: 'Expectation failed' },
  headers_too_large: { status: 431, title: 'Request header fields too large' },
  quota_exceeded: { status: 429, title: 'Quota exceeded' },
  rate_limited: { status: 429, title: 'Rate limited' },
  too_many_connections: { status: 429, title: 'Too many connections' },
  internal: { status: 500, title: 'Internal error' },
  unavailable: { status: 503, title: 'Service unavailable' },
  query_timeout: { status: 503, title: 'Query timeout' },
  row_invalid: { status: 422, title: 'Row invalid' },
  schema_conflict: { status: 409, title: 'Schema conflict' },
  unique_violation: { status: 409, title: 'Unique violation' },
  unique_conflict: { status: 409, title: 'Unique conflict' },
  patch_conflict: { status: 409, title: 'Patch conflict' },
  invalid_token: { status: 401, title: 'Invalid token' },
  origin_not_allowed: { status: 403, title: 'Origin not allowed' },
};

/** What a problem may carry besides its detail (openapi.yaml, Problem). */
export interface ProblemMembers {
  /** `validation_failed`'s places in the request, or `row_invalid`'s places in the rows. */
  errors?: (FieldError | RowError)[];
  /** `schema_conflict`'s stored rows that break the schema, and how many there are in all. */
  violations?: SchemaViolation[];
  total?: number;
  /** `unique_violation`'s index fields and the row that holds their values. */
  fields?: string[];
  existing_id?: number;
  /** `unique_conflict`'s rows that share values. */
  duplicates?: Duplicate[];
  /** The index of a batch's operation that failed (openapi.yaml, writeBatch). */
  operation?: number;
  headers?: Record<string, string>;
}

export class ApiError extends Error {
  readonly status: number;

  constructor(
    readonly code: ProblemCode,
    readonly detail: string,
    readonly options: ProblemMembers = {},
  ) {
    super(detail);
    this.status = kinds[code].status;
  }

  /** The problem body; `instance` (RFC 9457 §3.1.5) names the request it answers: `urn:rowbase:request:<id>`. */
  toProblem(instance: string): Problem {
    const { title } = kinds[this.code];
    const problem: Problem = {
      type: `urn:rowbase:problem:${this.code}`,
      title,
      status: this.status,
      detail: this.detail,
      code: this.code,
      instance,
    };
    const { errors, violations, total, fields, existing_id, duplicates, operation } = this.options;
    if (errors) problem.errors = errors;
    if (violations) problem.violations = violations;
    if (total !== undefined) problem.total = total;
    if (fields) problem.fields = fields;
    if (existing_id !== undefined) problem.existing_id = existing_id;
    if (duplicates) problem.duplicates = duplicates;
    if (operation !== undefined) problem.operation = operation;
    return problem;
  }

  /**
   * The same problem, met by the batch's operation `operation` (openapi.yaml, writeBatch); the places in
   * the body its errors name are under `under` (a JSON Pointer into the batch's body), when given.
   */
  inOperation(operation: number, under?: string): ApiError {
    const errors = under
      ? this.options.errors?.map((error) => ('name' in error && error.in === 'body' ? { ...error, name: `${under}${error.name}` } : error))
      : this.options.errors;
    return new ApiError(this.code, this.detail, { ...this.options, errors, operation });
  }
}

/** RFC 9112 §3.2 (an HTTP/1.1 request) and RFC 6455 §4.1 (a WebSocket handshake) require a Host header. */
export const hostRequired: FieldError = { in: 'header', name: 'host', message: 'is required' };
/** RFC 9112 §3.2: a request with more than one Host line is refused, whichever it would mean. */
export const hostRepeated: FieldError = { in: 'header', name: 'host', message: 'must be sent once' };
export const validationFailed = (detail: string, errors: FieldError[] = []) => new ApiError('validation_failed', detail, { errors });
export const unauthorized = () =>
  new ApiError('unauthorized', 'A valid API key is required.', { headers: { 'WWW-Authenticate': 'Bearer realm="rowbase"' } });
/** An end user's token refused (src/tokens/verifier.ts), `detail` saying why; RFC 6750 §3.1 names the error in WWW-Authenticate. */
export const invalidToken = (detail: string) =>
  new ApiError('invalid_token', detail, { headers: { 'WWW-Authenticate': 'Bearer realm="rowbase", error="invalid_token"' } });
/** An end user's token in `access_token` beside a secret key, which rules never hold (the feed, the changes). */
export const tokenBesideSecretKey = () =>
  validationFailed('A secret key takes no end-user token: it is never held to rules.', [
    { in: 'query', name: 'access_token', message: 'is taken only beside a publishable key' },
  ]);
export const forbidden = (detail: string) => new ApiError('forbidden', detail);
export const notFound = (detail: string) => new ApiError('not_found', detail);
export const conflict = (detail: string) => new ApiError('conflict', detail);
export const gone = (detail: string) => new ApiError('gone', detail);
export const internal = () => new ApiError('internal', 'Something went wrong on our side.');
export const unavailable = (detail = 'The database cannot be reached.') => new ApiError('unavailable', detail);
/** A read of rows stopped after the time the server allows one (config.ts, queryTimeoutMs). */
export const queryTimeout = (ms: number) =>
  new ApiError(
    'query_timeout',
    `The query took longer than the ${ms} ms a read may take, and was stopped: narrow its filter, or order by a field with a sort index.`,
  );
/** RFC 9110 §10.1.1: an expectation the server does not meet (only `100-continue` is one it knows). */
export const expectationFailed = () => new ApiError('expectation_failed', 'The only Expect rowbase meets is 100-continue.');
/** RFC 9110 §9.3.6: CONNECT asks for a tunnel, which only a proxy opens. */
export const noTunnel = () => validationFailed('CONNECT asks for a tunnel, and rowbase is no proxy.');

/** 404 for a collection the account has none of by that name. */
export const collectionNotFound = (name: string) => notFound(`There is no collection named ${name}.`);

/** 404 for a row the collection has none of by that id (or that the caller's rules do not let it see). */
export const rowNotFound = (collection: string, id: number) => notFound(`There is no row ${id} in collection ${collection}.`);

/** 404 for the rules of a collection that has none (docs/access.md, "Rules"). */
export const rulesNotFound = (collection: string) =>
  notFound(`Collection ${collection} has no rules: a publishable key may do nothing with it.`);

export const ttlNotFound = (collection: string) => notFound(`Collection ${collection} has no time to live: its rows never expire.`);

/** A key the CLI cannot make or revoke as asked (`rowbase keys`); the message says why, in one line. */
export class KeyError extends Error {}

/** A backup that cannot be made as asked; the message says why, in one line. */
export class BackupRefusedError extends Error {}
/**
 * The 403 of a publishable key on an operation that does not take one (openapi.yaml,
 * `x-rowbase-publishable`; docs/access.md): until the collections' rules govern an operation, a
 * publishable key may not call it.
 */
export const secretKeyNeeded = (operation: string) =>
  forbidden(
    `${operation} needs a secret key: publishable keys are accepted only where the collections' rules apply, on a collection's rows.`,
  );
