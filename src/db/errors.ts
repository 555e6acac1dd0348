// The data layer's edge: driver errors become API errors here, per dialect, so no handler ever sees a
// driver's message (which may carry SQL). What is not recognised stays as it is and becomes a 500.
import { ApiError, conflict, unavailable } from '../errors.ts';

/** Thrown for a statement asked of a database this process has closed: 503 unavailable, like a lost one. */
export class DatabaseClosedError extends Error {
  constructor() {
    super('the database is closed');
  }
}

interface DriverError {
  code?: string;
  errno?: number;
  message?: string;
}

/** A unique constraint was violated (SQLite's SQLITE_CONSTRAINT_UNIQUE, PostgreSQL's 23505). */
export function isUniqueViolation(error: unknown): boolean {
  const { code, message = '' } = (error ?? {}) as DriverError;
  return (code === 'SQLITE_CONSTRAINT' && message.includes('UNIQUE')) || code === '23505';
}

const unavailableCodes = new Set([
  'SQLITE_BUSY', // another process held the write lock past busy_timeout
  'SQLITE_CANTOPEN',
  'SQLITE_FULL',
  'SQLITE_IOERR',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  '57P01', // PostgreSQL: admin shutdown
  '53300', // PostgreSQL: too many connections
]);

export function translateDatabaseError(error: unknown): unknown {
  if (error instanceof ApiError) return error;
  if (error instanceof DatabaseClosedError) return unavailable();
  const { code, message = '' } = (error ?? {}) as DriverError;
  if (isUniqueViolation(error)) return conflict('That already exists.');
  if ((code && unavailableCodes.has(code)) || /Knex: Timeout acquiring a connection|Unable to acquire a connection/.test(message)) {
    return unavailable();
  }
  return error;
}
