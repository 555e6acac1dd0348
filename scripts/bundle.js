// The service as one JavaScript file, dist/rowbase.mjs, bundled by esbuild from src/cli.ts with every
// package left to node_modules; bin/rowbase runs it. Made again whenever a file it was made from (its
// metafile lists them, in dist/rowbase.inputs.json), this script or tsconfig.json is newer than it:
// a change to src/ needs no command of its own. It takes about a quarter of a second.
//
// The web console's script, dist/console.js, is made the same way from src/console/main.ts, for the
// browser and with its packages (Preact, htm) inside: by the server, the first time it serves
// /console/console.js (src/console/files.ts).
//
// Why not tsx, as the tests and the bench scripts run: tsx compiles in a module-loader thread that
// stays for the life of the process, with a V8 heap of its own. A server run from the bundle holds less
// resident memory (docs/performance.md, "Memory"), with the same transform otherwise: esbuild, with
// its names kept, as tsx has them.
//
//   node scripts/bundle.js        (npm run build) makes the bundle now, whether or not it is stale
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build, buildSync, stop } from 'esbuild';

const root = fileURLToPath(new URL('../', import.meta.url));
/** Files a bundle depends on besides its inputs: how it is made. */
const recipe = ['scripts/bundle.js', 'tsconfig.json'];

const server = {
  name: 'rowbase',
  options: {
    entryPoints: ['src/cli.ts'],
    platform: 'node',
    format: 'esm',
    target: `node${process.versions.node}`,
    packages: 'external',
    keepNames: true,
  },
};

const webConsole = {
  name: 'console',
  options: {
    entryPoints: ['src/console/main.ts'],
    platform: 'browser',
    format: 'esm',
    target: ['chrome120', 'firefox121', 'safari17'],
    minify: true,
  },
};

/** The bundle's path, made first if it is missing or stale (or `force`). */
export function bundle({ force = false } = {}) {
  const { outfile } = files(server);
  if (force || !isFresh(server)) written(server, buildSync(options(server)));
  return outfile;
}

/** The console's script's path, made first if it is missing or stale; esbuild builds it off the event loop, then its service stops. */
export async function bundleConsole() {
  const { outfile } = files(webConsole);
  if (!isFresh(webConsole)) {
    // build() starts esbuild's service, a process of its own that would stay for the server's life.
    written(webConsole, await build(options(webConsole)).finally(stop));
  }
  return outfile;
}

/** Where a bundle is, and the list of files it was made from. */
function files({ name }) {
  const ext = name === 'rowbase' ? 'mjs' : 'js';
  return { outfile: `${root}dist/${name}.${ext}`, inputsFile: `${root}dist/${name}.inputs.json` };
}

// Written aside, then renamed: processes that build at once each build, and none reads half a file.
const aside = `.${process.pid}.tmp`;

function options(target) {
  mkdirSync(`${root}dist`, { recursive: true });
  return {
    ...target.options,
    absWorkingDir: root,
    outfile: files(target).outfile + aside,
    bundle: true,
    metafile: true,
    logLevel: 'error',
  };
}

function written(target, { metafile }) {
  const { outfile, inputsFile } = files(target);
  writeFileSync(inputsFile + aside, JSON.stringify(Object.keys(metafile.inputs)));
  renameSync(outfile + aside, outfile);
  renameSync(inputsFile + aside, inputsFile);
}

/** Whether the bundle is newer than every file it was made from, and than its recipe. */
function isFresh(target) {
  const { outfile, inputsFile } = files(target);
  try {
    const built = statSync(outfile).mtimeMs;
    const inputs = [...JSON.parse(readFileSync(inputsFile, 'utf8')), ...recipe];
    return inputs.every((input) => statSync(root + input).mtimeMs < built);
  } catch {
    return false; // no bundle yet, or an input gone
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) bundle({ force: true });
