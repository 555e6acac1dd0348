import type { Knex } from 'knex';

/** SQLite's default limit on bound variables per statement is 32766; stay well under it. */
const MAX_BINDINGS = 10_000;

/**
 * One multi-row `INSERT … VALUES (…), (…)` per chunk, every value bound. Knex's own multi-row insert
 * on SQLite is a compound SELECT, which SQLite caps at 500 terms.
 */
export async function insertMany(trx: Knex.Transaction, table: string, columns: string[], rows: Knex.Value[][]): Promise<void> {
  const perStatement = Math.max(1, Math.floor(MAX_BINDINGS / columns.length));
  const tuple = `(${columns.map(() => '?').join(', ')})`;
  for (let start = 0; start < rows.length; start += perStatement) {
    const chunk = rows.slice(start, start + perStatement);
    await trx.raw(`insert into ?? (${columns.map(() => '??').join(', ')}) values ${chunk.map(() => tuple).join(', ')}`, [
      table,
      ...columns,
      ...chunk.flat(),
    ]);
  }
}
