// The entry of the declarations' worker thread (aside.ts; its own entry of the bundle, scripts/bundle.js):
// it answers each job posted to it, one after the other, loading only the module of the work when first
// asked (format.ts's reading, contract.ts's diff), the diff's as soon as a declaration is read: a plan's diff
// follows its reading (plan.ts), and the module loads while the server checks the declaration.
// Loaded through the server's entry instead, the worker loaded the whole service (knex, the data layer)
// first: seconds under load.
import { getHeapSpaceStatistics } from 'node:v8';
import { parentPort } from 'node:worker_threads';
import { collector } from '../memory.ts';
import type { AsideJob } from './aside.ts';

/** What the worker answers to `job`, by the module of its work. */
async function answerOf(job: AsideJob): Promise<unknown> {
  if ('heapSpaces' in job) return getHeapSpaceStatistics();
  if ('readDeclaration' in job) {
    const { readAnswer } = await import('./format.ts');
    const answer = readAnswer(job.readDeclaration);
    // Once the answer is posted, and only for a declaration read (a refused one is planned no further); a
    // module that fails to load fails the diff that asks for it.
    if ('declaration' in answer) setImmediate(() => import('./contract.ts').catch(() => {}));
    return answer;
  }
  const { diffAnswer } = await import('./contract.ts');
  return diffAnswer(job.contractDiff);
}

/**
 * How long after its last job the worker's heap is collected, and again as long after. A diff of many
 * collections grows it, its young generation to V8's largest, which the worker, kept warm for the next
 * plan (aside.ts), would otherwise hold until it ends (docs/performance.md, "Memory"); V8 shrinks the young
 * generation only in a collection that finds allocation slow, hence the wait, and the second try
 * (memory.ts, reduceWhileIdle, does the same for the server's own thread).
 */
const QUIET_MS = 5000;
const collect = collector();
let running = 0;
let quiet: NodeJS.Timeout | undefined;

// A job that fails fails alone: its error goes back to its caller, and the worker answers the next.
parentPort?.on('message', async ({ id, job }: { id: number; job: AsideJob }) => {
  running++;
  clearTimeout(quiet);
  try {
    parentPort?.postMessage({ id, answer: await answerOf(job) });
  } catch (error) {
    parentPort?.postMessage({ id, failed: String((error as Error)?.stack ?? error) });
  } finally {
    if (--running === 0) quiet = setTimeout(collectTwice, QUIET_MS);
  }
});

function collectTwice(): void {
  collect();
  quiet = setTimeout(collect, QUIET_MS);
}
