import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Knex } from 'knex';
import pg from 'pg';
import type { Logger } from '../log.ts';
import { query, type WriteTx } from './query.ts';
import type { KnownIndexes } from './sort-keys.ts';
import type { SqliteStatements } from './sqlite-statements.ts';
import type { GroupedWrites } from './writes.ts';

/**
 * Wake-ups for the real-time feed: "collection N has committed changes" (new events, or it is gone),
 * and "anything may have changed" (`all`: after a lost connection to the database, catch up from the
 * log). A wake-up carries no events: the events table is the source of truth, and whoever is woken
 * reads it from there. In one process the wake-up is in-process, once the transaction has committed.
 * With several processes on one PostgreSQL database, every change is also a `pg_notify` inside its
 * transaction (PostgreSQL delivers it on commit, never on rollback), which every instance LISTENs for.
 */
export class Changes extends EventEmitter<{ change: [collectionId: number]; all: [] }> {
  /** Tells this process's NOTIFYs from other instances': it hears its own changes in-process already. */
  readonly instance = randomUUID();
}

/** What openDatabase() keeps in `knex.userParams`, which Knex hands on to every transaction. */
export interface DatabaseParams {
  changes?: Changes;
  /** SQLite only: the hot statements, prepared once, and the read-only connection (sqlite-statements.ts). */
  sqlite?: SqliteStatements;
  /** SQLite only: row writes, run in groups (writes.ts). */
  writes?: GroupedWrites;
  /** When a page ordered by a field makes a sort index for it (see sort-keys.ts). */
  sortIndexes?: SortIndexLimits;
  /** The sort indexes this process has seen collections have (sort-keys.ts). */
  knownIndexes?: KnownIndexes;
}

export interface SortIndexLimits {
  /** Rows a collection holds before ordering by a field indexes it. */
  minRows: number;
  /** Sort indexes per collection at most. */
  max: number;
}

export const CHANNEL = 'rowbase_changes';

/**
 * Announces from inside a transaction that `collectionId` changed. Listeners hear it after the commit,
 * and never if the transaction rolls back.
 */
export async function announceChange(trx: WriteTx, collectionId: number): Promise<void> {
  const { changes } = trx.userParams as DatabaseParams;
  if (!changes) return;
  if (trx.client.dialect === 'postgresql') await query(trx, 'select pg_notify(?, ?)', [CHANNEL, `${changes.instance} ${collectionId}`]);
  trx.executionPromise.then(
    () => changes.emit('change', collectionId),
    () => {},
  );
}

/**
 * For a change written by a single statement that commits on its own: the statement sends
 * `pg_notify($channel, $instance || ' ' || collection id)` itself, with these two bound (the payload
 * announceChange() sends and listenForChanges() reads), and announceCommitted() is called once it has
 * returned.
 */
export const notifyParams = (knex: Knex): [channel: string, instance: string] => [
  CHANNEL,
  (knex.userParams as DatabaseParams).changes?.instance ?? '',
];

/** Wakes this process's listeners for a change already committed (see notifyParams). */
export function announceCommitted(knex: Knex, collectionId: number): void {
  (knex.userParams as DatabaseParams).changes?.emit('change', collectionId);
}

/**
 * Listens for other instances' changes on a connection of its own (LISTEN does not mix with a pool),
 * and comes back after losing it: then everything is announced as changed, so readers catch up from the
 * events table. Returns a function that stops listening.
 */
export function listenForChanges(url: string, changes: Changes, log: Logger): () => Promise<void> {
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let attempt = 0;

  const connect = async () => {
    const connection = new pg.Client({ connectionString: url });
    client = connection;
    connection.on('notification', ({ payload = '' }) => {
      const [instance, collectionId] = payload.split(' ');
      if (instance !== changes.instance) changes.emit('change', Number(collectionId));
    });
    connection.on('error', (error) => log.warn({ err: error }, 'change listener lost its connection'));
    connection.on('end', () => {
      if (client === connection && !stopped) reconnect();
    });
    try {
      await connection.connect();
      await connection.query(`listen ${CHANNEL}`);
      attempt = 0;
      changes.emit('all');
    } catch (error) {
      log.warn({ err: error }, 'change listener could not connect');
      await connection.end().catch(() => {});
      if (client === connection && !stopped) reconnect();
    }
  };
  const reconnect = () => {
    client = undefined;
    clearTimeout(retry);
    retry = setTimeout(connect, Math.min(5000, 100 * 2 ** attempt++));
    retry.unref();
  };

  void connect();
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await client?.end().catch(() => {});
  };
}
