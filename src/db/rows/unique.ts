// Writes that a unique index may refuse (docs/indexes in openapi.yaml, UniqueViolation; docs/expiry.md):
// the refusal told apart once the write has rolled back, as the index's 409 unique_violation naming the
// row that holds the values, or the write tried again, once, when that row no longer lives.

import type { ApiError } from '../../errors.ts';
import { uniqueViolationAt, type WrittenRow } from '../collections/indexes.ts';
import type { Dialect } from '../engine/dialect.ts';
import { holderGone } from '../expiry/sweep.ts';

/** How many times a write is tried that a unique constraint refuses for a row that no longer lives: twice. */
const TRIES = 2;

/**
 * Runs the write `write` of rows into the collection; when the database refuses it as breaking a unique
 * constraint (as the dialect tells it) and the rows `rows()` break a unique index, the refusal is that
 * index's 409 unique_violation, unless the write is tried again (triedAgain). Looked up outside the write's
 * transaction, once it has rolled back: PostgreSQL reads nothing more in a transaction that failed.
 */
export async function keepingUnique<T>(
  db: Dialect,
  accountId: number,
  collection: string,
  rows: () => readonly WrittenRow[] | Promise<readonly WrittenRow[]>,
  write: () => Promise<T>,
): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await write();
    } catch (error) {
      if (!db.isUniqueViolation(error)) throw error;
      const violation = (await uniqueViolationAt(db, accountId, collection, await rows()))?.problem;
      if (!(await triedAgain(db, accountId, collection, violation, tries))) throw violation ?? error;
    }
  }
}

/**
 * Whether a write that a unique constraint refused (it wrote nothing) is tried again, as its `tries`-th try
 * was refused: once, when no stored row holds its values now (the one that did went between the refusal
 * and the look-up: a delete, a sweep), or when the row `violation` names no longer lives (holderGone: it
 * expired, and the collection's expired rows are deleted now, each with its event, as the sweeper would).
 * Not when two rows of the write share the values, nor when the holder lives.
 */
export async function triedAgain(
  db: Dialect,
  accountId: number,
  collection: string,
  violation: ApiError | undefined,
  tries: number,
): Promise<boolean> {
  if (tries >= TRIES) return false;
  if (!violation) return true;
  const holder = violation.options.existing_id;
  return holder !== undefined && (await holderGone(db, accountId, collection, holder));
}
