import type { Dialect } from '../engine/dialect.ts';
import { addUsageSql, readUsageSql } from '../sql/accounts.ts';

/** The requests counted for an account in the period starting at `periodStart`, by every instance. */
export async function readUsage({ query }: Dialect, accountId: number, periodStart: string): Promise<number> {
  const [row] = await query<{ count: number | string }>(readUsageSql, [accountId, periodStart]);
  return row ? Number(row.count) : 0;
}

/** Adds `count` requests to the period's total and returns the new total, other instances' included. */
export async function addUsage({ query }: Dialect, accountId: number, periodStart: string, count: number): Promise<number> {
  const [stored] = await query<{ count: number | string }>(addUsageSql, [accountId, periodStart, count]);
  return Number(stored.count);
}
