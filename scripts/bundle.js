// The service as one JavaScript file, dist/rowbase.mjs, bundled by esbuild from src/cli.ts with every
// package left to node_modules; bin/rowbase runs it. Made again whenever a file it was made from (its
// metafile lists them, in dist/rowbase.inputs.json), this script or tsconfig.json is newer than it:
// a change to src/ needs no command of its own. It takes about a quarter of a second.
//
// Why not tsx, as the tests and the bench scripts run: tsx compiles in a module-loader thread that
// stays for the life of the process, with a V8 heap of its own. A server run from the bundle is 29 MB
// smaller in resident memory (idle, both with 8 MB semi-spaces: 97.7 MB where it was 126.9 MB), the
// same transform otherwise: esbuild, with its names kept, as tsx has them.
//
//   node scripts/bundle.js        (npm run build) makes the bundle now, whether or not it is stale
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

const root = fileURLToPath(new URL('../', import.meta.url));
const outfile = `${root}dist/rowbase.mjs`;
const inputsFile = `${root}dist/rowbase.inputs.json`;
/** Files the bundle depends on besides its inputs: how it is made. */
const recipe = ['scripts/bundle.js', 'tsconfig.json'];

/** The bundle's path, made first if it is missing or stale (or `force`). */
export function bundle({ force = false } = {}) {
  if (force || !isFresh()) build();
  return outfile;
}

function build() {
  mkdirSync(`${root}dist`, { recursive: true });
  // Written aside, then renamed: processes that start at once each build, and none reads half a file.
  const aside = `.${process.pid}.tmp`;
  const { metafile } = buildSync({
    absWorkingDir: root,
    entryPoints: ['src/cli.ts'],
    outfile: outfile + aside,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: `node${process.versions.node}`,
    packages: 'external',
    keepNames: true,
    metafile: true,
    logLevel: 'error',
  });
  writeFileSync(inputsFile + aside, JSON.stringify(Object.keys(metafile.inputs)));
  renameSync(outfile + aside, outfile);
  renameSync(inputsFile + aside, inputsFile);
}

/** Whether the bundle is newer than every file it was made from, and than its recipe. */
function isFresh() {
  try {
    const built = statSync(outfile).mtimeMs;
    const inputs = [...JSON.parse(readFileSync(inputsFile, 'utf8')), ...recipe];
    return inputs.every((input) => statSync(root + input).mtimeMs < built);
  } catch {
    return false; // no bundle yet, or an input gone
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) bundle({ force: true });
