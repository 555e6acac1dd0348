// The files of the web console (GET /console, a page beside the API: src/http/site.ts): its page and
// stylesheet, beside this file, and its script, bundled from main.ts by scripts/bundle.js the first time
// it is asked for (and again after a change to its sources, on the next start). Served under the same
// Content-Security-Policy as /docs: this origin only, no inline script.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { bundleConsole } from '../../scripts/bundle.js';
import { type DocsFile, type DocsFiles, loadedOnce } from '../docs/files.ts';
import { root } from '../root.ts';

const ours = (name: string) => fileURLToPath(new URL(`src/console/${name}`, root));

/** The files, read (and the script bundled) on first use, then kept; a failure is not kept. */
export const consoleFiles = loadedOnce(readConsoleFiles);

async function readConsoleFiles(): Promise<DocsFiles> {
  const file = async (path: string, contentType: string): Promise<DocsFile> => ({ body: await readFile(path), contentType });
  const [page, css, script] = await Promise.all([
    file(ours('index.html'), 'text/html; charset=utf-8'),
    file(ours('console.css'), 'text/css; charset=utf-8'),
    bundleConsole().then((path) => file(path, 'text/javascript; charset=utf-8')),
  ]);
  return {
    page,
    assets: new Map([
      ['console.css', css],
      ['console.js', script],
    ]),
  };
}
