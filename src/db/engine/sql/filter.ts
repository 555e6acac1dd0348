// A filter (src/query/filter.ts) as a condition of SQL on a row's columns `id` and `data`, the part both
// dialects write alike: $and, $or and $not; $ne, $in and $nin made of equality; the row's id, and the
// paths no row has. Each dialect writes each operator on the JSON fields of `data` (sqlite/filter.ts,
// postgres/filter.ts) with the meaning src/query/evaluate.ts gives it. Every value of a filter, field
// names included, is a binding: the text of the SQL is the code's own.
import type { FieldCondition, FieldPath, Filter, JsonValue, RelatedCondition, SearchCondition } from '../../../query/filter.ts';
import type { SearchSql } from '../dialect.ts';
import { searchTerms } from './search.ts';
import { allOf, anyOf, FALSE, raw, type Sql, sql, TRUE } from './template.ts';

/**
 * The rows for which `part` does not hold. A condition on a missing field is NULL in SQL, where the
 * filter's is false: NOT of it would be NULL too, and `is not true` holds.
 */
const notTrue = (part: Sql) => sql`(${part}) is not true`;

/** The operators that order values. */
type Comparison = '$gt' | '$gte' | '$lt' | '$lte';

/**
 * SQL of each operator on a value `V` (SQL of a JSON value, of the id, or of a value no row has). $ne,
 * $in and $nin are made of `equal`.
 */
interface ValueSql<V> {
  /** JSON equality of the value and `operand`; NULL or false when the value is missing. */
  equal(value: V, operand: JsonValue): Sql;
  /** Whether the value is there (`present`), or missing. */
  exists(value: V, present: boolean): Sql;
  /** Only a value of the operand's JSON type compares. */
  compare(value: V, op: Comparison, operand: number | string | boolean): Sql;
  prefix(value: V, prefix: string): Sql;
  /** Whether the value is an array with an item equal to `operand`. */
  contains(value: V, operand: JsonValue): Sql;
}

/** What a dialect writes: the SQL of a field of a row's `data`, and of each operator on it. */
export interface DialectFilter<V> extends ValueSql<V> {
  /** The field at `path` (never `id`) of the `data` of the row `row`. */
  field(row: string, path: FieldPath): V;
  /** The row `row` holds the terms `words`, and one starting with `prefix` (search.ts, searchTerms). */
  search(row: string, words: readonly string[], prefix?: string): Sql;
}

/**
 * `filter` as a condition on the row `row` (a table's alias, or its name): true for the rows that match
 * it, false or NULL for the others, as WHERE reads it. `dialect` writes the conditions on JSON fields.
 */
export function filterWith<V>(filter: Filter, row: string, dialect: DialectFilter<V>): Sql {
  switch (filter.kind) {
    case 'and':
      return allOf(filter.filters.map((part) => filterWith(part, row, dialect)));
    case 'or':
      return anyOf(filter.filters.map((part) => filterWith(part, row, dialect)));
    case 'not':
      return notTrue(filterWith(filter.filter, row, dialect));
    case 'field':
      if (filter.path[0] !== 'id') return condition(dialect, dialect.field(row, filter.path), filter);
      return filter.path.length === 1 ? condition(idSql, raw(`${row}.id`), filter) : condition(missingSql, null, filter);
    case 'search': {
      const { words, prefix } = termsOf(filter);
      return dialect.search(row, words, prefix);
    }
    case 'related':
      if (!filter.bound) throw new Error('a relation is written as SQL once bound to the ids it finds (bindRelations)');
      return filter.op === '$match' ? matchSql(filter.bound, row) : someSql(filter.bound, row);
  }
}

/**
 * A `$match` bound to be read in the statement (RelatedCondition.bound): the row's keys in the sort index
 * of its field are numbers among the ids the related rows' subquery reads, which is exactly when the field
 * holds one of them (a number, JSON-equal to the id), as the `$in` of those ids would test it.
 */
const matchSql = ({ collectionId, slot, ids }: NonNullable<RelatedCondition['bound']>, row: string): Sql =>
  sql`${raw(row)}.id in (select row_id from sort_keys where collection_id = ${collectionId} and slot = ${slot} and rank = 1
      and num in (${ids}))`;

/**
 * A `$some` bound to be read in the statement: the row's id is the key, in the sort index of the relation's
 * field, of one of the related rows the subquery reads, a number that can be an id (a whole one from 1 to
 * 2^53 - 1, as the `$in` of their fields would take), as an integer, which the primary key of the rows is
 * read by on either backend. Each key is found by its row's primary key, a subquery a related row naming
 * only its columns, so that no planner reads the field's whole index first (PostgreSQL does, by a statistic
 * of one row, where a condition of the key's is beside them).
 */
const someSql = ({ collectionId, slot, ids }: NonNullable<RelatedCondition['bound']>, row: string): Sql =>
  sql`${raw(row)}.id in (select (select case when rank = 1 and num between 1 and ${raw(String(Number.MAX_SAFE_INTEGER))} and num = round(num)
      then cast(num as bigint) end from sort_keys where collection_id = ${collectionId} and row_id = related.id and slot = ${slot})
      from (${ids}) related)`;

/** The terms of a search bound to its collection's index (bindSearch): its words', and its prefix's. */
function termsOf({ search, index }: SearchCondition): { words: string[]; prefix?: string } {
  if (!index) throw new Error('a search is written as SQL once bound to its collection (bindSearch)');
  const prefix = search.prefix === undefined ? undefined : searchTerms(index.collectionId, [search.prefix])[0];
  return { words: searchTerms(index.collectionId, search.words), prefix };
}

/** A dialect's table of the scores of the rows holding a bound search (PageSource.scoresSql), from its SearchSql. */
export const scoresWith =
  (searchSql: SearchSql) =>
  (search: SearchCondition): Sql => {
    const { words, prefix } = termsOf(search);
    return searchSql.scores(words, prefix);
  };

/**
 * Whether `filter` reads any field of the row's `data`: a filter of the id alone reads none, nor does a
 * search, which reads the row's words by its id (search_rows).
 */
export function readsData(filter: Filter): boolean {
  switch (filter.kind) {
    case 'and':
    case 'or':
      return filter.filters.some(readsData);
    case 'not':
      return readsData(filter.filter);
    case 'field':
      return filter.path[0] !== 'id';
    case 'search':
      return false;
    case 'related':
      return filter.bound === undefined;
  }
}

function condition<V>(sqlOf: ValueSql<V>, value: V, { op, operand }: FieldCondition): Sql {
  switch (op) {
    case '$eq':
      return sqlOf.equal(value, operand);
    case '$ne':
      return notTrue(sqlOf.equal(value, operand));
    case '$in':
      return anyOf(operand.map((item) => sqlOf.equal(value, item)));
    case '$nin':
      return notTrue(anyOf(operand.map((item) => sqlOf.equal(value, item))));
    case '$exists':
      return sqlOf.exists(value, operand);
    case '$prefix':
      return sqlOf.prefix(value, operand);
    case '$contains':
      return sqlOf.contains(value, operand);
    default:
      return sqlOf.compare(value, op, operand);
  }
}

/**
 * `make` of each filter made once, kept for as long as the filter lives: a caller's grant holds its read
 * rule's filter for as long as the rules and its token stay (src/handlers/grants.ts), so that the
 * statement of the rows that grant reads by id is written once, not once a request.
 */
export function onceByFilter<T>(make: (filter: Filter) => T): (filter: Filter) => T {
  const made = new WeakMap<Filter, T>();
  return (filter) => {
    let kept = made.get(filter);
    if (kept === undefined) {
      kept = make(filter);
      made.set(filter, kept);
    }
    return kept;
  };
}

/** Ids are assigned from 1 and never reach 2^53 (rows.ts, assignable()). */
const ID_RANGE = { min: -1, max: 2 ** 53 };

/**
 * The row's id, an integer column: a number compares with it, any other operand does not. A bound is
 * made a whole number in range, so that PostgreSQL reads every binding as a bigint.
 */
const idSql: ValueSql<Sql> = {
  equal: (id, operand) => (Number.isSafeInteger(operand) ? sql`${id} = ${operand as number}` : FALSE),
  exists: (_id, present) => (present ? TRUE : FALSE),
  compare(id, op, operand) {
    if (typeof operand !== 'number') return FALSE;
    const bound = Math.min(ID_RANGE.max, Math.max(ID_RANGE.min, operand));
    switch (op) {
      case '$gt':
        return sql`${id} > ${Math.floor(bound)}`;
      case '$gte':
        return sql`${id} >= ${Math.ceil(bound)}`;
      case '$lt':
        return sql`${id} < ${Math.ceil(bound)}`;
      case '$lte':
        return sql`${id} <= ${Math.floor(bound)}`;
    }
  },
  prefix: () => FALSE,
  contains: () => FALSE,
};

/** A field no row has, a path below the id: missing in every row. */
const missingSql: ValueSql<null> = {
  equal: () => FALSE,
  exists: (_value, present) => (present ? FALSE : TRUE),
  compare: () => FALSE,
  prefix: () => FALSE,
  contains: () => FALSE,
};
