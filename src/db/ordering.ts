// One page of a collection's rows ordered by any top-level field of their JSON (contract.md, "Rows"):
// within one JSON type numbers numerically, strings by code point and false < true; across types
// numbers < strings < booleans < objects and arrays (which tie with each other); rows where the field
// is missing or null come last in both directions; ties break by id in the same direction. Both
// backends give the same order for the same data. The field name only ever travels as a binding.

export type Direction = 'asc' | 'desc';

export interface Page {
  limit: number;
  offset: number;
  orderBy: string;
  order: Direction;
}

/**
 * The query of one page of the account's collection `name`, as plain SQL with `?` placeholders and
 * its values. It answers one row, `{ n, json, seq }`: how many rows the page has, and their JSON texts
 * in order, joined by commas (null for none), made in the database as rows.ts's rowJson() makes them:
 * the driver hands back one string, not an object per row. `seq` is the collection's latest event seq
 * as of the snapshot the rows are read from (the same statement), null when there is no such
 * collection (and the page is empty): the rows are exactly those the events up to it made. Its SQL
 * depends only on the backend, the direction and how the field is read, so a prepared statement
 * serves every field name.
 */
export function orderedRowsQuery(dialect: 'sqlite' | 'postgres', accountId: number, name: string, page: Page) {
  const dir = page.order === 'desc' ? 'desc' : 'asc';
  const collection = 'collection_id = (select id from collections where account_id = ? and name = ?)';
  const { rows, order, bindings } =
    page.orderBy === 'id'
      ? { rows: `select id, data from rows where ${collection}`, order: `id ${dir}`, bindings: [] }
      : dialect === 'postgres'
        ? postgres(page.orderBy, dir, collection)
        : sqlite(page.orderBy, dir, collection);
  // Both keep the order asked for: SQLite's group_concat has taken ORDER BY since 3.44.
  const joined = dialect === 'sqlite' ? 'group_concat' : 'string_agg';
  return {
    sql: `select count(*) as n, ${joined}(${rowJsonSql}, ',' order by ${order}) as json,
        (select last_seq from collections where account_id = ? and name = ?) as seq
      from (select * from (${rows}) r order by ${order} limit ? offset ?) r`,
    params: [accountId, name, ...bindings, accountId, name, page.limit, page.offset],
  };
}

/** A row's JSON text from its columns `id` and `data`, as rows.ts's rowJson() makes it. */
export const rowJsonSql = `'{"id":' || id || case data when '{}' then '}' else ',' || substr(data, 2) end`;

/** Names a SQLite JSON path label `$."…"` can spell: no quote, backslash or control character. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for.
export const pathSafe = /^[^"\\\u0000-\u001f]*$/;

/**
 * SQLite reads a field with a JSON path, `$."name"`. A path cannot spell every name (a quote, a
 * backslash, a control character), so those are looked up among the row's keys with json_each, which
 * compares the name as a plain string. The expressions read `rows.data`, each with one binding, `key`.
 */
export function sqliteField(field: string) {
  const byPath = pathSafe.test(field);
  const [type, value] = byPath
    ? ['json_type(data, ?)', 'json_extract(data, ?)']
    : ['(select type from json_each(rows.data) where key = ?)', '(select value from json_each(rows.data) where key = ?)'];
  return { type, value, key: byPath ? `$."${field}"` : field };
}

/** Strings compare as UTF-8 bytes (BINARY collation), which is code point order. */
function sqlite(field: string, dir: Direction, collection: string) {
  const { type, value, key } = sqliteField(field);
  return {
    rows: `select id, data, ${type} as t, ${value} as v from rows where ${collection}`,
    order: `(t is null or t = 'null'),
        case t when 'integer' then 1 when 'real' then 1 when 'text' then 2 when 'true' then 3 when 'false' then 3 else 4 end ${dir},
        case when t in ('object', 'array') then null else v end ${dir},
        id ${dir}`,
    bindings: [key, key],
  };
}

/**
 * PostgreSQL's text, and so its jsonb, cannot hold U+0000, which a JSON string may. Where PostgreSQL
 * reads a row as jsonb, to order by a field or to key a sort index, every string (field names too) is
 * escaped: U+0000 becomes U+0001 U+0001, U+0001 becomes U+0001 U+0002, every other character stays. The
 * escape is prefix-free and keeps the order of the characters it replaces, so escaped strings compare by
 * code point exactly as the strings do (contract.md: "strings by code point", "Both storage backends
 * return the same order"), and two names are equal escaped only when they are equal. For ordering only:
 * rows are returned as stored.
 */
export const postgresEscape = (text: string) => text.replaceAll('\u0001', '\u0001\u0002').replaceAll('\u0000', '\u0001\u0001');

/**
 * SQL: the JSON text `document` (written by JSON.stringify) as jsonb, its strings escaped as
 * postgresEscape() escapes them. JSON.stringify writes U+0000 and U+0001 as the escapes `\u0000` and
 * `\u0001`, and a backslash as `\\`; the backslashes go first (as `\u005c`, the same character), so
 * that a backslash followed by the text "u0000" is never read as an escape.
 */
export const postgresJsonb = (document: string) =>
  String.raw`replace(replace(replace(${document}, '\\', '\u005c'), '\u0001', '\u0001\u0002'), '\u0000', '\u0001\u0001')::jsonb`;

/**
 * PostgreSQL reads a field as jsonb: `document` (`data`, the row's text; or `?::text`, one bound first)
 * read by postgresJsonb(), then the field, its name escaped likewise (one binding).
 */
export function postgresField(field: string, document: 'data' | '?::text' = 'data') {
  return { value: `${postgresJsonb(document)} -> ?`, bindings: [postgresEscape(field)] };
}

/** Strings compare under the "C" collation, which is code point order in UTF-8 (escaped: postgresEscape()). */
function postgres(field: string, dir: Direction, collection: string) {
  const j = 'j';
  const { value, bindings } = postgresField(field);
  return {
    rows: `select id, data, ${value} as ${j} from rows where ${collection}`,
    order: `(jsonb_typeof(${j}) is null or jsonb_typeof(${j}) = 'null'),
        case jsonb_typeof(${j}) when 'number' then 1 when 'string' then 2 when 'boolean' then 3 else 4 end ${dir},
        case when jsonb_typeof(${j}) = 'number' then (${j})::numeric end ${dir},
        case when jsonb_typeof(${j}) = 'string' then (${j} #>> '{}') collate "C" end ${dir},
        case when jsonb_typeof(${j}) = 'boolean' then (${j})::boolean end ${dir},
        id ${dir}`,
    bindings,
  };
}
