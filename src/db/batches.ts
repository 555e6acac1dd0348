// Work that arrives together, done together: the one way the data layer batches. Items wait by key; a
// batch takes the items of its key that wait, in the order they came, up to `maxWeight` (an item is
// never split), and at most `maxRunning` batches of one key run at once. Items that come while a key's
// batches run wait for the next, which then holds them all: under load, batches grow, and each request
// costs a share of one statement.
//
// What a failure does, for every batch of every user of this module: a batch of one item fails as that
// item would alone; a batch of several that fails runs each of its items again alone, in the order they
// came, so that each succeeds or fails exactly as it would have without the others. A batch's work is a
// function of its items and the database, so running an item again is safe.
//
// Its users: PostgreSQL's inserts into one collection (postgres/rows.ts) and SQLite's row reads by id
// (sqlite/statements.ts) queue in Batches; SQLite's writer (sqlite/writes.ts) keeps a queue of its own,
// because it also runs the transactions between its batches on its one connection, and runs each of
// its batches with runBatch().

export interface BatchOptions<I, R> {
  /** Does the items of one batch, of one key, together, and answers each item's result, in order. */
  run(key: string, items: I[]): Promise<R[]>;
  /** Batches of one key under way at most. Default 1. */
  maxRunning?: number;
  /** The weight of one batch at most; an item heavier alone is a batch of its own. Default: no bound. */
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

export class Batches<I, R> {
  private readonly queues = new Map<string, Queue<I, R>>();
  private readonly maxRunning: number;
  private readonly maxWeight: number;

  constructor(private readonly options: BatchOptions<I, R>) {
    this.maxRunning = options.maxRunning ?? 1;
    this.maxWeight = options.maxWeight ?? Number.POSITIVE_INFINITY;
  }

  /** Does `item` (of `weight`, default 1) in a batch with the items of `key` that wait beside it; answers its result. */
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
      void runBatch(taken, (items) => this.options.run(key, items)).finally(() => {
        queue.running--;
        if (queue.running === 0 && queue.waiting.length === 0) this.queues.delete(key);
        else this.startNext(key, queue);
      });
    }
  }
}

/** A settled item of a batch: how to answer it. */
interface Settle<R> {
  resolve(result: R): void;
  reject(error: unknown): void;
}

/**
 * Runs `taken` as one batch with `run`, and answers each; the rule of a failure (see the top): one item
 * fails alone, several run again each alone, in order.
 */
export async function runBatch<I, R>(taken: (Settle<R> & { item: I })[], run: (items: I[]) => Promise<R[]>): Promise<void> {
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
