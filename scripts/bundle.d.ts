// The types of scripts/bundle.js: the service's and the console's bundles, made when stale.
/** The path of bin/rowbase's bundle, dist/rowbase.mjs, made first if it is missing or stale (or `force`). */
export function bundle(options?: { force?: boolean }): string;

/** The path of the web console's script, dist/console.js, made first if it is missing or stale. */
export function bundleConsole(): Promise<string>;
