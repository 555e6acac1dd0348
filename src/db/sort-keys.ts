// Sort indexes: pages ordered by a field, read from an index instead of sorting the collection.
//
// For each field a collection is indexed by, sort_keys holds one key per row: where the row's value
// of the field falls in the order of listRows (openapi.yaml; ordering.ts sorts by the same rules).
// `rank` is the JSON type's place: 1 numbers, 2 strings, 3 booleans, 4 objects and arrays, 5 missing
// or null; then `num` (numbers, and false 0, true 1) or `str` (strings, by code point; on PostgreSQL
// escaped as ordering.ts's postgresEscape() escapes them, which keeps that order, and cut to their
// first POSTGRES_KEY_CHARS characters: see there); then the row id. An
// ascending page is one range of the index, in its order. Rows whose field is missing or null come
// last in both directions, so a descending page reads the index backwards over rank < 5, then, when
// it reaches past them, over rank 5 (by id, descending): both in one snapshot (see rows.ts).
//
// A collection's indexed fields are `collections.sorted`, a JSON array of names whose positions are
// their slots. It is read and written under the collection row's lock (advance()), which every write
// takes first: every write maintains every index the collection has, whichever instance made it. An
// index is made the first time a page of a large enough collection is ordered by the field (see
// config.ts, sortIndexMinRows and sortIndexMax), and kept for the collection's life. The field name
// only ever travels as a binding, as in ordering.ts.
import type { Knex } from 'knex';
import type { DatabaseParams } from './changes.ts';
import { advance, collectionNotFound } from './collections.ts';
import { type Direction, pageJsonSql, pageRange, postgresField, sqliteName } from './ordering.ts';
import { query, type WriteTx } from './query.ts';
import { writeTransaction } from './writes.ts';

/** Collections remembered at most; the least recently remembered is forgotten first. */
const MAX_KNOWN = 10_000;

/**
 * The sort indexes this process has seen collections have: each collection's id and indexed fields, by
 * account and name. Never wrong in a way that shows: a collection's indexes are only ever added to, and
 * a page read through a remembered id whose collection is gone (its seq, read by the same statement,
 * is null) is read again after looking the collection up (it may have been deleted, or deleted and made
 * again under a new id, by another instance).
 */
export class KnownIndexes {
  private readonly known = new Map<string, { id: number; sorted: string[] }>();

  get(accountId: number, name: string) {
    return this.known.get(`${accountId}/${name}`);
  }

  set(accountId: number, name: string, id: number, sorted: string[]): void {
    const key = `${accountId}/${name}`;
    this.known.delete(key);
    if (this.known.size >= MAX_KNOWN) this.known.delete(this.known.keys().next().value as string);
    this.known.set(key, { id, sorted });
  }
}

/** Writes the keys of the stored rows `fromId`..`toId` for `field`, in `slot`. */
export async function writeSortKeys(trx: WriteTx, collectionId: number, slot: number, field: string, fromId: number, toId: number) {
  if ((trx.userParams as DatabaseParams).sqlite) {
    const { sql, binding } = sqliteName(field);
    await query(trx, sqliteKeysSql(sql, 'r.id between ? and ?'), [collectionId, slot, binding, collectionId, fromId, toId]);
  } else {
    const { sql, bindings } = postgresKeys(field);
    await query(trx, sql, [slot, ...bindings, collectionId, fromId, toId]);
  }
}

/** Deletes a row's keys, of every slot. */
export async function deleteSortKeys(trx: WriteTx, collectionId: number, rowId: number): Promise<void> {
  await query(trx, 'delete from sort_keys where collection_id = ? and row_id = ?', [collectionId, rowId]);
}

/**
 * PostgreSQL: re-keys a patched row from its new text `data`, replacing its keys in place: only the
 * indexed fields the patch gave can have moved. Reads nothing of the row, so it may run beside its
 * update. (SQLite re-keys the rows of a group of patches at once: sqlite-procedures.ts.)
 */
export async function rekeyPatchedRowPostgres(
  trx: WriteTx,
  collectionId: number,
  sorted: string[],
  rowId: number,
  patched: object,
  data: string,
) {
  for (const [slot, field] of sorted.entries()) {
    if (!Object.hasOwn(patched, field)) continue;
    const { sql, bindings } = postgresRowKeys(field);
    await query(trx, sql, [collectionId, slot, rowId, data, ...bindings]);
  }
}

/**
 * The slot of `field`'s sort index in the account's collection `name`, making the index (and every
 * row's key) now when the collection has none for it; -1 when it already has `max`. On PostgreSQL in
 * one transaction, which holds only this collection's writes; on SQLite, whose one writer serves every
 * collection, in steps (makeSortIndexSqlite).
 */
export async function makeSortIndex(knex: Knex, accountId: number, name: string, field: string, max: number): Promise<number> {
  if ((knex.userParams as DatabaseParams).sqlite) return makeSortIndexSqlite(knex, accountId, name, field, max);
  return knex.transaction(async (trx) => {
    const { id, lastRowId, sorted } = await advance(trx, accountId, name, 0);
    const slot = sorted.indexOf(field);
    if (slot >= 0 || sorted.length >= max) return slot;
    await query(trx, 'update collections set sorted = ? where id = ?', [JSON.stringify([...sorted, field]), id]);
    await writeSortKeys(trx, id, sorted.length, field, 1, lastRowId);
    return sorted.length;
  });
}

/**
 * SQLite: the rows an index's making keys in one write at most. Made in one pass, the index of a large
 * collection would hold the writer, and with it every account's writes, until it was done; a step holds
 * it briefly, and the writes queued meanwhile go between two steps.
 */
export const SORT_INDEX_STEP_ROWS = 5000;

/** SQLite: the index being made of each collection in this process, one at a time. */
const making = new WeakMap<Knex, Map<string, Promise<number>>>();

/**
 * SQLite: makes the index in steps, each a write of its own. The slot is listed in `sorted` only at
 * the end, so until then no page reads it and no write keeps it: the last step keys again every row
 * an event says was written since the first (inserted, patched or deleted meanwhile), then lists the
 * slot, in one write. Keys of the slot left by a making cut short (the process ended) are dropped
 * first. One making at a time per collection, so that two never take the same slot.
 */
async function makeSortIndexSqlite(knex: Knex, accountId: number, name: string, field: string, max: number): Promise<number> {
  const byCollection = making.get(knex) ?? new Map<string, Promise<number>>();
  making.set(knex, byCollection);
  const key = `${accountId}/${name}`;
  const made = (byCollection.get(key) ?? Promise.resolve(-1)).catch(() => -1).then(() => makeInSteps(knex, accountId, name, field, max));
  byCollection.set(key, made);
  try {
    return await made;
  } finally {
    if (byCollection.get(key) === made) byCollection.delete(key);
  }
}

type Counters = { id: number | string; last_row_id: number | string; last_seq: number | string; sorted: string };
const countersSql = 'select id, last_row_id, last_seq, sorted from collections where account_id = ? and name = ?';

async function makeInSteps(knex: Knex, accountId: number, name: string, field: string, max: number): Promise<number> {
  const start = await writeTransaction(knex, async (trx) => {
    const [found] = await query<Counters>(trx, countersSql, [accountId, name]);
    if (!found) throw collectionNotFound(name);
    const sorted = JSON.parse(found.sorted) as string[];
    const slot = sorted.indexOf(field);
    if (slot >= 0 || sorted.length >= max) return { slot };
    await query(trx, 'delete from sort_keys where collection_id = ? and slot >= ?', [found.id, sorted.length]);
    return { slot: sorted.length, id: Number(found.id), lastRowId: Number(found.last_row_id), lastSeq: Number(found.last_seq) };
  });
  if (start.id === undefined) return start.slot;
  const { id, slot, lastRowId, lastSeq } = start;
  for (let from = 1; from <= lastRowId; from += SORT_INDEX_STEP_ROWS) {
    const to = Math.min(lastRowId, from + SORT_INDEX_STEP_ROWS - 1);
    await writeTransaction(knex, (trx) => writeSortKeys(trx, id, slot, field, from, to));
  }
  return writeTransaction(knex, async (trx) => {
    const [found] = await query<Counters>(trx, countersSql, [accountId, name]);
    // Deleted meanwhile (and maybe made again): its keys went with it.
    if (!found || Number(found.id) !== id) return -1;
    const sorted = JSON.parse(found.sorted) as string[];
    if (sorted.length !== slot) throw new Error(`the sort index of ${name} in slot ${slot} was made twice at once`);
    const [{ oldest }] = await query<{ oldest: number | null }>(trx, 'select min(seq) as oldest from events where collection_id = ?', [id]);
    const { sql, binding } = sqliteName(field);
    if (Number(found.last_seq) > lastSeq && (oldest === null || Number(oldest) > lastSeq + 1)) {
      // Events of the writes made meanwhile are pruned already: every row is keyed again.
      await query(trx, 'delete from sort_keys where collection_id = ? and slot = ?', [id, slot]);
      await query(trx, sqliteKeysSql(sql, 'r.id between 1 and ?'), [id, slot, binding, id, Number(found.last_row_id)]);
    } else {
      const touched = '(select row_id from events where collection_id = ? and seq > ?)';
      await query(trx, `delete from sort_keys where collection_id = ? and slot = ? and row_id in ${touched}`, [id, slot, id, lastSeq]);
      await query(trx, sqliteKeysSql(sql, `r.id in ${touched}`), [id, slot, binding, id, id, lastSeq]);
    }
    await query(trx, 'update collections set sorted = ? where id = ?', [JSON.stringify([...sorted, field]), id]);
    return slot;
  });
}

/**
 * Which keys of a sort index a page reads: `all` of them (ascending, where missing and null come last
 * in the index too), or for a descending page first the `present` values, then the `missing` ones.
 */
export type KeyRange = 'all' | 'present' | 'missing';

const ranks: Record<KeyRange, string> = { all: '', present: 'and rank < 5', missing: 'and rank = 5' };

/** The order of sort keys (`k` their table's alias and a dot, or empty), and of rows with equal keys by id. */
const keyOrder = (k: string, dir: Direction) => `${k}rank ${dir}, ${k}num ${dir}, ${k}str ${dir}, ${k}row_id ${dir}`;

/**
 * A page of the collection's rows in the order of the sort index in `slot`, from one range of it, as
 * one row `{ n, json, seq }`: how many rows it has, and their JSON texts joined by commas (null for
 * none), each made from the stored text as rows.ts's rowJson() makes it, and the collection's latest
 * event seq as of the same snapshot (null when the collection is gone); on PostgreSQL also `exact`,
 * false when the page may be out of order (POSTGRES_KEY_CHARS). Made in the database, the
 * page comes back as one string where it would be 50 rows, each an object the driver builds on the
 * main thread.
 */
export function sortedPageQuery(
  dialect: 'sqlite' | 'postgres',
  collectionId: number,
  slot: number,
  order: Direction,
  range: KeyRange,
  limit: number,
  offset: number,
) {
  const dir = order === 'desc' ? 'desc' : 'asc';
  // PostgreSQL: whether every string key of the slot is whole (see POSTGRES_KEY_CHARS); one probe of
  // the partial index sort_keys_long (migration 0006), empty unless a string that long was ever keyed.
  const exact =
    dialect === 'postgres'
      ? {
          sql: `, not exists (select 1 from sort_keys where collection_id = ? and slot = ? and ${postgresCutKey}) as exact`,
          params: [collectionId, slot],
        }
      : { sql: '', params: [] };
  // The same text each time, not one made again: SQLite's statements are kept by their text
  // (sqlite-statements.ts), and a string made anew is hashed and compared whole on every page.
  const key = `${dialect} ${dir} ${range}`;
  let sql = sortedPageSql.get(key);
  if (sql === undefined) {
    // SQLite: CROSS JOIN keeps the keys the outer loop, so the rows come in their order (pageJsonSql).
    sql = `select count(*) as n, ${pageJsonSql(dialect, keyOrder('k.', dir))} as json,
        (select last_seq from collections where id = ?) as seq${exact.sql}
      from (select rank, num, str, row_id from sort_keys where collection_id = ? and slot = ? ${ranks[range]}
        order by ${keyOrder('', dir)} ${pageRange}) k
      ${dialect === 'sqlite' ? 'cross join' : 'join'} rows r on r.collection_id = ? and r.id = k.row_id`;
    sortedPageSql.set(key, sql);
  }
  return { sql, params: [collectionId, ...exact.params, collectionId, slot, limit, offset, collectionId] };
}

/** sortedPageQuery()'s SQL by dialect, order and range. */
const sortedPageSql = new Map<string, string>();

/** How many rows have a value for the field of the sort index in `slot`: where its missing ones start. */
export const presentCountQuery = (collectionId: number, slot: number) => ({
  sql: 'select count(*) as n from sort_keys where collection_id = ? and slot = ? and rank < 5',
  params: [collectionId, slot],
});

/** SQLite: the key columns (rank, num, str) from `t`, the value's JSON type as json_each names it, and `v`, its SQL value (`atom`). */
export const sqliteKeyColumns = `case t when 'integer' then 1 when 'real' then 1 when 'text' then 2 when 'true' then 3 when 'false' then 3
      when 'object' then 4 when 'array' then 4 else 5 end,
    case t when 'integer' then v when 'real' then v when 'true' then v when 'false' then v end,
    case when t = 'text' then v end`;

/**
 * Both backends: after an INSERT … SELECT of keys, a row's key replaces the one it had (SQLite needs
 * the WHERE to read the upsert's ON CONFLICT as one).
 */
export const replaceKey =
  'where true on conflict (collection_id, row_id, slot) do update set rank = excluded.rank, num = excluded.num, str = excluded.str';

/**
 * SQLite: the field `name` of the row text `data`, found among the row's keys with json_each, by name,
 * which spells every name (a JSON path cannot: ordering.ts's sqliteField()). A LEFT JOIN, so that a row
 * without the field has a key too (rank 5); `k.type` and `k.atom` are the `t` and `v` of
 * sqliteKeyColumns. Every SQLite key is found this way: an index's first keys here, those of rows
 * written later in sqlite-procedures.ts.
 */
export const sqliteFieldJoin = (data: string, name: string) => `left join json_each(${data}) k on k.key = ${name}`;

/**
 * SQLite: the keys of the stored rows of a range of ids. Params: the collection's id, the slot, the
 * field's name (`name`, as ordering.ts's sqliteName() gives it), then the collection's id, the first id
 * and the last.
 */
const sqliteKeysSql = (name: string, rows: string) => `insert into sort_keys (collection_id, slot, row_id, rank, num, str)
  select ?, ?, id, ${sqliteKeyColumns}
  from (select r.id, k.type as t, k.atom as v from rows r ${sqliteFieldJoin('r.data', name)}
    where r.collection_id = ? and ${rows}) rows`;

/**
 * PostgreSQL: the characters of a string a key holds at most. A btree key is at most 2,704 bytes, and a
 * row's string may be any length: a key holds the string's first 400 characters (at most 1,600 bytes of
 * UTF-8), which order strings as the whole strings do except among those that share their first 400.
 * A page read from an index any of whose keys was cut (postgresCutKey, which the partial index
 * sort_keys_long finds at once) is not used: the page sorts the collection whole, by whole strings
 * (rows.ts). SQLite has no bound, and keys whole strings.
 */
export const POSTGRES_KEY_CHARS = 400;
/** PostgreSQL: a key whose string may have been cut (one exactly POSTGRES_KEY_CHARS long may be whole). */
export const postgresCutKey = `length(str) >= ${POSTGRES_KEY_CHARS}`;

/** PostgreSQL: the key columns (rank, num, str) of the jsonb value `j`, as in the comment at the top. */
export const postgresKeyColumns = (j: string) => `case jsonb_typeof(${j}) when 'number' then 1 when 'string' then 2 when 'boolean' then 3
      when 'object' then 4 when 'array' then 4 else 5 end,
    case jsonb_typeof(${j}) when 'number' then (${j})::numeric when 'boolean' then case when (${j})::boolean then 1 else 0 end end,
    case when jsonb_typeof(${j}) = 'string' then left(${j} #>> '{}', ${POSTGRES_KEY_CHARS}) end`;

/** PostgreSQL: the keys of a range of rows, from jsonb (its strings escaped: ordering.ts's postgresJsonb()). */
function postgresKeys(field: string) {
  const { value, bindings } = postgresField(field);
  return {
    sql: `insert into sort_keys (collection_id, slot, row_id, rank, num, str)
      select collection_id, ?::integer, id, ${postgresKeyColumns('j')}
      from (select collection_id, id, ${value} as j from rows where collection_id = ? and id between ? and ?) r`,
    bindings,
  };
}

/** PostgreSQL: one row's key, from its bound text; params collection id, slot, row id, the text, then these bindings. */
function postgresRowKeys(field: string) {
  const { value, bindings } = postgresField(field, '?::text');
  return {
    sql: `insert into sort_keys (collection_id, slot, row_id, rank, num, str)
      select ?::integer, ?::integer, ?::bigint, ${postgresKeyColumns('j')} from (select ${value} as j) r ${replaceKey}`,
    bindings,
  };
}
