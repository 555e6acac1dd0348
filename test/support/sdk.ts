// Clients generated as SDK users generate them, for tests: a temp folder that resolves the project's
// packages, the three generators run there once on an OpenAPI document (openapi-typescript's types for
// openapi-fetch, @hey-api/openapi-ts's SDK, orval's fetch client), and tsc --strict over callers of them.
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runTool } from './process.ts';

const projectRoot = fileURLToPath(new URL('../../', import.meta.url));

/** A temp folder of ES modules that imports the project's packages (its node_modules, linked). */
export async function sdkFolder(): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'rowbase-sdk-'));
  await writeFile(join(dir, 'package.json'), '{ "type": "module", "private": true }\n');
  await symlink(join(projectRoot, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Runs the three generators on `document` (a path), one after the other (two cores are enough for one
 * at a time), into `out`: `openapi-typescript/schema.ts`, `hey-api/` and `orval/api.ts`. orval's base URL
 * is read when each request is made, from ROWBASE_URL (its `baseUrl.runtime`). `dir` is the SDK folder,
 * where orval's configuration is written.
 */
export async function generateClients(dir: string, document: string, out: string): Promise<void> {
  await mkdir(out, { recursive: true });
  await writeFile(
    join(dir, 'orval.config.mjs'),
    `export default { rowbase: { input: { target: ${JSON.stringify(document)} }, output: { target: ${JSON.stringify(join(out, 'orval/api.ts'))}, client: 'fetch', baseUrl: { runtime: 'process.env.ROWBASE_URL' } } } };\n`,
  );
  await runTool('openapi-typescript', [document, '-o', join(out, 'openapi-typescript/schema.ts')]);
  await runTool('openapi-ts', ['-i', document, '-o', join(out, 'hey-api')]);
  await runTool('orval', ['--config', join(dir, 'orval.config.mjs')], dir);
}

/** Writes `dir`/tsconfig.json: tsc --strict, no output, over the folders of `include`, as an SDK user's project. */
export async function writeStrictTsconfig(dir: string, include: readonly string[]): Promise<void> {
  const compilerOptions = {
    target: 'ES2023',
    lib: ['ES2023', 'DOM', 'DOM.Iterable'],
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    allowImportingTsExtensions: true,
    noEmit: true,
    strict: true,
    types: ['node'],
  };
  await writeFile(join(dir, 'tsconfig.json'), `${JSON.stringify({ compilerOptions, include }, null, 2)}\n`);
}

/** tsc --strict over the folders of `include` of `dir` (writeStrictTsconfig), run once: its errors, by file. */
export async function strictErrors(dir: string, include: readonly string[]): Promise<Map<string, string[]>> {
  await writeStrictTsconfig(dir, include);
  const output = await runTool('tsc', ['-p', join(dir, 'tsconfig.json')], dir).then(
    (printed) => printed,
    (error: Error) => error.message,
  );
  const errors = new Map<string, string[]>();
  for (const [, file, message] of output.matchAll(/^(\S+?)\(\d+,\d+\): error (.*)$/gm)) {
    errors.set(file!, [...(errors.get(file!) ?? []), message!]);
  }
  return errors;
}
