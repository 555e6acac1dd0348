// One page of a collection's rows ordered by any top-level field of their JSON (openapi.yaml, listRows):
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
  return {
    sql: `select count(*) as n, ${pageJsonSql(dialect, order)} as json,
        (select last_seq from collections where account_id = ? and name = ?) as seq
      from (select * from (${rows}) r order by ${order} ${pageRange}) r`,
    params: [accountId, name, ...bindings, accountId, name, page.limit, page.offset],
  };
}

/**
 * A page's LIMIT and OFFSET, each a binding. SQLite reads the value bound to a bare `limit ?` when it
 * prepares the statement, and so marks the statement to be prepared again whenever that binding is
 * bound again, equal or not, which the driver does on every run: every page would prepare its
 * statement anew. A LIMIT of `+?` is an expression, not a bare binding, which SQLite reads when the
 * statement runs, as it reads OFFSET; PostgreSQL takes it as it takes `?`.
 */
export const pageRange = 'limit +? offset ?';

/**
 * The most a page's rows may weigh, as JSON text: 16 MiB, sixteen rows of the largest body by default.
 * A page is one string, made in the database and answered whole: a thousand rows of 1 MiB would be a
 * string longer than V8 can hold, and the driver's failure to make it ended the process. A larger page
 * is refused (rows.ts, pageTooLarge()): SQLite's page connections cannot make a longer string
 * (sqlite-statements.ts), and PostgreSQL hands back no text when the rows are longer (pageJsonSql()).
 */
export const MAX_PAGE_BYTES = 16 * 1024 * 1024;

/**
 * The most a row may weigh, as the JSON text of its fields: 15 MiB, so that a page of one row always
 * fits. Patches add fields, so without a bound a row grew by a body's worth with each one, until
 * answering it made a string longer than V8 can hold (rows.ts, rowTooLarge()).
 */
export const MAX_ROW_BYTES = 15 * 1024 * 1024;

/** Whether `text` weighs more than a row may: only a text of over a third of it can (3 bytes a UTF-16 unit at most). */
export const overRowBound = (text: string) => text.length > MAX_ROW_BYTES / 3 && Buffer.byteLength(text) > MAX_ROW_BYTES;

/**
 * The page's rows as one JSON text, joined in `order`: SQLite's group_concat, PostgreSQL's string_agg
 * only when the rows' texts add up to at most MAX_PAGE_BYTES (null otherwise, beside a count above 0).
 *
 * SQLite joins them as they come: a page's FROM starts with its ordered, limited subquery, which SQLite
 * runs as the outer loop (with CROSS JOIN for the rows a sort index's page reads), so they come in
 * order. Sorting them again (`group_concat(… order by …)`) would fill a temporary B-tree with the
 * page's texts on every page. sort-index.test.ts checks the pages of both kinds against a model.
 */
export const pageJsonSql = (dialect: 'sqlite' | 'postgres', order: string) =>
  dialect === 'sqlite'
    ? `group_concat(${sqliteRowJsonSql}, ',')`
    : `case when sum(octet_length(data)) <= ${MAX_PAGE_BYTES} then string_agg(${rowJsonSql}, ',' order by ${order}) end`;

/** A row's JSON text from its columns `id` and `data`, as rows.ts's rowJson() makes it: `rest` is `data` after its `{`. */
const rowJsonWith = (rest: string) => `'{"id":' || id || case data when '{}' then '}' else ',' || ${rest} end`;

/** PostgreSQL: a row's JSON text (rowJsonWith). */
export const rowJsonSql = rowJsonWith('substr(data, 2)');

/**
 * SQLite: a row's JSON text (rowJsonWith), the row's own text cut after its first byte. SQLite's substr() of
 * a text counts characters, so it walks the whole row to find where it ends; of a blob it counts bytes
 * and copies. The `{` is one byte, and `||` makes text of the blob's bytes as they are.
 */
export const sqliteRowJsonSql = rowJsonWith('substr(cast(data as blob), 2)');

/** Names a SQLite JSON path label `$."…"` can spell: no quote, backslash or control character. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for.
export const pathSafe = /^[^"\\\u0000-\u001f]*$/;

/**
 * SQLite: a field name as SQL that compares equal to json_each's `key` for it, and its one binding. A
 * name that is not well-formed UTF-16 (a lone surrogate) cannot be bound as text: the driver writes it
 * as UTF-8, the surrogate as U+FFFD, where SQLite decodes the row's escape `\udXYZ` into the
 * surrogate's own three bytes. So such a name is bound as its JSON text, which SQLite decodes the same
 * way.
 */
export const sqliteName = (field: string) =>
  field.isWellFormed() ? { sql: '?', binding: field } : { sql: "json_extract(?, '$')", binding: JSON.stringify(field) };

/**
 * SQLite reads a field with a JSON path, `$."name"`. A path cannot spell every name (a quote, a
 * backslash, a control character, a lone surrogate), so those are looked up among the row's keys with
 * json_each, which compares the name as a plain string (sqliteName()). The expressions read
 * `rows.data`, each with one binding, `key`.
 */
export function sqliteField(field: string) {
  const byPath = pathSafe.test(field) && field.isWellFormed();
  const name = sqliteName(field);
  const [type, value] = byPath
    ? ['json_type(data, ?)', 'json_extract(data, ?)']
    : [
        `(select type from json_each(rows.data) where key = ${name.sql})`,
        `(select value from json_each(rows.data) where key = ${name.sql})`,
      ];
  return { type, value, key: byPath ? `$."${field}"` : name.binding };
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
 * PostgreSQL's text, and so its jsonb, cannot hold U+0000, which a JSON string may; nor can its jsonb
 * hold a lone surrogate (U+D800..U+DFFF not paired), which a JSON string may too, and which
 * JSON.stringify writes as the escape `\udXYZ`. Where PostgreSQL reads a row as jsonb, to order by a
 * field or to key a sort index, every string (field names too) is escaped, one character at a time:
 *
 *   U+0000                  → U+0001 U+0001
 *   U+0001                  → U+0001 U+0002
 *   U+D7FF                  → U+D7FF U+0002
 *   U+DXYZ (X in 8..F, lone) → U+D7FF U+0XYZ   (U+0800..U+0FFF: the same hex digits)
 *   every other character   → itself
 *
 * Why escaped strings compare by code point exactly as the strings do (openapi.yaml, listRows:
 * "strings by Unicode code point", on both backends alike), and two names are equal escaped only when
 * they are equal:
 * - The escape is prefix-free: the characters that stand for themselves are never U+0001 or U+D7FF,
 *   every code that starts with U+0001 or U+D7FF is two characters long, and no two codes are equal
 *   (the second characters of the U+D7FF codes, U+0002 and U+0800..U+0FFF, differ). So an escaped
 *   string reads back one code at a time, and the first characters that differ in two strings are
 *   escaped into the first codes that differ in the escaped ones, neither a prefix of the other.
 * - The escape keeps the order of characters: U+0000 < U+0001 < U+0002 go to 0001 0001 < 0001 0002 <
 *   0002; U+D7FE < U+D7FF < U+D800 < … < U+DFFF < U+E000 go to D7FE < D7FF 0002 < D7FF 0800 < … <
 *   D7FF 0FFF < E000. Any other two characters stand for themselves. (A paired surrogate, an astral
 *   character, stands for itself, above U+E000, as its code point is.)
 * So the first codes that differ order the escaped strings as the first characters that differ order
 * the strings; and a string that is a prefix of another is escaped into a prefix of the other's escape.
 * The second character of a code is never escaped again (nothing reads it as U+0001 or U+D7FF: the
 * escape maps the string's characters, not its output). For ordering only: rows are returned as stored.
 */
export const postgresEscape = (text: string) => text.replace(escaped, escapeOne);

// In a `u` regular expression a surrogate pair is one code point (above U+FFFF), so only lone surrogates
// fall in U+D800..U+DFFF.
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 and U+0001 are what it escapes.
const escaped = /[\u0000\u0001\ud7ff-\udfff]/gu;

const escapeOne = (c: string) =>
  c === '\u0000'
    ? '\u0001\u0001'
    : c === '\u0001'
      ? '\u0001\u0002'
      : c === '\ud7ff'
        ? '\ud7ff\u0002'
        : `\ud7ff${String.fromCharCode(c.charCodeAt(0) - 0xd000)}`;

/**
 * SQL: the JSON text `document` (written by JSON.stringify) as jsonb, its strings escaped as
 * postgresEscape() escapes them. JSON.stringify writes U+0000 and U+0001 as the escapes `\u0000` and
 * `\u0001`, a lone surrogate as the escape `\udXYZ` (lower case hex; upper case is read too), U+D7FF as
 * itself, and a backslash as `\\`; the backslashes go first (as `\u005c`, the same character), so that
 * a backslash followed by the text "u0000" or "ud800" is never read as an escape: after it, every
 * backslash starts an escape. Each later step's output is an escape no later step matches (`\u0001`,
 * `\u0002`, `\u08YZ`..`\u0fYZ`) or a U+D7FF that no later step looks for, so nothing is escaped twice.
 */
export const postgresJsonb = (document: string) =>
  String.raw`regexp_replace(replace(replace(replace(replace(${document}, '\\', '\u005c'), '\u0001', '\u0001\u0002'), '\u0000', '\u0001\u0001'),
    chr(55295), chr(55295) || '\u0002'), '\\u[dD]([89a-fA-F][0-9a-fA-F]{2})', chr(55295) || '\\u0\1', 'g')::jsonb`;

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
