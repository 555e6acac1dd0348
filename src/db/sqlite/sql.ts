// SQLite: every statement the service runs on a SQLite database, but those both dialects share
// (../sql.ts). `npm run generate` writes them all, both kinds, expanded, to generated/sql/sqlite.sql.
//
// Reads: rows by id (merged), pages sorted whole or read through a sort index (pages.ts).
// Writes: a group of row writes as one statement. Each statement handed to the driver is a hand-off
// to one of libuv's threads and back, which costs the main thread far more than writing a row, and
// more under load. A group written as BEGIN, the counters, the rows, their events and sort keys, and
// COMMIT would be six such hand-offs, four of them one after another while every other write waited.
//
// Here each kind of group is an INSERT into a view whose INSTEAD OF trigger does the whole write, in
// the order it always had: the collection's counters first, then the rows, their events, their sort
// keys. One statement needs no transaction around it: SQLite runs it whole or not at all, and it takes
// the write lock for its whole run, so that events still take their seqs in commit order. The views
// and triggers are TEMP, made on the writer's connection when it opens (index.ts): the SQL is the
// code's, never the database's, so there is nothing to migrate when it changes.
//
// Each statement looks its collection up by account and name once (a subquery in its INSERT that reads
// nothing of the rows inserted, so SQLite runs it once a statement), and the triggers find it by that
// id; a statement of patches looks each row up once too, and its trigger finds the row by rowid. Every
// value a client sent arrives as a binding of the INSERT, never in the SQL.

import type { Aggregate } from '../../query/aggregate.ts';
import type { UniqueIndexSql } from '../engine/dialect.ts';
import type { AggregateSource } from '../reads/aggregates.ts';
import { raw, type Sql, sql } from '../reads/filter.ts';
import { type FieldOrder, type PageSource, sortedPages, wholePage } from '../reads/pages.ts';
import { MAX_ROW_BYTES } from '../rows/rows.ts';
import { keyOrder, replaceKey } from '../sql/collections.ts';
import { rowJsonWith, versionedRowJsonWith } from '../sql/reads.ts';

/**
 * A row's JSON text (rowJsonWith), the row's own text cut after its first byte. SQLite's substr() of a
 * text counts characters, so it walks the whole row to find where it ends; of a blob it counts bytes.
 * The `{` is one byte, and `||` makes text of the blob's bytes as they are.
 */
const rowJsonSql = rowJsonWith('substr(cast(data as blob), 2)');

/**
 * A page's rows as one JSON text. group_concat joins them as they come: a page's FROM starts with its
 * ordered, limited subquery, which SQLite runs as the outer loop (with CROSS JOIN for the rows a sort
 * index's page reads), so they come in order; sorting them again would fill a temporary B-tree with
 * the page's texts. test/http/sort-index.test.ts checks the pages of both kinds against a model.
 */
const pageJsonSql = `group_concat(${rowJsonSql}, ',')`;

/** A page's rows with their ETags (versionedRowJsonWith), as one JSON text, joined as pageJsonSql joins them. */
const versionedPageJsonSql = `group_concat(${versionedRowJsonWith('substr(cast(data as blob), 2)')}, ',')`;

/** Names a JSON path label `$."…"` can spell: no quote, backslash or control character. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for.
export const pathSafe = /^[^"\\\u0000-\u001f]*$/;

/**
 * A field name as SQL that compares equal to json_each's `key` for it, and its one binding. A name that
 * is not well-formed UTF-16 (a lone surrogate) cannot be bound as text: the driver writes it as UTF-8,
 * the surrogate as U+FFFD, where SQLite decodes the row's escape `\udXYZ` into the surrogate's own
 * three bytes. So such a name is bound as its JSON text, which SQLite decodes the same way.
 */
export const fieldName = (field: string) =>
  field.isWellFormed() ? { sql: '?', binding: field } : { sql: "json_extract(?, '$')", binding: JSON.stringify(field) };

/**
 * A field of `rows.data`: its JSON type and its value, each with one binding, `key`. Read with a JSON
 * path, `$."name"`; a name a path cannot spell (a quote, a backslash, a control character, a lone
 * surrogate) is looked up among the row's keys with json_each, which compares it as a plain string.
 */
function field(name: string) {
  const byPath = pathSafe.test(name) && name.isWellFormed();
  const named = fieldName(name);
  const [type, value] = byPath
    ? ['json_type(data, ?)', 'json_extract(data, ?)']
    : [
        `(select type from json_each(rows.data) where key = ${named.sql})`,
        `(select value from json_each(rows.data) where key = ${named.sql})`,
      ];
  return { type, value, key: byPath ? `$."${name}"` : named.binding };
}

/**
 * The account's collection, by account (`?1`) and name (`?2`), while its schema id is the binding
 * `schema` (../schemas.ts): its id, or null, and then the statement writes nothing.
 */
const collectionId = (schema: string) => `(select id from collections where account_id = ?1 and name = ?2 and schema_id = ${schema})`;

/**
 * Row reads merged (readers.ts, readMerged): `?` is `[[account id, collection, row id], …]`. CROSS
 * JOIN keeps SQLite's planner from reading collections first: each read is two primary key lookups.
 */
export const rowsSql = `select j.key as i, r.data, c.id as collection_id, r.version from json_each(?) j
  cross join collections c on c.account_id = j.value ->> 0 and c.name = j.value ->> 1
  cross join rows r on r.collection_id = c.id and r.id = j.value ->> 2`;

/** A row to patch, on the writer's connection, found with its collection by name: its text and version. */
export const patchedRowSql = `select r.data, c.id as collection_id, r.version, c.schema_id from rows r join collections c on c.id = r.collection_id
  where c.account_id = ? and c.name = ? and r.id = ?`;

/**
 * One page of the account's collection, sorted whole, as one row `{ n, json, seq }` (pages.ts): `seq`
 * read by the same statement, null when there is no such collection. Each field of the order is read
 * as its JSON type `t<i>` and SQL value `v<i>`, and ordered by its rank (the type's place, missing or
 * null last in both directions), then its value (none for objects and arrays, which tie); ties break
 * by id. Its SQL depends only on the directions and how the fields are read, so a prepared statement
 * serves every field name. Strings compare as UTF-8 bytes (the BINARY collation), which is code
 * point order. A page after a place keeps the rows past it (pages.ts, afterPlace).
 */
export const orderedPage: PageSource['orderedPage'] = (collection, page, where) =>
  wholePage(page.versions ? () => versionedPageJsonSql : () => pageJsonSql, byField, collection, page, where);

/** A field of orderedPage()'s order, read as its JSON type `t<index>` and SQL value `v<index>`. */
const byField: FieldOrder = (named, index, direction, at) => {
  const { type, value, key } = field(named);
  const [t, v] = [`t${index}`, `v${index}`];
  const missing = direction === 'asc' ? 5 : 0;
  const rank = `case when ${t} is null or ${t} = 'null' then ${missing} when ${t} in ('integer', 'real') then 1 when ${t} = 'text' then 2
        when ${t} in ('true', 'false') then 3 else 4 end`;
  return {
    columns: `, ${type} as ${t}, ${value} as ${v}`,
    bindings: [key, key],
    order: [
      { column: { sql: rank, direction }, at: at ? sql`${at.rank === 5 ? missing : at.rank}` : undefined },
      {
        column: { sql: `case when ${t} in ('object', 'array') then null else ${v} end`, direction },
        at: at ? scalarSql(at.scalar) : undefined,
      },
    ],
  };
};

/**
 * A sort key's value as SQLite reads a row's (json_extract): a number or a string through SQLite's own
 * JSON reader, from its JSON text, as the filter binds them (filter.ts); a boolean as 1 or 0. None for
 * an object, an array or a missing value, whose rows tie on it.
 */
function scalarSql(scalar: number | string | boolean | null): Sql | undefined {
  if (scalar === null) return undefined;
  if (typeof scalar === 'boolean') return sql`${scalar ? 1 : 0}`;
  return sql`json_extract(${JSON.stringify(scalar)}, '$')`;
}

/**
 * The rows of a range of the sort index in `slot`, or of the ranges after a place in it, as one row
 * `{ n, json, seq }` (pages.ts, sortedPages). CROSS JOIN keeps the keys the outer loop, so the rows
 * come in their order. The same text each time for each shape: statements are kept by their text
 * (readers.ts). A key's number or string is bound as its JSON text, read by SQLite's own JSON
 * reader, as the keys' were.
 */
export const { sortedPage, sortedPageAfter } = sortedPages(
  (keys, _order, collectionId) => `select count(*) as n, ${pageJsonSql} as json,
      (select last_seq from collections where id = ${collectionId}) as seq
    from (${keys}) k
    cross join rows r on r.collection_id = ${collectionId} and r.id = k.row_id`,
  { param: (n) => `?${n}`, sql: (value) => `json_extract(${value}, '$')`, value: (scalar) => JSON.stringify(scalar) },
);

/** The key columns (rank, num, str) from `t`, the value's JSON type as json_each names it, and `v`, its SQL value (`atom`). */
const keyColumns = `case t when 'integer' then 1 when 'real' then 1 when 'text' then 2 when 'true' then 3 when 'false' then 3
      when 'object' then 4 when 'array' then 4 else 5 end,
    case t when 'integer' then v when 'real' then v when 'true' then v when 'false' then v end,
    case when t = 'text' then v end`;

/**
 * The field `name` of the row text `data`, found among the row's keys with json_each, by name, which
 * spells every name. A LEFT JOIN, so that a row without the field has a key too (rank 5); `k.type` and
 * `k.atom` are the `t` and `v` of keyColumns. Every key is found this way: an index's first keys
 * (keysSql), and those of rows written later (the triggers below).
 */
const fieldJoin = (data: string, name: string) => `left join json_each(${data}) k on k.key = ${name}`;

/**
 * The keys of the stored rows that `rows` picks (a condition on `r.id`). Params: the collection's id,
 * the slot, the field's name (`name`, as fieldName() gives it), then the collection's id and those of
 * `rows`.
 */
export const keysSql = (name: string, rows: string) => `insert into sort_keys (collection_id, slot, row_id, rank, num, str)
  select ?, ?, id, ${keyColumns}
  from (select r.id, k.type as t, k.atom as v from rows r ${fieldJoin('r.data', name)}
    where r.collection_id = ? and ${rows}) rows`;

/** Keys of a slot and the slots after it, left by a making cut short. */
export const dropKeysFromSlotSql = 'delete from sort_keys where collection_id = ? and slot >= ?';

/** Every key of a slot. */
export const dropSlotKeysSql = 'delete from sort_keys where collection_id = ? and slot = ?';

/** The collection's oldest retained event. */
export const oldestEventSql = 'select min(seq) as oldest from events where collection_id = ?';

/** The rows an event after seq `?` of the collection `?` says were written. */
export const touchedRows = '(select row_id from events where collection_id = ? and seq > ?)';

/** The keys of a slot of the rows written after a seq (touchedRows). */
export const dropTouchedKeysSql = `delete from sort_keys where collection_id = ? and slot = ? and row_id in ${touchedRows}`;

/** The collection's counters, by account and name, as the making of a sort index reads them. */
export const countersSql = 'select id, last_row_id, last_seq, sorted from collections where account_id = ? and name = ?';

/** The collection of the INSERT's row, in a trigger: `c`. */
const collection = 'c.id = new.collection_id';

/**
 * The sort keys of the rows of `rows` (a FROM item `r`, each row's id and text read by `id` and
 * `data`), for every field the collection `c` has an index for (its slot: the field's position in
 * `sorted`), each found as an index's first keys are (fieldJoin).
 */
const sortKeys = (rows: string, id: string, data: string) => `insert into sort_keys (collection_id, slot, row_id, rank, num, str)
    select collection_id, slot, id, ${keyColumns}
    from (select c.id as collection_id, f.key as slot, ${id} as id, k.type as t, k.atom as v
      from collections c, json_each(c.sorted) f, ${rows} ${fieldJoin(data, 'f.value')}
      where ${collection})`;

/** The insert events of the rows `select` answers (columns collection_id, seq, id, data), as rowJson() in ../rows.ts makes them. */
const insertEvents = (select: string) => `insert into events (collection_id, seq, type, row_id, row, at)
    select collection_id, seq, 'insert', id, ${rowJsonSql}, new.at from (${select})`;

/**
 * `row_inserts (collection_id, n, texts, at, account_id, onces)`: `texts` is a JSON array of the `n`
 * rows' texts (JSON.stringify of each row's fields but id); row `i` (from 0) takes the next id and seq,
 * `at` is the events' time. No such collection (a null id): nothing is written (insertSql answers a
 * null id).
 *
 * `onces` holds the Idempotency-Keys of the inserts sent with one (openapi.yaml, IdempotencyKey), a
 * JSON array, empty for none, of `[key, request hash, at, expires at, first, n]`: `first` the place in
 * `texts` of the request's first row, `n` its number of rows. Each key's answer is stored by the same
 * statement as its rows, so that it is stored if and only if they are: the answer of insertRows
 * (openapi.yaml), 201 with the rows as their insert events hold them (rowJsonSql), read in seq order
 * through the events' primary key, and the row's ETag when there is one row. A key whose answer is
 * stored and not expired aborts the statement, and nothing of it is written (SQLITE_CONSTRAINT):
 * another request with the key was answered first (rows.ts). Its answer's insert finds it, through the
 * keys' primary key, and changes nothing (as on PostgreSQL); with no collection, nothing is inserted,
 * and the keys are looked for. CROSS JOIN keeps the keys sent the outer loop there: each is one primary
 * key lookup, where the planner would otherwise read every key of the account.
 */
const rowInserts = `
  create temp view if not exists row_inserts (collection_id, n, texts, at, account_id, onces) as
    select null, null, null, null, null, null where 0;
  create temp trigger if not exists row_inserts_write instead of insert on row_inserts begin
    update collections set last_row_id = last_row_id + new.n, last_seq = last_seq + new.n, row_count = row_count + new.n
      where id = new.collection_id;
    insert into rows (collection_id, id, data, version)
      select c.id, c.last_row_id - new.n + 1 + t.key, t.value, c.last_seq - new.n + 1 + t.key
      from collections c, json_each(new.texts) t where ${collection};
    ${insertEvents(`select c.id as collection_id, c.last_seq - new.n + 1 + t.key as seq, c.last_row_id - new.n + 1 + t.key as id, t.value as data from collections c, json_each(new.texts) t where ${collection}`)};
    ${sortKeys('json_each(new.texts) r', 'c.last_row_id - new.n + 1 + r.key', 'r.value')};
    insert into idempotency_keys (account_id, key, request_hash, status, headers, body, created_at, expires_at)
      select new.account_id, o.value ->> 0, o.value ->> 1, 201,
        case when o.value ->> 5 = 1
          then '{"ETag":"\\"' || c.id || '.' || (c.last_seq - new.n + 1 + (o.value ->> 4)) || '\\""}' else '{}' end,
        '[' || coalesce((select group_concat(e.row, ',') from events e where e.collection_id = c.id
          and e.seq between c.last_seq - new.n + 1 + (o.value ->> 4) and c.last_seq - new.n + (o.value ->> 4) + (o.value ->> 5)), '') || ']',
        o.value ->> 2, o.value ->> 3
      from collections c, json_each(new.onces) o where ${collection}
      on conflict (account_id, key) do update set request_hash = excluded.request_hash, status = excluded.status,
        headers = excluded.headers, body = excluded.body, created_at = excluded.created_at, expires_at = excluded.expires_at
        where idempotency_keys.expires_at <= excluded.created_at;
    select raise(abort, 'idempotency key answered') where case when new.collection_id is null
      then exists (select 1 from json_each(new.onces) o cross join idempotency_keys k
        on k.account_id = new.account_id and k.key = o.value ->> 0 and k.expires_at > o.value ->> 2)
      else changes() < json_array_length(new.onces) end;
  end;`;

/**
 * Most fields a patch sets by path, each a pair of json_set's arguments. Each edits the row in place,
 * so a patch of n fields costs up to n times the row: unbounded, a patch of many fields of a large row
 * would hold SQLite's only writer, and every account's writes with it, for a long time. A larger patch
 * is made in Node, costing the row once (rows.ts).
 */
export const MAX_FIELDS_BY_PATH = 16;

/**
 * `row_patches_<n> (collection_id, i, rid, fields, at)`: one patch of a row of the collection
 * `collection_id`, the one whose rowid is `rid` (either null: no such collection or row, and nothing is
 * written), that sets `n` fields, one after the other:
 * `fields` a JSON array of `[path, value]`, `path` a JSON path `$."…"` (or `$`, the whole row) and
 * `value` its JSON text. JSON's own text is kept as it was given, as json_set keeps every other
 * field's: the row's new text is the one JSON.stringify would give (rows.ts says when). The update
 * event, with the next seq, comes first, while the row is as it was: it carries the row both as the
 * patch leaves it and as it was before (asyncapi.yaml, UpdateMessage `previous`), and only there does
 * a trigger still see the row before. Then the row's sort keys where they moved. A patch that makes its
 * row weigh more than MAX_ROW_BYTES aborts the statement, and with it the group, whose patches then
 * run alone. A patch of a row that does not exist writes nothing. Rows inserted together are patched
 * in the order given (two patches of one row, one after the other); `i` is only handed back, to tell
 * the answers apart (patchSql).
 *
 * A view for each number of fields, 0 to MAX_FIELDS_BY_PATH, so that a patch's fields are one json_set
 * of as many pairs, in a trigger no larger than it needs: SQLite clears every register of a trigger's
 * program each time it runs, so one trigger for every number (a CASE of json_sets) would cost every
 * patch the largest; and a trigger per field, through a view of fields, would run once for each field
 * and fill a temporary B-tree for every patch. The collection is found by name once a statement
 * (patchSql), by its id in the trigger.
 *
 * The statement finds each row by its id once, through the primary key's index, and the trigger by its
 * rowid: four times, straight in the table (its event, the update, the check of its size and its sort
 * keys). Found by id each time, each would be a search of the index and then of the table. A rowid is
 * only kept for the statement's run, in which no row is inserted or deleted.
 */
const rowPatches = (n: number) => {
  const row = 'r.rowid = new.rid';
  const fields = Array.from({ length: n }, (_, i) => `new.fields ->> '$[${i}][0]', json(new.fields ->> '$[${i}][1]')`);
  const patched = n > 0 ? `json_set(r.data, ${fields.join(', ')})` : 'r.data';
  // The row's version is the seq of its update event (openapi.yaml, ETag), even for a patch of no field.
  const setFields = n > 0 ? `data = ${patched}, ` : '';
  const setRow = `update rows as r set ${setFields}version = (select last_seq from collections where id = new.collection_id) where ${row};`;
  return `
  create temp view if not exists row_patches_${n} (collection_id, i, rid, fields, at) as select null, null, null, null, null where 0;
  create temp trigger if not exists row_patches_${n}_write instead of insert on row_patches_${n} begin
    update collections set last_seq = last_seq + 1 where id = new.collection_id and new.rid is not null;
    ${updateEvent(patched, row)};
    ${setRow}
    select raise(abort, 'row too large') from rows r where ${row} and length(cast(r.data as blob)) > ${MAX_ROW_BYTES};
    ${sortKeys(`(select r.id, r.data from rows r where ${row}) r`, 'r.id', 'r.data')}
      ${replaceKey} where rank is not excluded.rank or num is not excluded.num or str is not excluded.str;
  end;`;
};

/**
 * The update event of the row `r` (found by `row`) of the collection `c`, with the collection's seq:
 * its row as `patched` (SQL of `r.data`) makes it, and as it was. Each text is named once, in a
 * subquery that SQLite runs as a co-routine, not flattened into the INSERT (an OFFSET keeps it so), so
 * that the patch is made once for the event: flattened, each use of `data` in rowJsonSql would make it
 * again.
 */
const updateEvent = (patched: string, row: string) => `insert into events (collection_id, seq, type, row_id, row, previous, at)
    select collection_id, seq, 'update', id, ${rowJsonSql}, ${rowJsonWith('substr(cast(old as blob), 2)', 'old')}, new.at
      from (select c.id as collection_id, c.last_seq as seq, r.id, ${patched} as data, r.data as old
        from collections c join rows r on ${row} where ${collection} limit 1 offset 0)`;

/** Makes the views and triggers on the writer's connection (TEMP: they live as long as it). */
export const sqliteProcedures = rowInserts + Array.from({ length: MAX_FIELDS_BY_PATH + 1 }, (_, n) => rowPatches(n)).join('');

/**
 * A group of inserts: `?1` account, `?2` collection, `?3` n, `?4` texts, `?5` at, `?6` onces (as
 * row_inserts takes them), `?7` the schema id the rows were checked with. Answers `id`, the
 * collection's (null when there is no such collection, or its schema is another), and its
 * `last_row_id` and `last_seq` once the rows are in.
 * One row of VALUES, the collection's id found in it: an INSERT … SELECT into a view first copies the
 * SELECT's rows into a temporary table, and a trigger that found the collection by name would look it
 * up in each of its statements.
 */
export const insertSql = `insert into row_inserts values (${collectionId('?7')}, ?3, ?4, ?5, ?1, ?6)
  returning collection_id as id, (select last_row_id from collections where id = row_inserts.collection_id) as last_row_id,
    (select last_seq from collections where id = row_inserts.collection_id) as last_seq`;

/**
 * A group of patches that each set `n` fields: `?1` account, `?2` collection, `?3` a JSON array of
 * `[row id, fields]` (as row_patches_<n> takes them), `?4` at, `?5` the schema id the rows as patched
 * were checked with. Answers a row for each patch, with `id` the collection's (null when there is no
 * such collection, or its schema is another), `i` the patch's index in `?3`, and `data`
 * the row's text as that patch left it (null for a row that does not exist) and `version` its version, read right after the
 * patch's own trigger has run (RETURNING runs once each inserted row's INSTEAD OF trigger has). The
 * collection is looked up once, in a FROM item of one row; each row once, by the collection's id and
 * its own. The same text each time for each `n` and either kind of group, as the statement cache wants.
 *
 * `patches`: how many the group holds. A group of one is one row of VALUES, which goes to the trigger
 * as it is, where the rows of an INSERT … SELECT are first copied into a temporary table: a patch
 * alone skips that copy.
 */
export const patchSql = (n: number, patches: number) => (patches === 1 ? onePatchSqls : patchSqls)[n];

const returning = (n: number) =>
  `returning collection_id as id, i, (select r.data from rows r where r.rowid = row_patches_${n}.rid) as data,
    (select r.version from rows r where r.rowid = row_patches_${n}.rid) as version`;

const patchSqls = Array.from(
  { length: MAX_FIELDS_BY_PATH + 1 },
  (_, n) => `insert into row_patches_${n}
    select c.id, p.key, (select rowid from rows r where r.collection_id = c.id and r.id = p.value ->> 0), p.value ->> 1, ?4
      from (select ${collectionId('?5')} as id) c, json_each(?3) p
  ${returning(n)}`,
);

const onePatchSqls = Array.from(
  { length: MAX_FIELDS_BY_PATH + 1 },
  (_, n) => `insert into row_patches_${n}
    values (${collectionId('?5')}, 0, (select rowid from rows where collection_id = ${collectionId('?5')} and id = ?3 ->> '$[0][0]'), ?3 ->> '$[0][1]', ?4)
  ${returning(n)}`,
);

/**
 * onceAnswerSql (../sql.ts) of reads merged (readers.ts, readMerged): `?` is `[[account id, key, now], …]`.
 * CROSS JOIN keeps the keys the outer loop: each read is one primary key lookup.
 */
export const onceAnswersSql = `select j.key as i, k.request_hash, k.status, k.headers, k.body from json_each(?) j
  cross join idempotency_keys k on k.account_id = j.value ->> 0 and k.key = j.value ->> 1 and k.expires_at > j.value ->> 2`;

/**
 * Knex's own tables for migrations, as Knex makes them on SQLite, and the one row of its lock: each
 * statement atomic, so that processes starting at once on one file never race to make them (index.ts).
 */
export const knexTablesSql = [
  `create table if not exists knex_migrations
    (id integer not null primary key autoincrement, name varchar(255), batch integer, migration_time datetime)`,
  'create table if not exists knex_migrations_lock (`index` integer not null primary key autoincrement, is_locked integer)',
  'insert into knex_migrations_lock (is_locked) select 0 where not exists (select 1 from knex_migrations_lock)',
];

/**
 * An import's rows (../imports.ts), with the ids they bring: `?` the collection's id, `?` the version of
 * the first (each next row's the next), `?` a JSON array of `[id, text]`, the text the row's fields but
 * id as JSON.stringify wrote them. A cold path, in a
 * transaction with the import's counters, events and sort keys.
 */
export const importRowsSql =
  'insert into rows (collection_id, id, data, version) select ?, value ->> 0, value ->> 1, ? + key from json_each(?)';

/**
 * A filtered page ordered by a field with a sort index, the filter's rows within `bounds` of that
 * index (../filter-indexes.ts), as one row `{ n, json, seq }`: the keys of the range in the page's
 * order (CROSS JOIN keeps them the outer loop), each key's row tested by `filter` (SQL on `rows`), the
 * first `limit` after `offset` that match. It reads no more of the range than it needs to fill the page.
 */
export const filteredSortedPage: PageSource['filteredSortedPage'] = (
  collectionId,
  slot,
  order,
  bounds,
  filter,
  limit,
  offset,
) => sql`select count(*) as n, ${raw(pageJsonSql)} as json, (select last_seq from collections where id = ${collectionId}) as seq
    from (select rows.id, rows.data from sort_keys k cross join rows on rows.collection_id = k.collection_id and rows.id = k.row_id
      where k.collection_id = ${collectionId} and k.slot = ${slot} and ${bounds} and (${filter})
      order by ${raw(keyOrder('k.', order))} limit +${limit} offset ${offset}) r`;

/**
 * pruneOnceSql of the Dialect, on SQLite: of the `?2` answers stored first (by rowid, the order they were
 * stored in), those that expired by `?1`, deleted. Oldest first needs no index of the expiry, which cost
 * every keyed insert a second index entry. An answer taken again once expired keeps its place among the
 * oldest and is pruned once it expires again. Answers that outlive those stored after them (the answers'
 * lifetime shortened since) hold places among the `?2`: once they fill them all, those behind them wait
 * until they expire.
 */
export const pruneOnceSql = `delete from idempotency_keys where rowid in
  (select rowid from (select rowid, expires_at from idempotency_keys order by rowid limit ?2) where expires_at <= ?1)
  returning account_id`;

/**
 * A unique index of SQLite (../indexes.ts): a partial index of the expressions of its fields' JSON texts,
 * each null when the field is missing or null, which SQLite's unique indexes let repeat. The JSON text of
 * a value is the one JSON.stringify wrote in the row, so `1` and `1.0` are one number, and an object's
 * text keeps its fields' order.
 */
export const uniqueIndexSql: UniqueIndexSql = {
  create: (name, collectionId, fields) => [
    `create unique index ${name} on rows (${fields.map((field) => uniqueKey(field)).join(', ')}) where collection_id = ${collectionId}`,
  ],
  drop: (name) => `drop index if exists ${name}`,
  key: (field) => uniqueKey(field),
  value: "(? -> '$')",
};

const uniqueKey = (field: string) => `nullif(data -> '$.${field}', 'null')`;

// Aggregates (../aggregates.ts): one statement reads the groups of the rows a filter keeps. Each field is
// read with a JSON path `$."name"` (a binding), its characters as JSON.stringify escapes them and a quote
// as `\u0022`, as the filter's paths are (filter.ts). `->` answers a value's JSON text as the row holds
// it, so a number's is its exact text.

/** The JSON path of a top-level field. */
const aggregatePath = (name: string) => `$."${JSON.stringify(name).slice(1, -1).replaceAll('"', 'u0022')}"`;

/**
 * A field's value as the key of its group: its JSON text; an object's or an array's, whose members may
 * come in any order, the list of its nodes (json_tree's path, type and JSON text of each) in the order
 * of their paths, so that JSON-equal values have one key; null for null and a missing field.
 */
const groupKey = (path: string) => sql`case json_type(data, ${path})
      when 'null' then null
      when 'object' then ${treeKey(path)}
      when 'array' then ${treeKey(path)}
      else data -> ${path} end`;

const treeKey = (path: string) => sql`(select group_concat(json_array(fullkey, type, case when type in ('object', 'array') then null
        else data -> fullkey end), ',' order by fullkey) from json_tree(data, ${path}))`;

/**
 * The columns part 0 reads the field of aggregate `index` in: its JSON type (`t<index>`) and its SQL
 * value (`v<index>`), each read once a row, from a subquery that is not flattened into the grouping (a
 * subquery with a LIMIT never is, into an aggregate), where each use would read the field again.
 */
const fieldColumns = (index: number) => {
  const [t, v] = [raw(`t${index}`), raw(`v${index}`)];
  return { t, v, number: sql`${t} in ('integer', 'real')`, int64: sql`(${t} = 'integer' and typeof(${v}) = 'integer')` };
};

/**
 * Whether a field is an integer SQLite holds as one: an integer beyond 64 bits is 'integer' to
 * json_type() and a real to json_extract(); JSON.stringify writes it with trailing zeros, which part 1
 * reads exactly.
 */
const int64 = (path: string) => sql`(json_type(data, ${path}) = 'integer' and typeof(data ->> ${path}) = 'integer')`;

/**
 * An aggregate's piece of its group's row (part 0, ../aggregates.ts): a count of distinct keys; a sum's
 * count of numbers and its integers' sum (the terms of the rest come in part 1); nothing of a count, a
 * min or a max (part 2 brings those).
 */
function groupPiece(aggregate: Aggregate, index: number): Sql {
  if (aggregate.op === 'count' || aggregate.op === 'min' || aggregate.op === 'max') return raw('null');
  if (aggregate.op === 'count_distinct') return sql`count(distinct ${groupKey(aggregatePath(aggregate.field))})`;
  const { v, number, int64 } = fieldColumns(index);
  // Integers of 64 bits are summed here in halves of nine digits, which no sum of a billion rows overflows.
  return sql`json_array(count(case when ${number} then 1 end), null,
      cast(sum(case when ${int64} then ${v} / 1000000000 end) as text), cast(sum(case when ${int64} then ${v} % 1000000000 end) as text))`;
}

/**
 * The terms of a sum's other numbers, reals and integers beyond 64 bits (part 1): each one's exact
 * decimal `m` × 10^`e` read off its JSON text (its digits, its `.` and its exponent, trailing zeros
 * dropped so that `m` has 17 digits at most), summed by exponent in halves of nine digits. Node adds the
 * terms exactly (../aggregates.ts).
 */
const sumTerms = (index: number, path: string) => sql`select 1 as part, ${index} as x, hex(k) as k,
      json_array(e, cast(sum(m / 1000000000) as text), cast(sum(m % 1000000000) as text)) as v
    from (select k, cast(rtrim(digits, '0') as integer) as m, power - fraction + length(digits) - length(rtrim(digits, '0')) as e
      from (select k, replace(base, '.', '') as digits, power,
          case instr(base, '.') when 0 then 0 else length(base) - instr(base, '.') end as fraction
        from (select k, case ep when 0 then s else substr(s, 1, ep - 1) end as base,
            case ep when 0 then 0 else cast(substr(s, ep + 1) as integer) end as power
          from (select k, s, instr(s, 'e') as ep
            from (select k, data -> ${path} as s from keyed where json_type(data, ${path}) in ('integer', 'real') and not ${int64(path)})))))
    group by k, e`;

/**
 * The value of a min or a max (part 2): the row of the least or greatest sort value, whose JSON text
 * SQLite answers beside it (a bare column of a query with one min() or max()). Sort values follow a
 * page's order across types: numbers (integers and reals), then text, then blobs: false 01, true 02,
 * objects and arrays 03 and the row's id in 20 digits (the first id for min, the last for max). One row
 * a group, at most as many as part 0 answers: past them the query is refused anyway.
 */
const extreme = (index: number, path: string, op: 'min' | 'max', maxGroups: number) => sql`select 2 as part, ${index} as x, hex(k) as k,
      json_array(v || '') as v
    from (select k, ${raw(op)}(case json_type(data, ${path})
        when 'integer' then data ->> ${path} when 'real' then data ->> ${path} when 'text' then data ->> ${path}
        when 'false' then x'01' when 'true' then x'02' else unhex('03' || printf('%020d', id)) end) as best, data -> ${path} as v
      from keyed where json_type(data, ${path}) <> 'null' group by k limit +${maxGroups})`;

/**
 * The statement of an aggregate (../aggregates.ts, AggregatePart): `keyed` is the rows the filter keeps
 * with their group's key `k` (a JSON array of the group fields' keys); part 0 groups them, at most
 * `maxGroups` (a limit bound as `+?`: pageRange, ../sql.ts), each with the JSON text of each group
 * field (the least, for an object's: any of its orders) and its pieces, each aggregate's field read once
 * (fieldColumns()); parts 1 and 2 bring the sums' terms and the mins' and maxes' values, reading `keyed`
 * again, where its key is made only for the rows that have what they read; part 3 the collection's latest
 * event seq. `k` is answered in hex, which keeps the bytes of a lone surrogate that the driver would read
 * as U+FFFD.
 */
export const aggregateSql: AggregateSource['aggregateSql'] = (collection, query, where, maxGroups) => {
  const paths = query.groupBy.map(aggregatePath);
  const key = paths.length === 0 ? raw(`'[]'`) : sql`json_array(${joinSql(paths.map(groupKey))})`;
  const columns = query.aggregates.flatMap((aggregate, index) => {
    if (aggregate.op === 'count') return [];
    const path = aggregatePath(aggregate.field);
    return [sql`json_type(data, ${path}) as t${raw(String(index))}`, sql`data ->> ${path} as v${raw(String(index))}`];
  });
  const fields = joinSql([raw('id'), raw('data'), raw('k'), ...columns]);
  // `|| ''`: the text alone, without the JSON subtype that would have json_array() hold it as a value.
  const texts = paths.map((path) => sql`min((data -> ${path}) || '')`);
  const pieces = query.aggregates.map(groupPiece);
  const groups = sql`select 0 as part, null as x, hex(${paths.length === 0 ? raw(`'[]'`) : raw('k')}) as k,
      json_array(${joinSql([...texts, raw('count(*)'), ...pieces])}) as v
    from (select ${fields} from keyed limit -1)${paths.length === 0 ? raw('') : raw(' group by k')} limit +${maxGroups}`;
  const parts = [sql`select * from (${groups})`];
  query.aggregates.forEach((aggregate, index) => {
    if (aggregate.op === 'sum' || aggregate.op === 'avg') parts.push(sumTerms(index, aggregatePath(aggregate.field)));
    if (aggregate.op === 'min' || aggregate.op === 'max')
      parts.push(extreme(index, aggregatePath(aggregate.field), aggregate.op, maxGroups));
  });
  parts.push(sql`select 3 as part, null as x, null as k, json_array(${collection.lastSeq}) as v`);
  const filtered = where ? sql` and (${where})` : raw('');
  return sql`with keyed as (select id, data, ${key} as k from rows where collection_id = ${collection.id}${filtered})
    ${joinSql(parts, '\n    union all ')}`;
};

/** `parts` one after another, separated by `separator` (a comma by default). */
function joinSql(parts: Sql[], separator = ', '): Sql {
  return parts.reduce((joined, part, index) => (index === 0 ? part : sql`${joined}${raw(separator)}${part}`), raw(''));
}
/**
 * claimStreamsSql of the Dialect, on SQLite: as PostgreSQL's, on its one writer, which nothing runs
 * beside: the bindings are when the next attempt is due by, when a lease has expired by, how many, the
 * instance and its lease's end.
 */
export const claimStreamsSql = `with due as (select s.rowid as stream from webhook_streams s
    join webhooks w on w.id = s.webhook_id join collections c on c.id = s.collection_id
    where w.enabled and c.last_seq > s.acked_seq and s.next_at <= ? and (s.lease_until is null or s.lease_until < ?)
    order by s.next_at limit ?)
  update webhook_streams set lease_owner = ?, lease_until = ? where rowid in (select stream from due)
  returning webhook_id, collection_id, acked_seq, attempt`;
