// mocha's spec reporter, then one plain line that CI counts: "N passed, N failed, N skipped".
// A pending (skipped) test is counted as skipped, never as passed.
const Mocha = require('mocha');

const { EVENT_RUN_END } = Mocha.Runner.constants;

class CountingSpec extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once(EVENT_RUN_END, () => {
      const { passes, failures, pending } = this.stats;
      process.stdout.write(`\n${passes} passed, ${failures} failed, ${pending} skipped\n`);
    });
  }
}

module.exports = CountingSpec;
