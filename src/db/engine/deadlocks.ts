// Transactions that wait for each other in a circle: PostgreSQL aborts one (Dialect.isDeadlock), and it is
// tried again, here, for every write transaction that holds several collections (docs/relations.md, "Lock
// order"). SQLite runs one write at a time, and never aborts one so.
import type { Dialect } from './dialect.ts';

/** Times a write transaction is tried when the database aborts it as one of transactions waiting for each other. */
const DEADLOCK_TRIES = 5;

/**
 * Runs `attempt`, a whole write transaction from its begin to its commit, and runs it again from the
 * start when the database aborted it as part of a circle of transactions waiting for each other, up to
 * DEADLOCK_TRIES times: nothing of it was written, no event left (they leave after commit), no
 * Idempotency-Key answer stored (it is written in the same transaction). `attempt` must begin each time
 * afresh: whatever it keeps outside its transaction it sets anew at its start.
 */
export async function retryDeadlocks<T>(db: Pick<Dialect, 'isDeadlock'>, attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (tries >= DEADLOCK_TRIES || !db.isDeadlock(error)) throw error;
    }
  }
}
