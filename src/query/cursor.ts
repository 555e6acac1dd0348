// Cursors of pages of rows (openapi.yaml, listRows `after`, queryRows `after` and `next`): where the
// next page starts, as an opaque string. A cursor holds the last row's value of each sort key and its
// id, so that the next page is the rows after that place in the order (keyset paging): a row that stays
// in place is never repeated or skipped, whatever is inserted, changed or deleted between pages.
//
// A cursor is bound to its query: the account, the collection, the filter, the order and the fields
// selected. It carries a SHA-256 of those and of its own place, so that a cursor used with another
// query, or altered, is a 400 rather than a page of something else. It is not a secret and grants
// nothing: it holds only values its client has read, and any key of the account could make one that
// starts anywhere in what it may read anyway. The limit and `count` may change from page to page.
import { hash } from 'node:crypto';
import { type FieldError, validationFailed } from '../errors.ts';
import type { SortKey } from './order.ts';
import { type KeyValue, keyValueOf } from './sort-keys.ts';

/**
 * A place in a page's order, just after a row: that row's value of each sort key but `id` (null for
 * `id`), and its id. A page `after` it holds only the rows that come later (keyset paging).
 */
export interface Position {
  values: readonly (KeyValue | null)[];
  id: number;
}

/** The query a cursor belongs to. */
export interface CursorScope {
  accountId: number;
  collection: string;
  /** The filter as the client sent it (a JSON value), or undefined for none. */
  filter?: unknown;
  order: readonly SortKey[];
  /** The fields selected, or undefined for whole rows. */
  select?: readonly string[];
}

/** Where the request carried the cursor, as its 400 names it. */
export type CursorSource = Pick<FieldError, 'in' | 'name'>;

const AFTER_PARAMETER: CursorSource = { in: 'query', name: 'after' };

/** A sort key's value in a cursor: null when missing or null, `{}` for an object or array, else the value. */
type CursorValue = null | number | string | boolean | Record<string, never>;

/** The cursor of the place just after `row` (a page's last) in the order of `scope`. */
export function makeCursor(scope: CursorScope, row: Record<string, unknown>): string {
  const values = scope.order.map(({ field }): CursorValue => {
    if (field === 'id' || !Object.hasOwn(row, field)) return null;
    const { rank, scalar } = keyValueOf(row[field]);
    return rank === 4 ? {} : scalar;
  });
  const place = JSON.stringify([row.id, values]);
  return `${Buffer.from(place).toString('base64url')}.${seal(scope, place)}`;
}

/** The place `cursor` holds, if it was made for `scope`; else a 400 naming where it came from. */
export function readCursor(cursor: string, scope: CursorScope, source: CursorSource = AFTER_PARAMETER): Position {
  const dot = cursor.indexOf('.');
  const place = dot > 0 ? Buffer.from(cursor.slice(0, dot), 'base64url').toString() : '';
  if (dot < 0 || cursor.slice(dot + 1) !== seal(scope, place)) {
    throw cursorInvalid(source, 'is not a cursor of this query: use the cursor a page of the same filter, order and select answered');
  }
  // Sealed by this service, so well formed; checked all the same, so that no cursor can make a 500.
  const read = parsed(place);
  if (!Array.isArray(read) || read.length !== 2 || !Number.isSafeInteger(read[0]) || !Array.isArray(read[1])) {
    throw cursorInvalid(source, 'is not a cursor');
  }
  const [id, values] = read as [number, unknown[]];
  if (values.length !== scope.order.length) throw cursorInvalid(source, 'is not a cursor of this order');
  return {
    id,
    values: values.map((value, index) => {
      if (scope.order[index].field === 'id') return null;
      if (value === null || typeof value !== 'object') return keyValueOf(value);
      return { rank: 4, scalar: null };
    }),
  };
}

/**
 * The last row of a page's JSON text. Rows are `{"id":…` objects joined by commas, and a JSON string
 * never holds a bare quote, so the last row starts at one of the last `{"id":` after a comma or the
 * opening bracket: the first of those, from the end, whose text to the end is a whole JSON value (one
 * inside the row is followed by the row's own closing brace). Only that row is parsed.
 */
export function lastRow(json: string): Record<string, unknown> {
  const end = json.length - 1; // the closing bracket
  for (let start = json.lastIndexOf('{"id":', end); start > 0; start = json.lastIndexOf('{"id":', start - 1)) {
    if (json[start - 1] !== ',' && json[start - 1] !== '[') continue;
    const row = parsed(json.slice(start, end));
    if (row !== undefined) return row as Record<string, unknown>;
  }
  return (JSON.parse(json) as Record<string, unknown>[]).at(-1) as Record<string, unknown>;
}

/** The seal of a place in a query: base64url of the first 16 bytes of a SHA-256 of both. */
function seal({ accountId, collection, filter, order, select }: CursorScope, place: string): string {
  const query = JSON.stringify([
    accountId,
    collection,
    filter === undefined ? null : canonical(filter),
    order,
    select ? [...select].sort() : null,
  ]);
  return hash('sha256', `${query}\n${place}`, 'buffer').subarray(0, 16).toString('base64url');
}

/** A JSON value as text, objects' members in order of their names: a filter is the same whatever its members' order. */
function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const members = Object.keys(value)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`);
  return `{${members.join(',')}}`;
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const cursorInvalid = (source: CursorSource, message: string) =>
  validationFailed('The cursor is not valid.', [{ in: source.in, name: source.name, message }]);
