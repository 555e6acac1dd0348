// What every write of rows needs of a collection's relations (docs/relations.md), kept with its schema:
// the relations declared of it (`out`, to-one: its rows name rows of another collection) and those
// declared of others naming it (`in`: what deleting one of its rows does to the rows that name it).
// Stored as the `relations` of the collection's current schema row (schemas.ts), so that a write
// checked against a schema id is checked against exactly these.
import type { components } from '../../../generated/openapi.ts';
import { ApiError, type RowError } from '../../errors.ts';
import { expiryNow } from '../../expiry/ttl.ts';
import { assignable } from '../../rows.ts';

/** A row's fields, and a read of the database, as the writes hand them here. */
type Fields = Record<string, unknown>;
type Read = <T>(sql: string, params: (string | number | null)[]) => Promise<T[]>;

export type Relation = components['schemas']['Relation'];
export type OnDelete = Relation['on_delete'];

/** A declared relation, as stored: the collection its `field` is of (`source`), and the collection its ids name (`target`). */
export interface StoredRelation {
  name: string;
  source: number;
  sourceName: string;
  field: string;
  target: number;
  targetName: string;
  onDelete: OnDelete;
  reverse: string | null;
}

export interface RelationLinks {
  out: StoredRelation[];
  in: StoredRelation[];
}

/** The relations of a collection as the API shows them: its to-one relations, then the to-many reverses others declared. */
export function shownRelations(links: RelationLinks | null | undefined): Relation[] {
  if (!links) return [];
  const toOne = links.out.map(
    (r): Relation => ({
      name: r.name,
      kind: 'to_one',
      collection: r.targetName,
      field: r.field,
      on_delete: r.onDelete,
      reverse: r.reverse,
    }),
  );
  const toMany = links.in.flatMap((r): Relation[] =>
    r.reverse === null
      ? []
      : [{ name: r.reverse, kind: 'to_many', collection: r.sourceName, field: r.field, on_delete: r.onDelete, reverse: r.name }],
  );
  return [...toOne, ...toMany];
}

/** Ids looked up in one statement at most. */
const IDS_PER_READ = 1000;
/** The places a 422 lists at most, as a schema's (schemas.ts). */
const MAX_LISTED = 100;

/** A value of a relation's field that names no row: the row's place among those checked, and what is wrong. */
export interface Missing {
  index: number;
  message: string;
}

/**
 * The rows among `rows` whose field of `relation` holds anything but null (or nothing) or the id of a row
 * of its collection that exists and has not expired, in the order of `rows`. `existingSql` answers which
 * of the ids `?` (joined by commas) are rows of the collection `?` that live at `?` (the expiry now), as
 * the dialect reads them: on PostgreSQL each row found is held (FOR KEY SHARE) until the write's commit,
 * so that no delete of it commits before the write does, and a delete that comes first is waited for
 * and then seen.
 */
export async function missingNamed(read: Read, existingSql: string, relation: StoredRelation, rows: readonly Fields[]): Promise<Missing[]> {
  const missing: Missing[] = [];
  const named = new Map<number, number[]>();
  for (let index = 0; index < rows.length; index++) {
    const value = rows[index][relation.field];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || !assignable(value)) {
      missing.push({ index, message: `must be the id of a row of ${relation.targetName}, or null` });
      continue;
    }
    const places = named.get(value);
    if (places) places.push(index);
    else named.set(value, [index]);
  }
  const ids = [...named.keys()].sort((a, b) => a - b);
  // A row that has expired is no row (docs/expiry.md), though the sweeper has not deleted it yet.
  const now = expiryNow();
  for (let from = 0; from < ids.length; from += IDS_PER_READ) {
    const part = ids.slice(from, from + IDS_PER_READ);
    const found = new Set(
      (await read<{ id: number | string }>(existingSql, [relation.target, part.join(','), now])).map((row) => Number(row.id)),
    );
    for (const id of part) {
      if (found.has(id)) continue;
      for (const index of named.get(id) as number[]) {
        missing.push({ index, message: `names row ${id} of ${relation.targetName}, which does not exist` });
      }
    }
  }
  return missing.sort((a, b) => a.index - b.index);
}

/**
 * The rows that `rows` name in `relations`, each once, in order of collection and id: their collections'
 * ids and their ids, side by side. Undefined when a field of a relation holds anything but null (or
 * nothing) or a row id: the rows are then checked one by one (checkNamed), which says what is wrong.
 */
export function namedRows(
  relations: readonly StoredRelation[],
  rows: readonly Fields[],
): { collections: number[]; ids: number[] } | undefined {
  const named = new Map<number, Set<number>>();
  for (const relation of relations) {
    const ids = named.get(relation.target) ?? new Set<number>();
    named.set(relation.target, ids);
    for (const row of rows) {
      const value = row[relation.field];
      if (value === undefined || value === null) continue;
      if (typeof value !== 'number' || !assignable(value)) return undefined;
      ids.add(value);
    }
  }
  const collections: number[] = [];
  const ids: number[] = [];
  for (const target of [...named.keys()].sort((a, b) => a - b)) {
    for (const id of [...(named.get(target) as Set<number>)].sort((a, b) => a - b)) {
      collections.push(target);
      ids.push(id);
    }
  }
  return { collections, ids };
}

/** 422 row_invalid when any of `rows` names a row that does not exist in one of `relations` (missingNamed), each row named by `rowOf(index)`. */
export async function checkNamed(
  read: Read,
  existingSql: string,
  relations: readonly StoredRelation[],
  collection: string,
  rows: readonly Fields[],
  rowOf: (index: number) => number,
): Promise<void> {
  const errors: RowError[] = [];
  const failing = new Set<number>();
  for (const relation of relations) {
    for (const { index, message } of await missingNamed(read, existingSql, relation, rows)) {
      failing.add(index);
      errors.push({ row: rowOf(index), pointer: `/${relation.field}`, keyword: 'relation', message });
    }
  }
  if (failing.size === 0) return;
  const count = failing.size === 1 ? '1 row names' : `${failing.size} rows name`;
  throw new ApiError('row_invalid', `${count} a row that does not exist in a relation of collection ${collection}: nothing was written.`, {
    errors: errors.slice(0, MAX_LISTED),
  });
}

/**
 * The collections `names` in the order a write holding several of them holds them (../rows/batch.ts): each
 * before the collections a delete of its rows may change by `relations` (its set_null and cascade, and
 * the cascades' own: ../rows/writes.ts, holdFollowers), as that delete holds them, else in the order of
 * their names. Where relations go round in a circle (set_null both ways), by name: the transaction that
 * the database then aborts as a deadlock is tried again (../engine/deadlocks.ts).
 */
export function holdingOrder(relations: readonly StoredRelation[], names: readonly string[]): string[] {
  const followers = (name: string) => {
    const found = new Set<string>();
    const next = [name];
    while (next.length > 0) {
      const at = next.pop() as string;
      for (const r of relations) {
        if (r.targetName !== at || r.onDelete === 'restrict' || found.has(r.sourceName)) continue;
        found.add(r.sourceName);
        if (r.onDelete === 'cascade') next.push(r.sourceName);
      }
    }
    return found;
  };
  const left = [...names].sort();
  const changed = new Map(left.map((name) => [name, followers(name)]));
  const order: string[] = [];
  while (left.length > 0) {
    // The first by name that no other collection left may change; none such: the first by name.
    const free = left.findIndex((name) => !left.some((other) => other !== name && changed.get(other)?.has(name)));
    order.push(...left.splice(Math.max(free, 0), 1));
  }
  return order;
}
