import type { Knex } from 'knex';

/** The requests counted for an account in the period starting at `periodStart`, by every instance. */
export async function readUsage(knex: Knex, accountId: number, periodStart: string): Promise<number> {
  const row = await knex('usage_counts').where({ account_id: accountId, period_start: periodStart }).first('count');
  return row ? Number(row.count) : 0;
}

/** Adds `count` requests to the period's total and returns the new total, other instances' included. */
export async function addUsage(knex: Knex, accountId: number, periodStart: string, count: number): Promise<number> {
  const result = await knex.raw(
    `insert into usage_counts (account_id, period_start, count) values (?, ?, ?)
     on conflict (account_id, period_start) do update set count = usage_counts.count + excluded.count
     returning count`,
    [accountId, periodStart, count],
  );
  // SQLite answers the returned rows as an array, PostgreSQL as a result with .rows.
  const rows = Array.isArray(result) ? result : result.rows;
  return Number(rows[0].count);
}
