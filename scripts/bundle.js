// The service bundled by esbuild from src/cli.ts, with every package left to node_modules: dist/rowbase.mjs,
// which bin/rowbase runs, and beside it the chunks it loads when first asked (dist/rowbase-*.mjs, named by
// their content): each module reached by a dynamic import() is split off, with the packages it imports,
// so that `rowbase --help` loads no server and `serve` no command's work. Made again whenever a file it
// was made from (its metafile lists them, in dist/rowbase.inputs.json), this script or tsconfig.json is
// newer than it: a change to src/ needs no command of its own. It takes about a quarter of a second.
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
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';

/** esbuild's API, loaded when a bundle is stale: a fresh one is only looked at, by its files' times. */
const esbuild = () => import('esbuild');

const root = fileURLToPath(new URL('../', import.meta.url));
/** Files a bundle depends on besides its inputs: how it is made. */
const recipe = ['scripts/bundle.js', 'tsconfig.json'];

const server = {
  name: 'rowbase',
  options: {
    // The declarations' worker threads run an entry of their own, which loads only what they need (src/declarations/aside.ts).
    entryPoints: { rowbase: 'src/cli.ts', 'declarations-worker': 'src/declarations/worker.ts' },
    platform: 'node',
    format: 'esm',
    splitting: true,
    outExtension: { '.js': '.mjs' },
    chunkNames: 'rowbase-[hash]',
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
export async function bundle({ force = false } = {}) {
  const { outfile } = files(server);
  if (force || !isFresh(server)) writtenWithChunks((await esbuild()).buildSync(options(server)), { prune: force });
  return outfile;
}

/** The console's script's path, made first if it is missing or stale; esbuild builds it off the event loop, then its service stops. */
export async function bundleConsole() {
  const { outfile } = files(webConsole);
  if (!isFresh(webConsole)) {
    // build() starts esbuild's service, a process of its own that would stay for the server's life.
    const { build, stop } = await esbuild();
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
  const split = target.options.splitting;
  return {
    ...target.options,
    absWorkingDir: root,
    ...(split ? { outdir: `${root}dist`, write: false } : { outfile: files(target).outfile + aside }),
    bundle: true,
    metafile: true,
    logLevel: 'error',
  };
}

/**
 * The server's bundle written: each chunk unless it is there already (its name is its content's hash, so
 * a process still running an older entry finds the chunks it asks for later), then the entry aside and
 * renamed, last. `prune`: the chunks no longer named are removed (`npm run build`).
 */
function writtenWithChunks({ outputFiles, metafile }, { prune }) {
  const { outfile } = files(server);
  const chunks = outputFiles.filter((file) => file.path !== outfile);
  for (const chunk of chunks) {
    // A chunk's name is its content's hash; another entry's (the declarations' worker's) is not: written each time.
    if (existsSync(chunk.path) && /^rowbase-[A-Z0-9]+\.mjs$/.test(basename(chunk.path))) continue;
    writeFileSync(chunk.path + aside, chunk.contents);
    renameSync(chunk.path + aside, chunk.path);
  }
  writeFileSync(outfile + aside, outputFiles.find((file) => file.path === outfile).contents);
  written(server, { metafile });
  if (!prune) return;
  const current = new Set(chunks.map((chunk) => basename(chunk.path)));
  for (const name of readdirSync(`${root}dist`)) {
    if (/^rowbase-[A-Z0-9]+\.mjs$/.test(name) && !current.has(name)) rmSync(`${root}dist/${name}`);
  }
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

if (process.argv[1] === fileURLToPath(import.meta.url)) await bundle({ force: true });
