// The data layer's edge: driver errors become the product's errors here, told by their codes, so that no
// handler ever sees a driver's message (which may carry SQL). Each dialect names its own codes
// (sqlite/errors.ts, postgres/errors.ts); what is not recognised stays as it is and becomes a 500.
import knex from 'knex';
import { ApiError, conflict, unavailable } from '../../errors.ts';

/** Thrown for a statement asked of a database this process has closed: 503 unavailable, like a lost one. */
export class DatabaseClosedError extends Error {
  constructor() {
    super('the database is closed');
  }
}

/**
 * Thrown by a write whose statement found its collection's schema other than the one its rows were
 * checked with (or found no collection): the write stored nothing, and is tried again (../collections/schemas.ts, RowSchemas.retry).
 */
export class StaleSchema extends Error {}

/** Node's codes for a connection that could not be made or was lost. */
const connectionCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT']);

/** How a dialect's errors are told apart: by their `code`. */
export interface ErrorCodes {
  /** A unique constraint the statement broke: 409. */
  isUniqueViolation(error: unknown): boolean;
  /** The database cannot serve now (busy past its timeout, shut down, full): 503. */
  isUnavailable(error: unknown): boolean;
}

/** The product's error for a driver's `error`, or `error` itself when it is none we know (a 500). */
export function translateError(error: unknown, codes: ErrorCodes): unknown {
  if (error instanceof ApiError) return error;
  if (error instanceof DatabaseClosedError || error instanceof knex.KnexTimeoutError) return unavailable();
  if (codes.isUniqueViolation(error)) return conflict('That already exists.');
  const code = (error as { code?: unknown } | undefined)?.code;
  if ((typeof code === 'string' && connectionCodes.has(code)) || codes.isUnavailable(error)) return unavailable();
  return error;
}
