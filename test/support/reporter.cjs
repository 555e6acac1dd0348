// mocha's spec reporter, then one plain line that CI counts: "N passed, N failed, N skipped".
// A pending (skipped) test is counted as skipped, never as passed.
//
// Before that line, the files that took longest, each with its time from its first suite's start to its
// last's end (hooks, servers and browsers included): where a run's time goes, in every CI log.
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
    const started = new Map();
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.file && suite.parent?.root) started.set(suite, performance.now());
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      const since = started.get(suite);
      if (since === undefined) return;
      started.delete(suite);
      spent.set(suite.file, (spent.get(suite.file) ?? 0) + performance.now() - since);
    });
    runner.once(EVENT_RUN_END, () => {
      if (spent.size > 1) {
        const slowest = [...spent].sort((a, b) => b[1] - a[1]).slice(0, SLOWEST_FILES);
        const root = `${process.cwd()}/`;
        process.stdout.write(`\nThe slowest files of the ${spent.size} (s):\n`);
        for (const [file, ms] of slowest) process.stdout.write(`${(ms / 1000).toFixed(1).padStart(7)}  ${file.replace(root, '')}\n`);
      }
      const { passes, failures, pending } = this.stats;
      process.stdout.write(`\n${passes} passed, ${failures} failed, ${pending} skipped\n`);
      // Unref'd: it fires only if something else keeps the process alive.
      setTimeout(() => exitLingering(failures), LINGER_MS).unref();
    });
  }
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
