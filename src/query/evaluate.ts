// What a filter (filter.ts) means, on a row in memory: the rules both dialects' SQL must give exactly
// (src/db/sqlite/filter.ts, src/db/postgres/filter.ts), and the test of each row the feed sends to a
// filtered subscriber. A filter is compiled once into a function, so that testing a row walks no tree.
//
// - A field is missing when a key of its path is absent, or names into anything but an object (a
//   number, an array). Missing is not null: only $ne, $nin and `$exists: false` hold for it.
// - $eq, $ne, $in, $nin and $contains compare by JSON equality: numbers by value (1 equals 1.0),
//   objects whatever the order of their members, arrays in order.
// - $gt, $gte, $lt and $lte hold only for a value of the operand's JSON type: numbers by value, strings
//   by Unicode code point (not by UTF-16 unit: U+FFFF comes before U+10000), false before true.
// - $prefix holds for a string that starts with the operand, code point by code point.
// - $search holds for a row whose words in the fields of its collection's search index hold the search
//   (src/search/words.ts, matchesSearch): the reference both engines' indexes are held to.
import { matchesSearch, rowWords } from '../search/words.ts';
import type { FieldCondition, FieldPath, Filter, JsonValue } from './filter.ts';

/** A row as a subscriber sees it: its `id` and its fields. */
export type Row = { readonly id: number; readonly [field: string]: unknown };

export type RowTest = (row: Row) => boolean;

const compiled = new WeakMap<Filter, RowTest>();

/** Whether `row` matches `filter`, with the filter compiled on its first use. */
export function matches(filter: Filter, row: Row): boolean {
  let test = compiled.get(filter);
  if (!test) {
    test = compileFilter(filter);
    compiled.set(filter, test);
  }
  return test(row);
}

/** `filter` as a function that tells whether a row matches it. */
export function compileFilter(filter: Filter): RowTest {
  switch (filter.kind) {
    case 'and': {
      const tests = filter.filters.map(compileFilter);
      return (row) => {
        for (const test of tests) if (!test(row)) return false;
        return true;
      };
    }
    case 'or': {
      const tests = filter.filters.map(compileFilter);
      return (row) => {
        for (const test of tests) if (test(row)) return true;
        return false;
      };
    }
    case 'not': {
      const test = compileFilter(filter.filter);
      return (row) => !test(row);
    }
    case 'field': {
      const read = fieldReader(filter.path);
      const test = valueTest(filter);
      return (row) => test(read(row));
    }
    case 'search': {
      const { search, index } = filter;
      if (!index) throw new Error('a search is tested once bound to its collection (bindSearch)');
      return (row) => matchesSearch(rowWords(row, index.fields), search);
    }
    case 'related':
      throw new Error('a relation is tested in the database only (bindRelations): the feed and webhooks refuse it');
  }
}

/** Reads the field at `path` of a row: undefined when it is missing. */
function fieldReader(path: FieldPath): (row: Row) => unknown {
  if (path.length === 1) {
    const [key] = path;
    return (row) => (Object.hasOwn(row, key) ? row[key] : undefined);
  }
  return (row) => {
    let value: unknown = row;
    for (const key of path) {
      if (!isObject(value) || !Object.hasOwn(value, key)) return undefined;
      value = value[key];
    }
    return value;
  };
}

/** The test of a field's value (undefined when missing) that `condition` makes. */
function valueTest(condition: FieldCondition): (value: unknown) => boolean {
  switch (condition.op) {
    case '$eq':
      return equalTo(condition.operand);
    case '$ne': {
      const equal = equalTo(condition.operand);
      return (value) => !equal(value);
    }
    case '$in':
      return inList(condition.operand);
    case '$nin': {
      const within = inList(condition.operand);
      return (value) => !within(value);
    }
    case '$exists':
      return condition.operand ? (value) => value !== undefined : (value) => value === undefined;
    case '$prefix': {
      const prefix = condition.operand;
      return (value) => typeof value === 'string' && startsWith(value, prefix);
    }
    case '$contains': {
      const equal = equalTo(condition.operand);
      return (value) => Array.isArray(value) && value.some(equal);
    }
    default:
      return comparison(condition.op, condition.operand);
  }
}

/** The test of JSON equality to `operand`. */
function equalTo(operand: JsonValue): (value: unknown) => boolean {
  if (operand === null || typeof operand !== 'object') return (value) => value === operand;
  return (value) => jsonEqual(value, operand);
}

function inList(operands: JsonValue[]): (value: unknown) => boolean {
  const scalars = new Set<unknown>(operands.filter((operand) => operand === null || typeof operand !== 'object'));
  const others = operands.filter((operand) => operand !== null && typeof operand === 'object');
  if (others.length === 0) return (value) => scalars.has(value);
  return (value) => scalars.has(value) || others.some((operand) => jsonEqual(value, operand));
}

/** The test of `op` against `operand`: only values of the operand's JSON type compare. */
function comparison(op: '$gt' | '$gte' | '$lt' | '$lte', operand: number | string | boolean): (value: unknown) => boolean {
  const type = typeof operand;
  const order = type === 'string' ? compareCodePoints : compareValues;
  switch (op) {
    case '$gt':
      return (value) => typeof value === type && order(value as typeof operand, operand) > 0;
    case '$gte':
      return (value) => typeof value === type && order(value as typeof operand, operand) >= 0;
    case '$lt':
      return (value) => typeof value === type && order(value as typeof operand, operand) < 0;
    case '$lte':
      return (value) => typeof value === type && order(value as typeof operand, operand) <= 0;
  }
}

/** Numbers by value, false before true. */
function compareValues(a: number | string | boolean, b: number | string | boolean): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Strings by Unicode code point. UTF-16 units order them alike but where a surrogate pair (U+10000 and
 * above) meets a unit of U+E000..U+FFFF; a lone surrogate counts as the code point of its unit, as
 * UTF-8 and PostgreSQL's escape (src/db/postgres/sql.ts) order it.
 */
export function compareCodePoints(a: number | string | boolean, b: number | string | boolean): number {
  const [x, y] = [a as string, b as string];
  const shorter = Math.min(x.length, y.length);
  let index = 0;
  while (index < shorter && x.charCodeAt(index) === y.charCodeAt(index)) index++;
  if (index === shorter) return x.length - y.length;
  // The units that differ may be the second halves of pairs that start alike.
  if (index > 0 && isHighSurrogate(x.charCodeAt(index - 1))) index--;
  for (;;) {
    const [p, q] = [x.codePointAt(index), y.codePointAt(index)];
    if (p === undefined || q === undefined) return x.length - y.length;
    if (p !== q) return p - q;
    index += p > 0xffff ? 2 : 1;
  }
}

/** Whether `text` starts with the code points of `prefix`: not a high surrogate that pairs in `text` only. */
function startsWith(text: string, prefix: string): boolean {
  if (!text.startsWith(prefix)) return false;
  const last = prefix.length - 1;
  return last < 0 || !isHighSurrogate(prefix.charCodeAt(last)) || !isLowSurrogate(text.charCodeAt(last + 1));
}

/** JSON equality: numbers by value, objects whatever the order of their members, arrays in order. */
function jsonEqual(a: unknown, b: JsonValue): boolean {
  if (b === null || typeof b !== 'object') return a === b;
  if (Array.isArray(b)) {
    if (!Array.isArray(a) || a.length !== b.length) return false;
    for (let index = 0; index < b.length; index++) if (!jsonEqual(a[index], b[index])) return false;
    return true;
  }
  if (!isObject(a)) return false;
  const keys = Object.keys(b);
  if (Object.keys(a).length !== keys.length) return false;
  for (const key of keys) if (!Object.hasOwn(a, key) || !jsonEqual(a[key], b[key])) return false;
  return true;
}

const isObject = (value: unknown): value is { [key: string]: unknown } =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isHighSurrogate = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;
const isLowSurrogate = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff;
