// A worker thread for work of the declarations that would hold the thread that answers requests for a
// second or more: the contract's diff (contract.ts), the reading of a large declaration (format.ts). It
// runs worker.ts, which loads the module of the work; that module, in a worker handed its own
// workerData, does the work and posts what it found.
import { Worker } from 'node:worker_threads';

/**
 * A worker running worker.ts (the bundle's `declarations-worker.mjs`, beside the chunk that holds this
 * module), handed `data`. Run from TypeScript (tsx: the tests, bench/declarations.ts), the worker
 * registers tsx's loader before it imports it, as Node 20's workers do not run the parent's `--import`.
 */
export function workerOf(data: unknown): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./declarations-worker.mjs', import.meta.url), { workerData: data });
  const entry = new URL('./worker.ts', import.meta.url).href;
  const source = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry)}); })`;
  return new Worker(source, { eval: true, workerData: data });
}

/** The first message `worker` posts; rejected when it fails or ends before it posts one. */
export function firstMessage<T>(worker: Worker, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`${what} ended (exit code ${code}) before it answered`)));
  });
}
