// SQLite's errors, named once: the driver's codes the data layer tells apart are tested here, and only
// here (the engine's errors.ts turns what they name into the product's errors).
import { UNIQUE_HELD } from './sql/collections.ts';
import { KEY_ANSWERED, ROW_TOO_LARGE } from './sql/rows.ts';

const codeOf = (error: unknown) => (error as { code?: unknown } | undefined)?.code;

/**
 * A constraint broken (SQLITE_CONSTRAINT). Where the service writes, the one a client can break is the
 * unique name of a collection; a patch's bound on a row's weight is told apart where it runs (rows.ts).
 */
export const isConstraintViolation = (error: unknown) => codeOf(error) === 'SQLITE_CONSTRAINT';

/** A constraint broken with `message` in its text: SQLite's own, or one of the service's (raise(abort, …)). */
const failedWith = (error: unknown, message: string) =>
  isConstraintViolation(error) && String((error as { message?: unknown }).message).includes(message);

/**
 * A patch that made a row weigh more than its bound: row_patches' own failure (sql/rows.ts), a constraint
 * told apart by its message from a unique index's, which a write racing for the same values breaks.
 */
export const isRowTooLarge = (error: unknown) => failedWith(error, ROW_TOO_LARGE);

/**
 * An insert refused because its Idempotency-Key's answer was stored first (row_inserts' own failure,
 * sql/rows.ts), by another request with the key: not a unique index's, nor a named row missing.
 */
export const isKeyTaken = (error: unknown) => failedWith(error, KEY_ANSWERED);

/**
 * A unique constraint broken: SQLite's own (`UNIQUE constraint failed`: a collection's name, a unique
 * index's key), or a unique index's string another row holds (UNIQUE_HELD, sql/collections.ts); not the
 * service's other failures of a write (a row too large, a named row missing, an Idempotency-Key answered).
 */
export const isUniqueViolation = (error: unknown) => failedWith(error, 'UNIQUE constraint failed') || failedWith(error, UNIQUE_HELD);

/** Never: one writer, whose transactions wait for no other's. */
export const isDeadlock = (_error: unknown) => false;

/** A statement interrupted past the query timeout (SQLITE_INTERRUPT). */
export const isQueryCanceled = (error: unknown) => codeOf(error) === 'SQLITE_INTERRUPT';

/** A string or blob larger than SQLite makes (SQLITE_TOOBIG). */
export const isTooBig = (error: unknown) => codeOf(error) === 'SQLITE_TOOBIG';

/** Another process held the write lock past busy_timeout (SQLITE_BUSY). */
export const isBusy = (error: unknown) => codeOf(error) === 'SQLITE_BUSY';

const unavailable = new Set([
  'SQLITE_BUSY', // another process held the write lock past busy_timeout
  'SQLITE_CANTOPEN',
  'SQLITE_FULL',
  'SQLITE_IOERR',
]);

/** The database cannot serve now: busy past its timeout, not to be opened, full, or failing to read or write. */
export const isUnavailable = (error: unknown) => unavailable.has(codeOf(error) as string);
