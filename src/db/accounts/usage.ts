// Each account's requests counted per period, added up across instances.
import type { Dialect } from '../engine/dialect.ts';
import { addEndUserCountsSql, addUsageSql, pruneEndUserCountsSql, readUsageSql } from '../engine/sql/accounts.ts';

/** The requests counted for an account in the period starting at `periodStart`, by every instance. */
export async function readUsage({ readCommitted }: Dialect, accountId: number, periodStart: string): Promise<number> {
  const [row] = await readCommitted<{ count: number | string }>(readUsageSql, [accountId, periodStart]);
  return row ? Number(row.count) : 0;
}

/** Adds `count` requests to the period's total and returns the new total, other instances' included. */
export async function addUsage({ query }: Dialect, accountId: number, periodStart: string, count: number): Promise<number> {
  const [stored] = await query<{ count: number | string }>(addUsageSql, [accountId, periodStart, count]);
  return Number(stored.count);
}

/** Requests of one end user of a publishable key, by the key's id and the hash of who the end user is. */
export interface EndUserCount {
  keyId: number;
  endUser: string;
  count: number;
}

/** End users' counts added in one statement at most: four parameters each, well within either database's bound. */
const END_USERS_AT_ONCE = 500;

/**
 * Adds each end user's count (0 to only read) to what every instance counted of them, noting `at` (ISO
 * 8601) as when they were last written, and answers their new totals, other instances' included. All
 * or none: a failed write can be tried again whole.
 */
export async function addEndUserCounts(db: Dialect, counts: readonly EndUserCount[], at: string): Promise<EndUserCount[]> {
  return db.knex.transaction(async (trx) => {
    const totals: EndUserCount[] = [];
    for (let start = 0; start < counts.length; start += END_USERS_AT_ONCE) {
      const part = counts.slice(start, start + END_USERS_AT_ONCE);
      const params = part.flatMap(({ keyId, endUser, count }) => [keyId, endUser, count, at]);
      const rows = await db.run<{ key_id: number | string; end_user: string; count: number | string }>(
        trx,
        addEndUserCountsSql(part.length),
        params,
        true,
      );
      for (const row of rows) totals.push({ keyId: Number(row.key_id), endUser: row.end_user, count: Number(row.count) });
    }
    return totals;
  });
}

/** Deletes the counts of end users that no instance has written since `before` (ISO 8601). */
export async function pruneEndUserCounts({ query }: Dialect, before: string): Promise<void> {
  await query(pruneEndUserCountsSql, [before]);
}
