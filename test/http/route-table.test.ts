// The compiled route table must route every request exactly as openapi-backend's own router would:
// the same operation, or the same miss (404 or 405), whatever the path and method.
import { expect } from 'chai';
import fc from 'fast-check';
import { type Document, OpenAPIRouter } from 'openapi-backend';
import document from '../../generated/openapi.json' with { type: 'json' };
import { RouteTable } from '../../src/http/route-table.ts';

const reference = new OpenAPIRouter({ definition: document as unknown as Document });
const table = new RouteTable(reference.getOperations());

/** What openapi-backend answers: the operationId, or the status its strict match throws. */
function expected(method: string, path: string): string {
  try {
    return reference.matchOperation({ method, path, headers: {} }, true).operationId ?? '';
  } catch (error) {
    return (error as Error).message.slice(0, 3);
  }
}

function actual(method: string, path: string): string {
  const { operation, miss } = table.match(method, path);
  return operation ? (operation.operationId ?? '') : String(miss);
}

const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'TRACE', 'get', ' Patch '];

describe('route table', () => {
  const paths = [
    '/health',
    '/health/',
    'health',
    '/openapi.yaml',
    '/openapi.yamlx',
    '/openapiXyaml',
    '/docs',
    '/docs/',
    '/docs/docs.js',
    '/docs/docs.js/',
    '/docs/docs.js/x',
    '/docs/..%2Fpackage.json',
    '/docs/../package.json',
    '/docsx',
    '/ws',
    '/ws/',
    '/v1',
    '/v1/',
    '/v1/usage',
    '/v1/collections',
    '/v1/collections/',
    '/v1/collections//',
    '/v1/collections?limit=1',
    '/v1/collections/notes',
    '/v1/collections/notes/',
    '/v1/collections/usage',
    '/v1/collections/notes/rows',
    '/v1/collections/notes/rows/',
    '/v1/collections/notes/rows/1',
    '/v1/collections/notes/rows/1/',
    '/v1/collections/notes/rows/1?x=1',
    '/v1/collections/notes/rows/1/x',
    '/v1/collections//rows',
    '/v1/collections//rows/1',
    '/v1/collections/rows/rows/rows',
    '/v1/collections/%7Bcollection_name%7D',
    '/v1/collections/{collection_name}/rows/{row_id}',
    '//v1/collections',
    '/V1/collections',
    '',
    '/',
    ' /v1/usage ',
  ];

  for (const path of paths) {
    it(`routes ${JSON.stringify(path)} as openapi-backend does, for every method`, () => {
      for (const method of methods) expect(actual(method, path), method).to.equal(expected(method, path));
    });
  }

  it("routes any path made of the API's segments as openapi-backend does", () => {
    const segment = fc.constantFrom(
      'v1',
      'collections',
      'rows',
      'usage',
      'health',
      'notes',
      '1',
      '',
      ' ',
      '{row_id}',
      '?',
      '?a=/b',
      '%2F',
      '.',
    );
    const path = fc.array(segment, { maxLength: 6 }).map((segments) => `/${segments.join('/')}`);
    fc.assert(
      fc.property(fc.constantFrom(...methods), path, (method, candidate) => {
        expect(actual(method, candidate)).to.equal(expected(method, candidate));
      }),
      { numRuns: 2000 },
    );
  });
});
