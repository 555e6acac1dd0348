// Row writes on SQLite, grouped: the writes that arrive while a transaction is under way share the
// next one, one after another, and commit together. SQLite writes one transaction at a time, on one
// connection; a transaction of its own for each single-row write would spend most of its time
// beginning, committing and waiting its turn. A write is answered only after its group has committed,
// so a 2xx still means stored.
//
// Inserts into one collection queued side by side go further: they become one insert of all their
// rows (each request's rows keep consecutive ids and seqs, in the order the requests came), so many
// small concurrent inserts cost about what one batch does; patches of one collection likewise become
// one read of their rows, one update and one insert of their events, applied in the order they came.
//
// A write that fails (a 404, say) rolls its whole group back: then every write of the group runs again
// in a transaction of its own, so that it succeeds or fails alone, exactly as it would have without the
// group. Writes are functions of their input and the database, so running one again is safe.
//
// A group's transaction is the statements `begin immediate` and `commit`, prepared once, on Knex's
// connection, held from the pool for the group: a Knex transaction costs several times as much, in
// hand-offs to the driver's thread and on the main thread (insert-1: 0.12 → 0.16 × baseline (a)).
//
// On PostgreSQL each write is a transaction of its own: there, writers to different collections run
// at once on the pool's connections.
import type { Knex } from 'knex';
import type { DatabaseParams } from './changes.ts';
import type { WriteTx } from './query.ts';

type Work<T> = (trx: WriteTx) => Promise<T>;
/** Does the writes of several requests as one, in order, and answers each one's result, in order. */
export type MergedWork<I, R> = (trx: WriteTx, items: I[]) => Promise<R[]>;

interface Job {
  work: Work<unknown>;
  /** A write that may share its statements with the writes of the same `key` queued beside it. */
  merge?: { key: string; size: number; item: unknown; work: MergedWork<unknown, unknown> };
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** The writes of one group at most: a bound on how long the first of them waits for its answer. */
const MAX_GROUP = 200;
/** The rows of writes merged into one at most (a request's own rows are never split). */
const MAX_MERGED_ROWS = 5000;

/** Runs `work` as one atomic write: in a group on SQLite, in a transaction of its own on PostgreSQL. */
export function writeTransaction<T>(knex: Knex, work: Work<T>): Promise<T> {
  const { writes } = knex.userParams as DatabaseParams;
  return writes ? writes.run(work) : knex.transaction(work);
}

/**
 * SQLite: runs the write `item` (of `size` rows) atomically, with `work`, merged with the writes of the
 * same `key` queued beside it (one call of `work` for all of them), and answers its result. PostgreSQL
 * merges its inserts its own way (merged-inserts.ts).
 */
export function mergedTransaction<I, R>(knex: Knex, key: string, size: number, item: I, work: MergedWork<I, R>): Promise<R> {
  const { writes } = knex.userParams as DatabaseParams;
  if (!writes) throw new Error('mergedTransaction() is for SQLite, whose row writes are grouped');
  return writes.merge(key, size, item, work);
}

/** SQLite's queue of writes, run in groups on Knex's one connection. */
export class GroupedWrites {
  private readonly queue: Job[] = [];
  private running = false;
  /** Transactions begun for groups so far, and how many writes they held (for tests and tuning). */
  readonly stats = { groups: 0, writes: 0, merged: 0 };

  constructor(private readonly knex: Knex) {}

  run<T>(work: Work<T>): Promise<T> {
    return this.enqueue({ work }) as Promise<T>;
  }

  merge<I, R>(key: string, size: number, item: I, work: MergedWork<I, R>): Promise<R> {
    const alone = async (trx: WriteTx) => (await work(trx, [item]))[0];
    return this.enqueue({ work: alone, merge: { key, size, item, work: work as MergedWork<unknown, unknown> } }) as Promise<R>;
  }

  private enqueue(job: Omit<Job, 'resolve' | 'reject'>): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.queue.push({ ...job, resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  /** The writes queued with the same key as `first`, taken out of the queue, up to MAX_MERGED_ROWS rows in all. */
  private takeMergeable(first: Job): Job[] {
    const key = first.merge!.key;
    const taken = [first];
    let rows = first.merge!.size;
    for (let index = 0; index < this.queue.length; ) {
      const job = this.queue[index];
      if (job.merge?.key === key && rows + job.merge.size <= MAX_MERGED_ROWS) {
        rows += job.merge.size;
        taken.push(job);
        this.queue.splice(index, 1);
      } else index++;
    }
    return taken;
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
      await this.transaction(async (trx) => {
        while (this.queue.length > 0 && group.length < MAX_GROUP) {
          const job = this.queue.shift()!;
          if (!job.merge) {
            group.push(job);
            this.stats.writes++;
            results.push(await job.work(trx));
            continue;
          }
          const merged = this.takeMergeable(job);
          group.push(...merged);
          this.stats.writes += merged.length;
          this.stats.merged += merged.length - 1;
          results.push(
            ...(await job.merge.work(
              trx,
              merged.map((each) => each.merge!.item),
            )),
          );
        }
      });
    } catch (error) {
      // Rolled back. A write alone failed as it would have without the group; otherwise each write
      // runs again alone, in order, as if there had been no group.
      if (group.length === 1) return group[0].reject(error);
      for (const job of group) await this.transaction(job.work).then(job.resolve, job.reject);
      return;
    }
    for (const [index, job] of group.entries()) job.resolve(results[index]);
  }

  /**
   * Runs `work` in a transaction on Knex's connection, which it holds meanwhile (Knex's own
   * transactions, and its other queries, wait in its pool). Rolls back when `work` or the commit fails.
   */
  private async transaction<T>(work: Work<T>): Promise<T> {
    const { sqlite } = this.knex.userParams as DatabaseParams;
    const connection = await this.knex.client.acquireConnection();
    let settle!: { commit(): void; rollBack(error: unknown): void };
    const executionPromise = new Promise<void>((commit, rollBack) => {
      settle = { commit, rollBack };
    });
    executionPromise.catch(() => {}); // for announceChange(), which listens to it; no one else need
    const trx: WriteTx = {
      userParams: this.knex.userParams,
      client: { dialect: this.knex.client.dialect, acquireConnection: () => Promise.resolve(connection) },
      executionPromise,
    };
    const run = (sql: string) => sqlite!.inTransaction(trx, sql, []);
    try {
      // `immediate`: the write lock at once, waiting its turn (busy_timeout) behind another process.
      await run('begin immediate');
      try {
        const result = await work(trx);
        await run('commit');
        settle.commit();
        return result;
      } catch (error) {
        // An error that made SQLite roll back already leaves no transaction to roll back.
        await run('rollback').catch(() => {});
        settle.rollBack(error);
        throw error;
      }
    } finally {
      await this.knex.client.releaseConnection(connection);
    }
  }
}
