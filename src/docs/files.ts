// The API reference of GET /docs (a page beside the API: src/http/site.ts), with no request to any other host: Swagger UI,
// served from the files of the npm package swagger-ui-dist on this origin, rendering /openapi.yaml. The
// page (index.html) and what starts Swagger UI on it (docs.js) are ours, beside this file.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';
import { root } from '../root.ts';

export interface DocsFile {
  body: Buffer;
  /** With its charset: every file here is UTF-8. */
  contentType: string;
}

export interface DocsFiles {
  /** GET /docs */
  page: DocsFile;
  /** GET /docs/{asset}, by asset name. */
  assets: ReadonlyMap<string, DocsFile>;
}

/**
 * What the browser may load on the reference page: this origin, and nothing else.
 * - Scripts: 'self' alone (through default-src). The page has no inline script, and the bundle needs no
 *   eval: its `Function("return this")` fallbacks run only where neither `globalThis` nor `self` exists.
 * - Images: also `data:`, in which swagger-ui.css draws its icons.
 * - Styles: also inline. Swagger UI styles some elements inline (swagger-api/swagger-ui#3370, #10655),
 *   and an inline style cannot reach another host under this policy: its images and fonts are refused too.
 * - default-src covers fetches (the document, "Try it out") and fonts; base-uri, form-action and
 *   frame-ancestors do not fall back to it, so they are given here.
 */
export const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "img-src 'self' data:",
  "style-src 'self' 'unsafe-inline'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'self'",
].join('; ');

const html = 'text/html; charset=utf-8';
const css = 'text/css; charset=utf-8';
const javascript = 'text/javascript; charset=utf-8';
const yaml = 'application/yaml; charset=utf-8';

// The package's folder, found without running its main module (which loads the whole bundle into Node).
const swaggerUi = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const ours = (name: string) => fileURLToPath(new URL(`src/docs/${name}`, root));

interface Source {
  path: string;
  contentType: string;
}

/**
 * Every file /docs/{asset} serves, by name, and where it is read from. A name from a request is only ever
 * looked up here, never joined to a path: no request can reach another file.
 */
const assetSources: Record<string, Source> = {
  'swagger-ui.css': { path: join(swaggerUi, 'swagger-ui.css'), contentType: css },
  'index.css': { path: join(swaggerUi, 'index.css'), contentType: css },
  'swagger-ui-bundle.js': { path: join(swaggerUi, 'swagger-ui-bundle.js'), contentType: javascript },
  'docs.js': { path: ours('docs.js'), contentType: javascript },
};

/**
 * The files, read on first use and then kept: most servers are never asked for /docs, and the bundle
 * alone is large.
 */
export const docsFiles = loadedOnce(readDocsFiles);

/** `load`, run on the first call and its answer kept; a failure is not kept: the next call tries again. */
export function loadedOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    loading ??= load().catch((error) => {
      loading = undefined;
      throw error;
    });
    return loading;
  };
}

async function readDocsFiles(): Promise<DocsFiles> {
  const read = async ({ path, contentType }: Source): Promise<DocsFile> => ({ body: await readFile(path), contentType });
  const assets = await Promise.all(Object.entries(assetSources).map(async ([name, source]) => [name, await read(source)] as const));
  return { page: await read({ path: ours('index.html'), contentType: html }), assets: new Map(assets) };
}

/**
 * The server the page's "Try it out" sends requests to: the origin the page and its document came from.
 * A server URL may be relative to where the document is served (OpenAPI 3.0.3, Server Object), and Swagger
 * UI resolves it against the document's URL; the host never comes from the request, so nothing a client
 * sends (a Host header, say) can point the page elsewhere.
 */
const DOCS_SERVER = { url: '/', description: 'This service: the origin this page was served from.' };

let rendered: { openapi: string; file: DocsFile } | undefined;

/**
 * GET /docs/openapi.yaml, the document the page renders: `openapi`, the text of GET /openapi.yaml, with
 * DOCS_SERVER as its only server. openapi.yaml itself keeps `http://127.0.0.1:8080`, which generated
 * clients take for their default; on the page it would send every request to that address, refused by
 * the page's policy on any other origin. Made once, comments kept.
 */
export function docsDocument(openapi: string): DocsFile {
  if (rendered?.openapi !== openapi) {
    const document = parseDocument(openapi);
    document.set('servers', [DOCS_SERVER]);
    rendered = { openapi, file: { body: Buffer.from(document.toString()), contentType: yaml } };
  }
  return rendered.file;
}
