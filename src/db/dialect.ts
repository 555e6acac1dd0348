// What the operations both dialects share (collections.ts, events.ts, keys.ts, plans.ts, usage.ts,
// retention.ts) need of the database they run on. Each dialect module (sqlite/, postgres/) makes one
// when it opens its database, and hands it to them: they never ask which dialect it is.
import type { Knex } from 'knex';
import type { Changes } from './changes.ts';
import type { Waits } from './waits.ts';

export type SqlValue = string | number | null;

/**
 * A write transaction, as the statements in it need it: the connection it holds and its outcome. A
 * Knex transaction is one; so is a group of SQLite's writer (sqlite/writes.ts), which holds Knex's
 * connection without Knex's transaction machinery.
 */
export interface WriteTx {
  /** `acquireConnection()` answers the connection the transaction holds. */
  client: { acquireConnection(): Promise<unknown> };
  /** Fulfilled once the transaction has committed, rejected once it has rolled back. */
  executionPromise: Promise<unknown>;
}

export interface Dialect {
  /** The database's Knex: its pool and its transactions. */
  knex: Knex;
  /** Wake-ups after each committed change of a collection (changes.ts). */
  changes: Changes;
  /** Waits for a connection: Knex's pool is watched by the store, the dialect tells of its own queues (waits.ts). */
  waits: Waits;
  /**
   * Runs one statement inside `trx` and answers its rows (none for a write without RETURNING): `sql`
   * has `?` placeholders, and is prepared once per connection.
   */
  run<T>(trx: WriteTx, sql: string, params: SqlValue[]): Promise<T[]>;
  /** Runs one statement on its own (`sql` with `?` placeholders), and answers its rows. */
  query<T>(sql: string, params: SqlValue[]): Promise<T[]>;
  /** Announces from inside `trx` that the collection changed: listeners hear it after the commit, never after a rollback. */
  announce(trx: WriteTx, collectionId: number): Promise<void>;
  /** What follows a text column in ORDER BY for code point order (openapi.yaml: names are listed so). */
  codePointOrder: string;
  /** Whether the driver's error is a unique constraint the statement broke, told by its code. */
  isUniqueViolation(error: unknown): boolean;
}
