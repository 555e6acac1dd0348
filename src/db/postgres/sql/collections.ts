// PostgreSQL's SQL of collections: a sort index's keys, and unique indexes' keys.
import type { UniqueKeySql } from '../../engine/dialect.ts';
import { isPair, orderedField, PREFIX_SAFE, type SortedEntry } from '../../engine/sorted.ts';
import { CARRIED_TEXT_BYTES, isRelatedField, keyHoldersSql, replaceKey } from '../../engine/sql/collections.ts';
import { escapeString, jsonbOf } from '../jsonb.ts';

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
 * A pair's prefix (../../engine/sorted.ts) of the jsonb value `j` of its first field: a number's integer
 * text after `1:` (1 and 1.0 alike) below PREFIX_SAFE, else `1:~`, which no page reads; a string's
 * first POSTGRES_KEY_CHARS characters, escaped (as a key's `str`), after `2:`; a boolean's 1 or 0 after
 * `3:`; null for anything else.
 */
export const prefixColumn = (j: string) => `case jsonb_typeof(${j})
      when 'number' then case when (${j})::numeric = trunc((${j})::numeric) and abs((${j})::numeric) < ${PREFIX_SAFE}
        then '1:' || trunc((${j})::numeric)::text else '1:~' end
      when 'string' then '2:' || left(${j} #>> '{}', ${POSTGRES_KEY_CHARS})
      when 'boolean' then case when (${j})::boolean then '3:1' else '3:0' end end`;

/** A carried text once its row's text is `text` (SQL): the new text, or null when it is too long to carry. */
export const carriedUpdate = (text: string) => `case when octet_length(${text}) <= ${CARRIED_TEXT_BYTES} then ${text} end`;

/**
 * What a key carries of its row (SQL of the row's `text`): carriedUpdate() of the text, when the key's
 * value `j` (jsonb) is a number and `isRelated` (SQL of a boolean: the slot is of a relation's field);
 * else null, and the key's row is looked up where it is read.
 */
export const carriedText = (j: string, text: string, isRelated: string) =>
  `case when jsonb_typeof(${j}) = 'number' and ${isRelated} then ${carriedUpdate(text)} end`;

/**
 * The keys of rows of the collection in the slot of `entry` (a field, or a pair: then with its prefix),
 * from their stored texts read as jsonb (strings escaped: jsonbOf()): those of new rows (`ids` idRange),
 * or, each replacing the row's key, those of rows changed by filter (`ids` idList, `replace`), one
 * statement a slot; each key of a relation's field carrying its row's text (carriedText()). A pair's keys,
 * and those of a field whose name holds U+0000 (which no binding takes), carry none. Params: the slot,
 * these bindings (the collection's id `collectionId` among them), the collection's id, then the ids' parameters.
 */
export function keysSql(entry: SortedEntry, collectionId: number, ids = idRange, replace = false) {
  const order = escapeString(orderedField(entry));
  const first = isPair(entry) ? escapeString(entry[0]) : undefined;
  const carrier = isPair(entry) || entry.includes('\u0000') ? undefined : entry;
  // Evaluated once a statement (an InitPlan).
  const related = carrier !== undefined ? `(select ${isRelatedField('?::integer', '?::text')})` : 'false';
  return {
    sql: `insert into sort_keys (collection_id, slot, row_id, rank, num, str, prefix, carried)
      select collection_id, ?::integer, id, ${keyColumns('j')}, ${first === undefined ? 'null' : prefixColumn('p')},
        ${carriedText('j', 'data', related)}
      from (select collection_id, id, data, d -> ? as j${first === undefined ? '' : ', d -> ? as p'}
        from (select collection_id, id, data, ${jsonbOf('data')} as d from rows where collection_id = ? and ${ids} offset 0) d) r${replace ? ` ${replaceKey}, carried = excluded.carried` : ''}`,
    bindings: [...(carrier === undefined ? [] : [collectionId, carrier]), ...(first === undefined ? [order] : [order, first])],
  };
}

/**
 * A row's key of a unique index on PostgreSQL (../../collections/indexes.ts): the MD5 of its fields' values
 * as a jsonb array's text (a btree key holds 2,704 bytes, a field's value any length), null when one
 * is missing or null. Read as jsonbOf() reads a row, so that any row's text can be keyed (a text with no
 * backslash and no U+D7FF as it is, which jsonbOf() would leave alone: ../jsonb.ts, document()); a
 * value's text is then jsonb's, in which an object's fields are in jsonb's order. `data` is SQL of the
 * row's text, named once; `fields` SQL of jsonb or of its text.
 */
const uniqueKey = (data: string, fields: string) => `(select ${keyOf('d')}
    from (select case when strpos(t, '\\') = 0 and strpos(t, chr(55295)) = 0 then t::jsonb else ${jsonbOf('t')} end as d
        from (select (${data})::text as t offset 0) stored offset 0) keyed,
      ${fieldsOf(fields)})`;

/** The key of the jsonb `document` by the fields `x.f` in order `x.n` (fieldsOf()). */
const keyOf = (document: string) => `case when count(*) = count(nullif(${document} -> x.f, 'null'::jsonb))
      then md5(jsonb_agg(${document} -> x.f order by x.n)::text) end`;
const fieldsOf = (fields: string) => `jsonb_array_elements_text((${fields})::jsonb) with ordinality as x(f, n)`;

/** uniqueKey() of a row read as jsonb already (SQL `document`, as jsonbOf() reads it): an insert's, which its sort keys read too. */
export const parsedUniqueKey = (document: string, fields: string) => `(select ${keyOf(document)} from ${fieldsOf(fields)})`;

export const uniqueKeySql: UniqueKeySql = {
  key: uniqueKey,
  fill: `insert into unique_keys (collection_id, row_id, index_id, key)
    select collection_id, id, ?::integer, ${uniqueKey('data', '?::text')} from rows where collection_id = ? and id between ? and ?`,
  holders: keyHoldersSql(uniqueKey('?', '?')),
};

/**
 * The keys of the rows `?` (ids joined by commas) of the collection `?` for its unique indexes `?` (a
 * JSON array of `[index id, fields]`), once their new texts are stored (../rows.ts, rekeyPatchedRows):
 * each replaces the row's key, where it moved.
 */
export const rekeyUniqueSql = `insert into unique_keys (collection_id, row_id, index_id, key)
  select r.collection_id, r.id, (u.value ->> 0)::integer, ${uniqueKey('r.data', 'u.value -> 1')}
    from jsonb_array_elements(?::jsonb) as u(value), rows r
    where r.collection_id = ? and r.${idList}
  on conflict (collection_id, row_id, index_id) do update set key = excluded.key where unique_keys.key is distinct from excluded.key`;

/**
 * A row's unique keys go with it by a statement trigger of `rows` (migration 0029), where a foreign key
 * from `unique_keys` to `rows` checked each key's row as it was written, a lookup and a row lock a key:
 * every delete of rows (one, by filter, a cascade's, the sweeper's, a collection's) deletes their keys
 * once it ends, from the rows it deleted. Each up statement, then each down one.
 */
/** 0029's trigger function: a deleted row's unique keys deleted once its statement ends (keysGoWithRowsSql). */
const unkeyFunctionSql = `create or replace function rowbase_unkey_deleted_rows() returns trigger language plpgsql as $$
      begin
        delete from unique_keys k using deleted d where k.collection_id = d.collection_id and k.row_id = d.id;
        return null;
      end $$`;

export const keysGoWithRowsSql = {
  up: [
    'alter table unique_keys drop constraint if exists unique_keys_collection_id_row_id_fkey',
    unkeyFunctionSql,
    `create trigger rows_unkeyed after delete on rows referencing old table as deleted
      for each statement execute function rowbase_unkey_deleted_rows()`,
  ],
  down: [
    'drop trigger if exists rows_unkeyed on rows',
    'drop function if exists rowbase_unkey_deleted_rows()',
    'delete from unique_keys k where not exists (select from rows r where r.collection_id = k.collection_id and r.id = k.row_id)',
    `alter table unique_keys add constraint unique_keys_collection_id_row_id_fkey
      foreign key (collection_id, row_id) references rows (collection_id, id) on delete cascade`,
  ],
} as const;

/**
 * A row's words (search_rows) go with it too, by the same trigger (migration 0036), where a foreign key
 * from `search_rows` to `rows` checked each row's words as they were written, and ran again for each row
 * deleted, whatever its collection. The trigger now reads, for each collection the statement deleted rows
 * of, whether it has unique indexes (`uniques`) and a search index (`search`), by the collection's row,
 * and deletes only from the tables that can hold some of its rows: a collection's keys are written only
 * while `uniques` lists their index, and its words only while `search` is set (each index's drop takes
 * them away in the transaction that unlists it; a collection's deletion deletes them before its rows),
 * and every write of them holds the collection's row, as a delete does. With no row of the collection
 * (none is deleted so), both are deleted. A probe of `unique_keys` and `search_rows` themselves for a
 * row of the collection read the whole table under the statistics of a table whose rows are nearly all
 * one collection's, and walks the index entries of rows deleted before until a vacuum
 * (docs/performance.md).
 */
export const wordsGoWithRowsSql = {
  up: [
    'alter table search_rows drop constraint if exists search_rows_collection_id_row_id_fkey',
    `create or replace function rowbase_unkey_deleted_rows() returns trigger language plpgsql as $$
      declare
        c integer;
        keyed boolean;
        worded boolean;
      begin
        for c in select distinct collection_id from deleted loop
          select uniques <> '[]', search is not null into keyed, worded from collections where id = c;
          if keyed is not false then
            delete from unique_keys k using deleted d where k.collection_id = c and d.collection_id = c and k.row_id = d.id;
          end if;
          if worded is not false then
            delete from search_rows s using deleted d where s.collection_id = c and d.collection_id = c and s.row_id = d.id;
          end if;
        end loop;
        return null;
      end $$`,
  ],
  down: [
    unkeyFunctionSql,
    'delete from search_rows s where not exists (select from rows r where r.collection_id = s.collection_id and r.id = s.row_id)',
    `alter table search_rows add constraint search_rows_collection_id_row_id_fkey
      foreign key (collection_id, row_id) references rows (collection_id, id) on delete cascade`,
  ],
} as const;

/**
 * Has the keys of the relations `relations` (SQL of a table of `collection_id` and `field`) that carry no
 * text carry their rows' texts, as carriedText() writes them.
 */
const carryTexts = (relations: string) => `update sort_keys k set carried = r.data
  from (${relations}) as cr (collection_id, field)
    join collections c on c.id = cr.collection_id
    cross join lateral jsonb_array_elements(${jsonbOf('c.sorted')}) with ordinality as e(entry, slot)
    join rows r on r.collection_id = c.id
  where jsonb_typeof(e.entry) = 'string' and e.entry #>> '{}' = cr.field
    and k.collection_id = c.id and k.slot = e.slot - 1 and k.row_id = r.id and k.rank = 1 and k.carried is null
    and octet_length(r.data) <= ${CARRIED_TEXT_BYTES}`;

/** carryTexts() of the collection `?` and its field `?` (Dialect.carryTextsSql). */
export const carryTextsSql = carryTexts('select ?::integer, ?::text');

/**
 * The texts of rows of a relation's field kept beside their sort keys (`carried`, keysSql(); migration
 * 0033), in the index a to-many reads its keys through (`include`, read without the table); the keys
 * there already filled, each of a number, and a text at most CARRIED_TEXT_BYTES (carriedText()). The
 * column is not named `data`, which a page's statement reads unqualified beside `rows`. Each up
 * statement, then each down one.
 */
export const keysCarryTextsSql = {
  up: [
    'alter table sort_keys add column carried text',
    carryTexts('select collection_id, field from collection_relations'),
    'create index sort_keys_order_carrying on sort_keys (collection_id, slot, rank, num, str, row_id) include (carried)',
    'drop index sort_keys_order',
    'alter index sort_keys_order_carrying rename to sort_keys_order',
  ],
  down: [
    'create index sort_keys_order_plain on sort_keys (collection_id, slot, rank, num, str, row_id)',
    'drop index sort_keys_order',
    'alter index sort_keys_order_plain rename to sort_keys_order',
    'alter table sort_keys drop column carried',
  ],
} as const;
