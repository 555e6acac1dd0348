// A worker thread for work of the declarations that would hold the thread that answers requests for a
// second or more: the reading of a large declaration (format.ts), the contract's diff (contract.ts). One
// worker, started when first asked, answers the jobs one after the other and ends once idle for
// IDLE_MS: a plan, its apply and the plan again find it warm (its code compiled, the documents parsed;
// the first plan's worker, cold, spent seconds more), and an idle server holds none of it.
import { setFlagsFromString } from 'node:v8';
import { Worker } from 'node:worker_threads';
import { unavailable } from '../errors.ts';
import { holdYoung, reduceNow } from '../memory.ts';

/**
 * A job of the worker (worker.ts): a declaration's text to read, the documents and models to compare, or its
 * heap's spaces to report (V8's getHeapSpaceStatistics(): what the worker holds, for the tests and a probe).
 */
export type AsideJob = { readDeclaration: string } | { contractDiff: unknown } | { heapSpaces: true };

/** How long the worker waits for its next job before it ends. */
const IDLE_MS = 30_000;

/**
 * The worker's semi-spaces, in MB: a young generation of 8 MB, where V8 grows it to 32 MB, as it
 * does the server's. A diff of many collections keeps little of what it allocates, and the
 * largest young generation held the worker's heap far above what it kept, on top of the server's
 * (docs/performance.md, "The whole run's peak"). Set as V8's `--max-semi-space-size`, not the worker's
 * resourceLimits, which that flag overrides when the process was started with it (as an operator may start
 * the server): a flag set now sizes the isolates started after it, the worker's, not the server's own. And
 * as its smallest (`--min-semi-space-size`), so that the worker needs no growth, which the server's
 * thread holds back while the worker lives (holdYoung()).
 */
const SEMI_SPACE_MB = 4;

/**
 * The worker's old generation, in MB, before its first full collection (V8's `--initial-old-space-size`,
 * set as SEMI_SPACE_MB is): past it, the old generation grows to half again what a collection left
 * (bin/rowbase's `--heap-growing-percent`). By default V8 lets a new isolate's old generation grow much
 * further first, and a diff of many collections, which keeps little, filled it with garbage; the size is
 * the one the bench read lowest (docs/performance.md, "The worker's young generation, again, and its old
 * generation's start").
 */
const OLD_SPACE_START_MB = 16;

interface Held {
  worker: Worker;
  /** Lets the server's young generation grow as V8 would again (holdYoung()): called as the worker ends. */
  release: () => void;
  waiting: Map<number, { resolve: (answer: unknown) => void; reject: (error: Error) => void }>;
  idle?: NodeJS.Timeout;
}

let held: Held | undefined;
let lastId = 0;

/** A job not answered within its time (aside's `deadlineMs`): the worker running it was ended. */
export class OverTime extends Error {}

/**
 * What the worker answers to `job`; rejected when it fails or ends first. With `deadlineMs`, a job not
 * answered that many milliseconds after it was asked (its wait for the jobs before it counted) is
 * rejected with OverTime, and the worker is ended: a job's work, synchronous, cannot be stopped otherwise.
 * The other jobs waiting in it are refused (503 `unavailable`: asked again, they find a worker of their
 * own). No deadline by default.
 */
export async function aside<T>(job: AsideJob, deadlineMs?: number): Promise<T> {
  const worker = held ?? start();
  clearTimeout(worker.idle);
  worker.worker.ref();
  const id = ++lastId;
  let deadline: NodeJS.Timeout | undefined;
  try {
    return await new Promise<T>((resolve, reject) => {
      worker.waiting.set(id, { resolve: resolve as (answer: unknown) => void, reject });
      worker.worker.postMessage({ id, job });
      if (deadlineMs === undefined) return;
      deadline = setTimeout(() => {
        reject(new OverTime(`the declarations' worker did not answer within ${deadlineMs} ms`));
        for (const [other, waiting] of worker.waiting)
          if (other !== id)
            waiting.reject(unavailable("The work of another plan ran past its time, and was stopped with this request's: try again."));
        stop(worker);
      }, deadlineMs);
    });
  } finally {
    clearTimeout(deadline);
    worker.waiting.delete(id);
    if (worker.waiting.size === 0 && held === worker) {
      worker.worker.unref();
      worker.idle = setTimeout(() => stop(worker), IDLE_MS).unref();
    }
  }
}

/**
 * The worker, running worker.ts (the bundle's `declarations-worker.mjs`, beside the chunk that holds this
 * module). Run from TypeScript (tsx: the tests, bench/declarations.ts), it registers tsx's loader before it
 * imports it, as Node 20's workers do not run the parent's `--import`.
 */
function start(): Held {
  const entry = new URL(import.meta.url.endsWith('.ts') ? './worker.ts' : './declarations-worker.mjs', import.meta.url);
  setFlagsFromString(`--max-semi-space-size=${SEMI_SPACE_MB}`);
  setFlagsFromString(`--min-semi-space-size=${SEMI_SPACE_MB}`);
  setFlagsFromString(`--initial-old-space-size=${OLD_SPACE_START_MB}`);
  const worker = import.meta.url.endsWith('.ts')
    ? new Worker(`import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); })`, {
        eval: true,
      })
    : new Worker(entry);
  // While the worker loads its code, on a thread of its own, the server's heap is made as small as it can
  // be: the worker's heap comes on top of it, and a server that has been busy holds a young generation at
  // its largest and an old one of garbage (docs/performance.md, "The server's heap reduced as the worker starts");
  // and while the worker lives, the server's young generation grows back to 16 MB at most (holdYoung()).
  reduceNow();
  const started: Held = { worker, waiting: new Map(), release: holdYoung() };
  held = started;
  worker.on('message', ({ id, answer, failed }: { id: number; answer?: unknown; failed?: string }) => {
    const waiting = started.waiting.get(id);
    if (failed === undefined) waiting?.resolve(answer);
    else waiting?.reject(new Error(`the declarations' worker failed: ${failed}`));
  });
  const fail = (error: Error) => {
    if (held === started) held = undefined;
    started.release();
    for (const { reject } of started.waiting.values()) reject(error);
  };
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`the declarations' worker ended (exit code ${code}) before it answered`)));
  return started;
}

function stop(worker: Held): void {
  if (held === worker) held = undefined;
  void worker.worker.terminate();
}
