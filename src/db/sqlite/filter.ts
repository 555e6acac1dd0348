// SQLite: a filter (src/query/filter.ts) as a condition on a row's `id` and `data`, meaning what
// src/query/evaluate.ts says (../filter.ts writes $and, $or, $not, $ne, $in, $nin and the id).
// How fields are read and how strings and numbers compare: docs/development.md, "Filters on SQLite".

import type { Filter, JsonValue } from '../../query/filter.ts';
import type { KeyBounds } from '../engine/dialect.ts';
import { type DialectFilter, filterWith } from '../engine/sql/filter.ts';
import { allOf, raw, type Sql, sql } from '../engine/sql/template.ts';
import { searchSql } from './sql/search.ts';

/**
 * `filter` as SQL on the columns `id` and `data` of the table or alias `row` (default `rows`): true for
 * the rows that match, false or NULL for the others, as WHERE reads it (`(…) is not true` for the
 * others). Its bindings are `?`, in the order of `params`, as the driver and Knex's raw() take them.
 */
export function filterSql(filter: Filter, row = 'rows'): Sql {
  return filterWith(filter, row, sqlite);
}

/**
 * A JSON value inside a row: SQL of its JSON type (json_type()'s name, NULL when missing) and of its SQL
 * value (json_extract()'s), and the JSON document and path to read what is inside it.
 */
interface Node {
  type: Sql;
  value: Sql;
  document: Sql;
  path: string;
}

const pathNode = (document: Sql, path: string): Node => ({
  type: sql`json_type(${document}, ${path})`,
  value: sql`json_extract(${document}, ${path})`,
  document,
  path,
});

/**
 * The member `key` of `node`, missing when `node` is no object. The key is quoted in the path, its
 * characters as JSON.stringify escapes them and a quote as `\u0022`: SQLite reads the escapes of a
 * quoted key (as it reads a row's), and would end the key at a bare quote.
 */
const childNode = (node: Node, key: string) =>
  pathNode(node.document, `${node.path}."${JSON.stringify(key).slice(1, -1).replaceAll('"', 'u0022')}"`);

const itemNode = (node: Node, index: number) => pathNode(node.document, `${node.path}[${index}]`);

/** A row of json_each() over an array: one of its items. Its value is a JSON document only when it is an object or an array. */
const ELEMENT: Node = {
  type: raw('filter_element.type'),
  value: raw('filter_element.atom'),
  document: raw(`(case when filter_element.type in ('object', 'array') then filter_element.value end)`),
  path: '$',
};

/** A string or number as SQLite's JSON reader reads it: one binding, its JSON text. */
const decoded = (value: string | number) => sql`json_extract(${JSON.stringify(value)}, '$')`;

const signs = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' };

const sqlite: DialectFilter<Node> = {
  search: (row, words, prefix) => ({ sql: searchSql.match(row), params: [searchSql.query(words, prefix)] }),
  field: (row, path) => path.reduce(childNode, pathNode(raw(`${row}.data`), '$')),
  equal,
  exists: (node, present) => (present ? sql`${node.type} is not null` : sql`${node.type} is null`),
  compare(node, op, operand) {
    const sign = raw(signs[op]);
    switch (typeof operand) {
      case 'number':
        return sql`${node.type} in ('integer', 'real') and ${node.value} ${sign} ${decoded(operand)}`;
      case 'string':
        return sql`${node.type} = 'text' and ${node.value} ${sign} ${decoded(operand)}`;
      case 'boolean':
        return sql`${node.type} in ('true', 'false') and ${node.value} ${sign} ${operand ? 1 : 0}`;
    }
  },
  // The strings that start with the prefix are those from it to it followed by the byte FF, which UTF-8
  // never holds.
  prefix(node, prefix) {
    const start = decoded(prefix);
    return sql`${node.type} = 'text' and ${node.value} >= ${start} and ${node.value} < ${start} || cast(x'ff' as text)`;
  },
  contains: (
    node,
    operand,
  ) => sql`${node.type} = 'array' and exists (select 1 from json_each(${node.document}, ${node.path}) as filter_element
    where ${equal(ELEMENT, operand)})`,
};

/**
 * Whether json_extract()'s value alone equals `operand` only where the JSON value does, with no test of
 * its type (json_type() reads the document again, the larger part of the test a row). Its value is a
 * number for a JSON number, 1 or 0 for true or false, the minified JSON text of an object or an array,
 * and SQL never finds a number equal to a text: so a number other than 0 and 1, and a string that does
 * not open as an object's or an array's text does, are equal to no other type's value.
 */
const plainlyEqual = (operand: string | number) =>
  typeof operand === 'number' ? operand !== 0 && operand !== 1 : !operand.startsWith('{') && !operand.startsWith('[');

/** JSON equality of `node` and `operand`. */
function equal(node: Node, operand: JsonValue): Sql {
  if (operand === null) return sql`${node.type} = 'null'`;
  switch (typeof operand) {
    case 'boolean':
      return sql`${node.type} = ${operand ? 'true' : 'false'}`;
    case 'number':
      return plainlyEqual(operand)
        ? sql`${node.value} = ${decoded(operand)}`
        : sql`${node.type} in ('integer', 'real') and ${node.value} = ${decoded(operand)}`;
    case 'string':
      return plainlyEqual(operand)
        ? sql`${node.value} = ${decoded(operand)}`
        : sql`${node.type} = 'text' and ${node.value} = ${decoded(operand)}`;
  }
  if (Array.isArray(operand)) {
    return allOf([
      sql`${node.type} = 'array'`,
      sql`json_array_length(${node.document}, ${node.path}) = ${operand.length}`,
      ...operand.map((item, index) => equal(itemNode(node, index), item)),
    ]);
  }
  const keys = Object.keys(operand);
  return allOf([
    sql`${node.type} = 'object'`,
    sql`(select count(*) from json_each(${node.document}, ${node.path})) = ${keys.length}`,
    ...keys.map((key) => equal(childNode(node, key), operand[key])),
  ]);
}

/**
 * The keys of a sort index within `bounds` (../filter-indexes.ts), as a condition on the columns of
 * `sort_keys`: its numbers and strings bound and read as the keys' were (JSON text through SQLite's own
 * reader), and strings whole, so the bounds are exact. A string's key has no number: `num is null`
 * lets the index seek to the strings' range (its columns are rank, num, str).
 */
export function keyBoundsSql({ rank, conditions }: KeyBounds): Sql {
  const column = raw(rank === 2 ? 'num is null and str' : 'num');
  const parts = [sql`rank = ${rank}`];
  for (const condition of conditions) {
    // json_each reads each value as SQL's: a number, a text, a boolean's 1 or 0, as keys hold them.
    if (condition.op === '$in') {
      parts.push(sql`${column} in (select value from json_each(${JSON.stringify(condition.operand)}))`);
      continue;
    }
    if (condition.op === '$ids') {
      // One id at most: an equality, whose keys come in the order of their rows' ids.
      parts.push(condition.one ? sql`num = (${condition.operand} limit 1)` : sql`num in (${condition.operand})`);
      continue;
    }
    const { op, operand } = condition;
    const value = typeof operand === 'boolean' ? sql`${operand ? 1 : 0}` : decoded(operand);
    if (op === '$prefix') parts.push(sql`${column} >= ${value} and str < ${value} || cast(x'ff' as text)`);
    else parts.push(sql`${column} ${raw(op === '$eq' ? '=' : signs[op])} ${value}`);
  }
  return allOf(parts);
}
