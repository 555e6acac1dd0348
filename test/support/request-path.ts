// Which files of src/ a request runs through, read off V8's own coverage: the functions of each file
// called while the request was made. A reader who follows the request from the socket to the SQL
// and back opens these files (docs/development.md, "The request path").

import { readFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { fileURLToPath } from 'node:url';

const SOURCES = new URL('../../src/', import.meta.url).href;

/**
 * The files of src/ whose functions ran during every one of `times` calls of `request` (made one after
 * another, after one call to warm up): a file seen only once belongs to a timer that happened to fire
 * then, not to the request.
 */
export async function requestPath(request: () => Promise<unknown>, times = 3): Promise<Map<string, number>> {
  await request(); // statements prepared, caches filled: the path every later request takes
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    let common: Set<string> | undefined;
    for (let index = 0; index < times; index++) {
      await session.post('Profiler.takePreciseCoverage'); // counts start again from here
      await request();
      const { result } = await session.post('Profiler.takePreciseCoverage');
      const ran = new Set(
        result
          .filter(({ url, functions }) => url.startsWith(SOURCES) && functions.some(({ ranges }) => ranges[0].count > 0))
          .map(({ url }) => url),
      );
      common = common ? new Set([...common].filter((url) => ran.has(url))) : ran;
    }
    await session.post('Profiler.stopPreciseCoverage');
    const lines = new Map<string, number>();
    for (const url of [...(common ?? [])].sort()) {
      lines.set(url.slice(SOURCES.length), readFileSync(fileURLToPath(url), 'utf8').split('\n').length - 1);
    }
    return lines;
  } finally {
    session.disconnect();
  }
}
