// PostgreSQL's SQL of collections: a sort index's keys, and unique indexes.
import type { UniqueIndexSql } from '../../engine/dialect.ts';
import { replaceKey } from '../../engine/sql/collections.ts';
import { field, jsonbOf } from '../jsonb.ts';

/**
 * The characters of a string a key holds at most. A btree key is at most 2,704 bytes, and a row's
 * string may be any length: a key holds the string's first 400 characters (at most 1,600 bytes of
 * UTF-8), which order strings as the whole strings do except among those that share their first 400.
 * Such strings are next to each other in both orders, so only a page that holds one of their keys can
 * differ from the exact order: a page with a key of POSTGRES_KEY_CHARS or more characters (one exactly
 * that long may be whole) is not used, and the collection is sorted whole, by whole strings (pages.ts).
 * SQLite has no bound, and keys whole strings.
 */
export const POSTGRES_KEY_CHARS = 400;

/** The key columns (rank, num, str) of the jsonb value `j`, as in the comment at the top. */
export const keyColumns = (j: string) => `case jsonb_typeof(${j}) when 'number' then 1 when 'string' then 2 when 'boolean' then 3
      when 'object' then 4 when 'array' then 4 else 5 end,
    case jsonb_typeof(${j}) when 'number' then (${j})::numeric when 'boolean' then case when (${j})::boolean then 1 else 0 end end,
    case when jsonb_typeof(${j}) = 'string' then left(${j} #>> '{}', ${POSTGRES_KEY_CHARS}) end`;

/** The rows whose ids keysSql() is given: a range, `?` the first and `?` the last. */
const idRange = 'id between ? and ?';
/** The rows whose ids keysSql() is given: a list, `?` the ids joined by commas. */
export const idList = "id = any(string_to_array(?::text, ',')::bigint[])";

/**
 * The keys of rows of the collection, from their stored texts read as jsonb (strings escaped:
 * jsonbOf()): those of new rows (`ids` idRange), or, each replacing the row's key, those of rows
 * changed by filter (`ids` idList, `replace`), one statement a field. Params: the slot, these
 * bindings, the collection's id, then the ids' parameters.
 */
export function keysSql(name: string, ids = idRange, replace = false) {
  const { value, bindings } = field(name);
  return {
    sql: `insert into sort_keys (collection_id, slot, row_id, rank, num, str)
      select collection_id, ?::integer, id, ${keyColumns('j')}
      from (select collection_id, id, ${value} as j from rows where collection_id = ? and ${ids}) r${replace ? ` ${replaceKey}` : ''}`,
    bindings,
  };
}

/**
 * A unique index of PostgreSQL (../indexes.ts): a partial index of the MD5 of its fields' JSON texts
 * (a btree key holds 2,704 bytes, a field's value any length), each null when the field is missing or
 * null, which unique indexes let repeat. Read as jsonOf() reads a row, so that any row's text can be
 * keyed; a value's text is then jsonb's, in which `1` and `1.0` are one number and an object's fields
 * are in jsonb's order. Made holding the table's writes (`lockRows`, SHARE): a writer waiting on a
 * collection's row while holding the table could otherwise deadlock with the index's making.
 */
export const uniqueIndexSql: UniqueIndexSql = {
  create: (name, collectionId, fields) => [
    `create unique index ${name} on rows (${fields.map((field) => `(${uniqueKey(field)})`).join(', ')}) where collection_id = ${collectionId}`,
  ],
  drop: (name) => `drop index if exists ${name}`,
  key: (field) => uniqueKey(field),
  value: `md5(nullif((${jsonbOf('?')})::text, 'null'))`,
  lockRows: 'lock table rows in share mode',
};

const uniqueKey = (field: string) => `md5(nullif((${jsonbOf('data')} -> '${field}')::text, 'null'))`;
