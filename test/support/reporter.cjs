// mocha's spec reporter, then one plain line that CI counts: "N passed, N failed, N skipped".
// A pending (skipped) test is counted as skipped, never as passed.
//
// Before that line, the files that took longest, each with its time from its first suite's start to its
// last's end (hooks, servers and browsers included): where a run's time goes, in every CI log.
//
// With ROWBASE_TEST_TIMINGS=<file>, every file's time (s) and the test process's own CPU time in it (s)
// are written there as JSON, slowest first: what a file spends waiting (on children, databases, timers)
// is the difference.
//
// Then a guard: mocha (without --exit) ends once nothing is left open, so a server, socket or timer a
// failed test left behind would keep it waiting for ever, and CI with it. When the process is still
// alive LINGER_MS after the run, the guard names what holds it open and exits with the run's status. It
// does not fail a run that passed: the plain line counts tests, and the exit status agrees with it.
const Mocha = require('mocha');

const { EVENT_RUN_END, EVENT_SUITE_BEGIN, EVENT_SUITE_END } = Mocha.Runner.constants;

/** How many of the slowest files are listed after a run of more than one. */
const SLOWEST_FILES = 15;

/** How long the process may take to end after the run, closing what the tests closed, before the guard ends it. */
const LINGER_MS = 10_000;

class CountingSpec extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    /** By file: ms spent in its top-level suites. */
    const spent = new Map();
    /** By file: µs of this process's CPU in its top-level suites. */
    const busy = new Map();
    const started = new Map();
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.file && suite.parent?.root) started.set(suite, { at: performance.now(), cpu: process.cpuUsage() });
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      const since = started.get(suite);
      if (since === undefined) return;
      started.delete(suite);
      const cpu = process.cpuUsage(since.cpu);
      spent.set(suite.file, (spent.get(suite.file) ?? 0) + performance.now() - since.at);
      busy.set(suite.file, (busy.get(suite.file) ?? 0) + cpu.user + cpu.system);
    });
    runner.once(EVENT_RUN_END, () => {
      if (spent.size > 1) {
        const slowest = [...spent].sort((a, b) => b[1] - a[1]).slice(0, SLOWEST_FILES);
        const root = `${process.cwd()}/`;
        process.stdout.write(`\nThe slowest files of the ${spent.size} (s):\n`);
        for (const [file, ms] of slowest) process.stdout.write(`${(ms / 1000).toFixed(1).padStart(7)}  ${file.replace(root, '')}\n`);
      }
      if (process.env.ROWBASE_TEST_TIMINGS) writeTimings(process.env.ROWBASE_TEST_TIMINGS, spent, busy);
      const { passes, failures, pending } = this.stats;
      process.stdout.write(`\n${passes} passed, ${failures} failed, ${pending} skipped\n`);
      // Unref'd: it fires only if something else keeps the process alive.
      setTimeout(() => exitLingering(failures), LINGER_MS).unref();
    });
  }
}

/** Each file's time and CPU time (s), slowest first, as JSON in `path`. */
function writeTimings(path, spent, busy) {
  const root = `${process.cwd()}/`;
  const files = [...spent]
    .sort((a, b) => b[1] - a[1])
    .map(([file, ms]) => ({ file: file.replace(root, ''), seconds: +(ms / 1000).toFixed(2), cpu: +(busy.get(file) / 1e6).toFixed(2) }));
  require('node:fs').writeFileSync(path, `${JSON.stringify(files, null, 1)}\n`);
}

/** Names what still holds the process open (its guard's own timer, unref'd, is not among them), and exits. */
function exitLingering(failures) {
  const held = new Map();
  for (const resource of process.getActiveResourcesInfo()) held.set(resource, (held.get(resource) ?? 0) + 1);
  const named = [...held].map(([resource, count]) => `${resource} ×${count}`).join(', ');
  process.stderr.write(
    `\nThe run ended ${LINGER_MS / 1000} s ago, but the process is still held open by: ${named}. ` +
      `Something a test started was not closed; exiting with the run's status.\n`,
  );
  // As mocha would: the number of failures, at most 255.
  process.exit(Math.min(failures, 255));
}

module.exports = CountingSpec;
