// PostgreSQL: a filter (src/query/filter.ts) as a condition on a row's `id` and `data`, meaning what
// src/query/evaluate.ts says (../filter.ts writes $and, $or, $not, $ne, $in, $nin and the id).
//
// The row's text is read as jsonb once per row, its strings escaped as jsonbOf() escapes them (jsonb.ts:
// jsonb holds neither U+0000 nor a lone surrogate, both of which a row may), and every string and key
// of the filter is escaped alike, so that no row makes a query fail and escaped strings compare as the
// strings do. A field is `-> key` from there, a key a text binding: NULL when missing, also below a
// number or an array. jsonb's `=` is JSON equality (numbers by value, members in any order); numbers
// are jsonb's numeric, exact, and the rows' numbers and the filter's are both JSON.stringify's text of
// a double, which orders as the doubles do. Strings order under the "C" collation, by code point.
import { compareCodePoints } from '../../query/evaluate.ts';
import type { Filter, JsonValue } from '../../query/filter.ts';
import type { KeyBounds, KeyValue } from '../engine/dialect.ts';
import { type DialectFilter, filterWith, readsData } from '../engine/sql/filter.ts';
import { allOf, raw, type Sql, sql } from '../engine/sql/template.ts';
import { document, escapeString } from './jsonb.ts';
import { POSTGRES_KEY_CHARS } from './sql/collections.ts';
import { searchSql } from './sql/search.ts';

/**
 * `filter` as SQL on the columns `id` and `data` of the table or alias `row` (default `rows`): true for
 * the rows that match, false or NULL for the others, as WHERE reads it (`(…) is not true` for the
 * others). Its bindings are `?`, in the order of `params`, as Knex's raw() and statements.ts take them.
 *
 * The conditions on the id alone, and searches, stand apart, where the planner can use the primary key
 * or the search index for them; the others read the row's jsonb from one subquery, so that it is made
 * once a row however many read it.
 */
export function filterSql(filter: Filter, row = 'rows'): Sql {
  const parts = filter.kind === 'and' ? filter.filters : [filter];
  const onData = parts.filter(readsData);
  const conditions = parts.filter((part) => !readsData(part)).map((part) => filterWith(part, row, postgres));
  if (onData.length > 0) {
    const onDocument = filterWith({ kind: 'and', filters: onData }, row, postgres);
    conditions.push(sql`(select ${onDocument} from (select ${document(row)} as j offset 0) filter_row)`);
  }
  return allOf(conditions);
}

/** A JSON value as jsonb text, its strings and keys escaped as jsonbOf() escapes the rows'. */
const jsonb = (value: JsonValue) => JSON.stringify(escaped(value));

function escaped(value: JsonValue): JsonValue {
  if (typeof value === 'string') return escapeString(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(escaped);
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [escapeString(key), escaped(item)]));
}

const signs = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' };

/** Fields are jsonb, read from the row's document (`filter_row.j`) one key at a time. */
const postgres: DialectFilter<Sql> = {
  search: (row, words, prefix) => ({ sql: searchSql.match(row), params: [searchSql.query(words, prefix)] }),
  field: (_row, path) => path.reduce((json, key) => sql`${json} -> ${escapeString(key)}::text`, raw('filter_row.j')),
  equal: (field, operand) => sql`${field} = ${jsonb(operand)}::jsonb`,
  exists: (field, present) => (present ? sql`${field} is not null` : sql`${field} is null`),
  compare(field, op, operand) {
    const sign = raw(signs[op]);
    if (typeof operand === 'string') {
      return sql`jsonb_typeof(${field}) = 'string' and (${field} #>> '{}') collate "C" ${sign} ${escapeString(operand)}`;
    }
    return sql`jsonb_typeof(${field}) = ${typeof operand} and ${field} ${sign} ${JSON.stringify(operand)}::jsonb`;
  },
  prefix: (field, prefix) => sql`jsonb_typeof(${field}) = 'string' and starts_with(${field} #>> '{}', ${escapeString(prefix)})`,
  // jsonb's `@>` finds a number, string, boolean or null among an array's items; for an object or an
  // array it would also find one that only holds the operand's members, so those are compared item by item.
  contains(field, operand) {
    if (operand === null || typeof operand !== 'object') {
      return sql`jsonb_typeof(${field}) = 'array' and ${field} @> ${jsonb([operand])}::jsonb`;
    }
    return sql`jsonb_typeof(${field}) = 'array' and exists (select 1
      from jsonb_array_elements(case when jsonb_typeof(${field}) = 'array' then ${field} end) as filter_element(value)
      where filter_element.value = ${jsonb(operand)}::jsonb)`;
  },
};

/**
 * The keys of a sort index within `bounds` (../filter-indexes.ts), as a condition on the columns of
 * `sort_keys`. A key holds a string's first POSTGRES_KEY_CHARS characters, escaped (sql/): a string
 * operand is escaped and cut alike, and its bounds taken inclusive, so that the keys of every string
 * that meets the condition are within them (more may be: the filter tested on each row decides). A
 * string's key has no number: `num is null` lets the index seek to the strings' range.
 */
export function keyBoundsSql({ rank, conditions }: KeyBounds): Sql {
  const parts = [sql`rank = ${rank}`];
  for (const condition of conditions) {
    if (condition.op === '$in') {
      parts.push(keysInSql(rank, condition.operand));
      continue;
    }
    if (condition.op === '$ids') {
      // One id at most: an equality, whose keys come in the order of their rows' ids.
      parts.push(
        condition.one
          ? sql`num = (select ids.id::numeric from (${condition.operand}) ids(id) limit 1)`
          : sql`num in (select ids.id::numeric from (${condition.operand}) ids(id))`,
      );
      continue;
    }
    const { op, operand } = condition;
    if (op !== '$prefix') {
      parts.push(comparedSql(op, operand, bound));
      continue;
    }
    const key = escapeString(operand as string);
    parts.push(sql`num is null`, sql`str >= ${cut(bound(key, 'text'))}`);
    const after = successor(key);
    if (after !== undefined) parts.push(sql`str < ${after}::text`);
  }
  return allOf(parts);
}

/**
 * A range whose every condition compares the key with one value (`$eq`, `$gt`, `$gte`, `$lt`, `$lte`),
 * as keyBoundsSql() reads it, but for its values: `sql`, the text every range of its shape shares, whose
 * value `i` is the column `b.v<i>` of a batch of ranges (sql/rows.ts, rangesRowsSql), and `values`, each
 * a typed binding, in that order. Undefined for a range of `$in`, `$ids` or `$prefix`.
 */
export function boundsShape({ rank, conditions }: KeyBounds): { sql: string; values: Sql[] } | undefined {
  const values: Sql[] = [];
  const parts = [raw(`rank = ${rank}`)];
  for (const condition of conditions) {
    if (condition.op === '$in' || condition.op === '$ids' || condition.op === '$prefix') return undefined;
    parts.push(
      comparedSql(condition.op, condition.operand, (text, type) => {
        values.push(bound(text, type));
        return raw(`b.v${values.length - 1}`);
      }),
    );
  }
  return { sql: allOf(parts).sql, values };
}

/** A value of a key's bounds as a binding of its type. */
const bound = (text: string, type: 'numeric' | 'text'): Sql => sql`${text}::${raw(type)}`;

/** A string's key: its first POSTGRES_KEY_CHARS characters. */
const cut = (text: Sql): Sql => sql`left(${text}, ${raw(String(POSTGRES_KEY_CHARS))})`;

/**
 * The keys `op` holds for on `operand`, which `value` writes: a number's text (numeric), or a string's
 * key, escaped (text), compared inclusive on its cut.
 */
function comparedSql(
  op: '$eq' | '$gt' | '$gte' | '$lt' | '$lte',
  operand: KeyValue,
  value: (text: string, type: 'numeric' | 'text') => Sql,
): Sql {
  if (typeof operand !== 'string')
    return sql`num ${raw(op === '$eq' ? '=' : signs[op])} ${value(JSON.stringify(Number(operand)), 'numeric')}`;
  const sign = op === '$eq' ? '=' : op === '$gt' || op === '$gte' ? '>=' : '<=';
  return sql`num is null and str ${raw(sign)} ${cut(value(escapeString(operand), 'text'))}`;
}

/**
 * The keys of one of `values` (all of the type of `rank`), each looked up: one binding, a JSON array. The
 * range from the least value to the greatest is said too, so that the index is read by it even where the
 * planner, its statistics stale (a collection just filled), takes the range of the whole slot for one key.
 */
function keysInSql(rank: KeyBounds['rank'], values: (number | string | boolean)[]): Sql {
  if (rank !== 2) {
    const numbers = values.map(Number);
    const [least, greatest] = [Math.min(...numbers), Math.max(...numbers)].map((n) => JSON.stringify(n));
    return sql`num between ${least}::numeric and ${greatest}::numeric and num in (select value::numeric from jsonb_array_elements_text(${JSON.stringify(numbers)}::jsonb) as value)`;
  }
  const cut = raw(String(POSTGRES_KEY_CHARS));
  const keys = values.map((value) => escapeString(value as string));
  // The least and greatest by code point, as the keys are ordered (collation C); cut as the keys are.
  const sorted = [...keys].sort(compareCodePoints);
  return sql`num is null and str between left(${sorted[0]}::text, ${cut}) and left(${sorted[sorted.length - 1]}::text, ${cut}) and str in (select left(value, ${cut}) from jsonb_array_elements_text(${JSON.stringify(keys)}::jsonb) as value)`;
}

/**
 * The least string after every string that starts with `prefix` (an escaped one: no lone surrogate):
 * its last code point below U+10FFFF one higher, those after it dropped; none when there is no such
 * code point. U+D800..U+DFFF are skipped: no escaped string holds them.
 */
function successor(prefix: string): string | undefined {
  const points = [...prefix].map((c) => c.codePointAt(0) as number);
  while (points.length > 0 && points[points.length - 1] === 0x10ffff) points.pop();
  if (points.length === 0) return undefined;
  const last = points.pop() as number;
  points.push(last + 1 === 0xd800 ? 0xe000 : last + 1);
  return String.fromCodePoint(...points);
}
