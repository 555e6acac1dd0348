// The filter language of lists, queries and the feed (issue 25): a filter as a client sends it, a JSON
// value already parsed, read into a tree of conditions, or refused with every place that is wrong, each
// named by a JSON Pointer (RFC 6901) into the filter.
//
// A filter is a JSON object. Each member names a field path with a condition, or is `$and` or `$or` (a
// non-empty array of filters) or `$not` (a filter); the members of one object must all hold. A path is a
// top-level field or a dotted path into nested objects (`owner.name`); `\` escapes a `.` or a `\` that is
// part of a key (`a\.b` is the top-level field `a.b`). `id` is the row's id. A condition is a plain JSON
// value (equal to it), or an object of operators, each one more condition the field must meet.
import { type FieldError, validationFailed } from '../errors.ts';
import { type Search, SearchRefused, searchOf } from '../search/words.ts';

/** A filter's JSON text, as JSON.stringify writes it, weighs this many bytes of UTF-8 at most. */
export const MAX_FILTER_BYTES = 4096;
/** Objects and arrays nest this deep in a filter at most, the filter itself being the first level. */
export const MAX_FILTER_DEPTH = 8;
/** Conditions in a filter at most: each operator on a field counts one, a plain value one. */
export const MAX_FILTER_CONDITIONS = 32;

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** The path of a field: the keys from the row down, unescaped. `['id']` is the row's id. */
export type FieldPath = readonly string[];

/** A condition on one field, its operand typed by its operator. */
export type FieldCondition = { kind: 'field'; path: FieldPath } & (
  | { op: '$eq' | '$ne' | '$contains'; operand: JsonValue }
  | { op: '$in' | '$nin'; operand: JsonValue[] }
  | { op: '$gt' | '$gte' | '$lt' | '$lte'; operand: number | string | boolean }
  | { op: '$exists'; operand: boolean }
  | { op: '$prefix'; operand: string }
);

type Operator = FieldCondition['op'];

/**
 * `$search` (docs/search.md): the rows whose words in the collection's search index hold the search.
 * Read from the filter, it knows neither the collection nor the index: `index` is set once the data
 * layer has looked them up (bindSearch, src/db/search/indexes.ts), and a search is tested
 * or written as SQL only then.
 */
export interface SearchCondition {
  kind: 'search';
  search: Search;
  index?: { collectionId: number; fields: readonly string[] };
}

/**
 * `{"author": {"$match": {…}}}`: the row's to-one relation `author` names a row that matches the filter;
 * `{"comments": {"$some": {…}}}`: some row of its to-many relation `comments` matches it (docs/relations.md).
 * Read from the filter, it knows no relation: the data layer replaces it by the ids it finds
 * (src/db/relations/filters.ts, bindRelations) before the filter is tested or written as SQL.
 */
export interface RelatedCondition {
  kind: 'related';
  relation: string;
  op: '$match' | '$some';
  filter: Filter;
  /**
   * Set once the data layer has bound the condition to be read by the statement of the rows it filters
   * (src/db/relations/bound.ts, boundAlone): `ids`, the SQL (and its bindings) of a subquery of the ids
   * of the related rows the inner filter matches, and the relation's `field` with the slot of its sort
   * index in the collection `collectionId`: for a `$match` the row's own collection (the field names the
   * related row), for a `$some` the related rows' (their field names the row); `one` when the ids are one
   * at most (a `$match`'s equality on a field the related collection holds unique, which the statement
   * checks).
   */
  bound?: { collectionId: number; field: string; slot: number; ids: { sql: string; params: (string | number | null)[] }; one: boolean };
}

/** A filter read: `and` of no filters holds for every row. */
export type Filter =
  | { kind: 'and' | 'or'; filters: Filter[] }
  | { kind: 'not'; filter: Filter }
  | FieldCondition
  | SearchCondition
  | RelatedCondition;

/** What is wrong with a filter, and where: `pointer` is a JSON Pointer into the filter, empty for all of it. */
export interface FilterError {
  pointer: string;
  message: string;
}

/**
 * Where the request carried the filter, as its errors name it. `in: 'body'`: `name` is the JSON Pointer
 * of the filter in the body (`/filter`), and each error's name is that pointer followed by the error's
 * own, as openapi.yaml's ValidationError names a place in a body. Any other: `name` is the parameter,
 * and each error has `pointer` besides.
 */
export interface FilterSource {
  in: FieldError['in'];
  name: string;
}

/** A filter's field error: `pointer` into the parameter's JSON, where the filter is a parameter. */
export type FilterFieldError = FieldError & { pointer?: string };

/** The query parameter `filter` of a list or a subscription. */
export const FILTER_PARAMETER: FilterSource = { in: 'query', name: 'filter' };

const operators: readonly Operator[] = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$exists', '$prefix', '$contains'];
const isOperator = (key: string): key is Operator => (operators as readonly string[]).includes(key);

const utf8 = new TextEncoder();

/**
 * The filter `value` reads as, or a 400 validation_failed whose errors each point at a place in it.
 * `source`: where the request carried it (default FILTER_PARAMETER).
 */
export function parseFilter(value: unknown, source: FilterSource = FILTER_PARAMETER): Filter {
  const read = readFilter(value);
  if (read.errors) throw validationFailed('The filter is not valid.', filterFieldErrors(read.errors, source));
  return read.filter;
}

/**
 * The filter in the JSON text `text` (a query parameter's value), as parseFilter() reads it, or a 400
 * whose one error says the text is not JSON. The bound of MAX_FILTER_BYTES is on the filter as
 * JSON.stringify writes it, not on the text: spaces and the spelling of numbers do not count.
 */
export function parseFilterText(text: string, source: FilterSource = FILTER_PARAMETER): Filter {
  return parseFilter(filterJson(text, source), source);
}

/** The JSON value of the filter text `text`, not yet read as a filter, or a 400 whose one error says it is not JSON. */
export function filterJson(text: string, source: FilterSource = FILTER_PARAMETER): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw validationFailed('The filter is not valid.', filterFieldErrors([{ pointer: '', message: 'is not valid JSON' }], source));
  }
}

export type FilterRead = { filter: Filter; errors?: undefined } | { filter?: undefined; errors: FilterError[] };

/**
 * The filter `value` reads as, or every error found in it, in the order of its text. The bounds are
 * checked on the value: MAX_FILTER_BYTES on JSON.stringify of it, so that the same filter weighs the
 * same in a query string and in a body, whatever spaces the client put in.
 */
export function readFilter(value: unknown): FilterRead {
  if (!isObject(value)) return { errors: [{ pointer: '', message: 'must be a JSON object' }] };
  // TextEncoder rather than Buffer: the web console reads filters with this module too (src/console/rows.ts).
  if (utf8.encode(JSON.stringify(value)).length > MAX_FILTER_BYTES) {
    return { errors: [{ pointer: '', message: `must be at most ${MAX_FILTER_BYTES} bytes as JSON` }] };
  }
  const reader = new Reader();
  const filter = reader.filter(value, '', 1);
  if (reader.conditions > MAX_FILTER_CONDITIONS) {
    reader.errors.push({ pointer: '', message: `holds ${reader.conditions} conditions, and may hold ${MAX_FILTER_CONDITIONS} at most` });
  }
  return reader.errors.length > 0 ? { errors: reader.errors } : { filter };
}

/** `errors` as the field errors of a 400, for a filter carried where `source` says. */
export function filterFieldErrors(errors: FilterError[], source: FilterSource = FILTER_PARAMETER): FilterFieldError[] {
  return errors.map(({ pointer, message }) =>
    source.in === 'body' ? { in: 'body', name: source.name + pointer, message } : { in: source.in, name: source.name, pointer, message },
  );
}

/** Reads one filter, collecting its errors and counting its conditions. */
class Reader {
  readonly errors: FilterError[] = [];
  conditions = 0;

  /** The filter `value`, an object at `pointer` and `depth` (callers check it is an object). */
  filter(value: { [key: string]: unknown }, pointer: string, depth: number): Filter {
    const filters: Filter[] = [];
    if (this.tooDeep(pointer, depth)) return { kind: 'and', filters };
    for (const [key, member] of Object.entries(value)) {
      filters.push(...this.member(key, member, `${pointer}/${pointerToken(key)}`, depth + 1));
    }
    return filters.length === 1 ? filters[0] : { kind: 'and', filters };
  }

  /** The member `key` of a filter, its `value` at `pointer` and `depth`: $and, $or, $not, or the conditions on a field. */
  private member(key: string, value: unknown, pointer: string, depth: number): Filter[] {
    if (key === '$and' || key === '$or') return [{ kind: key === '$and' ? 'and' : 'or', filters: this.list(value, pointer, depth) }];
    if (key === '$not') return [{ kind: 'not', filter: this.nested(value, pointer, depth) }];
    if (key === '$search') return this.search(value, pointer);
    if (key.startsWith('$')) {
      this.errors.push({ pointer, message: 'is not an operator of a filter: $and, $or, $not, $search, or a field path' });
      return [];
    }
    const path = readPath(key);
    const related = isObject(value) && Object.keys(value).length === 1 ? Object.keys(value)[0] : undefined;
    if (typeof path !== 'string' && path.length === 1 && (related === '$match' || related === '$some')) {
      this.conditions++;
      const inner = this.nested((value as { [key: string]: unknown })[related], `${pointer}/${related}`, depth);
      return [{ kind: 'related', relation: path[0], op: related, filter: inner }];
    }
    if (typeof path !== 'string') return this.conditionsOf(path, value, pointer, depth);
    this.errors.push({ pointer, message: `is not a field path: ${path}` });
    return [];
  }

  /** `$search`: one condition, its text a search searchOf() takes. */
  private search(value: unknown, pointer: string): SearchCondition[] {
    this.conditions++;
    if (typeof value !== 'string') {
      this.errors.push({ pointer, message: 'must be a string: the words to search for' });
      return [];
    }
    try {
      return [{ kind: 'search', search: searchOf(value) }];
    } catch (error) {
      if (!(error instanceof SearchRefused)) throw error;
      this.errors.push({ pointer, message: error.message });
      return [];
    }
  }

  private nested(value: unknown, pointer: string, depth: number): Filter {
    if (isObject(value)) return this.filter(value, pointer, depth);
    this.errors.push({ pointer, message: 'must be a filter, a JSON object' });
    return { kind: 'and', filters: [] };
  }

  private list(value: unknown, pointer: string, depth: number): Filter[] {
    if (!Array.isArray(value) || value.length === 0) {
      this.errors.push({ pointer, message: 'must be a non-empty array of filters' });
      return [];
    }
    if (this.tooDeep(pointer, depth)) return [];
    return value.map((item, index) => this.nested(item, `${pointer}/${index}`, depth + 1));
  }

  /** The conditions of the member `value` on the field at `path`: one, or one per operator. */
  private conditionsOf(path: FieldPath, value: unknown, pointer: string, depth: number): FieldCondition[] {
    const keys = isObject(value) ? Object.keys(value) : [];
    const named = keys.filter((key) => key.startsWith('$')).length;
    if (named === 0) {
      this.conditions++;
      return this.operand(value, pointer, depth) ? [{ kind: 'field', path, op: '$eq', operand: value as JsonValue }] : [];
    }
    if (named < keys.length) {
      this.errors.push({ pointer, message: 'mixes operators with other members: compare with such an object through $eq' });
      return [];
    }
    if (this.tooDeep(pointer, depth)) return [];
    const conditions: FieldCondition[] = [];
    for (const [key, operand] of Object.entries(value as { [key: string]: unknown })) {
      const at = `${pointer}/${pointerToken(key)}`;
      if (!isOperator(key)) {
        this.errors.push({ pointer: at, message: `is not an operator: ${operators.join(', ')}` });
        continue;
      }
      this.conditions++;
      const wrong = operandError(key, operand);
      if (wrong) this.errors.push({ pointer: at, message: wrong });
      else if (this.operand(operand, at, depth + 1)) conditions.push({ kind: 'field', path, op: key, operand } as FieldCondition);
    }
    return conditions;
  }

  /** Whether the JSON value `value` at `pointer` and `depth` may be an operand: nested no deeper than a filter may, and every number finite. */
  private operand(value: unknown, pointer: string, depth: number): boolean {
    if (typeof value === 'number' && !Number.isFinite(value)) {
      this.errors.push({ pointer, message: 'is a number too large for a double' });
      return false;
    }
    if (value === null || typeof value !== 'object') return true;
    if (this.tooDeep(pointer, depth)) return false;
    let valid = true;
    for (const [key, item] of Object.entries(value)) {
      if (!this.operand(item, `${pointer}/${Array.isArray(value) ? key : pointerToken(key)}`, depth + 1)) valid = false;
    }
    return valid;
  }

  /** Whether an object or array at `depth` is nested too deep (then one error says so). */
  private tooDeep(pointer: string, depth: number): boolean {
    if (depth <= MAX_FILTER_DEPTH) return false;
    this.errors.push({ pointer, message: `is nested deeper than the ${MAX_FILTER_DEPTH} levels a filter may have` });
    return true;
  }
}

/** What is wrong with `operand` as the operand of `op`, or undefined. */
function operandError(op: Operator, operand: unknown): string | undefined {
  switch (op) {
    case '$in':
    case '$nin':
      return Array.isArray(operand) ? undefined : 'must be an array';
    case '$exists':
      return typeof operand === 'boolean' ? undefined : 'must be true or false';
    case '$prefix':
      return typeof operand === 'string' ? undefined : 'must be a string';
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      return ['number', 'string', 'boolean'].includes(typeof operand) ? undefined : 'must be a number, a string or a boolean';
    default:
      return undefined;
  }
}

/** The keys of a field path, or what is wrong with it. */
function readPath(text: string): FieldPath | string {
  const keys: string[] = [];
  let key = '';
  for (let index = 0; index < text.length; index++) {
    const c = text[index];
    if (c === '.') {
      if (key === '') return 'a key in it is empty';
      keys.push(key);
      key = '';
    } else if (c !== '\\') {
      key += c;
    } else {
      const next = text[++index];
      if (next === undefined) return 'it ends with a lone \\';
      if (next !== '.' && next !== '\\') return '\\ escapes only . and \\';
      key += next;
    }
  }
  if (key === '') return 'a key in it is empty';
  keys.push(key);
  return keys;
}

/** Whether `filter` holds a condition of `kind`, at any depth (a relation's own filter left out). */
const holds =
  (kind: 'search' | 'related') =>
  (filter: Filter): boolean =>
    filter.kind === kind ||
    (filter.kind === 'not'
      ? holds(kind)(filter.filter)
      : (filter.kind === 'and' || filter.kind === 'or') && filter.filters.some(holds(kind)));

/** Whether `filter` holds a `$search`. */
export const holdsSearch = holds('search');

/** Whether `filter` reaches into related rows (`$match`, `$some`). */
export const holdsRelated = holds('related');

/**
 * Why the feed, webhooks and rules refuse a filter through a relation (docs/relations.md): each tests a
 * change of one collection's rows as it comes, and the related rows can change without it.
 */
const RELATED_CHANGE =
  'a change to a related row is no change of this collection: no event would say when a row comes to match or stops matching';

/** The detail of the 400 of a filter through a relation where `whose` filter (a feed's, a webhook's, a rule's) may not go. */
export const relatedRefused = (whose: string) => `${whose} filter may not reach into related rows ($match, $some): ${RELATED_CHANGE}.`;

/**
 * The search a page's relevance (`_score`) is of: the first `$search` at the filter's top level, reached
 * through `$and`s only (a search under `$or` or `$not` may not hold for a row that matches), or none.
 */
export function rankedSearch(filter: Filter | undefined): SearchCondition | undefined {
  if (!filter) return undefined;
  if (filter.kind === 'search') return filter;
  if (filter.kind !== 'and') return undefined;
  for (const part of filter.filters) {
    const found = rankedSearch(part);
    if (found) return found;
  }
  return undefined;
}

/** `filter` without `search` (one of its conditions, rankedSearch()'s), which holds for every row in its place. */
export function without(filter: Filter, search: SearchCondition): Filter {
  if (filter === search) return { kind: 'and', filters: [] };
  if (filter.kind !== 'and') return filter;
  return { kind: 'and', filters: filter.filters.map((part) => without(part, search)) };
}

/** `key` as one token of a JSON Pointer (RFC 6901, section 3). */
export const pointerToken = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

export const isObject = (value: unknown): value is { [key: string]: unknown } =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
