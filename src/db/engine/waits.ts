// The waits for a database connection, told by queue as each ends: what the metrics show of the pools.
import { EventEmitter } from 'node:events';

/**
 * Time spent waiting for a connection of the database, told as it ends, by the queue waited in:
 * `knex` (Knex's pool: PostgreSQL's connections, SQLite's writer) and `sqlite_snapshot` (SQLite's
 * connections for reads in one snapshot, four, each taking one at a time). Only waits are told: a
 * connection free when asked for costs nothing here. The metrics listen (docs/operations.md).
 */
export class Waits extends EventEmitter<{ wait: [queue: WaitQueue, seconds: number] }> {}

export type WaitQueue = 'knex' | 'sqlite_snapshot';

/** Tarn's pool, as Knex holds it (`knex.client.pool`), as far as its waits are concerned. */
interface TarnPool {
  numFree(): number;
  on(event: 'acquireRequest', listener: (eventId: number) => void): void;
  on(event: 'acquireSuccess' | 'acquireFail', listener: (eventId: number) => void): void;
}

/**
 * Tells `waits` of every acquisition of a connection from Knex's pool that found none free: it waited
 * for one to be released, or made. The pool's events (tarn's) are heard once anyone listens to
 * `waits`, so that a server without metrics pays nothing per query.
 */
export function watchKnexPool(pool: TarnPool | undefined, waits: Waits): void {
  if (!pool) return;
  // 'newListener' is EventEmitter's own event, which the typed map of Waits does not list.
  (waits as EventEmitter).once('newListener', () => {
    const asked = new Map<number, number>();
    pool.on('acquireRequest', (eventId) => {
      if (pool.numFree() === 0) asked.set(eventId, performance.now());
    });
    const ended = (eventId: number) => {
      const since = asked.get(eventId);
      if (since === undefined) return;
      asked.delete(eventId);
      waits.emit('wait', 'knex', (performance.now() - since) / 1000);
    };
    pool.on('acquireSuccess', ended);
    pool.on('acquireFail', ended);
  });
}
