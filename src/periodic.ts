// Work done in passes on a timer, one pass at a time, stopped between batches: the pruner's
// (pruner.ts) and the sweeper's (sweeper.ts).
import { EventEmitter } from 'node:events';

/**
 * Runs `work` every `intervalMs` (and on runOnce()), never two passes at once; each pass resolves with
 * what it counted, emitted as `pass`. A failed pass is handed to `failed`; the timer goes on. `work`
 * looks at `stopped` between its batches.
 */
export class Passes extends EventEmitter<{ pass: [count: number] }> {
  private pass: Promise<number> | undefined;
  private readonly timer: NodeJS.Timeout;
  /** Whether stop() was called: a pass under way ends after its batch under way. */
  stopped = false;

  constructor(
    private readonly work: () => Promise<number>,
    intervalMs: number,
    failed: (error: unknown) => void,
  ) {
    super();
    this.timer = setInterval(() => this.runOnce().catch(failed), intervalMs);
    this.timer.unref();
  }

  /** Runs a pass that starts after this call (joining one that has not started yet); resolves with its count. */
  async runOnce(): Promise<number> {
    await this.pass?.catch(() => {});
    this.pass ??= this.work()
      .then((count) => {
        this.emit('pass', count);
        return count;
      })
      .finally(() => {
        this.pass = undefined;
      });
    return this.pass;
  }

  /** Stops the timer and waits for a pass under way, which ends after its batch under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.pass?.catch(() => {});
  }
}
