import { EventEmitter } from 'node:events';
import type { Knex } from 'knex';

/**
 * Wake-ups for the real-time feed: "collection N has committed changes" (new events, or it is gone).
 * A wake-up carries no events: the events table is the source of truth, and whoever is woken reads it
 * from there. That keeps one path for every deployment: on SQLite (one process) the wake-up is
 * in-process, once the transaction has committed; with several processes on one PostgreSQL database,
 * the same announcement can become a `pg_notify` inside the transaction (delivered on commit) that
 * every instance LISTENs for and re-emits here.
 */
export class Changes extends EventEmitter<{ change: [collectionId: number] }> {}

/** What openDatabase() keeps in `knex.userParams`, which Knex hands on to every transaction. */
export interface DatabaseParams {
  changes?: Changes;
}

/**
 * Announces from inside a transaction that `collectionId` changed. Listeners hear it after the commit,
 * and never if the transaction rolls back.
 */
export function announceChange(trx: Knex.Transaction, collectionId: number): void {
  const { changes } = trx.userParams as DatabaseParams;
  if (!changes) return;
  trx.executionPromise.then(
    () => changes.emit('change', collectionId),
    () => {},
  );
}
