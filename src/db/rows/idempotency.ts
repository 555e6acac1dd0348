// Idempotency-Key (openapi.yaml, IdempotencyKey; the IETF httpapi draft): the answer to a request sent
// with a key is stored for its account in the transaction of the change it answers, so that a retry of
// the same request finds either that answer (the change was made, once) or nothing (it was not: the
// retry makes it). A crash before the commit leaves neither the change nor the answer.
import { type FoundAnswer, type Once, OnceTaken, onceInProgress, storedAnswer } from '../../idempotency/answers.ts';
import type { Dialect, WriteTx } from '../engine/dialect.ts';
import { recordOnceSql } from '../engine/sql/rows.ts';

/**
 * At the start of the transaction of a write sent with a key: holds its key (Dialect.holdOnce), or 409
 * when another request holds it. A write sent without one comes nowhere near this module.
 */
export async function beginOnce(db: Dialect, trx: WriteTx, accountId: number, once: Once<never>): Promise<void> {
  if (!(await db.holdOnce(trx, accountId, once.key))) throw onceInProgress();
}

/** At the end of the transaction of a write sent with a key: stores the answer to its `result`, or throws OnceTaken. */
export async function recordOnce<R>(db: Dialect, trx: WriteTx, accountId: number, once: Once<R>, result: R): Promise<void> {
  const { status, headers, body } = storedAnswer(once.answer(result));
  const params = [accountId, once.key, once.hash, status, JSON.stringify(headers), body, once.at, once.expiresAt];
  const [stored] = await db.run(trx, recordOnceSql, params);
  if (!stored) throw new OnceTaken();
}

/** The stored answer to the account's `key`, unless there is none or it expired by `now`. */
export async function findOnce({ readOnce }: Dialect, accountId: number, key: string, now: string): Promise<FoundAnswer | undefined> {
  const found = await readOnce(accountId, key, now);
  if (!found) return undefined;
  return { hash: found.request_hash, status: Number(found.status), headers: JSON.parse(found.headers), body: found.body };
}

/** Deletes up to `limit` answers that expired by `now`, and answers how many went. */
export async function pruneOnceBatch({ query, pruneOnceSql }: Dialect, now: string, limit: number): Promise<number> {
  return (await query(pruneOnceSql, [now, limit])).length;
}

/** A request's Idempotency-Key, as the HTTP API reads it (http/idempotency.ts) and hands it to the handler. */
