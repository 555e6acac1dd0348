import type { Dialect } from './dialect.ts';

/** The requests counted for an account in the period starting at `periodStart`, by every instance. */
export async function readUsage({ knex }: Dialect, accountId: number, periodStart: string): Promise<number> {
  const row = await knex('usage_counts').where({ account_id: accountId, period_start: periodStart }).first('count');
  return row ? Number(row.count) : 0;
}

/** Adds `count` requests to the period's total and returns the new total, other instances' included. */
export async function addUsage({ knex }: Dialect, accountId: number, periodStart: string, count: number): Promise<number> {
  const [stored] = await knex('usage_counts')
    .insert({ account_id: accountId, period_start: periodStart, count })
    .onConflict(['account_id', 'period_start'])
    .merge({ count: knex.raw('usage_counts.count + excluded.count') })
    .returning('count');
  return Number(stored.count);
}
