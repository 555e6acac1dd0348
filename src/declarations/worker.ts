// The entry of the declarations' worker thread (aside.ts; its own entry of the bundle, scripts/bundle.js):
// it answers each job posted to it, one after the other, loading only the module of the work when first
// asked (format.ts's reading, contract.ts's diff). Loaded through the server's entry instead, the worker
// loaded the whole service (knex, the data layer) first: seconds under load.
import { parentPort } from 'node:worker_threads';
import type { AsideJob } from './aside.ts';

/** What the worker answers to `job`, by the module of its work. */
async function answerOf(job: AsideJob): Promise<unknown> {
  if ('readDeclaration' in job) {
    const { readAnswer } = await import('./format.ts');
    return readAnswer(job.readDeclaration);
  }
  const { diffAnswer } = await import('./contract.ts');
  return diffAnswer(job.contractDiff);
}

// A job that fails fails alone: its error goes back to its caller, and the worker answers the next.
parentPort?.on('message', async ({ id, job }: { id: number; job: AsideJob }) => {
  try {
    parentPort?.postMessage({ id, answer: await answerOf(job) });
  } catch (error) {
    parentPort?.postMessage({ id, failed: String((error as Error)?.stack ?? error) });
  }
});
