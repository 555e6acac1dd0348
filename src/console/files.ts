// The files of the web console (GET /console, a page beside the API: src/http/pages.ts): its page and
// stylesheet, beside this file, and its script, bundled from main.ts by scripts/bundle.js the first time
// it is asked for (and again after a change to its sources, on the next start). Served under the same
// Content-Security-Policy as /docs: this origin only, no inline script.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { bundleConsole } from '../../scripts/bundle.js';
import type { DocsFile, DocsFiles } from '../docs/files.ts';
import { root } from '../root.ts';

const ours = (name: string) => fileURLToPath(new URL(`src/console/${name}`, root));

let loading: Promise<DocsFiles> | undefined;

/** The files, read (and the script bundled) on first use, then kept; a failure is not kept. */
export function consoleFiles(): Promise<DocsFiles> {
  loading ??= readConsoleFiles().catch((error) => {
    loading = undefined;
    throw error;
  });
  return loading;
}

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
