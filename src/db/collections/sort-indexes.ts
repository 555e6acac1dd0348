// Sort indexes: pages ordered by a field, read from an index instead of sorting the collection.
// What a key holds, and when an index is made and kept: docs/development.md, "Sort indexes".

import type { SortedEntry } from '../engine/sorted.ts';

export interface SortIndexLimits {
  /** Rows a collection holds before ordering by a field indexes it. */
  minRows: number;
  /** Sort indexes per collection at most. */
  max: number;
}

/** Collections (and ranges) remembered at most; the least recently remembered is forgotten first. */
const MAX_KNOWN = 10_000;
/** How long a range's size is trusted, in ms: half a second, as a collection's rules are (engine/read-cache.ts). */
const RANGE_TTL_MS = 500;

/**
 * A collection as a page last saw it: its id, the fields of its sort indexes by slot, and whether it had a
 * time to live (docs/expiry.md). A page picks its statement by `expiring`, and each of them reads only the
 * rows that live whether or not it has one now: one that was set or removed since is a page slower, never
 * wrong.
 */
export type KnownCollection = { id: number; sorted: SortedEntry[]; expiring: boolean };

/**
 * The sort indexes this process has seen collections have: each collection's id and indexed fields, by
 * account and name. Never wrong in a way that shows: a collection's indexes are only ever added to, and
 * a page read through a remembered id whose collection is gone (its seq, read by the same statement,
 * is null) is read again after looking the collection up (it may have been deleted, or deleted and made
 * again under a new id, by another instance).
 */
export class KnownIndexes {
  private readonly known = new Map<string, KnownCollection>();
  /** Whether a range of an index held many keys, by the range (largeRange()), and when it was counted. */
  private readonly ranges = new Map<string, { large: boolean; at: number }>();
  /** By collection id: the fields it had a unique index of, each alone, when last seen (uniqueFields()). */
  private readonly uniques = new Map<number, readonly string[]>();

  get(accountId: number, name: string): KnownCollection | undefined {
    return this.known.get(`${accountId}/${name}`);
  }

  set(accountId: number, name: string, collection: KnownCollection): void {
    const key = `${accountId}/${name}`;
    this.known.delete(key);
    if (this.known.size >= MAX_KNOWN) this.known.delete(this.known.keys().next().value as string);
    this.known.set(key, collection);
  }

  /** Notes that the collection has a time to live now, or none (`expiring`), if it is known. */
  setExpiring(accountId: number, name: string, expiring: boolean): void {
    const key = `${accountId}/${name}`;
    const known = this.known.get(key);
    if (known) this.known.set(key, { ...known, expiring });
  }

  /**
   * The fields the collection `id` had a unique index of (each one alone) when last seen: a guess, since a
   * unique index may be dropped, which a read that relies on it checks (../relations/bound.ts). Undefined
   * when not seen.
   */
  uniqueFields(id: number): readonly string[] | undefined {
    return this.uniques.get(id);
  }

  /** Notes the fields the collection `id` has a unique index of, each alone. */
  setUniqueFields(id: number, fields: readonly string[]): void {
    this.uniques.delete(id);
    if (this.uniques.size >= MAX_KNOWN) this.uniques.delete(this.uniques.keys().next().value as number);
    this.uniques.set(id, fields);
  }

  /**
   * Whether the range `range` (a collection's id, an index's slot and the bounds' SQL: ../reads/pages.ts,
   * walkedPage) held many keys when counted less than RANGE_TTL_MS ago; undefined when it was not. Only a
   * page's plan depends on it: a walk that finds too few rows falls back to the range, and a range that
   * grew is read whole until it is counted again.
   */
  largeRange(range: string, now = Date.now()): boolean | undefined {
    const counted = this.ranges.get(range);
    return counted && now - counted.at < RANGE_TTL_MS ? counted.large : undefined;
  }

  /** Notes what the range `range` held when counted at `now`. */
  countedRange(range: string, large: boolean, now = Date.now()): void {
    this.ranges.delete(range);
    if (this.ranges.size >= MAX_KNOWN) this.ranges.delete(this.ranges.keys().next().value as string);
    this.ranges.set(range, { large, at: now });
  }
}
