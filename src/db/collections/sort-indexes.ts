// Sort indexes: pages ordered by a field, read from an index instead of sorting the collection.
//
// For each field a collection is indexed by, sort_keys holds one key per row: where the row's value
// of the field falls in the order of listRows (pages.ts). `rank` is the JSON type's place: 1 numbers,
// 2 strings, 3 booleans, 4 objects and arrays, 5 missing or null; then `num` (numbers, and false 0,
// true 1) or `str` (strings, by code point; on PostgreSQL escaped and cut: postgres/jsonb.ts, postgres/sql/collections.ts); then the
// row id. An ascending page is one range of the index, in its order. Rows whose field is missing or
// null come last in both directions, so a descending page reads the index backwards over rank < 5,
// then, when it reaches past them, over rank 5 (by id, descending): both in one snapshot (pages.ts).
//
// A collection's indexed fields are `collections.sorted`, a JSON array of names whose positions are
// their slots. It is read and written under the collection row's lock (advance()), which every write
// takes first: every write maintains every index the collection has, whichever instance made it. An
// index is made the first time a page of a large enough collection is ordered by the field, or filtered
// by it (filter-indexes.ts) (config.ts, sortIndexMinRows and sortIndexMax), and kept for the collection's life. Each dialect makes and keeps
// its keys in its own SQL (sqlite/sort-indexes.ts, postgres/sort-indexes.ts). The field name only ever
// travels as a binding.

export interface SortIndexLimits {
  /** Rows a collection holds before ordering by a field indexes it. */
  minRows: number;
  /** Sort indexes per collection at most. */
  max: number;
}

/**
 * Which keys of a sort index a page reads: `all` of them (ascending, where missing and null come last
 * in the index too), or for a descending page first the `present` values, then the `missing` ones.
 */
export type KeyRange = 'all' | 'present' | 'missing';

/** The condition on `rank` of each range. */
export const ranks: Record<KeyRange, string> = { all: '', present: 'and rank < 5', missing: 'and rank = 5' };

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
