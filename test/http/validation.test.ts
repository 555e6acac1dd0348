// The router reads and validates requests itself, from what it worked out at start, rather than through
// openapi-backend's handleRequest. It must read every request as openapi-backend's validateRequest does:
// valid for the same requests, with the same coerced and defaulted values; invalid for the same ones,
// and for integers not written in decimal digits (our own rule); and a 400, where openapi-backend
// throws, for a path that is not valid percent-encoding.
import { parse as parseQuery } from 'node:querystring';
import { expect } from 'chai';
import fc from 'fast-check';
import { type Document, OpenAPIBackend, type Operation } from 'openapi-backend';
import document from '../../generated/openapi.json' with { type: 'json' };
import { requestValidators } from '../../generated/validators.js';
import { ApiError } from '../../src/errors.ts';
import { RouteTable } from '../../src/http/route-table.ts';
import { requestChecks, validateRequest } from '../../src/http/validation.ts';
import { requestAjvOptions } from '../../src/http/validation-options.ts';

const reference = new OpenAPIBackend({
  definition: document as unknown as Document,
  quick: true,
  coerceTypes: true,
  ajvOpts: requestAjvOptions,
});
await reference.init();
Object.assign(reference.validator.requestValidators, requestValidators);
const operations = reference.router.getOperations();
const table = new RouteTable(operations);

const segment = fc.constantFrom(
  'notes',
  'a-b_c',
  '1',
  '%31',
  '01',
  '1e3',
  '%201',
  '-1',
  '0',
  '1.5',
  'abc',
  '%E0',
  '1%',
  '{row_id}',
  'n%2Fb',
);
const queryValue = fc.constantFrom('1', '0', '-1', '01', '1e2', '%201', '1001', 'abc', '', 'asc', 'desc', 'a?b', 'x%20y', '%E0');
const queryName = fc.constantFrom('limit', 'offset', 'order', 'order_by', 'limt', 'limit[]', 'limit[a]');
const queryString = fc
  .array(fc.tuple(queryName, queryValue), { maxLength: 4 })
  .map((pairs) => pairs.map(([name, value]) => `${name}=${value}`).join('&'));
const body = fc.constantFrom(undefined, {}, [], [{ text: 'a' }], [{ id: 1 }], { name: 'notes' }, { name: '1x' }, { text: 'b' }, null);
/** Each side gets a body of its own: validation may fill in defaults. */
const copy = (sent: { body: unknown; contentType?: string }) => ({ ...sent, body: structuredClone(sent.body) });
const contentType = fc.constantFrom(undefined, 'application/json', 'application/json; charset=utf-8', 'text/plain');

type Outcome = { valid: true; path: unknown; query: unknown } | { valid: false };

function ours(operation: Operation, path: string, query: string, sent: { body: unknown; contentType?: string }): Outcome {
  const match = table.match(operation.method, path);
  expect(match.operation?.operationId).to.equal(operation.operationId);
  const checks = requestChecks(operation, (requestValidators as Record<string, never[]>)[operation.operationId as string]);
  try {
    const request = { method: operation.method, path, headers: {}, query };
    const parts = {
      params: match.params ?? {},
      query: reference.router.parseRequestQuery(request),
      querystring: query,
      body: sent.body,
    };
    const { path: params, query: coerced } = validateRequest(checks, parts);
    return { valid: true, path: params, query: coerced };
  } catch (error) {
    expect(error).to.be.instanceOf(ApiError);
    expect((error as ApiError).status).to.equal(400);
    return { valid: false };
  }
}

function theirs(operation: Operation, path: string, sentQuery: string, sent: { body: unknown; contentType?: string }): Outcome {
  // openapi.yaml's own mark, which openapi-backend does not know: the operation reads no query at all.
  const query = (operation as { 'x-rowbase-query'?: string })['x-rowbase-query'] === 'ignored' ? '' : sentQuery;
  const headers: Record<string, string> = sent.contentType ? { 'content-type': sent.contentType } : {};
  let result: ReturnType<typeof reference.validator.validateRequest>;
  try {
    result = reference.validator.validateRequest({ method: operation.method, path, query, headers, body: sent.body as never }, operation);
  } catch (error) {
    // decodeURIComponent's URIError: openapi-backend let it out, as a 500.
    expect(error).to.be.instanceOf(URIError);
    return { valid: false };
  }
  if (result.errors) return { valid: false };
  // Our own rule, on the values as sent: integers in decimal digits.
  const sentValues = {
    ...reference.router.parseRequest({ method: operation.method, path, headers: {} }, operation).params,
    ...parseQuery(query),
  };
  const integers = (operation.parameters ?? []).filter((p) => 'schema' in p && (p.schema as { type?: string })?.type === 'integer');
  for (const { name } of integers as { name: string }[]) {
    const value = sentValues[name];
    if (typeof value === 'string' && !/^-?(0|[1-9][0-9]*)$/.test(value)) return { valid: false };
  }
  return { valid: true, path: result.coerced?.params, query: result.coerced?.query };
}

describe('request validation', () => {
  // A `head` operation is validated as its path's `get`, and the feed's by the feed: neither has validators.
  for (const operation of operations.filter((candidate) => (candidate.operationId as string) in requestValidators)) {
    it(`reads ${operation.operationId} requests as openapi-backend does`, () => {
      const names = [...operation.path.matchAll(/\{[^}]+\}/g)];
      fc.assert(
        fc.property(
          fc.array(segment, { minLength: names.length, maxLength: names.length }),
          queryString,
          body,
          contentType,
          (values, query, sentBody, type) => {
            let index = 0;
            const path = operation.path.replace(/\{[^}]+\}/g, () => values[index++]);
            // A body is only ever read, as JSON, for a method that carries one.
            const sent = operation.requestBody ? { body: sentBody, contentType: type } : { body: undefined, contentType: type };
            expect(ours(operation, path, query, copy(sent))).to.deep.equal(theirs(operation, path, query, copy(sent)));
          },
        ),
        { numRuns: 300 },
      );
    });
  }

  it('answers 400 for a path parameter that is not valid percent-encoding, naming it', () => {
    const operation = operations.find((candidate) => candidate.operationId === 'getRow') as Operation;
    const checks = requestChecks(operation, (requestValidators as Record<string, never[]>).getRow);
    const parts = {
      params: { collection_name: 'no%E0tes', row_id: '1' },
      query: {},
      querystring: '',
      body: undefined,
      contentType: undefined,
    };
    expect(() => validateRequest(checks, parts))
      .to.throw(ApiError)
      .with.property('options')
      .that.deep.equals({ errors: [{ in: 'path', name: 'collection_name', message: 'is not valid percent-encoding' }] });
  });
});
