import { DOCS_CONTENT_SECURITY_POLICY, type DocsFile, docsDocument, docsFiles } from '../docs/files.ts';
import { notFound } from '../errors.ts';
import type { Deps, Result } from './types.ts';

/** What a page's handler receives: its path parameters (percent-decoded), nothing else. */
export interface PageInput {
  path: Record<string, string>;
}

export type PageHandler = (input: PageInput, deps: Deps) => Promise<Result> | Result;

/**
 * The pages the service serves beside the API of openapi.yaml (src/http/pages.ts lists their routes): the
 * contract documents, and the reference that renders openapi.yaml for people. No key; not counted.
 */
export const pageHandlers = {
  getOpenApiDocument(_input, { documents }) {
    return { status: 200, body: documents.openapi, contentType: YAML };
  },

  getAsyncApiDocument(_input, { documents }) {
    return { status: 200, body: documents.asyncapi, contentType: YAML };
  },

  async getDocs() {
    const { page } = await docsFiles();
    return serve(page, 'no-cache');
  },

  async getDocsAsset({ path }, { documents }) {
    // The document changes with the service: never kept stale.
    if (path.asset === 'openapi.yaml') return serve(docsDocument(documents.openapi), 'no-cache');
    const file = (await docsFiles()).assets.get(path.asset);
    // Shown as sent, as the 404 of an unknown route shows its path.
    if (!file) throw notFound(`There is no route /docs/${encodeURIComponent(path.asset)}.`);
    // The names carry no version: after an upgrade, a browser may keep the old file up to an hour.
    return serve(file, 'public, max-age=3600');
  },
} satisfies Record<string, PageHandler>;

export type PageId = keyof typeof pageHandlers;

const YAML = 'application/yaml; charset=utf-8';

function serve({ body, contentType }: DocsFile, cacheControl: string): Result {
  return {
    status: 200,
    body,
    contentType,
    headers: { 'Content-Security-Policy': DOCS_CONTENT_SECURITY_POLICY, 'Cache-Control': cacheControl },
  };
}
