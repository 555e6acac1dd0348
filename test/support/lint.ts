// The linters the contract tests run on the account's documents, each on a file of a folder, warnings
// included: Spectral (spectral:oas, and spectral:asyncapi as .spectral-asyncapi.yaml says) and Redocly
// (recommended), with the exceptions openapi.yaml and asyncapi.yaml make on purpose.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runTool } from './process.ts';

const projectRoot = fileURLToPath(new URL('../../', import.meta.url));

/** What Spectral's spectral:oas says of the OpenAPI document `file` of `dir`; it fails on a warning. */
export async function spectralOpenApi(dir: string, file: string): Promise<string> {
  // As .spectral.yaml says of openapi.yaml: `/ws` succeeds with 101, no 2xx.
  const ruleset = `extends: ["spectral:oas"]\noverrides:\n  - files: ["${file}#/paths/~1ws"]\n    rules:\n      operation-success-response: "off"\n`;
  await writeFile(join(dir, '.spectral.yaml'), ruleset);
  return runTool('spectral', ['lint', file, '--ruleset', '.spectral.yaml', '--fail-severity', 'warn'], dir);
}

/** What Spectral's spectral:asyncapi says of the AsyncAPI document `file` of `dir`; it fails on a warning. */
export function spectralAsyncApi(dir: string, file: string): Promise<string> {
  return runTool('spectral', ['lint', file, '--ruleset', join(projectRoot, '.spectral-asyncapi.yaml'), '--fail-severity', 'warn'], dir);
}

/**
 * Redocly's recommended rules, but two that openapi.yaml and asyncapi.yaml break on purpose: their
 * license is `UNLICENSED`, which has no URL nor SPDX identifier; and a `HEAD` operation answers its
 * problems as `default` (no body to type), and `GET /health` needs no key and refuses nothing, so they
 * list no `4XX`.
 */
const REDOCLY_CONFIG = `extends:
  - recommended
rules:
  info-license-strict: off
  operation-4xx-response: off
`;

/**
 * What Redocly says of the documents `files` of `dir`, by file. Its AsyncAPI 3 structure misses the
 * `title` of a Server Object, which AsyncAPI 3.0.0 defines (asyncapi.yaml's server has one): that one
 * problem is ignored, where it is, in each of `files` that is an AsyncAPI document (`asyncapi` in its name).
 */
export async function redoclyLint(dir: string, files: readonly string[]): Promise<Map<string, string>> {
  await writeFile(join(dir, 'redocly.yaml'), REDOCLY_CONFIG);
  const ignored = files.filter((file) => file.includes('asyncapi')).map((file) => `${file}:\n  struct:\n    - '#/servers/local/title'\n`);
  await writeFile(join(dir, '.redocly.lint-ignore.yaml'), ignored.join(''));
  const said = new Map<string, string>();
  for (const file of files) {
    const args = ['lint', file, '--config', 'redocly.yaml', '--max-problems', '1000'];
    said.set(file, await runTool('redocly', args, dir, { REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }));
  }
  return said;
}
