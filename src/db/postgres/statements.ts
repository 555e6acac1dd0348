// PostgreSQL's hot statements run as named statements: parsed and planned once per connection, where
// Knex's raw() would rewrite every `?` on every call and have PostgreSQL parse the statement anew.
import type { Knex } from 'knex';
import type pg from 'pg';
import type { SqlValue, WriteTx } from '../engine/dialect.ts';

/** Runs `sql` inside `trx`, on the connection the transaction holds, and answers its rows. */
export async function runInTransaction<T>(trx: WriteTx, sql: string, params: SqlValue[], once = false): Promise<T[]> {
  // A transaction's client answers the connection it holds (Knex's makeTxClient).
  return runNamed<T>((await trx.client.acquireConnection()) as pg.Client, sql, params, !once);
}

/**
 * Runs one statement as a transaction of its own (PostgreSQL commits it whole or not at all) on a
 * connection of Knex's pool. `named`: kept parsed and planned for the next run (false for a statement
 * made for one request, such as a filter's, which would take the name of one run again and again).
 */
export async function runAlone<T>(knex: Knex, sql: string, params: SqlValue[], named = true): Promise<T[]> {
  const connection = await knex.client.acquireConnection();
  try {
    return await runNamed<T>(connection, sql, params, named);
  } catch (error) {
    await ended(connection);
    throw error;
  } finally {
    await knex.client.releaseConnection(connection);
  }
}

/**
 * Waits until the transaction of a statement that failed alone on `connection` has ended. pg answers a
 * failure on PostgreSQL's error message, which the server sends before it aborts the transaction and
 * releases what it held (an Idempotency-Key's advisory lock, ./sql/rows.ts): a caller that tries again
 * at once on another connection (a failed group's writes, each alone: ../engine/grouping.ts) would find
 * its own lock still held. An empty query runs once the abort is done; a broken connection fails it.
 */
async function ended(connection: pg.Client): Promise<void> {
  await connection.query('').catch(() => {});
}

/**
 * runAlone(), stopped by PostgreSQL past `ms` (SQLSTATE 57014, query_canceled), and then nothing of it
 * written: the connection's statement_timeout set for this statement alone, and set back after it while
 * the caller goes on with the answer. Not a transaction's SET LOCAL, which would hold what the statement
 * holds (rows it locks) one round trip longer, its commit's. A connection that could not be set back is
 * closed, never handed on with the setting.
 */
export async function runAloneTimed<T>(knex: Knex, sql: string, params: SqlValue[], ms: number): Promise<T[]> {
  const connection: pg.Client = await knex.client.acquireConnection();
  try {
    // `ms` is the server's own number.
    await connection.query(`set statement_timeout = ${Math.max(1, Math.ceil(ms))}`);
    return await runNamed<T>(connection, sql, params);
  } catch (error) {
    await ended(connection);
    throw error;
  } finally {
    void connection
      .query('reset statement_timeout')
      .catch(() => connection.end().catch(() => {}))
      .finally(() => knex.client.releaseConnection(connection))
      .catch(() => {});
  }
}

/**
 * Runs one read as runAlone() does, in a read-only transaction whose statement_timeout is `ms`:
 * PostgreSQL cancels it past that (SQLSTATE 57014, query_canceled). A setting of the transaction alone
 * (SET LOCAL), so that the connection's next user, a write maybe, is not bound by it. `named` as
 * runAlone()'s.
 */
export async function runTimed<T>(knex: Knex, sql: string, params: SqlValue[], ms: number, named: boolean): Promise<T[]> {
  const connection = await knex.client.acquireConnection();
  try {
    // One round trip: a simple query may hold several statements. `ms` is the server's own setting.
    await connection.query(`begin read only; set local statement_timeout = ${Math.floor(ms)}`);
    try {
      const rows = await runNamed<T>(connection, sql, params, named);
      await connection.query('commit');
      return rows;
    } catch (error) {
      await connection.query('rollback').catch(() => {});
      throw error;
    }
  } finally {
    await knex.client.releaseConnection(connection);
  }
}

/**
 * Runs `work` with reads that all see one snapshot (../reads/pages.ts, PageSource.snapshot): a read-only
 * REPEATABLE READ transaction on a connection of Knex's pool, begun in one round trip, each read a named
 * statement as runAlone()'s. Knex's own transaction (a query builder's begin and commit, its events)
 * cost a page with expanded rows more of the main thread than its reads.
 */
export function runSnapshot<T>(knex: Knex, work: (read: Run) => Promise<T>): Promise<T> {
  return runTransaction(knex, 'begin isolation level repeatable read read only', work);
}

/**
 * Runs `work` as one write transaction (READ COMMITTED: each statement sees what committed before it) on
 * a connection of Knex's pool, each statement named as runAlone()'s, without Knex's transaction around it.
 */
export function runWrite<T>(knex: Knex, work: (run: Run) => Promise<T>): Promise<T> {
  return runTransaction(knex, 'begin', work);
}

/** One statement of runSnapshot()'s or runWrite()'s work, answering its rows. */
type Run = <R>(sql: string, params: SqlValue[]) => Promise<R[]>;

async function runTransaction<T>(knex: Knex, begin: string, work: (run: Run) => Promise<T>): Promise<T> {
  const connection = await knex.client.acquireConnection();
  try {
    await connection.query(begin);
    try {
      const result = await work((sql, params) => runNamed(connection, sql, params));
      await connection.query('commit');
      return result;
    } catch (error) {
      await connection.query('rollback').catch(() => {});
      throw error;
    }
  } finally {
    await knex.client.releaseConnection(connection);
  }
}

async function runNamed<T>(connection: pg.Client, sql: string, params: SqlValue[], keep = true): Promise<T[]> {
  const result = await connection.query({ ...(keep ? named(sql) : unnamed(sql)), values: params });
  return result.rows as T[];
}

/** Statements named at most; past it, a statement runs unnamed (pg never deallocates a named one). */
const MAX_NAMED = 64;
const statements = new Map<string, { name: string; text: string }>();

/** `sql` with `$1`, `$2`, … for its `?`, and a name of its own while there are names left. */
function named(sql: string): { name?: string; text: string } {
  const statement = statements.get(sql);
  if (statement) return statement;
  const { text } = unnamed(sql);
  if (statements.size >= MAX_NAMED) return { text };
  const made = { name: `rowbase_${statements.size + 1}`, text };
  statements.set(sql, made);
  return made;
}

/** `sql` with `$1`, `$2`, … for its `?`. The SQL is the data layer's own: no `?` inside a string literal or an operator. */
function unnamed(sql: string): { text: string } {
  let bindings = 0;
  return { text: sql.replace(/\?/g, () => `$${++bindings}`) };
}
