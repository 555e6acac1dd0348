// SQLite's SQL of collections: the making of a sort index's keys, and unique indexes' keys.
import type { UniqueKeySql } from '../../engine/dialect.ts';
import { isPair, orderedField, PREFIX_SAFE, type SortedEntry } from '../../engine/sorted.ts';
import { CARRIED_TEXT_BYTES, isRelatedField } from '../../engine/sql/collections.ts';
import { fieldName } from './reads.ts';

/** The key columns (rank, num, str) from `t`, the value's JSON type as json_each names it, and `v`, its SQL value (`atom`). */
export const keyColumns = `case t when 'integer' then 1 when 'real' then 1 when 'text' then 2 when 'true' then 3 when 'false' then 3
      when 'object' then 4 when 'array' then 4 else 5 end,
    case t when 'integer' then v when 'real' then v when 'true' then v when 'false' then v end,
    case when t = 'text' then v end`;

/**
 * The field `name` of the row text `data`, found among the row's keys with json_each, by name, which
 * spells every name. A LEFT JOIN, so that a row without the field has a key too (rank 5); `k.type` and
 * `k.atom` are the `t` and `v` of keyColumns. Every key is found this way: an index's first keys
 * (keysSql), and those of rows written later (the triggers below).
 */
export const fieldJoin = (data: string, name: string) => `left join json_each(${data}) k on k.key = ${name}`;

/**
 * A pair's prefix (../../engine/sorted.ts) of the value `t`, `v` (as keyColumns reads them) of its first
 * field: a number's integer text after `1:` (1 and 1.0 alike) below PREFIX_SAFE, else `1:~`, which no
 * page reads; a string's text after `2:`; a boolean's 1 or 0 after `3:`; null for anything else.
 */
const prefixColumn = (t: string, v: string) => `case ${t}
      when 'integer' then case when abs(${v}) < ${PREFIX_SAFE} then '1:' || ${v} else '1:~' end
      when 'real' then case when ${v} = cast(${v} as integer) and abs(${v}) < ${PREFIX_SAFE} then '1:' || cast(${v} as integer) else '1:~' end
      when 'text' then '2:' || ${v} when 'true' then '3:1' when 'false' then '3:0' end`;

/** A pair's prefix of the row text `data`, its first field's name SQL `name`. */
export const prefixOf = (data: string, name: string) =>
  `(select ${prefixColumn('p.type', 'p.atom')} from json_each(${data}) p where p.key = ${name})`;

/**
 * What a key carries of its row (SQL of the row's text `data`; the migration 0034): the text, when the key's
 * value is a number (`t`, its JSON type as json_each names it), the text at most CARRIED_TEXT_BYTES, and
 * `isRelated` (SQL of a boolean: the slot is of a relation's field); else null, and the key's row is
 * looked up where it is read (../../engine/sql/related.ts, keyRows). Written again with each write of the
 * row, so that a key carries its row's text as it is, or none.
 */
export const carriedText = (t: string, data: string, isRelated: string) =>
  `case when ${t} in ('integer', 'real') and length(cast(${data} as blob)) <= ${CARRIED_TEXT_BYTES} and ${isRelated} then ${data} end`;

/**
 * The keys of the stored rows that `rows` picks (a condition on `r.id`) in the slot of `entry` of the
 * collection `collectionId`, a relation field's carrying their rows' texts (carriedText(); a pair's carry
 * none). Params: the collection's id, the slot, `bindings` (the fields' names, the collection's id), then
 * the collection's id and those of `rows`.
 */
export function keysSql(entry: SortedEntry, rows: string, collectionId: number) {
  const [order, first] = [fieldName(orderedField(entry)), isPair(entry) ? fieldName(entry[0]) : undefined];
  // A subquery of no row's: evaluated once a statement.
  const carried = first ? 'null' : carriedText('k.type', 'r.data', isRelatedField('?', order.sql));
  return {
    sql: `insert into sort_keys (collection_id, slot, row_id, rank, num, str, prefix, carried)
  select ?, ?, id, ${keyColumns}, p, c
  from (select r.id, k.type as t, k.atom as v, ${first ? prefixOf('r.data', first.sql) : 'null'} as p, ${carried} as c
    from rows r ${fieldJoin('r.data', order.sql)}
    where r.collection_id = ? and ${rows}) rows`,
    bindings: first ? [first.binding, order.binding] : [collectionId, order.binding, order.binding],
  };
}

/**
 * Has the keys of the collection `?`'s field `?` (its slot's, rank 1: numbers) that carry no text carry
 * their rows' texts, as carriedText() writes them (Dialect.carryTextsSql): run as a relation from the field
 * is declared, and by the migration 0034 for each relation there. Each binding once, as Knex counts them.
 */
export const carryTextsSql = `with p (collection_id, field) as (values (?, ?))
  update sort_keys set carried = (select r.data from rows r
      where r.collection_id = sort_keys.collection_id and r.id = sort_keys.row_id and length(cast(r.data as blob)) <= ${CARRIED_TEXT_BYTES})
    where collection_id = (select collection_id from p) and rank = 1 and carried is null
      and slot = (select f.key from p, collections c, json_each(c.sorted) f where c.id = p.collection_id and f.type = 'text' and f.value = p.field)`;

/**
 * The order's index made again: `covering`, with the texts the keys carry last (as migration 0034 first made
 * it), or `plain`, without them (as 0003 made it; migration 0035); `made`, its statement as the file holds it.
 */
export const keysOrderSql = {
  covering: [
    'drop index sort_keys_order',
    'create index sort_keys_order on sort_keys (collection_id, slot, rank, num, str, row_id, carried)',
  ],
  plain: ['drop index sort_keys_order', 'create index sort_keys_order on sort_keys (collection_id, slot, rank, num, str, row_id)'],
  made: "select sql from sqlite_master where type = 'index' and name = 'sort_keys_order'",
} as const;

/**
 * The texts of rows of a relation's field kept beside their sort keys (`carried`, carriedText()), in the
 * keys' table alone (first, migration 0034 held them last in the index a to-many reads its keys through too;
 * since 0035, no more: keysOrderSql). The column is not named `data`, which a page's statement reads
 * unqualified beside `rows`. The statement that adds it, and going back's, which drops it.
 */
export const keysCarryTextsSql = {
  column: 'alter table sort_keys add column carried text',
  down: 'alter table sort_keys drop column carried',
} as const;

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

/**
 * A row's key of a unique index on SQLite (../../collections/indexes.ts): its fields' JSON texts in a
 * JSON array's text, null when one is missing or null. The JSON text of a value is the one
 * JSON.stringify wrote in the row, so an object's text keeps its fields' order. `fields` is SQL of a
 * JSON array of names, which json_each reads in their order: the aggregate joins them so, with no ORDER
 * BY, which would sort them in a temporary B-tree for every key.
 */
const uniqueKey = (data: string, fields: string) => `(select case when count(v) = count(*) then '[' || group_concat(v, ',') || ']' end
    from (select nullif(${data} -> ('$.' || f.value), 'null') as v from json_each(${fields}) f))`;

/**
 * The slot of the sort index that holds the values of the unique index `u` (an item of
 * json_each(`c`.uniques), `c` its collection's row) when they are strings: its field's, when the index is
 * over one field and the collection has a sort index of it (listed in `sorted`, so complete: ../sort-indexes.ts);
 * else null. Such a value is no key of `unique_keys`: the sort index holds it already (`str`, the string
 * whole), and a write checks it there (stringsTaken()), one random B-tree a row where there were two
 * (docs/performance.md). Numbers (1 and 1.0 are one sort key but two keys), booleans, objects and the
 * indexes of several fields keep their keys.
 */
const stringSlot = (c: string, u: string) =>
  `(select f.key from json_each(${c}.sorted) f where f.value = ${u}.value ->> '$[1][0]' and json_array_length(${u}.value, '$[1]') = 1)`;

/**
 * Whether the row `id` of the collection `c` holds a string in its unique index `u` (stringSlot()): its
 * sort key of the slot, just written, of rank 2. Found by the sort keys' primary key (the unary plus keeps
 * the planner from the order's index).
 */
export const heldAsString = (c: string, u: string, id: string) =>
  `exists (select 1 from sort_keys h where h.collection_id = ${c}.id and h.row_id = ${id} and h.slot = ${stringSlot(c, u)} and +h.rank = 2)`;

/** The failure of a write whose row holds a unique index's string another row holds (stringsTaken(); ../errors.ts). */
export const UNIQUE_HELD = 'unique value held';

/**
 * Aborts the statement (UNIQUE_HELD, told apart as a unique index's: ../errors.ts, ../../rows/unique.ts)
 * when a row of the collection `collection` that `rows` picks (a condition on `k.row_id`, the sort key `k`'s
 * row: a range, or one row when `one`) holds a string of a unique index kept by its sort index
 * (stringSlot()) that another row holds too. The row's sort key is found by the primary key (the unary
 * pluses keep the planner from the order's index, which would read every key of the collection), the
 * other's by the order's index (collection, slot, rank 2, the string). The rows of one write see each
 * other's keys: their sort keys are written first.
 */
export const stringsTaken = (collection: string, rows: string, one = false) => `select raise(abort, '${UNIQUE_HELD}')
      from collections c cross join json_each(c.uniques) u cross join sort_keys k
      where c.id = ${collection} and k.collection_id = c.id and ${rows} and ${one ? '' : '+'}k.slot = ${stringSlot('c', 'u')} and +k.rank = 2
        and exists (select 1 from sort_keys o where o.collection_id = k.collection_id and o.slot = k.slot and o.rank = 2
          and o.num is null and o.str = k.str and o.row_id <> k.row_id)`;

/**
 * The keys of a unique index (`?1`) of the fields `?2` for the rows of the collection `?3` with ids from `?4`
 * to `?5`, each row's key whole, as they were before the sort index held strings (migration 0027 and going
 * back from 0030).
 */
export const fillAllSql = `insert into unique_keys (collection_id, row_id, index_id, key)
    select collection_id, id, ?1, ${uniqueKey('data', '?2')} from rows where collection_id = ?3 and id between ?4 and ?5`;

/**
 * `unique_fills (index_id, fields, collection_id, first, last)`: UniqueKeySql.fill, the keys of the unique
 * index `index_id` (listed in the collection's `uniques` already) for its rows from `first` to `last`, whose
 * sort keys are written already: a string another row holds in the sort index that keeps them aborts the
 * statement, as a key another row holds does (unique_keys_key); strings are no keys there (stringSlot()).
 */
export const uniqueFillsProcedure = `
  create temp view if not exists unique_fills (index_id, fields, collection_id, first, last) as select null, null, null, null, null where 0;
  create temp trigger if not exists unique_fills_write instead of insert on unique_fills begin
    ${stringsTaken('new.collection_id', 'k.row_id between new.first and new.last and u.value ->> 0 = new.index_id')};
    insert into unique_keys (collection_id, row_id, index_id, key)
      select c.id, r.id, new.index_id, ${uniqueKey('r.data', 'new.fields')}
      from collections c, json_each(c.uniques) u, rows r
      where c.id = new.collection_id and u.value ->> 0 = new.index_id and r.collection_id = c.id and r.id between new.first and new.last
        and not ${heldAsString('c', 'u', 'r.id')};
  end;`;

/**
 * The ids of up to `?` (the sixth) rows of the collection `?` whose key of the unique index `?` over the
 * fields `?` (the fourth) is that of the row text `?` (the third), but the row `?` (0 for none), by id:
 * among its keys, or, for a string the sort index keeps (stringSlot()), among the sort index's keys. Its
 * bindings plain `?` (it runs through Knex too), each named once by `p`.
 */
const holdersSql = `with p (collection_id, index_id, text, fields, but, most) as (values (?, ?, ?, ?, ?, ?))
  select id from (
    select k.row_id as id from p cross join unique_keys k
      where k.collection_id = p.collection_id and k.index_id = p.index_id and k.key = ${uniqueKey('p.text', 'p.fields')} and k.row_id <> p.but
    union all
    select k.row_id from p cross join collections c cross join json_each(c.uniques) u cross join sort_keys k
      where c.id = p.collection_id and u.value ->> 0 = p.index_id and json_type(p.text, '$.' || (p.fields ->> 0)) = 'text'
        and k.collection_id = c.id and k.slot = ${stringSlot('c', 'u')} and k.rank = 2 and k.num is null
        and k.str = p.text ->> ('$.' || (p.fields ->> 0)) and k.row_id <> p.but)
  order by id limit (select most from p)`;

/**
 * The string keys of the collection `?1`'s unique indexes over the field `?2` alone, gone once the sort index
 * of the field is listed (../sort-indexes.ts): it holds them from then on (stringSlot()). Each binding
 * once, as Knex counts them (a migration runs it too).
 */
export const dropStringKeysSql = `delete from unique_keys where collection_id = ?1 and json_type(key, '$[0]') = 'text'
  and exists (select 1 from collections c, json_each(c.uniques) u where c.id = unique_keys.collection_id and u.value ->> 0 = unique_keys.index_id
    and json_array_length(u.value, '$[1]') = 1 and u.value ->> '$[1][0]' = ?2)`;

export const uniqueKeySql: UniqueKeySql = {
  key: uniqueKey,
  fill: 'insert into unique_fills values (?1, ?2, ?3, ?4, ?5)',
  holders: holdersSql,
};
