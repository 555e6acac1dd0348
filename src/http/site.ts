// The site the service serves beside its API, page by page: the contract documents (/openapi.yaml,
// /asyncapi.yaml), the API reference that renders openapi.yaml for people (/docs; README.md, "The API in
// brief"; docs/api.md), and the web console (/console; docs/console.md). They are not in openapi.yaml:
// they are no operation of the API, a client generated from it has no use for them, and generators read
// their YAML, HTML, CSS and JavaScript as JSON. They are routed by the router as the operations of
// openapi.yaml are (operations.ts), and so answered alike: GET and HEAD, 404 for an unknown path, 405
// with `Allow` for another method, 400 for any query parameter but a page's own (`version` of
// /openapi.yaml) or broken percent-encoding, no key, not counted; each by its handler (handlers/site.ts)
// and the one responder.
import type { Operation } from 'openapi-backend';
import type { SitePageId } from '../handlers/site.ts';

/** A page: where it is, the handler that answers it, and the media types of its 200 (what tests check). */
export interface SitePage {
  path: string;
  operationId: SitePageId;
  mediaTypes: string[];
  /** The query parameters it takes, as strings its handler reads; default none. */
  query?: string[];
}

export const sitePages: readonly SitePage[] = [
  // `?version=3.2`: the document as OpenAPI 3.2 (contract/openapi-32.ts).
  { path: '/openapi.yaml', operationId: 'getOpenApiDocument', mediaTypes: ['application/yaml'], query: ['version'] },
  { path: '/asyncapi.yaml', operationId: 'getAsyncApiDocument', mediaTypes: ['application/yaml'] },
  // The JSON Schema of rowbase.yaml (docs/declarations.md), for editors.
  { path: '/schemas/declaration.schema.json', operationId: 'getDeclarationSchema', mediaTypes: ['application/schema+json'] },
  { path: '/docs', operationId: 'getDocs', mediaTypes: ['text/html'] },
  // swagger-ui.css, index.css, swagger-ui-bundle.js, docs.js and openapi.yaml (src/docs/files.ts).
  { path: '/docs/{asset}', operationId: 'getDocsAsset', mediaTypes: ['text/css', 'text/javascript', 'application/yaml'] },
  { path: '/console', operationId: 'getConsole', mediaTypes: ['text/html'] },
  // console.css and console.js (src/console/files.ts).
  { path: '/console/{asset}', operationId: 'getConsoleAsset', mediaTypes: ['text/css', 'text/javascript'] },
];

/** Each page as operations the route table takes beside those of openapi.yaml: its GET and its HEAD, no key needed. */
export function siteOperations(): Operation[] {
  return sitePages.flatMap(({ path, operationId, query = [] }) => {
    const parameters = [
      ...[...path.matchAll(/\{([^}]+)\}/g)].map(([, name]) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
      ...query.map((name) => ({ name, in: 'query', schema: { type: 'string' } })),
    ];
    return (['get', 'head'] as const).map(
      (method) => ({ path, method, operationId, parameters, security: [], responses: {} }) as Operation,
    );
  });
}
