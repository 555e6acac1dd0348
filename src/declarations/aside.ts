// A worker thread running a module of the declarations (the bundle's chunk that holds it), for work that
// would hold the thread that answers requests for a second or more: the contract's diff (contract.ts),
// the reading of a large declaration (format.ts). Each module, in a worker handed its own workerData,
// does its work and posts what it found.
import { Worker } from 'node:worker_threads';

/**
 * A worker running the module at `url` (its `import.meta.url`), handed `data`. Run from TypeScript (tsx:
 * the tests, bench/declarations.ts), the worker registers tsx's loader before it imports it, as Node 20's
 * workers do not run the parent's `--import`.
 */
export function workerOf(url: string, data: unknown): Worker {
  if (!url.endsWith('.ts')) return new Worker(new URL(url), { workerData: data });
  const source = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(url)}); })`;
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
