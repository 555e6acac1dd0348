import { DOCS_CONTENT_SECURITY_POLICY, type DocsFile, docsDocument, docsFiles } from '../docs/files.ts';
import { notFound } from '../errors.ts';
import type { Handlers, Result } from './types.ts';

export const docsHandlers: Handlers<'getDocs' | 'getDocsAsset'> = {
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
};

function serve({ body, contentType }: DocsFile, cacheControl: string): Result {
  return {
    status: 200,
    body,
    contentType,
    headers: { 'Content-Security-Policy': DOCS_CONTENT_SECURITY_POLICY, 'Cache-Control': cacheControl },
  };
}
