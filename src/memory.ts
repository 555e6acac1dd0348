// The server's memory while it idles: what the start left behind, and what a burst of work grew, given back.

import { PerformanceObserver, performance } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** How often the process is looked at; at most this often a collection while it idles. */
const LOOK_MS = 5000;
/** Busy less than this share of the time since the last look: idle. */
const IDLE_UTILIZATION = 0.01;
/** A young generation larger than this, in bytes, is worth a collection while idle (V8's smallest is 2 MB). */
const LARGE_YOUNG = 8 * 1024 * 1024;

/**
 * While the process idles, one full garbage collection whenever V8's young generation is large. V8 grows it
 * up to 32 MB (two semi-spaces of 16 MB, Node's own on a 64-bit host) under load, and while loading the
 * modules at start, and shrinks it only in a full collection that finds allocation slow, which an idle server
 * never runs: without this, an idle server holds up to 32 MB of young generation for nothing (docs/performance.md,
 * "Memory"). Under load it does nothing: the event loop is busy. A collection that did not shrink it (V8
 * still counting the last burst) is tried again at the next idle look. The collection is V8's last-resort
 * one, which reduces memory: after an ordinary one, Node 22 and later keep the young generation's freed pages
 * for reuse, resident (docs/performance.md, "The idle server on Node 22 and 24"); Node 20's V8 takes it for
 * an ordinary one.
 */
export function reduceWhileIdle(): void {
  let last = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const idle = performance.eventLoopUtilization(now, last).utilization < IDLE_UTILIZATION;
    last = now;
    if (idle && youngBytes() > LARGE_YOUNG) {
      reduceNow();
      last = performance.eventLoopUtilization();
    }
  }, LOOK_MS);
  timer.unref();
}

/**
 * `start` run with V8's optimizing compiler (TurboFan) off, then on again. While the server loads, Node
 * reads each CommonJS package the bundle imports with a lexer written in JavaScript
 * (cjs-module-lexer, for the package's named exports), which runs hot enough for TurboFan to compile it
 * several times over: the compiler's pages of Node's binary and the memory it worked in stay resident
 * for the server's life, some 10 MB that an idle server held for nothing (docs/performance.md, "The idle
 * server on Node 22 and 24"). The rest of the start runs as well without it. Left alone when the
 * operator chose V8's tiers (`--jitless`, `--no-opt`, `--no-turbofan`).
 */
export async function unoptimized<T>(start: () => Promise<T>): Promise<T> {
  if (chosenByOperator(/^--(jitless|no-opt|no-turbofan|turbofan|opt)$/)) return start();
  setFlagsFromString('--no-turbofan');
  try {
    return await start();
  } finally {
    setFlagsFromString('--turbofan');
  }
}

/** The young generation holdYoung() holds this thread's to, in bytes: two semi-spaces of 8 MB. */
const HELD_YOUNG = 16 * 1024 * 1024;

/**
 * Until the function it returns is called, this thread's young generation grows no further once it is
 * HELD_YOUNG, where V8 grows it to 32 MB under load: V8 reads `--semi-space-growth-factor` each time it
 * grows a young generation, and from the first collection that finds this thread's at HELD_YOUNG or more it
 * is set to 1 (no growth) until released; before it, V8's own 2. Not back to 2 when a full collection shrinks
 * it: Node 24's V8 grows it again from the size it had reached (16 to 32 MB at once), not from the smaller
 * one it reports (docs/performance.md, "The hold kept after a shrink"). Held while another heap of the process (the declarations'
 * worker, declarations/aside.ts) holds memory on top of this one's (docs/performance.md, "The server's young
 * generation held while the worker lives"). The flag is the process's: a heap that must grow meanwhile
 * is sized from its start (`--min-semi-space-size`). Left alone when the operator chose the factor.
 */
export function holdYoung(): () => void {
  if (chosenByOperator(/^--semi-space-growth-factor\b/)) return () => {};
  if (holds++ === 0) {
    reached = false;
    heldBy = new PerformanceObserver(growAsHeld);
    heldBy.observe({ entryTypes: ['gc'] });
    growAsHeld();
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--holds > 0) return;
    heldBy?.disconnect();
    grow(2);
  };
}

let holds = 0;
let heldBy: PerformanceObserver | undefined;
let growth = 2;
/** Whether this thread's young generation has been HELD_YOUNG or more since it was held. */
let reached = false;

function growAsHeld(): void {
  if (youngCapacity() >= HELD_YOUNG) reached = true;
  grow(reached ? 1 : 2);
}

/** V8's `--semi-space-growth-factor`, set when it changes. */
function grow(factor: number): void {
  if (factor === growth) return;
  growth = factor;
  setFlagsFromString(`--semi-space-growth-factor=${factor}`);
}

/** Whether the process was started with a V8 or Node flag that `flag` matches, on its command line or in NODE_OPTIONS. */
function chosenByOperator(flag: RegExp): boolean {
  return [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((arg) => flag.test(arg));
}

let reducing: Collect | undefined;

/**
 * V8's memory-reducing collection of this thread's heap, now: its young generation back to its smallest,
 * its old one collected and compacted. It holds the thread some 50–100 ms on a busy server's heap.
 */
export function reduceNow(): void {
  reducing ??= collector();
  reducing({ type: 'major', flavor: 'last-resort' });
}

/** V8's full collection, or with `last-resort` its memory-reducing one (Node 20's V8 takes it for a full one). */
type Collect = (options?: { type: 'major'; flavor: 'last-resort' }) => void;

/** V8's full garbage collection of this thread's heap, exposed to a context made for it: the flag applies to contexts made after it. */
export function collector(): Collect {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as Collect;
  setFlagsFromString('--no-expose-gc');
  return gc;
}

/** This thread's young generation: what it holds resident, in bytes. */
function youngBytes(): number {
  return newSpace()?.physical_space_size ?? 0;
}

/** This thread's young generation: how large V8 has grown it, in bytes, ahead of what it holds resident. */
function youngCapacity(): number {
  return newSpace()?.space_size ?? 0;
}

const newSpace = () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space');
