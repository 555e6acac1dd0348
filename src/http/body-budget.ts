// How many bytes of request bodies the service works on at once (BodyBudget; config.maxBodyBytesAtOnce),
// which the body stage (body.ts) takes a share of. A body, once parsed, is many times its bytes in
// objects, and its request holds them until answered: the rows of a batch insert wait for SQLite's one
// writer with it. Without a bound, memory grows with the clients' concurrency (many connections each
// inserting large batches). With it, the requests past the budget wait, their bodies read but not yet
// parsed, and are let in, in the order they came, as those before them are answered.
//
// A request takes its share once its whole body has arrived, never while it is still arriving, so that
// a slow client holds nothing of it; a body larger than the whole budget is let in alone. Requests
// without a body never wait.

/** A request waiting for its share, and how to let it in. */
interface Waiting {
  bytes: number;
  letIn(): void;
}

/** The bytes of request bodies being worked on, against `limit` (config.maxBodyBytesAtOnce). */
export class BodyBudget {
  private held = 0;
  private readonly waiting: Waiting[] = [];

  constructor(readonly limit: number) {}

  /**
   * Holds `bytes` of the budget for a body: at once (answers undefined) if they fit and no one waits
   * before it, else (answers a promise) once every request before it is in and they fit, or nothing
   * else is held. Each `take` is matched by one `give` of the same bytes.
   */
  take(bytes: number): Promise<void> | undefined {
    if (this.waiting.length === 0 && this.fits(bytes)) {
      this.held += bytes;
      return undefined;
    }
    return new Promise((letIn) => this.waiting.push({ bytes, letIn }));
  }

  /** Gives back what a `take` held, and lets in the requests that now fit, in the order they came. */
  give(bytes: number): void {
    this.held -= bytes;
    while (this.waiting.length > 0 && this.fits(this.waiting[0].bytes)) {
      const next = this.waiting.shift()!;
      this.held += next.bytes;
      next.letIn();
    }
  }

  /** Bytes held, and requests waiting for their share (for tests and metrics). */
  get usage(): { held: number; waiting: number } {
    return { held: this.held, waiting: this.waiting.length };
  }

  private fits(bytes: number): boolean {
    return this.held === 0 || this.held + bytes <= this.limit;
  }
}
