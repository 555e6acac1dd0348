// A watchdog for the suites that drive concurrent writes: while each test of the suite runs, it asks
// the server under test for `/health` (liveness, no query) and `/health/ready` (readiness: a query
// through SQLite's writer queue or PostgreSQL's pool) in turn, and fails the test when any answer is
// slower than 2.5 s or is not 200. A write that holds the database across a wait of its own stops
// every request of the service, health checks included (issue 51): a suite with the watchdog finds it
// even where its own requests would only have been slow.
import { checkResponse } from './contract.ts';

/**
 * Slowest answer the watchdog lets pass, in ms: far under the stalls it is for (issue 51's lasted a
 * minute), and over what a loaded host takes to answer (1,494 ms once, with CI's two suites and other
 * work beside this one).
 */
const MAX_MS = 2500;
/** How long a probe waits before it counts as unanswered, in ms. */
const GIVE_UP_MS = 5000;
/** The pause between two probes, in ms. */
const PAUSE_MS = 25;

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
export function watchHealth(server: () => { url: string }): Watchdog {
  let watching: Watch | undefined;
  let excused: string | undefined;
  beforeEach(() => {
    excused = undefined;
    watching = watch(server().url);
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

interface Watch {
  /** Ends the probes, after the one under way; answers what went wrong. */
  stop(): Promise<string[]>;
}

function watch(url: string): Watch {
  const problems: string[] = [];
  let running = true;
  let wake: (() => void) | undefined;
  const loop = (async () => {
    for (let probe = 0; running; probe++) {
      const path = probe % 2 === 0 ? '/health' : '/health/ready';
      const problem = await ask(url, path);
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
      return problems;
    },
  };
}

/** One probe of `path`: undefined when it answered 200 within MAX_MS, else what went wrong. */
async function ask(url: string, path: string): Promise<string | undefined> {
  const started = performance.now();
  try {
    const response = await fetch(url + path, { signal: AbortSignal.timeout(GIVE_UP_MS) });
    const text = await response.text();
    checkResponse({ method: 'GET', path, status: response.status, headers: response.headers, text });
    const ms = Math.round(performance.now() - started);
    if (response.status !== 200) return `${path} answered ${response.status} after ${ms} ms: ${text.slice(0, 200)}`;
    if (ms > MAX_MS) return `${path} answered after ${ms} ms`;
    return undefined;
  } catch (error) {
    return `${path} failed after ${Math.round(performance.now() - started)} ms: ${(error as Error).message}`;
  }
}
