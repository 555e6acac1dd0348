// Sort indexes: pages ordered by a field, read from an index instead of sorting the collection.
// What a key holds, and when an index is made and kept: docs/development.md, "Sort indexes".

export interface SortIndexLimits {
  /** Rows a collection holds before ordering by a field indexes it. */
  minRows: number;
  /** Sort indexes per collection at most. */
  max: number;
}

/** Collections remembered at most; the least recently remembered is forgotten first. */
const MAX_KNOWN = 10_000;

/**
 * The sort indexes this process has seen collections have: each collection's id and indexed fields, by
 * account and name. Never wrong in a way that shows: a collection's indexes are only ever added to, and
 * a page read through a remembered id whose collection is gone (its seq, read by the same statement,
 * is null) is read again after looking the collection up (it may have been deleted, or deleted and made
 * again under a new id, by another instance).
 */
export class KnownIndexes {
  private readonly known = new Map<string, { id: number; sorted: string[] }>();

  get(accountId: number, name: string) {
    return this.known.get(`${accountId}/${name}`);
  }

  set(accountId: number, name: string, id: number, sorted: string[]): void {
    const key = `${accountId}/${name}`;
    this.known.delete(key);
    if (this.known.size >= MAX_KNOWN) this.known.delete(this.known.keys().next().value as string);
    this.known.set(key, { id, sorted });
  }
}
