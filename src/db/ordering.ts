// Ordering rows by any top-level field of their JSON (contract.md, "Rows"): within one JSON type numbers
// numerically, strings by code point and false < true; across types numbers < strings < booleans <
// objects and arrays (which tie with each other); rows where the field is missing or null come last in
// both directions; ties break by id in the same direction. The field name only ever travels as a binding.
import type { Knex } from 'knex';

export type Direction = 'asc' | 'desc';

/** Adds the ORDER BY for `field` to a query over `rows`. */
export function orderRows(query: Knex.QueryBuilder, field: string, direction: Direction): Knex.QueryBuilder {
  const dir = direction === 'desc' ? 'desc' : 'asc';
  if (field === 'id') return query.orderBy('id', dir);
  const { type, value } = sqliteField(field);
  // 1 number, 2 string, 3 boolean, 4 object or array, 5 missing or null.
  const rank = `case ${type.sql} when 'integer' then 1 when 'real' then 1 when 'text' then 2 when 'true' then 3 when 'false' then 3 when 'object' then 4 when 'array' then 4 else 5 end`;
  return query
    .orderByRaw(`(${rank}) = 5`, type.bindings)
    .orderByRaw(`${rank} ${dir}`, type.bindings)
    .orderByRaw(`case when ${type.sql} in ('object', 'array') then null else ${value.sql} end ${dir}`, [
      ...type.bindings,
      ...value.bindings,
    ])
    .orderBy('id', dir);
}

interface Fragment {
  sql: string;
  bindings: string[];
}

/**
 * SQLite reads a field with a JSON path, `$."name"`. A path cannot spell a name that holds a double
 * quote, so such names are looked up among the row's keys with json_each instead, which compares the
 * name as a plain string.
 */
function sqliteField(field: string): { type: Fragment; value: Fragment } {
  if (!field.includes('"')) {
    const path = `$."${field}"`;
    return { type: { sql: 'json_type(data, ?)', bindings: [path] }, value: { sql: 'json_extract(data, ?)', bindings: [path] } };
  }
  return {
    type: { sql: '(select type from json_each(rows.data) where key = ?)', bindings: [field] },
    value: { sql: '(select value from json_each(rows.data) where key = ?)', bindings: [field] },
  };
}
