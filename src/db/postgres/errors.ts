// PostgreSQL's errors, named once: the SQLSTATEs the data layer tells apart are tested here, and only
// here (the engine's errors.ts turns what they name into the product's errors).
import { ONCE_TAKEN, RELATION_MISSING } from './sql/rows.ts';

const codeOf = (error: unknown) => (error as { code?: unknown } | undefined)?.code;

/** A unique constraint broken (23505, unique_violation). */
export const isUniqueViolation = (error: unknown) => codeOf(error) === '23505';

/** A transaction aborted as one of a circle waiting for each other's locks (40P01, deadlock_detected). */
export const isDeadlock = (error: unknown) => codeOf(error) === '40P01';

/** A statement canceled past its statement_timeout (57014, query_canceled). */
export const isQueryCanceled = (error: unknown) => codeOf(error) === '57014';

/** insertBatchWithAnswersSql's own failure: an Idempotency-Key was answered meanwhile (ONCE_TAKEN). */
export const isOnceTaken = (error: unknown) => codeOf(error) === ONCE_TAKEN;

/** namingInsertBatchSql's own failure: a row the inserted rows name was not found (RELATION_MISSING). */
export const isRelationMissing = (error: unknown) => codeOf(error) === RELATION_MISSING;

const unavailable = new Set([
  '57P01', // admin shutdown
  '53300', // too many connections
]);

/** The database cannot serve now: shut down by its administrator, or out of connections. */
export const isUnavailable = (error: unknown) => unavailable.has(codeOf(error) as string);
