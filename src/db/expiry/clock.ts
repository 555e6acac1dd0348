// The expiry now a database keeps (docs/expiry.md, "A clock set back"): the latest time by which a
// process of it read rows as expired, raised by each sweep and as a process stops, and read as one
// opens the database, so that a process on a clock set back, or restarted on one, brings no expired row back.
import { expiryNow, raiseExpiryNow } from '../../expiry/ttl.ts';
import type { Dialect } from '../engine/dialect.ts';
import { keepExpiryNowSql, keptExpiryNowSql } from '../engine/sql/expiry.ts';

/**
 * Raises the expiry now the database keeps to this process's (expiryNow()), and this process's to the
 * database's, which another instance may have raised further: answers the later, the process's expiry now.
 */
export async function keepExpiryNow({ query }: Dialect): Promise<number> {
  const now = expiryNow();
  await query(keepExpiryNowSql, [now, now]);
  return readKeptExpiryNow({ query });
}

/** Raises this process's expiry now to the one the database keeps, and answers it (a process opening the database: ../open-store.ts). */
export async function readKeptExpiryNow({ query }: Pick<Dialect, 'query'>): Promise<number> {
  const [kept] = await query<{ now_ms: number | string }>(keptExpiryNowSql, []);
  if (kept) raiseExpiryNow(Number(kept.now_ms));
  return expiryNow();
}
