// Which files of src/ a request runs through, read off V8's own coverage: the functions of each file
// called while the request was made. A reader who follows the request from the socket to the SQL
// and back opens these files (docs/development.md, "The request path").

import { readFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const SOURCES = new URL('../../src/', import.meta.url).href;

/** The functions of src/ called since the coverage was last taken, each as `url offset`. */
async function takeCoverage(session: Session): Promise<Set<string>> {
  const { result } = await session.post('Profiler.takePreciseCoverage');
  const ran = new Set<string>();
  for (const { url, functions } of result) {
    if (!url.startsWith(SOURCES)) continue;
    for (const { ranges } of functions) if (ranges[0].count > 0) ran.add(`${url} ${ranges[0].startOffset}`);
  }
  return ran;
}

/**
 * How long, at least, the functions that run without a request are gathered: longer than the longest
 * period of the service's frequent timers (a WAL checkpoint every 200 ms; the key uses and the usage
 * counts written every second), so that each fires whole at least once.
 */
const TIMERS_MS = 1_200;

/**
 * The files of src/ whose functions ran during every one of `times` calls of `request` (made one after
 * another, after one call to warm up), but for the functions that also ran without a request, in
 * windows as long as the longest request's and for TIMERS_MS in all: those belong to timers of the
 * service, which may fire during every request when taking the coverage takes longer than their
 * period.
 */
export async function requestPath(request: () => Promise<unknown>, times = 3): Promise<Map<string, number>> {
  await request(); // statements prepared, caches filled: the path every later request takes
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    let common: Set<string> | undefined;
    let longest = 0;
    for (let index = 0; index < times; index++) {
      const started = performance.now();
      await takeCoverage(session); // counts start again from here
      await request();
      const ran = await takeCoverage(session);
      longest = Math.max(longest, performance.now() - started);
      common = common ? new Set([...common].filter((fn) => ran.has(fn))) : ran;
    }
    const background = new Set<string>();
    const quietSince = performance.now();
    for (let index = 0; index < times || performance.now() - quietSince < TIMERS_MS; index++) {
      await takeCoverage(session);
      await delay(longest);
      for (const fn of await takeCoverage(session)) background.add(fn);
    }
    await session.post('Profiler.stopPreciseCoverage');
    const urls = new Set([...(common ?? [])].filter((fn) => !background.has(fn)).map((fn) => fn.split(' ')[0]));
    const lines = new Map<string, number>();
    for (const url of [...urls].sort()) {
      lines.set(url.slice(SOURCES.length), readFileSync(fileURLToPath(url), 'utf8').split('\n').length - 1);
    }
    return lines;
  } finally {
    session.disconnect();
  }
}
