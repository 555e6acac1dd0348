// A watchdog for the suites that drive concurrent writes: while each test of the suite runs, it asks
// the server under test for `/health` (liveness, no query) and `/health/ready` (readiness: a query
// through SQLite's writer queue or PostgreSQL's pool) in turn, and fails the test when any answer is
// slower than 2.5 s or is not 200. A write that holds the database across a wait of its own stops
// every request of the service, health checks included (issue 51): a suite with the watchdog finds it
// even where its own requests would only have been slow.
//
// What the host did is not the server's: an answer's time is counted without the time the server's main
// thread waited for a core (its run-queue wait, from /proc/<pid>/schedstat) and, where the server runs
// in a process of its own, without the time this process's event loop could not run (the lateness of a
// timer), during which an answer that had come waited unread. A slow answer names all three.
import { readFileSync } from 'node:fs';
import { checkResponse } from './contract.ts';

/**
 * Slowest answer the watchdog lets pass, in ms, the host's delays taken off: far under the stalls it
 * is for (issue 51's lasted a minute), and over what a loaded host takes to answer (1,494 ms once, with
 * CI's two suites and other work beside this one).
 */
const MAX_MS = 2500;
/** How long a probe waits before it counts as unanswered, in ms. */
const GIVE_UP_MS = 5000;
/** The pause between two probes, in ms. */
const PAUSE_MS = 25;
/** The period of the timer whose lateness is this process's own delay, in ms. */
const TICK_MS = 10;

/** The server a suite watches: its base URL, and its process's id when it runs in a process of its own. */
export interface Watched {
  url: string;
  pid?: number;
}

/** The watchdog of a suite. */
export interface Watchdog {
  /**
   * Lets the test under way be slow to answer health checks, for `reason`: one write that holds SQLite's
   * writer for long by design (a row of 15 MB), which readiness waits behind. Not for races.
   */
  excuse(reason: string): void;
}

/**
 * Watches the server `server()` answers (asked before each test, so a suite may start it in `before`)
 * through every test of the enclosing `describe`: an `afterEach` fails on the first slow or failed
 * answer, naming it.
 */
export function watchHealth(server: () => Watched): Watchdog {
  let watching: Watch | undefined;
  let excused: string | undefined;
  beforeEach(() => {
    excused = undefined;
    watching = watch(server());
  });
  afterEach(async () => {
    const seen = await watching?.stop();
    watching = undefined;
    if (seen && seen.length > 0 && excused === undefined) throw new Error(`the service stalled while the test ran: ${seen.join('; ')}`);
  });
  return {
    excuse(reason) {
      excused = reason;
    },
  };
}

export interface Watch {
  /** Ends the probes, after the one under way; answers what went wrong. */
  stop(): Promise<string[]>;
}

/** Probes `server` until stopped (watchHealth's, a test at a time; test/cli/watchdog.test.ts's own). */
export function watch(server: Watched): Watch {
  const delays = new Delays(server.pid);
  const problems: string[] = [];
  let running = true;
  let wake: (() => void) | undefined;
  const loop = (async () => {
    for (let probe = 0; running; probe++) {
      const path = probe % 2 === 0 ? '/health' : '/health/ready';
      const problem = await ask(server.url, path, delays);
      if (problem && problems.length < 10) problems.push(problem);
      if (!running) break;
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, PAUSE_MS);
      });
    }
  })();
  return {
    async stop() {
      running = false;
      wake?.();
      await loop;
      delays.stop();
      return problems;
    },
  };
}

/** The host's delays so far, in ms: the server's main thread's wait for a core, and this process's own. */
interface Delayed {
  server: number;
  mine: number;
}

/** Counts the host's delays while a watch runs (the file's head says which). */
class Delays {
  private late = 0;
  private last = performance.now();
  private readonly timer: NodeJS.Timeout | undefined;

  /** `pid`: the server's process, this one when not given; this process's delays count only when it is another. */
  constructor(private readonly pid = process.pid) {
    if (pid === process.pid) return;
    this.timer = setInterval(() => {
      this.late += this.lateness();
      this.last = performance.now();
    }, TICK_MS);
    this.timer.unref();
  }

  now(): Delayed {
    return { server: this.waitedForCore(), mine: this.timer === undefined ? 0 : this.late + this.lateness() };
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** How late the timer is, so far, in ms. */
  private lateness(): number {
    return Math.max(0, performance.now() - this.last - TICK_MS);
  }

  /** The server's main thread's run-queue wait since it started, in ms; 0 where Linux's /proc does not tell. */
  private waitedForCore(): number {
    try {
      return Number(readFileSync(`/proc/${this.pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6 || 0;
    } catch {
      return 0;
    }
  }
}

/** One probe of `path`: undefined when it answered 200 within MAX_MS, the host's delays taken off; else what went wrong. */
async function ask(url: string, path: string, delays: Delays): Promise<string | undefined> {
  const started = performance.now();
  const before = delays.now();
  try {
    const response = await fetch(url + path, { signal: AbortSignal.timeout(GIVE_UP_MS) });
    const text = await response.text();
    checkResponse({ method: 'GET', path, status: response.status, headers: response.headers, text });
    const ms = Math.round(performance.now() - started);
    if (response.status !== 200) return `${path} answered ${response.status} after ${ms} ms: ${text.slice(0, 200)}`;
    const after = delays.now();
    const server = Math.round(after.server - before.server);
    const mine = Math.round(after.mine - before.mine);
    if (ms - server - mine > MAX_MS)
      return `${path} answered after ${ms} ms (of them the server's main thread waited ${server} ms for a core, this process ${mine} ms)`;
    return undefined;
  } catch (error) {
    return `${path} failed after ${Math.round(performance.now() - started)} ms: ${(error as Error).message}`;
  }
}
