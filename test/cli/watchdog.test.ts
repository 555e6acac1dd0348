// The suites' watchdog (test/support/watchdog.ts) against a real `rowbase serve`: a server that does not
// answer for longer than the line is reported, a delay of the test's own process is not.
import { expect } from 'chai';
import { type ServeProcess, Workspace } from '../support/process.ts';
import { watch } from '../support/watchdog.ts';

/**
 * Longer than the watchdog's line (2.5 s) by more than a slow host takes off as this process's own delay
 * (the answer waits unread meanwhile), and shorter than a probe's 5 s before it gives up.
 */
const STALL_MS = 4000;

describe('the watchdog of the suites that drive writes', () => {
  let workspace: Workspace;
  let server: ServeProcess;
  before(async () => {
    workspace = await Workspace.create();
    server = await workspace.serve();
  });
  after(() => workspace?.cleanUp());

  it('reports a server that answers nothing for longer than its line', async () => {
    const watching = watch(server);
    // Stopped, the server's process waits for no core: nothing of the host's to take off.
    server.signal('SIGSTOP');
    await new Promise((resolve) => setTimeout(resolve, STALL_MS));
    server.signal('SIGCONT');
    const problems = await watching.stop();
    expect(problems.join('; ')).to.match(
      /^\/health(\/ready)? answered after \d+ ms \(of them the server's main thread waited \d+ ms for a core, this process \d+ ms\)/,
    );
  });

  it("takes off the time the test's own process could not read an answer", async () => {
    const watching = watch(server);
    // This process busy (a test hashing what it read, say): an answer that came waits unread meanwhile.
    const until = performance.now() + STALL_MS;
    while (performance.now() < until);
    expect(await watching.stop()).to.deep.equal([]);
  });
});
