// Filters read through sort indexes (openapi.yaml, listRows `filter`; docs/api.md, "Filters and
// indexes"). A sort index (sort-indexes.ts) keys each row by where its value of a field falls in the
// order of pages: its JSON type's rank, then its number or its string. So the rows whose field equals a
// number, a string or a boolean, lies in a range of them, or starts with a prefix, are one range of the
// field's keys; those whose field is one of a list of such values (`$in`, all of one type), a few keys
// looked up one by one (as a `$match` through a relation becomes: relations/filters.ts), or those of the
// ids a subquery of the related rows reads (a `$match` bound to be read in the page's own statement). A
// filter whose top level (its members, all ANDed) holds such a condition on a top-level
// field that has an index reads only that range of the index, and tests the whole filter on those rows
// alone, instead of on every row of the collection.
//
// The range only ever holds more rows than the condition keeps, never fewer: on PostgreSQL a key holds
// a string's first 400 characters (postgres/sql/collections.ts, POSTGRES_KEY_CHARS), so its bounds are the cut
// strings, taken inclusive; the whole filter, tested on each row of the range, keeps exactly the rows
// it keeps on the whole collection.
import type { FieldCondition, Filter } from '../../query/filter.ts';
import type { KeyBounds, KeyValue, ValueCondition } from '../engine/dialect.ts';
import type { SortedEntry } from '../engine/sorted.ts';

/** Whether the range holds one value only (an equality): its keys then come in the order of their rows' ids. */
export const oneValue = ({ conditions }: KeyBounds) =>
  conditions.some((condition) => condition.op === '$eq' || (condition.op === '$ids' && condition.one));

/** A field of the filter's top level, and the range of its index that holds every row the filter keeps. */
export interface IndexedField {
  field: string;
  bounds: KeyBounds;
  /** Whether the filter is these bounds and nothing else: where keys hold whole values, every row of the range matches. */
  whole: boolean;
}

const rankOf = (operand: KeyValue): 1 | 2 | 3 => (typeof operand === 'number' ? 1 : typeof operand === 'string' ? 2 : 3);

const isKeyValue = (value: unknown): value is KeyValue =>
  typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean';

/** A condition an index range can find the rows of, or undefined. */
function keyCondition(condition: FieldCondition): ValueCondition | undefined {
  if (condition.path.length !== 1 || condition.path[0] === 'id') return undefined;
  const { op, operand } = condition;
  if (op === '$prefix') return { op, operand };
  if (op === '$in') {
    const [first] = operand;
    const oneType = first !== undefined && operand.every((value) => isKeyValue(value) && typeof value === typeof first);
    return oneType ? { op, operand: operand as KeyValue[] } : undefined;
  }
  if (op !== '$eq' && op !== '$gt' && op !== '$gte' && op !== '$lt' && op !== '$lte') return undefined;
  if (!isKeyValue(operand)) return undefined;
  return { op, operand };
}

/**
 * The fields of the filter's top level whose index could find the rows it keeps, each with the range
 * of its index that holds them (the conditions on the field of the first one's type: a value of one
 * type never meets a condition of another): fields with an equality first, then the others, each in
 * the order of the filter. `id` is not among them: its conditions read the primary key.
 */
export function indexedFields(filter: Filter): IndexedField[] {
  const top = filter.kind === 'and' ? filter.filters : [filter];
  const found = new Map<string, KeyBounds>();
  for (const part of top) {
    if (part.kind === 'related' && part.op === '$match' && part.bound) {
      // A `$match` bound to be read in the page's statement: the keys of the related rows' ids.
      const { field, ids, one } = part.bound;
      if (!found.has(field)) found.set(field, { rank: 1, conditions: [{ op: '$ids', operand: ids, one }] });
      continue;
    }
    if (part.kind !== 'field') continue;
    const condition = keyCondition(part);
    if (!condition) continue;
    const field = part.path[0];
    const rank = condition.op === '$prefix' ? 2 : rankOf(condition.op === '$in' ? condition.operand[0] : condition.operand);
    const bounds = found.get(field);
    if (!bounds) found.set(field, { rank, conditions: [condition] });
    else if (bounds.rank === rank) bounds.conditions.push(condition);
  }
  const fields = [...found].map(([field, bounds]) => ({ field, bounds, whole: bounds.conditions.length === top.length }));
  const equal = ({ bounds }: IndexedField) => oneValue(bounds);
  return [...fields.filter(equal), ...fields.filter((field) => !equal(field))];
}

/** The rows a filter keeps can be found in the index of `field`, in `slot`, within `bounds` (`whole`: IndexedField's). */
export type InIndex = { field: string; slot: number; bounds: KeyBounds; whole: boolean };

/** The first of `fields` the collection has a sort index of, and its slot. */
export function inIndex(sorted: readonly SortedEntry[], fields: readonly IndexedField[]): InIndex | undefined {
  for (const { field, bounds, whole } of fields) {
    const slot = sorted.indexOf(field);
    if (slot >= 0) return { field, slot, bounds, whole };
  }
  return undefined;
}
