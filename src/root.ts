// The repository's folder, found from this file, for the documents and pages the service serves.
/**
 * The repository's folder, which holds openapi.yaml, asyncapi.yaml, package.json and src/docs. Found
 * from this module's place one folder down, which is also where the bundle that bin/rowbase runs is
 * (dist/rowbase.mjs, scripts/bundle.js), so it holds either way: keep this module there.
 */
export const root = new URL('../', import.meta.url);
