// SQLite's SQL of row writes (those both dialects share are in ../../sql/). `npm run generate` writes
// every statement, expanded, to generated/sql/sqlite.sql.
// Each kind of group of row writes is one INSERT into a TEMP view whose trigger does the whole write; why:
// docs/development.md, "SQLite's writes, one statement each".

import { MAX_ROW_BYTES } from '../../../rows.ts';
import type { KeyRange } from '../../engine/dialect.ts';
import { isRelatedField, replaceKey } from '../../engine/sql/collections.ts';
import { liveRowText } from '../../engine/sql/expiry.ts';
import { rowJsonWith } from '../../engine/sql/reads.ts';
import { listOf, type Sql, sql } from '../../engine/sql/template.ts';
import { keyBoundsSql } from '../filter.ts';
import { carriedText, fieldJoin, heldAsString, keyColumns, prefixOf, stringsTaken, uniqueKeySql } from './collections.ts';
import { rowExpiry } from './expiry.ts';
import { rowJsonSql } from './reads.ts';

/**
 * The account's collection, by account (`?1`) and name (`?2`), while its schema id is the binding
 * `schema` (../schemas.ts): its id, or null, and then the statement writes nothing.
 */
const collectionId = (schema: string) => `(select id from collections where account_id = ?1 and name = ?2 and schema_id = ${schema})`;

/** A row to patch, on the writer's connection, found with its collection by name, if it lives at `?` (ms since the epoch): its text and version. */
export const patchedRowSql = `select r.data, c.id as collection_id, r.version, c.schema_id from rows r join collections c on c.id = r.collection_id
  where c.account_id = ? and c.name = ? and r.id = ? and ${liveRowText('r')}`;

/** The collection of the INSERT's row, in a trigger: `c`. */
const collection = 'c.id = new.collection_id';

/**
 * The sort keys of the rows of `rows` (a FROM item `r`, each row's id and text read by `id` and
 * `data`), for every slot the collection `c` has (its position in `sorted`), each found as an index's
 * first keys are (fieldJoin): a slot's field, or a pair's second, and a pair's prefix (prefixOf); a
 * relation field's carrying the row's text (carriedText()).
 */
const sortKeys = (
  rows: string,
  id: string,
  data: string,
) => `insert into sort_keys (collection_id, slot, row_id, rank, num, str, prefix, carried)
    select collection_id, slot, id, ${keyColumns}, p, x
    from (select c.id as collection_id, f.key as slot, ${id} as id, k.type as t, k.atom as v,
        case when f.type = 'array' then ${prefixOf(data, 'f.value ->> 0')} end as p,
        ${carriedText('k.type', data, `f.type = 'text' and ${isRelatedField('c.id', 'f.value')}`)} as x
      from collections c, json_each(c.sorted) f, ${rows} ${fieldJoin(data, "case when f.type = 'array' then f.value ->> 1 else f.value end")}
      where ${collection})`;

/**
 * The keys of the rows of `rows` (as sortKeys() takes them) for every unique index the collection `c`
 * has (`uniques`), each replacing the row's key where it moved: a key another row holds aborts the
 * statement (unique_keys_key). A string the sort index keeps (stringSlot()) is no key: the row's key is
 * null then, where it had one (a row whose value was another before), and no key is written where it had none.
 * Its sort keys are written first.
 */
const uniqueKeys = (rows: string, id: string, data: string) => `insert into unique_keys (collection_id, row_id, index_id, key)
    select c.id, ${id}, u.value ->> 0, case when ${heldAsString('c', 'u', id)} then null else ${uniqueKeySql.key(data, 'u.value -> 1')} end
      from collections c, json_each(c.uniques) u, ${rows} where ${collection} and (not ${heldAsString('c', 'u', id)}
        or exists (select 1 from unique_keys e where e.collection_id = c.id and e.row_id = ${id} and e.index_id = u.value ->> 0))
    on conflict (collection_id, row_id, index_id) do update set key = excluded.key where key is not excluded.key`;

/** uniqueKeys() of rows that have none yet, new rows: a plain INSERT, which looks for no key of the row to replace. */
const newUniqueKeys = (rows: string, id: string, data: string) => `insert into unique_keys (collection_id, row_id, index_id, key)
    select c.id, ${id}, u.value ->> 0, ${uniqueKeySql.key(data, 'u.value -> 1')}
      from collections c, json_each(c.uniques) u, ${rows} where ${collection} and not ${heldAsString('c', 'u', id)}`;

/**
 * The rows the INSERT's trigger has just inserted, as a FROM item `r`: their ids, texts and versions (each
 * row's version is its insert event's seq), read back through the primary key, where each read of
 * json_each(new.texts) parses the group's whole JSON array again and unescapes each row's text from it.
 */
const inserted = `(select r.id, r.data, r.version from rows r where r.collection_id = new.collection_id
      and r.id > (select last_row_id from collections where id = new.collection_id) - new.n) r`;

/** The insert events of the rows `select` answers (columns collection_id, seq, id, data), as rowJson() in ../rows.ts makes them. */
const insertEvents = (select: string) => `insert into events (collection_id, seq, type, row_id, row, at)
    select collection_id, seq, 'insert', id, ${rowJsonSql}, new.at from (${select})`;

/** The failure of an insert whose Idempotency-Key's answer was stored first (../errors.ts, isKeyTaken). */
export const KEY_ANSWERED = 'idempotency key answered';

/**
 * `row_inserts (collection_id, n, texts, at, account_id, onces, named, now)`: `texts` is a JSON array of the `n`
 * rows' texts (JSON.stringify of each row's fields but id); row `i` (from 0) takes the next id and seq,
 * `at` is the events' time; then the rows' sort keys and unique keys. No such collection (a null id):
 * nothing is written (insertSql answers a null id).
 *
 * `named` holds the rows of other collections the rows name in their relations (../../relations/), a JSON
 * array of `[collection id, row id]`, each pair once, empty for none: when one is not found, or has expired
 * by `now` (the expiry now, ms since the epoch: docs/expiry.md), the statement aborts before it writes
 * anything, and the insert looks them up again to say which (../rows.ts). So an insert that names rows is
 * one statement, as one that names none, where the look-up was a statement of its own before it, on the
 * writer.
 *
 * `onces` holds the Idempotency-Keys of the inserts sent with one (openapi.yaml, IdempotencyKey), a
 * JSON array, empty for none, of `[key, request hash, at, expires at, first, n]`: `first` the place in
 * `texts` of the request's first row, `n` its number of rows. Each key's answer is stored by the same
 * statement as its rows, so that it is stored if and only if they are: the answer of insertRows
 * (openapi.yaml), 201 with the rows as their insert events hold them (rowJsonSql), read in seq order
 * through the events' primary key, and the row's ETag when there is one row. A key whose answer is
 * stored and not expired aborts the statement, and nothing of it is written (a constraint broken):
 * another request with the key was answered first (rows.ts). Its answer's insert finds it, through the
 * keys' primary key, and changes nothing (as on PostgreSQL); with no collection, nothing is inserted,
 * and the keys are looked for. CROSS JOIN keeps the keys sent the outer loop there: each is one primary
 * key lookup, where the planner would otherwise read every key of the account.
 */
const rowInserts = `
  create temp view if not exists row_inserts (collection_id, n, texts, at, account_id, onces, named, now) as
    select null, null, null, null, null, null, null, null where 0;
  create temp trigger if not exists row_inserts_write instead of insert on row_inserts begin
    select raise(abort, 'named row missing') where new.collection_id is not null and new.named <> '[]'
      and (select count(*) from json_each(new.named) n cross join rows r on r.collection_id = n.value ->> 0 and r.id = n.value ->> 1
          and ${liveRowText('r', 'new.now')})
        < json_array_length(new.named);
    update collections set last_row_id = last_row_id + new.n, last_seq = last_seq + new.n, row_count = row_count + new.n
      where id = new.collection_id;
    insert into rows (collection_id, id, data, version, expires_at)
      select c.id, c.last_row_id - new.n + 1 + t.key, t.value, c.last_seq - new.n + 1 + t.key, ${rowExpiry('t.value', 'c.ttl_field')}
      from collections c, json_each(new.texts) t where ${collection};
    ${insertEvents(`select c.id as collection_id, r.version as seq, r.id, r.data from collections c, ${inserted} where ${collection}`)};
    ${sortKeys(inserted, 'r.id', 'r.data')};
    ${stringsTaken('new.collection_id', 'k.row_id > c.last_row_id - new.n')};
    ${newUniqueKeys(inserted, 'r.id', 'r.data')};
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
    select raise(abort, '${KEY_ANSWERED}') where case when new.collection_id is null
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

/** The failure of a patch that makes a row weigh more than MAX_ROW_BYTES (../errors.ts, isRowTooLarge). */
export const ROW_TOO_LARGE = 'row too large';

/**
 * `row_patches_<n> (collection_id, i, rid, fields, at)`: one patch of a row of the collection
 * `collection_id`, the one whose rowid is `rid` (either null: no such collection or row, and nothing is
 * written), that sets `n` fields, one after the other:
 * `fields` a JSON array of `[path, value]`, `path` a JSON path `$."…"` (or `$`, the whole row) and
 * `value` its JSON text. JSON's own text is kept as it was given, as json_set keeps every other
 * field's: the row's new text is the one JSON.stringify would give (rows.ts says when). The update
 * event, with the next seq, comes first, while the row is as it was: it carries the row both as the
 * patch leaves it and as it was before (asyncapi.yaml, UpdateMessage `previous`), and only there does
 * a trigger still see the row before. Then the row's sort keys where they moved or carry its text anew (a
 * relation field's: carriedText()), and its unique keys where they moved. A patch that makes its row weigh
 * more than MAX_ROW_BYTES aborts the statement, and with it the group, whose patches then run alone. A patch of a row that does not exist writes nothing. Rows inserted together are patched
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
  // The row's version is the seq of its update event (openapi.yaml, ETag), even for a patch of no field;
  // its expiry by the text as patched (./expiry.ts), read only in a collection with a time to live.
  const setFields = n > 0 ? `data = ${patched}, expires_at = ${rowExpiry(patched, 'c.ttl_field')}, ` : '';
  const setRow = `update rows as r set ${setFields}version = c.last_seq from collections c where ${collection} and ${row};`;
  return `
  create temp view if not exists row_patches_${n} (collection_id, i, rid, fields, at) as select null, null, null, null, null where 0;
  create temp trigger if not exists row_patches_${n}_write instead of insert on row_patches_${n} begin
    update collections set last_seq = last_seq + 1 where id = new.collection_id and new.rid is not null;
    ${updateEvent(patched, row)};
    ${setRow}
    select raise(abort, '${ROW_TOO_LARGE}') from rows r where ${row} and length(cast(r.data as blob)) > ${MAX_ROW_BYTES};
    ${sortKeys(`(select r.id, r.data from rows r where ${row}) r`, 'r.id', 'r.data')}
      ${replaceKey}, carried = excluded.carried where rank is not excluded.rank or num is not excluded.num or str is not excluded.str
        or prefix is not excluded.prefix or carried is not excluded.carried;
    ${stringsTaken('new.collection_id', `k.row_id = (select r.id from rows r where ${row})`, true)};
    ${uniqueKeys(`(select r.id, r.data from rows r where ${row}) r`, 'r.id', 'r.data')};
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
 * A group of inserts: `?1` account, `?2` collection, `?3` n, `?4` texts, `?5` at, `?6` onces, `?8` named, `?9`
 * the expiry now (as row_inserts takes them), `?7` the schema id the rows were checked with. Answers `id`, the
 * collection's (null when there is no such collection, or its schema is another), and its
 * `last_row_id` and `last_seq` once the rows are in.
 * One row of VALUES, the collection's id found in it: an INSERT … SELECT into a view first copies the
 * SELECT's rows into a temporary table, and a trigger that found the collection by name would look it
 * up in each of its statements.
 */
export const insertSql = `insert into row_inserts values (${collectionId('?7')}, ?3, ?4, ?5, ?1, ?6, ?8, ?9)
  returning collection_id as id, (select last_row_id from collections where id = row_inserts.collection_id) as last_row_id,
    (select last_seq from collections where id = row_inserts.collection_id) as last_seq,
    (select search from collections where id = row_inserts.collection_id) as search`;

/**
 * A group of patches that each set `n` fields: `?1` account, `?2` collection, `?3` a JSON array of
 * `[row id, fields, now]` (as row_patches_<n> takes them, each row patched if it lives at its `now`), `?4` at, `?5` the schema id the rows as patched
 * were checked with. Answers a row for each patch, with `id` the collection's (null when there is no
 * such collection, or its schema is another), `i` the patch's index in `?3`, and `data`
 * the row's text as that patch left it (null for a row that does not exist) and `version` its version, and the
 * collection's `search` (the rows' words are then written in the same transaction), read right after the
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
    (select r.version from rows r where r.rowid = row_patches_${n}.rid) as version,
    (select search from collections where id = row_patches_${n}.collection_id) as search`;

const patchSqls = Array.from(
  { length: MAX_FIELDS_BY_PATH + 1 },
  (_, n) => `insert into row_patches_${n}
    select c.id, p.key, (select rowid from rows r where r.collection_id = c.id and r.id = p.value ->> 0 and ${liveRowText('r', 'p.value ->> 2')}), p.value ->> 1, ?4
      from (select ${collectionId('?5')} as id) c, json_each(?3) p
  ${returning(n)}`,
);

const onePatchSqls = Array.from(
  { length: MAX_FIELDS_BY_PATH + 1 },
  (_, n) => `insert into row_patches_${n}
    values (${collectionId('?5')}, 0, (select rowid from rows r where collection_id = ${collectionId('?5')} and id = ?3 ->> '$[0][0]' and ${liveRowText('r', `?3 ->> '$[0][2]'`)}), ?3 ->> '$[0][1]', ?4)
  ${returning(n)}`,
);

/**
 * onceAnswerSql (../../sql/) of reads merged (readers.ts, readMerged): `?` is `[[account id, key, now], …]`.
 * CROSS JOIN keeps the keys the outer loop: each read is one primary key lookup.
 */
export const onceAnswersSql = `select j.key as i, k.request_hash, k.status, k.headers, k.body from json_each(?) j
  cross join idempotency_keys k on k.account_id = j.value ->> 0 and k.key = j.value ->> 1 and k.expires_at > j.value ->> 2`;

/**
 * An import's rows (../imports.ts), with the ids they bring: `?1` the collection's id, `?2` the version of
 * the first (each next row's the next), `?3` a JSON array of `[id, text]`, the text the row's fields but
 * id as JSON.stringify wrote them; each row's expiry by the collection's time to live (./expiry.ts),
 * which an import sets before its rows. A cold path, in a transaction with the import's counters,
 * events and sort keys.
 */
export const importRowsSql = `insert into rows (collection_id, id, data, version, expires_at)
  select c.id, j.value ->> 0, j.value ->> 1, ?2 + j.key, ${rowExpiry('j.value ->> 1', 'c.ttl_field')}
    from collections c, json_each(?3) j where c.id = ?1`;

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
 * The rows of the collection `collectionId` whose keys in the sort index in `slot` are within `bounds` (the
 * dialect's keyBoundsSql), as a condition on `rows` that needs no other: the keys read from the index, each
 * key's row through the primary key. The rows a change by filter tests (../../rows/rows.ts, matchedSql).
 */
export const rangeRowsSql = (collectionId: number, slot: number, bounds: Sql): Sql => ({
  sql: `rows.collection_id = ? and rows.id in (select row_id from sort_keys where collection_id = ? and slot = ? and ${bounds.sql})`,
  params: [collectionId, collectionId, slot, ...bounds.params],
});

/**
 * The Dialect's rangesRowsSql: each range's keys read by a subquery of its own (SQLite prepares a
 * statement in microseconds, whatever its arms), each key's row then found through the primary key.
 */
export function rangesRowsSql(collectionId: number, ranges: readonly KeyRange[], where: Sql): Sql {
  const arms = ranges.map(
    ({ slot, bounds, limit }, n) =>
      sql`select * from (select ${n} as n, row_id from sort_keys where collection_id = ${collectionId} and slot = ${slot} and ${keyBoundsSql(bounds)} limit ${limit})`,
  );
  return sql`select k.n, rows.id, rows.data, rows.version from (${listOf(arms, ' union all ')}) k
    left join rows on rows.collection_id = ${collectionId} and rows.id = k.row_id and (${where})`;
}
