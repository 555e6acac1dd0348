// Waiting for what a client of the feed has received (FeedClient, the changes streams): each wait is
// looked at again whenever the client says something came (changed()), never on a timer.

/** What a wait waits for, and what ends it otherwise. */
interface Wait {
  /** Holds once what is waited for has come. */
  done: () => boolean;
  /** Named in the error at the deadline. */
  what: string;
  deadlineMs: number;
  /** Throws when what came is wrong (an invalid message): looked at first, each time. */
  check: () => void;
  /** Once `done()` does not hold, an error when it never will (a close while waiting for something else). Default: none. */
  ended?: () => Error | undefined;
  /** What has come, for the error at the deadline. */
  progress: () => string;
}

export class Waits {
  private readonly listeners = new Set<() => void>();

  /** Resolves once `done()` holds; rejects when `check` throws, when `ended` says so, or at the deadline. */
  until({ done, what, deadlineMs, check, ended = () => undefined, progress }: Wait): Promise<void> {
    return new Promise((resolve, reject) => {
      const look = () => {
        let failure: unknown;
        try {
          check();
          if (done()) {
            finish();
            resolve();
            return;
          }
          failure = ended();
        } catch (error) {
          failure = error;
        }
        if (failure !== undefined) {
          finish();
          reject(failure);
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`no ${what} within ${deadlineMs} ms; ${progress()}`));
      }, deadlineMs);
      const finish = () => {
        clearTimeout(timer);
        this.listeners.delete(look);
      };
      this.listeners.add(look);
      look();
    });
  }

  /** Something came: every wait looks again. */
  changed(): void {
    for (const listener of [...this.listeners]) listener();
  }
}
