// PostgreSQL: every statement the service runs on a PostgreSQL database, but those both dialects share
// (../sql.ts). `npm run generate` writes them all, both kinds, expanded, to generated/sql/postgres.sql. The hot ones run as named statements,
// parsed and planned once per connection (statements.ts); each reads `?` as its next binding.

import type { Aggregate } from '../../query/aggregate.ts';
import type { JsonValue } from '../../query/filter.ts';
import type { UniqueIndexSql } from '../engine/dialect.ts';
import type { AggregateSource } from '../reads/aggregates.ts';
import { raw, type Sql, sql } from '../reads/filter.ts';
import { type FieldOrder, type PageSource, sortedPages, wholePage } from '../reads/pages.ts';
import { MAX_PAGE_BYTES } from '../rows/rows.ts';
import { keyOrder, replaceKey } from '../sql/collections.ts';
import { rowJsonWith, versionedRowJsonWith } from '../sql/reads.ts';

/** A row's JSON text (rowJsonWith). */
const rowJsonSql = rowJsonWith('substr(data, 2)');

/** A page's rows as one JSON text, joined in `order`, only when they add up to at most MAX_PAGE_BYTES (null otherwise, beside a count above 0). */
const pageJsonSql = (order: string) =>
  `case when sum(octet_length(data)) <= ${MAX_PAGE_BYTES} then string_agg(${rowJsonSql}, ',' order by ${order}) end`;

/** pageJsonSql of rows with their ETags (versionedRowJsonWith). */
const versionedPageJsonSql = (order: string) =>
  `case when sum(octet_length(data)) <= ${MAX_PAGE_BYTES} then string_agg(${versionedRowJsonWith('substr(data, 2)')}, ',' order by ${order}) end`;

/** The row by collection and id, the collection found by account and name in the same statement. */
export const getRowSql = `select data, collection_id, version from rows
  where collection_id = (select id from collections where account_id = ? and name = ?) and id = ?`;

/**
 * advance() (../collections.ts) that also reads the row `?` of the collection as it is before the
 * change: null when there is none. Locked, because a plain read would see the statement's snapshot,
 * taken before it waited for the collection's row: a patch of the row committed meanwhile would be
 * lost. A locked read in READ COMMITTED gets the row's latest committed version.
 */
export const advanceReadingRowSql = `with counters as (update collections
    set last_row_id = last_row_id + ?, last_seq = last_seq + ?, row_count = row_count + ?
    where account_id = ? and name = ?
    returning id, last_row_id, last_seq, sorted, schema_id)
  select c.*, r.data as current, r.version
    from counters c left join lateral (select data, version from rows where collection_id = c.id and id = ? for update) r on true`;

/** pruneOnceSql of the Dialect: up to `?` (the second) answers that expired by `?`, found through the index of their expiry. */
export const pruneOnceSql = `delete from idempotency_keys where (account_id, key) in
  (select account_id, key from idempotency_keys where expires_at <= ? limit ?) returning account_id`;

/** holdOnce() of the Dialect: the account's Idempotency-Key, held until the transaction ends, if no other transaction holds it. */
export const holdOnceSql = 'select pg_try_advisory_xact_lock(?, hashtext(?)) as held';

/** Announces a change to every instance on commit (rows.ts, listenForChanges): the channel, then `<instance> <collection id>`. */
export const notifySql = 'select pg_notify(?, ?)';

/**
 * Sets the texts of many rows of the collection `?` (a change by filter): `?` the seq before the first
 * of their update events, `?` a JSON array of `[id, text]`, each row's version that seq plus its place.
 */
export const updateRowsSql = `update rows set data = x.value ->> 1, version = ?::bigint + x.ordinality
  from json_array_elements(?::json) with ordinality x
  where rows.collection_id = ? and rows.id = (x.value ->> 0)::bigint`;

/**
 * A patch of one row, once advanceReadingRowSql has held its collection and read it: the row's text
 * and version, its update event and the NOTIFY of the change (rows.ts, listenForChanges), as one statement, where
 * appendEvents() would send two more. $1 the row's new text, $2 the seq of its event (its version),
 * $3 the collection's id, $4 the row's id; $5 and $6 the row and the row as it was, as eventRow() makes
 * them; $7 the event's time; $8 and $9 the NOTIFY's channel and payload.
 */
export const updateRowSql = `with updated as (
    update rows set data = $1, version = $2 where collection_id = $3 and id = $4
  ), logged as (
    insert into events (collection_id, seq, type, row_id, row, previous, at) values ($3, $2, 'update', $4, $5, $6, $7)
  )
  select pg_notify($8, $9)`;

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
export const escapeString = (text: string) => text.replace(escaped, escapeOne);

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

/** A string escaped by escapeString(), as it was. */
export const unescapeString = (text: string) => text.replace(unescaped, unescapeOne);

// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0001 and U+0002 are what escapeString() writes.
const unescaped = /\u0001[\u0001\u0002]|\ud7ff[\u0002\u0800-\u0fff]/g;

const unescapeOne = (code: string) =>
  code === '\u0001\u0001'
    ? '\u0000'
    : code === '\u0001\u0002'
      ? '\u0001'
      : code === '\ud7ff\u0002'
        ? '\ud7ff'
        : String.fromCharCode(code.charCodeAt(1) + 0xd000);

/** A JSON text PostgreSQL made of escaped jsonb (aggregateSql), its strings and names read back. */
export function unescapedJson(text: string): JsonValue {
  const read = (value: JsonValue): JsonValue => {
    if (typeof value === 'string') return unescapeString(value);
    if (value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) return value.map(read);
    const object: { [key: string]: JsonValue } = {};
    for (const [key, item] of Object.entries(value)) {
      Object.defineProperty(object, unescapeString(key), { value: read(item), enumerable: true, writable: true, configurable: true });
    }
    return object;
  };
  return read(JSON.parse(text));
}

/**
 * SQL: the JSON text `document` (written by JSON.stringify) as jsonb, its strings escaped as
 * escapeString() escapes them. JSON.stringify writes U+0000 and U+0001 as the escapes `\u0000` and
 * `\u0001`, a lone surrogate as the escape `\udXYZ` (lower case hex; upper case is read too), U+D7FF as
 * itself, and a backslash as `\\`; the backslashes go first (as `\u005c`, the same character), so that
 * a backslash followed by the text "u0000" or "ud800" is never read as an escape: after it, every
 * backslash starts an escape. Each later step's output is an escape no later step matches (`\u0001`,
 * `\u0002`, `\u08YZ`..`\u0fYZ`) or a U+D7FF that no later step looks for, so nothing is escaped twice.
 */
export const jsonbOf = (document: string) =>
  String.raw`regexp_replace(replace(replace(replace(replace(${document}, '\\', '\u005c'), '\u0001', '\u0001\u0002'), '\u0000', '\u0001\u0001'),
    chr(55295), chr(55295) || '\u0002'), '\\u[dD]([89a-fA-F][0-9a-fA-F]{2})', chr(55295) || '\\u0\1', 'g')::jsonb`;

/**
 * The row's text as jsonb: read by jsonbOf(); or, when it holds no backslash and no U+D7FF, read as it
 * is, the same jsonb without jsonbOf()'s five passes over the text. jsonbOf() changes only escapes and
 * U+D7FF, and JSON.stringify writes U+0000, U+0001 and lone surrogates only as escapes.
 */
export const document = (row: string) =>
  raw(`case when strpos(${row}.data, '\\') = 0 and strpos(${row}.data, chr(55295)) = 0 then ${row}.data::jsonb
    else ${jsonbOf(`${row}.data`)} end`);

/** A field of a row as jsonb: its text `data` read by jsonbOf(), then the field, its name escaped likewise (one binding). */
export function field(name: string) {
  return { value: `${jsonbOf('data')} -> ?`, bindings: [escapeString(name)] };
}

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

/**
 * One page of the account's collection, sorted whole, as one row `{ n, json, seq }` (pages.ts). Each
 * field of the order is read as jsonb `j<i>` and ordered by its rank (the type's place, missing or null
 * last in both directions), its number (false 0, true 1) and its string, as a sort index keys it; ties
 * break by id. Strings compare under the "C" collation, which is code point order in UTF-8 (escaped:
 * escapeString()). A page after a place keeps the rows past it (pages.ts, afterPlace).
 */
export const orderedPage: PageSource['orderedPage'] = (collection, page, where) =>
  wholePage(page.versions ? versionedPageJsonSql : pageJsonSql, byField, collection, page, where);

/** A field of orderedPage()'s order, read as jsonb `j<index>`. */
const byField: FieldOrder = (named, index, direction, at) => {
  const read = field(named);
  const j = `j${index}`;
  const missing = direction === 'asc' ? 5 : 0;
  const rank = `case jsonb_typeof(${j}) when 'number' then 1 when 'string' then 2 when 'boolean' then 3 when 'object' then 4
        when 'array' then 4 else ${missing} end`;
  const number = `case jsonb_typeof(${j}) when 'number' then (${j})::numeric when 'boolean' then case when (${j})::boolean then 1 else 0 end end`;
  const string = `(case when jsonb_typeof(${j}) = 'string' then ${j} #>> '{}' end) collate "C"`;
  const scalar = at?.scalar ?? null;
  return {
    columns: `, ${read.value} as ${j}`,
    bindings: read.bindings,
    order: [
      { column: { sql: rank, direction }, at: at ? sql`${at.rank === 5 ? missing : at.rank}` : undefined },
      {
        column: { sql: number, direction },
        at: typeof scalar === 'number' || typeof scalar === 'boolean' ? sql`${JSON.stringify(Number(scalar))}::numeric` : undefined,
      },
      { column: { sql: string, direction }, at: typeof scalar === 'string' ? sql`${escapeString(scalar)}::text` : undefined },
    ],
  };
};

/**
 * The rows of a range of the sort index in `slot`, or of the ranges after a place in it, as one row
 * `{ n, json, seq, exact }` (pages.ts, sortedPages): `exact` whether every string key of the page is
 * shorter than POSTGRES_KEY_CHARS. Each key's row is read by its primary key (LATERAL, kept a subquery
 * by `offset 0`): as a join, the planner hashed the whole collection's rows for the page's few. A
 * place's string is escaped as the keys' are, and one as long as a key is cut at has no exact place in
 * the index.
 */
export const { sortedPage, sortedPageAfter } = sortedPages(
  (keys, order, collectionId) => `select count(*) as n, ${pageJsonSql(order)} as json,
      (select last_seq from collections where id = ${collectionId}) as seq,
      bool_and(k.str is null or length(k.str) < ${POSTGRES_KEY_CHARS}) as exact
    from (${keys}) k
    cross join lateral (select id, data from rows where collection_id = ${collectionId} and id = k.row_id offset 0) r`,
  {
    param: (n) => `$${n}`,
    sql: (value) => value,
    value(scalar) {
      if (typeof scalar === 'number') return JSON.stringify(scalar);
      const key = escapeString(scalar);
      return key.length < POSTGRES_KEY_CHARS ? key : undefined;
    },
  },
);

/** The key columns (rank, num, str) of the jsonb value `j`, as in the comment at the top. */
export const keyColumns = (j: string) => `case jsonb_typeof(${j}) when 'number' then 1 when 'string' then 2 when 'boolean' then 3
      when 'object' then 4 when 'array' then 4 else 5 end,
    case jsonb_typeof(${j}) when 'number' then (${j})::numeric when 'boolean' then case when (${j})::boolean then 1 else 0 end end,
    case when jsonb_typeof(${j}) = 'string' then left(${j} #>> '{}', ${POSTGRES_KEY_CHARS}) end`;

/** The rows whose ids keysSql() is given: a range, `?` the first and `?` the last. */
export const idRange = 'id between ? and ?';
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
 * advance(), the rows, appendEvents() and writeSortKeys() as one statement (the keys of every indexed
 * field, read from `sorted` as advance() answers it, strings escaped as jsonbOf() does).
 * $1 the account, $2 the collection's name, $3 the number of rows, $4 their texts, one a line; $5 and
 * $6 the NOTIFY's channel and this instance (rows.ts, listenForChanges); $7 the schema id the rows were
 * checked with (../schemas.ts). No such collection, or its schema another: no row answered, and
 * nothing written. Each event's row is made from the row's text as eventRow() makes it. The events'
 * time is PostgreSQL's clock once the collection's row is held (where appendEvents() takes Node's,
 * after advance()): a batch that waited its turn is not stamped before the one it waited for.
 *
 * The keys read the batch once per indexed field, from inside the field's lateral subquery (`offset 0`
 * keeps the planner from flattening it into a join it may turn around): a collection with no sort
 * index then reads no row of the batch for them. Written as a join of the batch with the fields, the
 * plan would scan the whole batch against an empty list of fields, all while holding the collection's
 * row.
 */
export const insertBatchSql = insertBatch({
  before: '',
  schemaId: '$7',
  holdIf: '',
  rows: 'unnest(string_to_array($4::text, chr(10))) with ordinality as t(data, ord)',
  rowColumns: '',
  after: '',
  answer: `select id, before_id + 1 as first_id, before_seq + 1 as first_seq, pg_notify($5, $6 || ' ' || id) from counters`,
});

/**
 * insertBatchSql for a batch of inserts of which some were sent with an Idempotency-Key (openapi.yaml,
 * IdempotencyKey), as one statement run alone: $7 a JSON array of `[key, request hash, at, expires at,
 * first, n]` for each of those, `first` the place in $4 of the request's first row and `n` its number
 * of rows; $8 for each row of $4, joined by commas, the place in $7 of its request's key (-1 for none),
 * by which each answer's rows are gathered in one pass; $9 the schema id the rows were checked with.
 * Before anything is written it holds each key until the statement ends (holdOnceSql's lock); unless
 * every key is held, it writes nothing and answers `held` alone. Else it stores each key's answer with
 * the rows: the answer of insertRows (openapi.yaml), 201 with the request's rows as their insert
 * events hold them, and the row's ETag when there is one row. A key whose answer is stored already (a
 * retry's) is found by the answer's own insert, through the keys' primary key: then the statement
 * fails with ONCE_TAKEN, and nothing of it is written. It does not look for answers before: a look
 * planned once, while the table was empty, reads the whole table for every key.
 */
export const insertBatchWithAnswersSql = insertBatch({
  schemaId: '$9',
  before: `keys as materialized (
    select k ->> 0 as key, k ->> 1 as hash, k ->> 2 as at, k ->> 3 as expires_at, (k ->> 4)::integer as first,
      (k ->> 5)::integer as n, i
    from jsonb_array_elements($7::jsonb) with ordinality as e(k, i)
  ), holds as (
    select bool_and(pg_try_advisory_xact_lock($1::integer, hashtext(key))) as held, count(*) as keys from keys
  ), `,
  holdIf: ' and (select held from holds)',
  rows: `unnest(string_to_array($4::text, chr(10)), string_to_array($8::text, ',')::integer[]) with ordinality as t(data, request, ord)`,
  rowColumns: ', t.request',
  after: `, bodies as (
    select request, string_agg(${rowJsonSql}, ',' order by seq) as rows from batch where request >= 0 group by request
  ), recorded as (
    insert into idempotency_keys (account_id, key, request_hash, status, headers, body, created_at, expires_at)
      select $1::integer, k.key, k.hash, 201,
        case when k.n = 1 then '{"ETag":"\\"' || c.id || '.' || (c.before_seq + 1 + k.first) || '\\""}' else '{}' end,
        '[' || coalesce(b.rows, '') || ']', k.at, k.expires_at
      from counters c cross join keys k left join bodies b on b.request = k.i - 1
      on conflict (account_id, key) do update set request_hash = excluded.request_hash, status = excluded.status,
        headers = excluded.headers, body = excluded.body, created_at = excluded.created_at, expires_at = excluded.expires_at
        where idempotency_keys.expires_at <= excluded.created_at
      returning key
  )`,
  answer: `select h.held, c.id, c.before_id + 1 as first_id, c.before_seq + 1 as first_seq,
    case when c.id is not null then pg_notify($5, $6 || ' ' || c.id) end,
    case when c.id is not null and (select count(*) from recorded) < h.keys then rowbase_once_taken() end
    from holds h left join counters c on true`,
});

/** The SQLSTATE of insertBatchWithAnswersSql's failure when a key was answered meanwhile (migration 0012). */
export const ONCE_TAKEN = 'RB409';

/**
 * What insertBatchSql and insertBatchWithAnswersSql write each their own way: the statements before the
 * collection's row is held, the condition to hold it, the batch's rows and their columns, the
 * statements after the rows are written, and the statement's one row of answer.
 */
interface BatchParts {
  before: string;
  /** The parameter of the schema id the rows were checked with (../schemas.ts): another, and the statement writes nothing. */
  schemaId: string;
  holdIf: string;
  rows: string;
  rowColumns: string;
  after: string;
  answer: string;
}

function insertBatch({ before, schemaId, holdIf, rows, rowColumns, after, answer }: BatchParts): string {
  return `with ${before}counters as (
    update collections set last_row_id = last_row_id + $3, last_seq = last_seq + $3, row_count = row_count + $3
      where account_id = $1 and name = $2 and schema_id = ${schemaId}::bigint${holdIf}
      returning id, last_row_id - $3 as before_id, last_seq - $3 as before_seq, sorted,
        to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at
  ), batch as (
    select c.id as collection_id, c.before_id + t.ord as id, c.before_seq + t.ord as seq, t.data, c.at${rowColumns}
      from counters c, ${rows}
  ), stored as (
    insert into rows (collection_id, id, data, version) select collection_id, id, data, seq from batch
  ), logged as (
    insert into events (collection_id, seq, type, row_id, row, at)
      select collection_id, seq, 'insert', id, ${rowJsonSql}, at
        from batch
  ), keyed as (
    insert into sort_keys (collection_id, slot, row_id, rank, num, str)
      select k.collection_id, f.slot - 1, k.id, ${keyColumns('k.j')}
        from counters c,
          jsonb_array_elements_text(${jsonbOf('c.sorted')}) with ordinality as f(field, slot),
          lateral (select b.collection_id, b.id, ${jsonbOf('b.data')} -> f.field as j from batch b offset 0) k
  )${after}
  ${answer}`;
}

/**
 * An import's rows (../imports.ts), with the ids they bring: `?` the collection's id, `?` the version of
 * the first (each next row's the next), `?` their ids joined by commas, `?` their texts one a line
 * (JSON.stringify writes no line feed), in the same order.
 */
export const importRowsSql = `insert into rows (collection_id, id, data, version)
  select ?::integer, t.id, t.data, ?::bigint + t.n - 1
    from unnest(string_to_array(?::text, ',')::bigint[], string_to_array(?::text, chr(10))) with ordinality as t(id, data, n)`;

/**
 * A filtered page ordered by a field with a sort index, the filter's rows within `bounds` of that
 * index (../filter-indexes.ts), as one row `{ n, json, seq, exact }` (`exact` as sortedPage's): the
 * keys of the range in the page's order, each key's row read by its primary key (LATERAL, as
 * sortedPage's) and tested by `filter` (SQL on `rows`), the first `limit` after `offset` that match.
 */
export const filteredSortedPage: PageSource['filteredSortedPage'] = (
  collectionId,
  slot,
  order,
  bounds,
  filter,
  limit,
  offset,
) => sql`select count(*) as n, ${raw(pageJsonSql(keyOrder('k.', order)))} as json,
      (select last_seq from collections where id = ${collectionId}) as seq,
      bool_and(k.str is null or length(k.str) < ${raw(String(POSTGRES_KEY_CHARS))}) as exact
    from (select k.rank, k.num, k.str, k.row_id, rows.id, rows.data from sort_keys k
      cross join lateral (select id, data from rows where collection_id = ${collectionId} and id = k.row_id offset 0) rows
      where k.collection_id = ${collectionId} and k.slot = ${slot} and ${bounds} and (${filter})
      order by ${raw(keyOrder('k.', order))} limit +${limit} offset ${offset}) k`;

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

// Aggregates (../aggregates.ts): one statement reads the groups of the rows a filter keeps, each row's
// text read as jsonb once (filter.ts, document()), its strings escaped as escapeString() escapes them.
// jsonb's equality is JSON equality, so a group field's jsonb value is its group's key; numbers are
// numeric, exact, so a sum is the exact sum of the numbers' texts; strings compare under "C", by code
// point. Every JSON text answered holds escaped strings, which jsonOf() (index.ts) reads back.

/** A top-level field of the row's jsonb `j`, its name escaped (a binding). */
const member = (name: string) => sql`(j -> ${escapeString(name)}::text)`;

/** A field's value as the key of its group: null for null and a missing field. */
const groupKey = (name: string) => sql`case when jsonb_typeof(${member(name)}) = 'null' then null else ${member(name)} end`;

/**
 * A min's or a max's value as the first of a page ordered by the field would hold it: of the lowest
 * rank among its values for min (numbers, strings, booleans, then objects and arrays, the first by id),
 * of the highest for max (the last by id), as JSON text.
 */
function extremeSql(name: string, op: 'min' | 'max'): Sql {
  const value = member(name);
  const [number, string, boolean, other] = [
    sql`(${raw(op)}(case when jsonb_typeof(${value}) = 'number' then (${value})::numeric end))::text`,
    sql`to_jsonb(${raw(op)}((case when jsonb_typeof(${value}) = 'string' then ${value} #>> '{}' end) collate "C"))::text`,
    sql`(${raw(op === 'min' ? 'bool_and' : 'bool_or')}(case when jsonb_typeof(${value}) = 'boolean' then (${value})::boolean end))::text`,
    sql`substr(${raw(op)}((case when jsonb_typeof(${value}) in ('object', 'array') then lpad(id::text, 20, '0') || (${value})::text end)
        collate "C"), 21)`,
  ];
  const ranks = op === 'min' ? [number, string, boolean, other] : [other, boolean, string, number];
  return sql`coalesce(${joinSql(ranks)})`;
}

/** An aggregate's piece of its group's row (part 0, ../aggregates.ts, AggregatePart). */
function groupPiece(aggregate: Aggregate): Sql {
  if (aggregate.op === 'count') return raw('null');
  const value = member(aggregate.field);
  switch (aggregate.op) {
    case 'count_distinct':
      return sql`count(distinct ${groupKey(aggregate.field)})`;
    case 'sum':
    case 'avg':
      return sql`json_build_array(count(*) filter (where jsonb_typeof(${value}) = 'number'),
        (sum(case when jsonb_typeof(${value}) = 'number' then (${value})::numeric end))::text)`;
    case 'min':
    case 'max':
      return extremeSql(aggregate.field, aggregate.op);
  }
}

/**
 * The statement of an aggregate (../aggregates.ts, AggregatePart): `keyed` is the rows the filter keeps
 * with their jsonb; part 0 groups them by their group fields' values, at most `maxGroups`, each with
 * those values' JSON text, its row count and its pieces (a sum's exact, a min's and a max's value: no
 * other part); part 3 the collection's latest event seq.
 */
export const aggregateSql: AggregateSource['aggregateSql'] = (collection, query, where, maxGroups) => {
  const keys = query.groupBy.map((name, index) => sql`${groupKey(name)} as k${raw(String(index))}`);
  const keyNames = query.groupBy.map((_name, index) => raw(`k${index}`));
  const texts = keyNames.map((name) => sql`${name}::text`);
  const identity = keyNames.length === 0 ? raw(`'[]'`) : sql`json_build_array(${joinSql(texts)})::text`;
  const pieces = query.aggregates.map(groupPiece);
  const filtered = where ? sql` and (${where})` : raw('');
  const grouped = keyNames.length === 0 ? raw('') : sql` group by ${joinSql(keyNames)}`;
  return sql`with keyed as (select rows.id, doc.j${keys.length === 0 ? raw('') : sql`, ${joinSql(keys)}`}
      from rows, lateral (select ${document('rows')} as j offset 0) doc
      where rows.collection_id = ${collection.id}${filtered})
    select * from (select 0 as part, null::integer as x, ${identity} as k,
        json_build_array(${joinSql([...texts, raw('count(*)'), ...pieces])})::text as v
      from keyed${grouped} limit ${maxGroups}) groups
    union all
    select 3 as part, null::integer as x, null as k, json_build_array(${collection.lastSeq})::text as v`;
};

/** `parts` one after another, separated by commas. */
function joinSql(parts: Sql[]): Sql {
  return parts.reduce((joined, part, index) => (index === 0 ? part : sql`${joined}, ${part}`), raw(''));
}
/**
 * claimStreamsSql of the Dialect: leases up to `?` (the third binding) streams of enabled webhooks that
 * owe events, whose next attempt is due by the first and whose lease is free or expired by the second,
 * to the instance of the fourth until the fifth. Rows another instance is claiming are skipped, not
 * waited for (FOR UPDATE SKIP LOCKED), and the lease is checked again on the row once it is locked.
 */
export const claimStreamsSql = `with due as (select s.webhook_id, s.collection_id from webhook_streams s
    join webhooks w on w.id = s.webhook_id join collections c on c.id = s.collection_id
    where w.enabled and c.last_seq > s.acked_seq and s.next_at <= ? and (s.lease_until is null or s.lease_until < ?)
    order by s.next_at limit ? for update of s skip locked)
  update webhook_streams s set lease_owner = ?, lease_until = ? from due
  where s.webhook_id = due.webhook_id and s.collection_id = due.collection_id
  returning s.webhook_id, s.collection_id, s.acked_seq, s.attempt`;
