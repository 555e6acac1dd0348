// SQLite's SQL of collections: the making of a sort index's keys, and unique indexes' keys.
import type { UniqueKeySql } from '../../engine/dialect.ts';
import { isPair, orderedField, PREFIX_SAFE, type SortedEntry } from '../../engine/sorted.ts';
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
 * The keys of the stored rows that `rows` picks (a condition on `r.id`) in the slot of `entry`. Params: the
 * collection's id, the slot, `bindings` (the fields' names), then the collection's id and those of `rows`.
 */
export function keysSql(entry: SortedEntry, rows: string) {
  const [order, first] = [fieldName(orderedField(entry)), isPair(entry) ? fieldName(entry[0]) : undefined];
  return {
    sql: `insert into sort_keys (collection_id, slot, row_id, rank, num, str, prefix)
  select ?, ?, id, ${keyColumns}, p
  from (select r.id, k.type as t, k.atom as v, ${first ? prefixOf('r.data', first.sql) : 'null'} as p from rows r ${fieldJoin('r.data', order.sql)}
    where r.collection_id = ? and ${rows}) rows`,
    bindings: first ? [first.binding, order.binding] : [order.binding],
  };
}

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

export const uniqueKeySql: UniqueKeySql = {
  key: uniqueKey,
  fill: `insert into unique_keys (collection_id, row_id, index_id, key)
    select collection_id, id, ?1, ${uniqueKey('data', '?2')} from rows where collection_id = ?3 and id between ?4 and ?5`,
};
