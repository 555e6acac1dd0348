// The order of a page of rows (openapi.yaml, listRows), in memory: what the tests expect both backends'
// pages to be in. Each key orders by the JSON type's place (numbers < strings < booleans < objects and
// arrays, which tie), then the value (numbers numerically, strings by code point, false < true), with a
// missing or null field last in both directions; ties break by id in the last key's direction unless
// `id` is a key.

export type Row = { id: number } & Record<string, unknown>;
export type OrderKey = { field: string; direction: 'asc' | 'desc' };

/** The JSON type's place of a value: 5 for a missing field or null. */
function rank(value: unknown): number {
  switch (typeof value) {
    case 'number':
      return 1;
    case 'string':
      return 2;
    case 'boolean':
      return 3;
    default:
      return value === null || value === undefined ? 5 : 4;
  }
}

/** Two values of one type's place, ascending: strings by code point (their UTF-8 bytes). */
function compareSameRank(a: unknown, b: unknown): number {
  if (typeof a === 'string') return Buffer.compare(Buffer.from(a), Buffer.from(b as string));
  if (typeof a === 'number' || typeof a === 'boolean') return Number(a) - Number(b);
  return 0;
}

const fieldOf = (row: Row, field: string) => (field === 'id' ? row.id : Object.hasOwn(row, field) ? row[field] : undefined);

/** How `a` and `b` compare in the order of `keys`. */
function compareRows(keys: readonly OrderKey[], a: Row, b: Row): number {
  for (const { field, direction } of keys) {
    const [x, y] = [fieldOf(a, field), fieldOf(b, field)];
    const [rx, ry] = [rank(x), rank(y)];
    if (rx !== ry) {
      if (rx === 5 || ry === 5) return rx - ry; // missing last, whatever the direction
      return direction === 'asc' ? rx - ry : ry - rx;
    }
    const order = compareSameRank(x, y);
    if (order !== 0) return direction === 'asc' ? order : -order;
  }
  if (keys.some(({ field }) => field === 'id')) return 0;
  return keys[keys.length - 1].direction === 'asc' ? a.id - b.id : b.id - a.id;
}

/** `rows` in the order of `keys`, a new array. */
export const sortRows = (rows: readonly Row[], keys: readonly OrderKey[]) => [...rows].sort((a, b) => compareRows(keys, a, b));
