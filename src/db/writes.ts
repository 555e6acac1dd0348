// Row writes on SQLite, grouped: the writes that arrive while a transaction is under way share the
// next one, one after another, and commit together. SQLite writes one transaction at a time, on one
// connection; a transaction of its own for each single-row write would spend most of its time
// beginning, committing and waiting its turn. A write is answered only after its group has committed,
// so a 2xx still means stored.
//
// A write that fails (a 404, say) rolls its whole group back: then every write of the group runs again
// in a transaction of its own, so that it succeeds or fails alone, exactly as it would have without the
// group. Writes are functions of their input and the database, so running one again is safe.
//
// On PostgreSQL each write is a transaction of its own: there, writers to different collections run
// at once on the pool's connections.
import type { Knex } from 'knex';
import type { DatabaseParams } from './changes.ts';

type Work<T> = (trx: Knex.Transaction) => Promise<T>;

interface Job {
  work: Work<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** The writes of one group at most: a bound on how long the first of them waits for its answer. */
const MAX_GROUP = 200;

/** Runs `work` as one atomic write: in a group on SQLite, in a transaction of its own on PostgreSQL. */
export function writeTransaction<T>(knex: Knex, work: Work<T>): Promise<T> {
  const { writes } = knex.userParams as DatabaseParams;
  return writes ? writes.run(work) : knex.transaction(work);
}

/** SQLite's queue of writes, run in groups on Knex's one connection. */
export class GroupedWrites {
  private readonly queue: Job[] = [];
  private running = false;
  /** Transactions begun for groups so far, and how many writes they held (for tests and tuning). */
  readonly stats = { groups: 0, writes: 0 };

  constructor(private readonly knex: Knex) {}

  run<T>(work: Work<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) await this.runGroup();
    } finally {
      this.running = false;
    }
  }

  /** One transaction: the queued writes, and those that arrive while it runs, up to MAX_GROUP. */
  private async runGroup(): Promise<void> {
    const group: Job[] = [];
    const results: unknown[] = [];
    this.stats.groups++;
    try {
      await this.knex.transaction(async (trx) => {
        while (this.queue.length > 0 && group.length < MAX_GROUP) {
          const job = this.queue.shift()!;
          group.push(job);
          this.stats.writes++;
          results.push(await job.work(trx));
        }
      });
    } catch (error) {
      // Rolled back. A write alone failed as it would have without the group; otherwise each write
      // runs again alone, in order, as if there had been no group.
      if (group.length === 1) return group[0].reject(error);
      for (const job of group) await this.knex.transaction(job.work).then(job.resolve, job.reject);
      return;
    }
    for (const [index, job] of group.entries()) job.resolve(results[index]);
  }
}
