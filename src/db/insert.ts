import { query, type WriteTx } from './query.ts';
import type { SqlValue } from './sqlite-statements.ts';

/** SQLite's default limit on bound variables per statement is 32766; stay well under it. */
const MAX_BINDINGS = 10_000;

/**
 * One multi-row `INSERT … VALUES (…), (…)` per chunk, every value bound. Knex's own multi-row insert
 * on SQLite is a compound SELECT, which SQLite caps at 500 terms. `table` and `columns` are ours,
 * never a client's.
 */
export async function insertMany(trx: WriteTx, table: string, columns: string[], rows: SqlValue[][]): Promise<void> {
  const perStatement = Math.max(1, Math.floor(MAX_BINDINGS / columns.length));
  const tuple = `(${columns.map(() => '?').join(', ')})`;
  for (let start = 0; start < rows.length; start += perStatement) {
    const chunk = rows.slice(start, start + perStatement);
    await query(trx, `insert into ${table} (${columns.join(', ')}) values ${chunk.map(() => tuple).join(', ')}`, chunk.flat());
  }
}
