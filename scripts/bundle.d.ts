// The types of scripts/bundle.js: the service's and the console's bundles, made when stale.
/** The path of bin/rowbase's bundle's entry, dist/rowbase.mjs (its chunks beside it), made first if it is missing or stale (or `force`). */
export function bundle(options?: { force?: boolean }): Promise<string>;

/** The path of the web console's script, dist/console.js, made first if it is missing or stale. */
export function bundleConsole(): Promise<string>;
