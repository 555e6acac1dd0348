// Patches and changes by filter of one collection sent side by side, written together (updates.ts,
// patchGroups and changeGroups; docs/development.md, "Work done together"): one transaction holds the
// collection, reads the rows of all of them in one statement, applies each in Node in the order they
// came, on the rows as the ones before it left them, and stores the rows by the dialect's writePatched,
// a statement for many rows, where each alone would read and write by statements of its own. Each
// answers what it would have alone in that order: its rows as stored, or its own refusal (404, 400, 409,
// 412, 413, 422, a rule's), which writes nothing of it; any other failure is thrown, nothing is written,
// and the group runs each again alone (../engine/grouping.ts).

import { ApiError, rowNotFound } from '../../errors.ts';
import { type Patch, patchedFields } from '../../patches/index.ts';
import { matches, type Row } from '../../query/evaluate.ts';
import type { Filter } from '../../query/filter.ts';
import { versionOf } from '../../rows.ts';
import { advance } from '../collections/collections.ts';
import type { Dialect, KeyRange, WriteTx } from '../engine/dialect.ts';
import type { PatchedRow } from '../engine/port.ts';
import type { SortedEntry } from '../engine/sorted.ts';
import { listOf, type Sql, TRUE } from '../engine/sql/template.ts';
import { liveWhere } from '../expiry/live.ts';
import { inIndex } from '../reads/filter-indexes.ts';
import { patchedRow, patchedRows, patchRowsIn, type RowPatch } from './patches.ts';
import {
  type ChangedRows,
  changedRows,
  type FilterMatch,
  filterMatchSql,
  type MatchedRow,
  matchedRows,
  type RowGuard,
  readMatched,
  tooManyRows,
  type VersionedRow,
} from './rows.ts';

/**
 * Patches of rows of one collection (patchRowIn's, each of one row), inside `trx`: their rows read by
 * their ids in one statement, each patch applied to its row as the patches before it left it (a row
 * patched twice is stored a second time, after the first). Each answer is its row as now stored.
 */
export async function patchEachIn(
  db: Dialect,
  trx: WriteTx,
  accountId: number,
  collection: string,
  patches: readonly RowPatch[],
): Promise<(VersionedRow | ApiError)[]> {
  const { id, schemaId } = await advance(db, trx, accountId, collection, 0);
  const ids = [...new Set(patches.map(({ rowId }) => rowId))];
  const found = await matchedRows(db, trx, id, { ids, where: liveWhere(TRUE) }, ids.length);
  const rows = new Map(found.map((row) => [row.id, { data: row.data, version: versionOf(id, row.version) }]));
  const unstored = new Unstored(db, trx, accountId, collection, id, schemaId);
  const answers: (VersionedRow | ApiError)[] = [];
  const store = async () => {
    for (const { place, row, stored } of await unstored.store()) {
      answers[place] = stored;
      rows.set(row.id, { data: row.text, version: stored.version });
    }
  };
  for (const [place, each] of patches.entries()) {
    if (unstored.holds(each.rowId)) await store();
    const stored = rows.get(each.rowId);
    try {
      if (!stored) throw rowNotFound(collection, each.rowId);
      const { row, text } = await patchedRow(db, trx, collection, schemaId, each, stored.data, stored.version, 0);
      const patched = { id: each.rowId, data: stored.data, version: stored.version, fields: row, text };
      unstored.add(patched, patchedFields(each.patch), place);
    } catch (error) {
      answers[place] = ownRefusal(error);
    }
  }
  await store();
  return answers;
}

/** A change by filter (patchRowsIn's) as updateRowsWhere() queues it. */
export interface FilterChange {
  /** Its filter, as the rows the changes before it patched are tested by it in Node: no relation, no search. */
  filter: Filter;
  match: FilterMatch;
  patch: Patch;
  max: number;
  guard?: RowGuard;
  /** Told the rows matched, as they were. */
  matched?: (rows: MatchedRow[]) => void;
}

/** A group whose changes cannot all be known from the first read (see patchEachWhereIn): its changes run each alone. */
class ReadAgain extends Error {}

/**
 * Changes by filter of one collection, inside `trx`: the rows of each read in one statement, as the
 * database holds them before any of them; each change's rows those of its own read that no change
 * before it patched, and those patched that its filter keeps as they were left (`matches()`, the
 * reference the dialects' SQL is held to). Where rows expire, each change reads its own rows in turn.
 */
export async function patchEachWhereIn(
  db: Dialect,
  trx: WriteTx,
  accountId: number,
  collection: string,
  changes: readonly FilterChange[],
): Promise<(ChangedRows | ApiError)[]> {
  const { id, schemaId, sorted, ttlField } = await advance(db, trx, accountId, collection, 0);
  // A row's expiry, which a patch may move, is the database's to test.
  if (ttlField !== null)
    return inTurn(changes, (change) =>
      patchRowsIn(db, trx, accountId, collection, change.match, change.patch, change.max, change.guard, change.matched),
    );
  const own = await rowsOfEach(db, trx, id, changes, sorted);
  // The rows the changes so far patched, as they left them, each with its fields as a filter tests them.
  const patched = new Map<number, { row: MatchedRow; tested: Row }>();
  const unstored = new Unstored(db, trx, accountId, collection, id, schemaId);
  const answers: (ChangedRows | ApiError)[] = [];
  const written: VersionedRow[][] = changes.map(() => []);
  const store = async () => {
    for (const { place, stored } of await unstored.store()) written[place].push(stored);
  };
  for (const [place, change] of changes.entries()) {
    const read = own[place];
    // Its read stopped past `max`: what it misses of the rows patched since is not known.
    if (read.length > change.max && read.some((row) => patched.has(row.id))) throw new ReadAgain();
    const rows = [
      ...read.filter((row) => !patched.has(row.id)),
      ...[...patched.values()].flatMap(({ row, tested }) => (matches(change.filter, tested) ? [row] : [])),
    ].sort((a, b) => a.id - b.id);
    if (rows.length > change.max) {
      answers[place] = tooManyRows(change.max);
      continue;
    }
    change.matched?.(rows);
    try {
      const changed = await patchedRows(db, trx, collection, schemaId, rows, change.patch, change.guard);
      if (changed.some((row) => unstored.holds(row.id))) await store();
      const fields = patchedFields(change.patch);
      for (const row of changed) {
        unstored.add(row, fields, place);
        patched.set(row.id, { row: { id: row.id, data: row.text, version: row.version }, tested: { ...row.fields, id: row.id } });
      }
    } catch (error) {
      answers[place] = ownRefusal(error);
    }
  }
  await store();
  return changes.map((_, place) => answers[place] ?? changedRows(written[place]));
}

/** A change's rows as read: `id` and the rest null for a key whose row the read's condition left out. */
type ReadRow = { n: number | string; id: number | string | null; data: string; version: number | string };

/**
 * The rows of each change, read in one statement, before any of them is written. Where each finds its
 * rows through a range of a sort index (FilterMatch), the ranges' keys and their rows (the Dialect's
 * rangesRowsSql, which PostgreSQL plans once however many there are), each row then tested by its
 * change's filter here (matches()); a change whose range holds more keys than it may patch reads its rows
 * again by its filter's own statement. Else each change's filter's own statement, all in one.
 */
async function rowsOfEach(
  db: Dialect,
  trx: WriteTx,
  collectionId: number,
  changes: readonly FilterChange[],
  sorted: readonly SortedEntry[],
): Promise<MatchedRow[][]> {
  const own: MatchedRow[][] = changes.map(() => []);
  const ranges = changes.map(({ match, max }): KeyRange | undefined => {
    const index = inIndex(sorted, match.fields);
    return index && { slot: index.slot, bounds: index.bounds, limit: max + 1 };
  });
  const keyed = ranges.every((range): range is KeyRange => range !== undefined);
  const read = keyed ? db.rangesRowsSql(collectionId, ranges, liveWhere(TRUE)) : filterReads(db, collectionId, changes, sorted);
  const keys = changes.map(() => 0);
  for (const row of await db.run<ReadRow>(trx, read.sql, read.params, true)) {
    const n = Number(row.n);
    keys[n]++;
    if (row.id === null) continue;
    const found = { id: Number(row.id), data: row.data, version: row.version };
    if (!keyed || matches(changes[n].filter, { ...JSON.parse(found.data), id: found.id })) own[n].push(found);
  }
  if (!keyed) return own;
  for (const [n, { match, max }] of changes.entries()) {
    if (keys[n] <= max) continue;
    own[n] = await readMatched(db, trx, filterMatchSql(db, collectionId, match, max + 1, sorted));
  }
  return own;
}

/** The first `max + 1` rows of each change's filter, each by its own statement, as one (a union), each row with its change's place `n`. */
function filterReads(db: Dialect, collectionId: number, changes: readonly FilterChange[], sorted: readonly SortedEntry[]): Sql {
  const reads = changes.map(({ match, max }, place) => {
    const read = filterMatchSql(db, collectionId, match, max + 1, sorted);
    return { sql: `select ${place} as n, id, data, version from (${read.sql}) as m${place}`, params: read.params };
  });
  return listOf(reads, ' union all ');
}

/** Each change run by `run`, one after another in the transaction: its answer, or its own refusal. */
async function inTurn<C, R>(changes: readonly C[], run: (change: C) => Promise<R>): Promise<(R | ApiError)[]> {
  const answers: (R | ApiError)[] = [];
  for (const change of changes) answers.push(await run(change).catch(ownRefusal));
  return answers;
}

/** A write's own refusal, as its answer; any other failure thrown. */
const ownRefusal = (error: unknown): ApiError => {
  if (error instanceof ApiError) return error;
  throw error;
};

/**
 * The rows a group patched and has not stored yet, each once, with the place of the write each is of
 * and the fields that write set: stored by writePatched, in the order they came.
 */
class Unstored {
  private rows: { row: PatchedRow; fields: readonly string[] | undefined; place: number }[] = [];
  private readonly ids = new Set<number>();

  constructor(
    private readonly db: Dialect,
    private readonly trx: WriteTx,
    private readonly accountId: number,
    private readonly collection: string,
    private readonly collectionId: number,
    private readonly schemaId: number,
  ) {}

  /** Whether the row `id` waits to be stored. */
  holds(id: number): boolean {
    return this.ids.has(id);
  }

  /** The row `row`, as the write at `place` patched it, setting `fields` (patchedFields(); undefined for any). */
  add(row: PatchedRow, fields: readonly string[] | undefined, place: number): void {
    this.rows.push({ row, fields, place });
    this.ids.add(row.id);
  }

  /** Stores the rows that wait: each with its place, and how it is stored now. */
  async store(): Promise<{ place: number; row: PatchedRow; stored: VersionedRow }[]> {
    if (this.rows.length === 0) return [];
    const taken = this.rows;
    this.rows = [];
    this.ids.clear();
    const { db, trx, accountId, collection, collectionId, schemaId } = this;
    const rows = taken.map(({ row }) => row);
    const stored = await db.rows.writePatched(trx, accountId, collection, collectionId, schemaId, rows, fieldsOfAll(taken));
    return taken.map(({ place, row }, index) => ({ place, row, stored: stored[index] }));
  }
}

/** The fields any of the writes set: undefined when one of them may set any. */
function fieldsOfAll(writes: readonly { fields: readonly string[] | undefined }[]): readonly string[] | undefined {
  const all = new Set<string>();
  for (const { fields } of writes) {
    if (!fields) return undefined;
    for (const field of fields) all.add(field);
  }
  return [...all];
}
