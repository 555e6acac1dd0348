// PostgreSQL: the inserts of one process into one collection, merged while they wait their turn.
//
// An insert holds the collection's row from its statement's start to its commit (sql.ts, insertBatchSql), so the
// inserts of a collection run one after another whatever the pool. Sent as they come, the waiting
// ones wait inside PostgreSQL, one backend each, and every turn costs a statement, a commit and its
// WAL flush, and a backend's wake-up on a host whose cores PostgreSQL shares with Node. Instead, at
// most two statements of a collection are under way: one holding its row, and the next queued behind
// it, ready the moment the first commits. Inserts that come meanwhile wait here, and go together as
// the statement after: their rows in the order the requests came, each request's rows consecutive.
//
// A merged statement that fails (a row PostgreSQL refuses, say) runs each of its inserts again in a
// statement of its own, in order, so that each succeeds or fails alone, exactly as it would have
// unmerged; SQLite's grouped writes do the same (../sqlite/writes.ts). Statements of other processes queue in
// PostgreSQL as before.

/** Runs one statement of `texts` (a request's rows, or several requests' one after another), answers its first id. */
export type InsertStatement = (texts: string[]) => Promise<number>;

interface Waiting {
  texts: string[];
  resolve(firstId: number): void;
  reject(error: unknown): void;
}

interface Queue {
  running: number;
  waiting: Waiting[];
}

/** Statements of one collection under way at most: one holding its row, one queued behind it. */
const MAX_RUNNING = 2;
/** The rows of one merged statement at most (a request's own rows are never split). */
const MAX_MERGED_ROWS = 5000;

const queues = new WeakMap<object, Map<string, Queue>>();

/**
 * Inserts `texts` with `statement`, merged with the other inserts of `key` (a collection of an
 * account) made through `owner` (a store) that wait beside it; answers the first id of `texts`' rows.
 */
export function mergedInsert(owner: object, key: string, texts: string[], statement: InsertStatement): Promise<number> {
  const byKey = queues.get(owner) ?? new Map<string, Queue>();
  queues.set(owner, byKey);
  const queue = byKey.get(key) ?? { running: 0, waiting: [] };
  byKey.set(key, queue);
  const waiting = new Promise<number>((resolve, reject) => queue.waiting.push({ texts, resolve, reject }));
  startNext(byKey, key, queue, statement);
  return waiting;
}

function startNext(byKey: Map<string, Queue>, key: string, queue: Queue, statement: InsertStatement): void {
  while (queue.running < MAX_RUNNING && queue.waiting.length > 0) {
    const taken = [queue.waiting.shift() as Waiting];
    let rows = taken[0].texts.length;
    while (queue.waiting.length > 0 && rows + queue.waiting[0].texts.length <= MAX_MERGED_ROWS) {
      const next = queue.waiting.shift() as Waiting;
      rows += next.texts.length;
      taken.push(next);
    }
    queue.running++;
    void runMerged(taken, statement).finally(() => {
      queue.running--;
      if (queue.running === 0 && queue.waiting.length === 0) byKey.delete(key);
      else startNext(byKey, key, queue, statement);
    });
  }
}

/** One statement for `taken`, each answered its first id; a failure runs each alone. */
async function runMerged(taken: Waiting[], statement: InsertStatement): Promise<void> {
  if (taken.length === 1) return statement(taken[0].texts).then(taken[0].resolve, taken[0].reject);
  let firstId: number;
  try {
    firstId = await statement(taken.flatMap((each) => each.texts));
  } catch {
    for (const each of taken) await statement(each.texts).then(each.resolve, each.reject);
    return;
  }
  for (const each of taken) {
    each.resolve(firstId);
    firstId += each.texts.length;
  }
}
