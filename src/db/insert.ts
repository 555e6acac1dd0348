import type { Knex } from 'knex';

/**
 * Knex writes a multi-row insert for SQLite as one compound SELECT, and SQLite allows at most 500 terms
 * in one (SQLITE_MAX_COMPOUND_SELECT): a batch of 1000 rows has to go in several statements.
 */
const ROWS_PER_STATEMENT = 250;

/** Inserts `records` into `table` within the transaction, a few hundred per statement. */
export async function insertAll(trx: Knex.Transaction, table: string, records: Record<string, unknown>[]): Promise<void> {
  for (let start = 0; start < records.length; start += ROWS_PER_STATEMENT) {
    await trx(table).insert(records.slice(start, start + ROWS_PER_STATEMENT));
  }
}
