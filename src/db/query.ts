import type { Knex } from 'knex';
import type { DatabaseParams } from './changes.ts';
import type { SqlValue } from './sqlite-statements.ts';

/**
 * Runs one statement of a hot write inside `trx` and answers its rows (none for a write without
 * RETURNING). `sql` is plain SQL with `?` placeholders, the same on both backends. On SQLite it is
 * prepared once per connection (sqlite-statements.ts); on PostgreSQL it goes through Knex's raw query.
 */
export async function query<T>(trx: Knex.Transaction, sql: string, params: SqlValue[]): Promise<T[]> {
  const { sqlite } = trx.userParams as DatabaseParams;
  if (sqlite) return sqlite.inTransaction<T>(trx, sql, params);
  const result = await trx.raw(sql, params);
  return result.rows;
}
