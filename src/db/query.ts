import type { Knex } from 'knex';
import type pg from 'pg';
import type { DatabaseParams } from './changes.ts';
import type { SqlValue } from './sqlite-statements.ts';

/**
 * What the statements of a write need of the transaction they run in: a Knex transaction, or on
 * SQLite a group's transaction (writes.ts), which holds Knex's connection without Knex's transaction
 * machinery.
 */
export interface WriteTx {
  userParams: Knex.Transaction['userParams'];
  /** `acquireConnection()` answers the connection the transaction holds. */
  client: Pick<Knex.Client, 'dialect' | 'acquireConnection'>;
  /** Fulfilled once the transaction has committed, rejected once it has rolled back. */
  executionPromise: Promise<unknown>;
}

/**
 * An ORDER BY term of the text column `column` in code point order, on both backends (openapi.yaml's
 * "code point order"): SQLite compares text as UTF-8 bytes (its BINARY collation), which is that order;
 * PostgreSQL compares by the database's collation (en-US puts `a` before `B`) unless told "C", UTF-8
 * bytes again.
 */
export const byCodePoint = (knex: Knex, column: string) =>
  knex.client.dialect === 'postgresql' ? knex.raw('?? collate "C"', [column]) : knex.raw('??', [column]);

/**
 * Runs one statement of a hot write inside `trx` and answers its rows (none for a write without
 * RETURNING). `sql` is plain SQL with `?` placeholders, the same on both backends (PostgreSQL's own
 * statements may use `$n`). On SQLite it is prepared once per connection (sqlite-statements.ts); on
 * PostgreSQL it is a named statement, parsed and planned once per connection, run on the connection
 * the transaction holds: Knex's raw() would rewrite every `?` on every call and have PostgreSQL parse
 * the statement anew.
 */
export async function query<T>(trx: WriteTx, sql: string, params: SqlValue[]): Promise<T[]> {
  const { sqlite } = trx.userParams as DatabaseParams;
  if (sqlite) return sqlite.inTransaction<T>(trx, sql, params);
  // A transaction's client answers the connection it holds (Knex's makeTxClient).
  return runNamed<T>(await trx.client.acquireConnection(), sql, params);
}

/**
 * PostgreSQL only: runs one statement as a transaction of its own (PostgreSQL commits it whole or not
 * at all) on a connection of Knex's pool, as a named statement like query()'s.
 */
export async function queryAlone<T>(knex: Knex, sql: string, params: SqlValue[]): Promise<T[]> {
  const connection = await knex.client.acquireConnection();
  try {
    return await runNamed<T>(connection, sql, params);
  } finally {
    await knex.client.releaseConnection(connection);
  }
}

async function runNamed<T>(connection: pg.Client, sql: string, params: SqlValue[]): Promise<T[]> {
  const result = await connection.query({ ...postgresStatement(sql), values: params });
  return result.rows as T[];
}

/** Statements named at most; past it, a statement runs unnamed (pg never deallocates a named one). */
const MAX_NAMED = 64;
const named = new Map<string, { name: string; text: string }>();

/** `sql` with `$1`, `$2`, … for its `?`, and a name of its own while there are names left. */
function postgresStatement(sql: string): { name?: string; text: string } {
  const statement = named.get(sql);
  if (statement) return statement;
  let bindings = 0;
  // The SQL is the data layer's own: no `?` inside a string literal or an operator.
  const text = sql.replace(/\?/g, () => `$${++bindings}`);
  if (named.size >= MAX_NAMED) return { text };
  const made = { name: `rowbase_${named.size + 1}`, text };
  named.set(sql, made);
  return made;
}
