// The pages served beside the API (documents, /docs, /console), each a handler of http/site.ts's list.
import { parse, stringify } from 'yaml';
import declarationSchema from '../../schemas/declaration.schema.json' with { type: 'json' };
import { consoleFiles } from '../console/files.ts';
import { openApiTo32 } from '../contract/openapi-32.ts';
import { DOCS_CONTENT_SECURITY_POLICY, type DocsFile, type DocsFiles, docsDocument, docsFiles } from '../docs/files.ts';
import { notFound, validationFailed } from '../errors.ts';
import type { Deps, Result } from './types.ts';

/** What a page's handler receives: its path parameters (percent-decoded), and its query parameters (http/site.ts) as sent. */
interface SitePageInput {
  path: Record<string, string>;
  query: Record<string, unknown>;
}

export type SitePageHandler = (input: SitePageInput, deps: Deps) => Promise<Result> | Result;

/**
 * The pages the service serves beside the API of openapi.yaml (src/http/site.ts lists their routes): the
 * contract documents, and the reference that renders openapi.yaml for people. No key; not counted.
 */
export const siteHandlers = {
  /** openapi.yaml as written (OpenAPI 3.0.3), or with `version=3.2` as OpenAPI 3.2 (contract/openapi-32.ts). */
  getOpenApiDocument({ query }, { documents }) {
    if (query.version === undefined) return { status: 200, body: documents.openapi, contentType: YAML };
    if (query.version !== '3.2') {
      throw validationFailed('This document is served as OpenAPI 3.0.3 (no version), or 3.2.', [
        { in: 'query', name: 'version', message: 'must be 3.2, or absent' },
      ]);
    }
    return { status: 200, body: openApi32(documents.openapi), contentType: YAML };
  },

  getAsyncApiDocument(_input, { documents }) {
    return { status: 200, body: documents.asyncapi, contentType: YAML };
  },

  /** schemas/declaration.schema.json, as the repository holds it. */
  getDeclarationSchema() {
    return { status: 200, body: JSON.stringify(declarationSchema, null, 2), contentType: 'application/schema+json' };
  },

  async getDocs() {
    const { page } = await docsFiles();
    return serve(page, 'no-cache');
  },

  async getDocsAsset({ path }, { documents }) {
    // The document changes with the service: never kept stale.
    if (path.asset === 'openapi.yaml') return serve(docsDocument(documents.openapi), 'no-cache');
    // The names carry no version: after an upgrade, a browser may keep the old file up to an hour.
    return serveAsset(await docsFiles(), '/docs', path.asset, 'public, max-age=3600');
  },

  async getConsole() {
    const { page } = await consoleFiles();
    return serve(page, 'no-cache');
  },

  async getConsoleAsset({ path }) {
    // Checked again on every load: the console changes with the service, and its names carry no version.
    return serveAsset(await consoleFiles(), '/console', path.asset, 'no-cache');
  },
} satisfies Record<string, SitePageHandler>;

export type SitePageId = keyof typeof siteHandlers;

const YAML = 'application/yaml; charset=utf-8';

/** openapi.yaml as OpenAPI 3.2, made once for the text it is made from. */
const converted32 = new Map<string, string>();
function openApi32(openapi: string): string {
  let text = converted32.get(openapi);
  if (text === undefined) {
    text = stringify(openApiTo32(parse(openapi)), { lineWidth: 0 });
    converted32.clear();
    converted32.set(openapi, text);
  }
  return text;
}

/** The asset of `files` named `name`, a 404 for any other name: a name from a request is only looked up, never joined to a path. */
function serveAsset(files: DocsFiles, under: string, name: string, cacheControl: string): Result {
  const file = files.assets.get(name);
  // Shown as sent, as the 404 of an unknown route shows its path.
  if (!file) throw notFound(`There is no route ${under}/${encodeURIComponent(name)}.`);
  return serve(file, cacheControl);
}

function serve({ body, contentType }: DocsFile, cacheControl: string): Result {
  return {
    status: 200,
    body,
    contentType,
    headers: { 'Content-Security-Policy': DOCS_CONTENT_SECURITY_POLICY, 'Cache-Control': cacheControl },
  };
}
