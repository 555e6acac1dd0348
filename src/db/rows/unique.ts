// Writes that a unique index may refuse (openapi.yaml, UniqueViolation; docs/expiry.md): the refusal told
// apart once the write has rolled back, as the index's 409 unique_violation naming the row that holds the
// values, or the write tried again when that row no longer lives (expired, or gone since the refusal).

import { ApiError } from '../../errors.ts';
import { uniqueViolationAt, type WrittenRow } from '../collections/indexes.ts';
import type { Dialect } from '../engine/dialect.ts';
import { holderGone } from '../expiry/sweep.ts';

/**
 * How many times a write is tried whose values a unique index refused for a row that no longer lives: a
 * row that held them expired, or went (a delete, a sweep) between the refusal and the look-up that names
 * it, and others may take the values again meanwhile.
 */
const TRIES = 3;

/**
 * Runs the write `write` of rows into the collection; when the database refuses it as breaking a unique
 * constraint (as the dialect tells it) and the rows `rows()` break a unique index, the refusal is that
 * index's 409 unique_violation, unless the write is tried again (UniqueTries). Looked up outside the
 * write's transaction, once it has rolled back: PostgreSQL reads nothing more in a transaction that failed.
 */
export async function keepingUnique<T>(
  db: Dialect,
  accountId: number,
  collection: string,
  rows: () => readonly WrittenRow[] | Promise<readonly WrittenRow[]>,
  write: () => Promise<T>,
): Promise<T> {
  const tries = new UniqueTries(db, accountId);
  for (;;) {
    try {
      return await write();
    } catch (error) {
      if (!db.isUniqueViolation(error)) throw error;
      const violation = (await uniqueViolationAt(db, accountId, collection, await rows()))?.problem;
      if (!(await tries.again(collection, violation))) throw tries.problem(collection, violation) ?? error;
    }
  }
}

/** A write's tries against the unique indexes of the account's collections, each refused by the database as breaking one. */
export class UniqueTries {
  private tries = 0;
  /** The last refusal that named the row holding the values. */
  private named?: ApiError;

  constructor(
    private readonly db: Dialect,
    private readonly accountId: number,
  ) {}

  /**
   * Whether the write, which wrote nothing, is tried again after a refusal that `violation` explains (a
   * unique index of `collection`; undefined when none does): while it has tries left, when no stored row
   * holds its values now (the one that did went since the refusal), or the row that does no longer lives
   * (holderGone: it expired, and the collection's expired rows are deleted now, each with its event, as
   * the sweeper would). Not when two rows of the write share the values, nor when the holder lives.
   */
  async again(collection: string, violation: ApiError | undefined): Promise<boolean> {
    this.tries += 1;
    if (violation?.options.existing_id !== undefined) this.named = violation;
    if (this.tries >= TRIES) return false;
    if (!violation) return true;
    const holder = violation.options.existing_id;
    return holder !== undefined && (await holderGone(this.db, this.accountId, collection, holder));
  }

  /**
   * What a refusal not tried again answers: its violation; or, when no row holds the values now but an
   * earlier try's refusal named one, that index's 409 without a holder (the values were taken while the
   * write ran, by rows gone since); or undefined (the constraint that refused it was another).
   */
  problem(collection: string, violation: ApiError | undefined): ApiError | undefined {
    if (violation || !this.named) return violation;
    const detail = `Values of these fields, which collection ${collection} keeps unique, were held by other rows each time this write was tried, rows gone since: nothing was written.`;
    return new ApiError('unique_violation', detail, { fields: this.named.options.fields });
  }
}
