// The value of a row's field as a page's order sees it (openapi.yaml, listRows: "missing or null last"):
// its JSON type's rank, then the value itself. Sort indexes key rows so, and cursors carry it.

/**
 * Where a value falls among the JSON types in a page's order: 1 numbers, 2 strings, 3 booleans, 4
 * objects and arrays, 5 missing or null (last in both directions).
 */
type Rank = 1 | 2 | 3 | 4 | 5;

/** A row's value of one sort key, as the order sees it: its rank, and the value itself for ranks 1 to 3. */
export interface KeyValue {
  rank: Rank;
  scalar: number | string | boolean | null;
}

/** The sort key value of a field's JSON value, `undefined` when the field is missing. */
export function keyValueOf(value: unknown): KeyValue {
  switch (typeof value) {
    case 'number':
      return { rank: 1, scalar: value };
    case 'string':
      return { rank: 2, scalar: value };
    case 'boolean':
      return { rank: 3, scalar: value };
    default:
      return value === null || value === undefined ? { rank: 5, scalar: null } : { rank: 4, scalar: null };
  }
}
