// Work that arrives together, done together: the one way the data layer groups work, in two queues that
// keep one rule of failure.
// `Groups` queues items by key; `GroupedWrites` the writes of a database with one writer. How each
// groups, and what a failure does: docs/development.md, "Work done together".
import type { Knex } from 'knex';
import type { WriteTx } from './dialect.ts';

export interface GroupOptions<I, R> {
  /** Does the items of one group, of one key, together, and answers each item's result, in order. */
  run(key: string, items: I[]): Promise<R[]>;
  /** Groups of one key under way at most. Default 1. */
  maxRunning?: number;
  /** The weight of one group at most; an item heavier alone is a group of its own. Default: no bound. */
  maxWeight?: number;
}

interface Waiting<I, R> {
  item: I;
  weight: number;
  resolve(result: R): void;
  reject(error: unknown): void;
}

interface Queue<I, R> {
  running: number;
  waiting: Waiting<I, R>[];
}

export class Groups<I, R> {
  private readonly queues = new Map<string, Queue<I, R>>();
  private readonly maxRunning: number;
  private readonly maxWeight: number;

  constructor(private readonly options: GroupOptions<I, R>) {
    this.maxRunning = options.maxRunning ?? 1;
    this.maxWeight = options.maxWeight ?? Number.POSITIVE_INFINITY;
  }

  /** Does `item` (of `weight`, default 1) in a group with the items of `key` that wait beside it; answers its result. */
  add(key: string, item: I, weight = 1): Promise<R> {
    let queue = this.queues.get(key);
    if (!queue) {
      queue = { running: 0, waiting: [] };
      this.queues.set(key, queue);
    }
    const waiting = queue.waiting;
    const answer = new Promise<R>((resolve, reject) => waiting.push({ item, weight, resolve, reject }));
    this.startNext(key, queue);
    return answer;
  }

  private startNext(key: string, queue: Queue<I, R>): void {
    while (queue.running < this.maxRunning && queue.waiting.length > 0) {
      const taken = [queue.waiting.shift() as Waiting<I, R>];
      let weight = taken[0].weight;
      while (queue.waiting.length > 0 && weight + queue.waiting[0].weight <= this.maxWeight) {
        const next = queue.waiting.shift() as Waiting<I, R>;
        weight += next.weight;
        taken.push(next);
      }
      queue.running++;
      void runGroup(taken, (items) => this.options.run(key, items)).finally(() => {
        queue.running--;
        if (queue.running === 0 && queue.waiting.length === 0) this.queues.delete(key);
        else this.startNext(key, queue);
      });
    }
  }
}

/** A settled item of a group: how to answer it. */
interface Settle<R> {
  resolve(result: R): void;
  reject(error: unknown): void;
}

/**
 * Runs `taken` as one group with `run`, and answers each; the rule of a failure (see the top): one item
 * fails alone, several run again each alone, in order.
 */
async function runGroup<I, R>(taken: (Settle<R> & { item: I })[], run: (items: I[]) => Promise<R[]>): Promise<void> {
  let results: R[];
  try {
    results = await run(taken.map(({ item }) => item));
  } catch (error) {
    if (taken.length === 1) return taken[0].reject(error);
    for (const each of taken) await run([each.item]).then((alone) => each.resolve(alone[0]), each.reject);
    return;
  }
  for (const [index, each] of taken.entries()) each.resolve(results[index]);
}

/** A step of a transaction of GroupedWrites, which the database runs on the writer's connection. */
export type TransactionStep = 'begin' | 'commit' | 'rollback';

type Work<T> = (trx: WriteTx) => Promise<T>;
/**
 * Does the writes of several requests as one, in order, and answers each one's result, in order. It
 * writes with one statement (after any reads): run with no transaction around it, it still writes all
 * or nothing.
 */
export type MergedWork<I, R> = (trx: WriteTx, items: I[]) => Promise<R[]>;

/** A write that may share its statement with the writes of the same `key` queued beside it. */
interface Merge {
  key: string;
  size: number;
  item: unknown;
  work: MergedWork<unknown, unknown>;
}

interface Job {
  /** A write in a transaction of its own (or shared with the transactions queued beside it). */
  work?: Work<unknown>;
  merge?: Merge;
  /** Work done while no write runs, off the writer's connection (aside()). */
  aside?: () => Promise<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** The writes of one transaction at most: a bound on how long the first of them waits for its answer. */
const MAX_GROUP = 200;
/**
 * Merged writes under way at most: two, the second only once SECOND_GROUP writes of its key wait. Each
 * is one statement, atomic by itself: the second waits in the driver and starts as soon as the first
 * ends, where it would wait for the main thread to take the first's answer and send it. Without the
 * minimum, the second went out with a write or two, groups got smaller, and nothing was gained.
 */
const MAX_IN_FLIGHT = 2;
const SECOND_GROUP = 3;
/** The rows of writes merged into one at most (a request's own rows are never split). */
const MAX_MERGED_ROWS = 5000;

/** The queue of writes of a database with one writer, run in groups on Knex's one connection. */
export class GroupedWrites {
  private readonly queue: Job[] = [];
  /** How many writes of each merge key wait in the queue. */
  private readonly waiting = new Map<string, number>();
  /** Knex's connection while this holds it (from the first write under way until none is). */
  private connection?: Promise<unknown>;
  private held = false;
  /** Merged writes under way, and whether a transaction is (it has the connection to itself). */
  private inFlight = 0;
  private exclusive = false;
  /**
   * Groups run so far, how many writes they held, how many of those shared a merged write, and how many
   * merged writes went out while another was under way (for tests and tuning).
   */
  readonly stats = { groups: 0, writes: 0, merged: 0, overlapped: 0 };

  /** `knex`: the database's, whose one connection is the writer; `step`: runs a step of a transaction on it. */
  constructor(
    private readonly knex: Knex,
    private readonly step: (trx: WriteTx, step: TransactionStep) => Promise<unknown>,
  ) {}

  /** Runs `work` as one atomic write, in a transaction shared with the writes queued beside it. */
  run<T>(work: Work<T>): Promise<T> {
    return this.enqueue(work, undefined) as Promise<T>;
  }

  /**
   * Runs the write `item` (of `size` rows) with `work`, merged with the writes of the same `key` queued
   * beside it (one call of `work` for all of them), and answers its result.
   */
  merge<I, R>(key: string, size: number, item: I, work: MergedWork<I, R>): Promise<R> {
    return this.enqueue(undefined, { key, size, item, work: work as MergedWork<unknown, unknown> }) as Promise<R>;
  }

  /**
   * Runs `task` in the queue's order once no write is under way, and starts no write until it ends: work
   * of another connection that would otherwise make the writer wait for a lock (a checkpoint that restarts
   * the WAL, ../sqlite/readers.ts). The task must not wait for a write, nor for a query of Knex's own on the
   * writer's connection: neither starts before it ends.
   */
  aside<T>(task: () => Promise<T>): Promise<T> {
    return new Promise((resolve, reject) => {
      this.queue.push({ aside: task, resolve: resolve as (value: unknown) => void, reject });
      this.pump();
    });
  }

  /** Every write is queued through here: once per request, so it makes no more than the job and its promise. */
  private enqueue(work: Work<unknown> | undefined, merge: Merge | undefined): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.queue.push({ work, merge, resolve, reject });
      if (merge) this.waiting.set(merge.key, (this.waiting.get(merge.key) ?? 0) + 1);
      this.pump();
    });
  }

  /**
   * Starts what the queue allows: merged writes, each one statement, up to MAX_IN_FLIGHT at once; a
   * transaction, or a task aside, once none is under way, alone. Stops taking new ones while a query of
   * Knex's own waits for the connection, and lets it go once nothing is under way.
   */
  private pump(): void {
    while (this.queue.length > 0 && !this.exclusive && !(this.held && this.othersWait())) {
      const first = this.queue[0];
      if (first.merge) {
        if (this.inFlight >= MAX_IN_FLIGHT) return;
        if (this.inFlight > 0 && (this.waiting.get(first.merge.key) ?? 0) < SECOND_GROUP) return;
        this.queue.shift();
        if (this.inFlight > 0) this.stats.overlapped++;
        this.inFlight++;
        void this.runMerged(first).finally(() => {
          this.inFlight--;
          this.pump();
        });
      } else {
        if (this.inFlight > 0) return;
        this.queue.shift();
        this.exclusive = true;
        const running = first.aside ? first.aside().then(first.resolve, first.reject) : this.runTransaction(first);
        void running.finally(() => {
          this.exclusive = false;
          this.pump();
        });
      }
    }
    if (this.inFlight === 0 && !this.exclusive && this.connection) {
      // Nothing under way: the connection goes back to the pool, behind whoever waits there.
      const connection = this.connection;
      this.connection = undefined;
      this.held = false;
      void connection.then((held) => this.knex.client.releaseConnection(held)).catch(() => {});
      if (this.queue.length > 0) this.pump();
    }
  }

  /** Knex's connection, from the pool, for as long as writes are under way (see pump()). */
  private acquire(): Promise<unknown> {
    if (this.connection) return this.connection;
    const acquiring = this.knex.client.acquireConnection();
    this.connection = acquiring;
    acquiring.then(
      () => {
        if (this.connection === acquiring) this.held = true;
      },
      // A connection that could not be had is not kept: the next write tries again.
      () => {
        if (this.connection === acquiring) this.connection = undefined;
      },
    );
    return acquiring;
  }

  private othersWait(): boolean {
    return (this.knex.client.pool?.numPendingAcquires() ?? 0) > 0;
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

  /** `first` merged with the writes of its key queued beside it, as one statement with no transaction. */
  private async runMerged(first: Job): Promise<void> {
    const group = this.takeMergeable(first);
    const { key, work } = first.merge!;
    const left = this.waiting.get(key)! - group.length;
    if (left > 0) this.waiting.set(key, left);
    else this.waiting.delete(key);
    this.count(group, true);
    const taken = group.map(({ merge, resolve, reject }) => ({ item: merge!.item, resolve, reject }));
    await runGroup(taken, (items) => this.hold((trx) => work(trx, items), false));
  }

  /**
   * A transaction of `first` and the writes that merge with none queued after it, and those that
   * arrive while it runs, up to MAX_GROUP. If it fails, nothing of it is stored: a write alone failed
   * as it would have without the group; otherwise each write runs again alone, in order.
   */
  private async runTransaction(first: Job): Promise<void> {
    const group = [first];
    try {
      const results = await this.hold(async (trx) => {
        const answers = [await first.work!(trx)];
        while (this.queue.length > 0 && this.queue[0].work && group.length < MAX_GROUP) {
          const job = this.queue.shift()!;
          group.push(job);
          answers.push(await job.work!(trx));
        }
        return answers;
      }, true);
      for (const [index, job] of group.entries()) job.resolve(results[index]);
    } catch (error) {
      if (group.length === 1) return first.reject(error);
      for (const job of group) await this.hold(job.work!, true).then(job.resolve, job.reject);
    } finally {
      this.count(group, false);
    }
  }

  private count(group: Job[], merged: boolean): void {
    this.stats.groups++;
    this.stats.writes += group.length;
    if (merged) this.stats.merged += group.length - 1;
  }

  /**
   * Runs `work` on Knex's connection, held from the pool while any write is under way (Knex's own
   * transactions, and its other queries, wait in its pool): in a transaction, rolled back when `work`
   * or the commit fails; or, for a merged write, which is one statement, without one.
   */
  private async hold<T>(work: Work<T>, transaction: boolean): Promise<T> {
    const connection = await this.acquire();
    let settle!: { commit(): void; rollBack(error: unknown): void };
    const executionPromise = new Promise<void>((commit, rollBack) => {
      settle = { commit, rollBack };
    });
    executionPromise.catch(() => {}); // for announceOnCommit(), which listens to it; no one else need
    // A method, not an arrow function: under tsx every arrow function given a name (`const f = () => …`,
    // `{ f: () => … }`) is named again each time it is made, by Object.defineProperty, which costs
    // more than the rest of this object. The same holds on every hot path.
    const trx: WriteTx = {
      client: {
        acquireConnection() {
          return Promise.resolve(connection);
        },
      },
      executionPromise,
    };
    if (transaction) await this.step(trx, 'begin');
    try {
      const result = await work(trx);
      if (transaction) await this.step(trx, 'commit');
      settle.commit();
      return result;
    } catch (error) {
      // An error that made SQLite roll back already leaves no transaction to roll back.
      if (transaction) await this.step(trx, 'rollback').catch(() => {});
      settle.rollBack(error);
      throw error;
    }
  }
}
