// Aggregates of a collection's rows (openapi.yaml, aggregateRows; docs/aggregates.md): a request read
// into a query, or refused with every place that is wrong; and what the answer is, on rows in memory:
// the rules both dialects' SQL must give (src/db/reads/aggregates.ts), and the evaluation the tests hold
// them to.
// The rules, one by one: docs/aggregates.md, "The rules, exactly".
import { type FieldError, validationFailed } from '../errors.ts';
import { setMember } from '../rows.ts';
import { compareCodePoints, matches, type Row } from './evaluate.ts';
import { type Filter, type FilterSource, filterFieldErrors, filterJson, type JsonValue, readFilter } from './filter.ts';

/** Group fields of one query at most. */
const MAX_GROUP_FIELDS = 10;
/** Aggregates of one query at most. */
const MAX_AGGREGATES = 20;
/** Characters of a field's name at most, as an order's (order.ts, MAX_ORDER_FIELD_LENGTH). */
const MAX_AGGREGATE_FIELD_LENGTH = 256;
/** A plain name: what a group field and an alias must be. */
const PLAIN_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

const AGGREGATE_OPS = ['count', 'sum', 'avg', 'min', 'max', 'count_distinct'] as const;
type AggregateOp = (typeof AGGREGATE_OPS)[number];

/** One aggregate: its alias in the answer, its operation, and the field it reads (none for `count`). */
export type Aggregate = { alias: string; op: 'count' } | { alias: string; op: Exclude<AggregateOp, 'count'>; field: string };

type Direction = 'asc' | 'desc';

export interface AggregateQuery {
  filter?: Filter;
  groupBy: string[];
  aggregates: Aggregate[];
  /** Aliases and group fields, each once. */
  order: { field: string; direction: Direction }[];
  /** Groups answered at most. */
  limit: number;
}

/** A group of the answer: its group fields' values, then its aggregates', by name. */
export type Group = { [name: string]: JsonValue };

export interface AggregateAnswer {
  groups: Group[];
  truncated: boolean;
}

/** The aggregates of a query that names none: `{"count": {"count": {}}}`. */
const DEFAULT_AGGREGATES = { count: { count: {} } };

/**
 * Where the request carried its query: the members of a body, named by JSON Pointers (`/group_by/2`),
 * or query parameters, each named by itself (with `pointer` into its JSON).
 */
export type QuerySource = 'body' | 'query';

/**
 * The query a request asks, its members as a body holds them (a GET's parameters already read into
 * that shape: aggregateParameters()), or a 400 validation_failed naming every place that is wrong.
 * `maxGroups`: the most groups an answer may hold (config.ts, maxGroups), the default and the bound of `limit`.
 */
export function parseAggregateQuery(
  request: { filter?: unknown; group_by?: unknown; aggregates?: unknown; order?: unknown; limit?: unknown },
  source: QuerySource,
  maxGroups: number,
): AggregateQuery {
  const errors: FieldError[] = [];
  const at = (member: string, pointer: string, message: string) =>
    errors.push(source === 'body' ? { in: 'body', name: `/${member}${pointer}`, message } : { in: 'query', name: member, message });
  const filterSource: FilterSource = source === 'body' ? { in: 'body', name: '/filter' } : { in: 'query', name: 'filter' };
  const read = request.filter === undefined ? undefined : readFilter(request.filter);
  if (read?.errors) errors.push(...filterFieldErrors(read.errors, filterSource));
  const groupBy = readGroupBy(request.group_by, (pointer, message) => at('group_by', pointer, message));
  const aggregates = readAggregates(request.aggregates ?? DEFAULT_AGGREGATES, groupBy, (pointer, message) =>
    at('aggregates', pointer, message),
  );
  const names = new Set([...groupBy, ...aggregates.map(({ alias }) => alias)]);
  const order = readOrder(request.order, names, (pointer, message) => at('order', pointer, message));
  const limit = request.limit ?? maxGroups;
  if (!Number.isInteger(limit) || (limit as number) < 0 || (limit as number) > maxGroups) {
    at('limit', '', `must be a whole number from 0 to ${maxGroups}, the most groups this server answers`);
  }
  if (errors.length > 0) throw validationFailed('The aggregate query is not valid.', errors);
  return { filter: read?.filter, groupBy, aggregates, order, limit: limit as number };
}

type Report = (pointer: string, message: string) => void;

function readGroupBy(value: unknown, report: Report): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    report('', 'must be an array of field names');
    return [];
  }
  if (value.length > MAX_GROUP_FIELDS) report('', `names ${value.length} fields, and may name ${MAX_GROUP_FIELDS} at most`);
  const fields: string[] = [];
  value.forEach((field, index) => {
    const wrong = nameError(field, 'field');
    if (wrong) report(`/${index}`, wrong);
    else if (fields.includes(field)) report(`/${index}`, `names the field ${JSON.stringify(field)} twice`);
    else fields.push(field);
  });
  return fields;
}

/** What is wrong with `name` as a group field or an alias, or undefined. */
function nameError(name: unknown, what: 'field' | 'alias'): string | undefined {
  if (typeof name !== 'string' || !PLAIN_NAME.test(name)) {
    return `must be a plain name: a letter or _, then letters, digits or _, 64 characters at most`;
  }
  if (what === 'field' && name === 'id') return 'is the row id, which no two rows share: group by a field of the rows';
  return undefined;
}

function readAggregates(value: unknown, groupBy: readonly string[], report: Report): Aggregate[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    report('', 'must be an object of aliases, each with its aggregate');
    return [];
  }
  const entries = Object.entries(value);
  if (entries.length === 0) report('', 'must name one aggregate at least');
  if (entries.length > MAX_AGGREGATES) report('', `names ${entries.length} aggregates, and may name ${MAX_AGGREGATES} at most`);
  const aggregates: Aggregate[] = [];
  for (const [alias, spec] of entries) {
    const pointer = `/${alias.replaceAll('~', '~0').replaceAll('/', '~1')}`;
    const wrong = nameError(alias, 'alias');
    if (wrong) {
      report(pointer, wrong);
      continue;
    }
    if (groupBy.includes(alias)) {
      report(pointer, `is also a group field: an alias must differ from every field of group_by`);
      continue;
    }
    const read = readAggregate(alias, spec, (at, message) => report(pointer + at, message));
    if (read) aggregates.push(read);
  }
  return aggregates;
}

const isOp = (key: string): key is AggregateOp => (AGGREGATE_OPS as readonly string[]).includes(key);

function readAggregate(alias: string, spec: unknown, report: Report): Aggregate | undefined {
  const keys = spec !== null && typeof spec === 'object' && !Array.isArray(spec) ? Object.keys(spec) : [];
  if (keys.length !== 1) {
    report('', `must be an object of one aggregate: ${AGGREGATE_OPS.join(', ')}`);
    return undefined;
  }
  const [op] = keys;
  const operand = (spec as Record<string, unknown>)[op];
  const pointer = `/${op.replaceAll('~', '~0').replaceAll('/', '~1')}`;
  if (!isOp(op)) {
    report(pointer, `is not an aggregate: ${AGGREGATE_OPS.join(', ')}`);
    return undefined;
  }
  if (op === 'count') {
    if (operand === null || typeof operand !== 'object' || Array.isArray(operand) || Object.keys(operand).length > 0) {
      report(pointer, 'must be {}: a count counts rows');
      return undefined;
    }
    return { alias, op };
  }
  if (typeof operand !== 'string' || operand === '' || operand.length > MAX_AGGREGATE_FIELD_LENGTH) {
    report(pointer, `must be a top-level field's name, 1 to ${MAX_AGGREGATE_FIELD_LENGTH} characters`);
    return undefined;
  }
  if (operand === 'id') {
    report(pointer, 'is the row id: aggregate a field of the rows');
    return undefined;
  }
  return { alias, op, field: operand };
}

function readOrder(value: unknown, names: ReadonlySet<string>, report: Report): AggregateQuery['order'] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    report('', 'must be an array of {field, direction}');
    return [];
  }
  const order: AggregateQuery['order'] = [];
  value.forEach((key, index) => {
    const { field, direction = 'asc', ...rest } = (key ?? {}) as { field?: unknown; direction?: unknown };
    if (typeof key !== 'object' || key === null || Object.keys(rest).length > 0 || typeof field !== 'string') {
      report(`/${index}`, 'must be {field, direction}');
    } else if (!names.has(field)) {
      report(`/${index}/field`, 'must be an alias or a group field of the query');
    } else if (direction !== 'asc' && direction !== 'desc') {
      report(`/${index}/direction`, 'must be asc or desc');
    } else if (order.some((other) => other.field === field)) {
      report(`/${index}/field`, `names ${JSON.stringify(field)} twice`);
    } else {
      order.push({ field, direction });
    }
  });
  return order;
}

/**
 * The parameters of `GET …/aggregate` read into a body's shape (openapi.yaml, getAggregates): `filter`,
 * `aggregates` and `order` are JSON texts, `group_by` a comma list, `limit` a number already. A text
 * that is no JSON is a 400 naming its parameter.
 */
export function aggregateParameters(query: { filter?: string; group_by?: string; aggregates?: string; order?: string; limit?: number }) {
  const json = (name: 'aggregates' | 'order', text: string | undefined) => {
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw validationFailed('The aggregate query is not valid.', [{ in: 'query', name, message: 'is not valid JSON' }]);
    }
  };
  return {
    filter: query.filter === undefined ? undefined : filterJson(query.filter, { in: 'query', name: 'filter' }),
    group_by: query.group_by === undefined ? undefined : query.group_by.split(','),
    aggregates: json('aggregates', query.aggregates),
    order: json('order', query.order),
    limit: query.limit,
  };
}

// The evaluation in memory.

/** The answer to `query` over `rows` (each with its `id`), as the service must give it. */
export function aggregateInMemory(rows: readonly Row[], query: AggregateQuery): AggregateAnswer {
  const kept = query.filter ? rows.filter((row) => matches(query.filter as Filter, row)) : rows;
  const byKey = new Map<string, Row[]>();
  for (const row of [...kept].sort((a, b) => a.id - b.id)) {
    const key = JSON.stringify(query.groupBy.map((field) => canonical(fieldOf(row, field) ?? null)));
    const group = byKey.get(key);
    if (group) group.push(row);
    else byKey.set(key, [row]);
  }
  if (query.groupBy.length === 0 && byKey.size === 0) byKey.set('[]', []);
  const groups: Group[] = [];
  for (const members of byKey.values()) {
    const group: Group = {};
    for (const field of query.groupBy) setMember(group, field, canonical(fieldOf(members[0], field) ?? null));
    for (const aggregate of query.aggregates) setMember(group, aggregate.alias, aggregateOf(members, aggregate));
    groups.push(group);
  }
  return orderGroups(groups, query);
}

function aggregateOf(rows: readonly Row[], aggregate: Aggregate): JsonValue {
  if (aggregate.op === 'count') return rows.length;
  const values = rows.map((row) => fieldOf(row, aggregate.field)).filter((value) => value !== undefined && value !== null) as JsonValue[];
  switch (aggregate.op) {
    case 'count_distinct':
      return new Set(values.map((value) => JSON.stringify(canonical(value)))).size;
    case 'sum':
    case 'avg': {
      const numbers = values.filter((value): value is number => typeof value === 'number');
      if (numbers.length === 0) return null;
      const sum = exactSum(numbers.map(decimalOf));
      const value = aggregate.op === 'sum' ? sum : sum / numbers.length;
      // Past the largest double: no JSON number says it.
      return Number.isFinite(value) ? value : null;
    }
    case 'min':
    case 'max': {
      // The rows are in id order: among objects and arrays, which tie, min takes the first, max the last.
      let best: JsonValue | undefined;
      for (const value of values) {
        if (best === undefined) best = value;
        else {
          const order = compareJson(value, best);
          if (aggregate.op === 'min' ? order < 0 : order >= 0 && !(order === 0 && rankOf(value) < 4)) best = value;
        }
      }
      return best === undefined ? null : canonical(best);
    }
  }
}

const fieldOf = (row: Row, field: string) => (Object.hasOwn(row, field) ? (row[field] as JsonValue) : undefined);

/** `value` with every object's members in code unit order of their names: one JSON text for JSON-equal values. */
export function canonical(value: JsonValue): JsonValue {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(canonical);
  const sorted: { [key: string]: JsonValue } = {};
  for (const key of Object.keys(value).sort()) setMember(sorted, key, canonical(value[key]));
  return sorted;
}

/** The JSON type's place in a page's order: 5 for missing or null. */
function rankOf(value: unknown): 1 | 2 | 3 | 4 | 5 {
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

/** Two values in a page's ascending order (missing and null last); objects and arrays tie. */
function compareJson(a: unknown, b: unknown): number {
  const [ra, rb] = [rankOf(a), rankOf(b)];
  if (ra !== rb) return ra - rb;
  if (ra === 2) return compareCodePoints(a as string, b as string);
  if (ra === 1 || ra === 3) return Number(a) - Number(b);
  return 0;
}

/**
 * `groups` in the query's order, then by the group fields ascending, then by their JSON text; `limit`
 * of them, and whether there were more.
 */
export function orderGroups(groups: Group[], query: AggregateQuery): AggregateAnswer {
  const keys = [
    ...query.order,
    ...query.groupBy
      .filter((field) => !query.order.some((key) => key.field === field))
      .map((field) => ({ field, direction: 'asc' as Direction })),
  ];
  const text = (group: Group) => JSON.stringify(query.groupBy.map((field) => group[field]));
  const sorted = groups
    .map((group) => ({ group, text: text(group) }))
    .sort((a, b) => {
      for (const { field, direction } of keys) {
        const [x, y] = [a.group[field], b.group[field]];
        const [rx, ry] = [rankOf(x), rankOf(y)];
        if (rx !== ry && (rx === 5 || ry === 5)) return rx - ry;
        const order = compareJson(x, y);
        if (order !== 0) return direction === 'asc' ? order : -order;
      }
      return a.text < b.text ? -1 : a.text > b.text ? 1 : 0;
    })
    .map(({ group }) => group);
  return { groups: sorted.slice(0, query.limit), truncated: sorted.length > query.limit };
}

// Exact sums.

/** A decimal number: `digits` × 10^`exponent`. */
export interface Decimal {
  digits: bigint;
  exponent: number;
}

/** A number's value as its JSON text writes it, exactly. */
export const decimalOf = (value: number): Decimal => decimalOfText(JSON.stringify(value));

/** A decimal's text (a JSON number, or PostgreSQL's numeric), exactly. */
export function decimalOfText(text: string): Decimal {
  const [base, power = '0'] = text.toLowerCase().split('e');
  const dot = base.indexOf('.');
  const fraction = dot < 0 ? 0 : base.length - dot - 1;
  return { digits: BigInt(base.replace('.', '')), exponent: Number(power) - fraction };
}

/** The exact sum of `terms`, rounded once to the nearest double (JavaScript reads a decimal text so). */
export function exactSum(terms: readonly Decimal[]): number {
  if (terms.length === 0) return 0;
  const least = Math.min(...terms.map(({ exponent }) => exponent));
  let total = 0n;
  for (const { digits, exponent } of terms) total += digits * 10n ** BigInt(exponent - least);
  return Number(`${total}e${least}`);
}
