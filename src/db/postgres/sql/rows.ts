// PostgreSQL's SQL of row writes (those both dialects share are in ../../sql/). `npm run generate`
// writes every statement, expanded, to generated/sql/postgres.sql. The hot ones run as named statements,
// parsed and planned once per connection (../statements.ts); each reads `?` as its next binding.

import type { KeyRange } from '../../engine/dialect.ts';
import { isRelatedField } from '../../engine/sql/collections.ts';
import { liveRowText } from '../../engine/sql/expiry.ts';
import { listOf, raw, type Sql, sql } from '../../engine/sql/template.ts';
import { boundsShape, keyBoundsSql } from '../filter.ts';
import { document, jsonbOf } from '../jsonb.ts';
import { carriedText, carriedUpdate, keyColumns, parsedUniqueKey, prefixColumn } from './collections.ts';
import { rowExpiry } from './expiry.ts';
import { rowJsonSql } from './reads.ts';

/**
 * advance() (../collections.ts) that also reads the row `?` of the collection as it is before the
 * change, if it lives at `?` (ms since the epoch): null when there is none. Locked, because a plain read would see the statement's snapshot,
 * taken before it waited for the collection's row: a patch of the row committed meanwhile would be
 * lost. A locked read in READ COMMITTED gets the row's latest committed version.
 */
export const advanceReadingRowSql = `with counters as (update collections
    set last_row_id = last_row_id + ?, last_seq = last_seq + ?, row_count = row_count + ?
    where account_id = ? and name = ?
    returning id, last_row_id, last_seq, sorted, uniques, schema_id, search, ttl_field)
  select c.*, r.data as current, r.version
    from counters c left join lateral (select data, version from rows where collection_id = c.id and id = ? and ${liveRowText('rows')} for update) r on true`;

/** pruneOnceSql of the Dialect: up to `?` (the second) answers that expired by `?`, found through the index of their expiry. */
export const pruneOnceSql = `delete from idempotency_keys where (account_id, key) in
  (select account_id, key from idempotency_keys where expires_at <= ? limit ?) returning account_id`;

/** holdOnce() of the Dialect: the account's Idempotency-Key, held until the transaction ends, if no other transaction holds it. */
export const holdOnceSql = 'select pg_try_advisory_xact_lock(?, hashtext(?)) as held';

/**
 * Sets the texts of many rows (a change by filter), and the texts their keys carry (./collections.ts,
 * carriedUpdate): `?` a JSON array of `[id, text]`, `?` the collection's id, `?` the seq before the
 * first of their update events, each row's version that seq plus its place, and `?` the collection's id
 * again; each row's expiry by the collection's time to live (./expiry.ts). Each row, and each row's keys,
 * found by a probe of the primary key of its own, as ./relations.ts's byIds() finds them: by the
 * collection's id beside the rows' ids, the plan kept for the statement read every row or every key of
 * the collection, under the statistics of a collection just filled (docs/performance.md, "Changes by
 * filter through an index").
 */
export const updateRowsSql = `with texts as materialized (
    select (x.value ->> 0)::bigint as id, x.value ->> 1 as data, x.ordinality from json_array_elements(?::json) with ordinality x
  ), carried as (
    update sort_keys k set carried = ${carriedUpdate('t.data')}
      from texts t where k.row_id = t.id and k.ctid = any(array(select p.ctid from texts d cross join lateral (select ctid
        from sort_keys where collection_id = (select ?::integer) and row_id = d.id and carried is not null offset 0) p))
  )
  update rows set data = t.data, version = ?::bigint + t.ordinality, expires_at = ${rowExpiry('t.data', 'c.ttl_field')}
  from texts t, collections c
  where rows.id = t.id and c.id = rows.collection_id and rows.ctid = any(array(select p.ctid from texts d cross join lateral (select ctid
        from rows where collection_id = (select ?::integer) and id = d.id offset 0) p))`;

/**
 * A patch of one row, once advanceReadingRowSql has held its collection and read it: the row's text
 * and version, its update event and the NOTIFY of the change (rows.ts, listenForChanges), as one statement, where
 * appendEvents() would send two more. $1 the row's new text, $2 the seq of its event (its version),
 * $3 the collection's id, $4 the row's id; $5 and $6 the row and the row as it was, as eventRow() makes
 * them; $7 the event's time; $8 and $9 the NOTIFY's channel and payload; $10 the collection's time to live's
 * field, as advanceReadingRowSql read it (null for none), by which the row's expiry is set (./expiry.ts). The
 * texts its keys carry are the new text (./collections.ts, carriedUpdate): a key the patch moves is
 * written again after (../rows.ts, rekeyPatchedRows).
 */
export const updateRowSql = `with updated as (
    update rows set data = $1, version = $2, expires_at = ${rowExpiry('$1', '$10::text')} where collection_id = $3 and id = $4
  ), carried as (
    update sort_keys set carried = ${carriedUpdate('$1')} where collection_id = $3 and row_id = $4 and carried is not null
  ), logged as (
    insert into events (collection_id, seq, type, row_id, row, previous, at) values ($3, $2, 'update', $4, $5, $6, $7)
  )
  select pg_notify($8, $9)`;

/** The condition on the collection's search index of each kind of insertBatch(). */
const searchedIf: Record<string, string> = { false: ' and search is null', true: '', words: ' and search = $9::text' };

/**
 * What an insert statement writes of the rows of `batch` (each row's collection, id, seq, text, time
 * and its collection's time to live's field), the collections' `counters` held and moved already: the
 * rows, their insert events, and their sort keys and unique keys by the `sorted` and `uniques` of
 * their collection's counters (see insertBatchSql), the keys of a relation's field carrying their rows'
 * texts (./collections.ts, carriedText).
 */
const rowsWritten = `, stored as (
    insert into rows (collection_id, id, data, version, expires_at)
      select collection_id, id, data, seq, ${rowExpiry('data', 'ttl_field')} from batch
  ), logged as (
    insert into events (collection_id, seq, type, row_id, row, at)
      select collection_id, seq, 'insert', id, ${rowJsonSql}, at
        from batch
  ), parsed as (
    select b.collection_id, b.id, b.data, ${document('b').sql} as j from batch b
  ), keyed as (
    insert into sort_keys (collection_id, slot, row_id, rank, num, str, prefix, carried)
      select k.collection_id, f.slot - 1, k.id, ${keyColumns('k.j')}, ${prefixColumn('k.f')}, ${carriedText('k.j', 'k.data', 'r.related')}
        from counters c,
          jsonb_array_elements(${jsonbOf('c.sorted')}) with ordinality as f(entry, slot),
          lateral (select jsonb_typeof(f.entry) = 'string' and ${isRelatedField('c.id', "f.entry #>> '{}'")} as related offset 0) r,
          lateral (select p.collection_id, p.id, p.data, p.j -> coalesce(f.entry ->> 1, f.entry #>> '{}') as j,
              case when jsonb_typeof(f.entry) = 'array' then p.j -> (f.entry ->> 0) end as f
            from parsed p where p.collection_id = c.id offset 0) k
  ), uniqued as (
    insert into unique_keys (collection_id, row_id, index_id, key)
      select k.collection_id, k.id, (u.value ->> 0)::integer, ${parsedUniqueKey('k.j', 'u.value -> 1')}
        from counters c,
          jsonb_array_elements(c.uniques::jsonb) as u(value),
          lateral (select p.collection_id, p.id, p.j from parsed p where p.collection_id = c.id offset 0) k
  )`;

/**
 * advance(), the rows, appendEvents() and writeSortKeys() as one statement (the keys of every indexed
 * field, read from `sorted` as advance() answers it, strings escaped as jsonbOf() does), and the rows'
 * keys of each unique index (`uniques`; a key another row holds fails the statement: unique_keys_key).
 * $1 the account, $2 the collection's name, $3 the number of rows, $4 their texts, one a line; $5 and
 * $6 the NOTIFY's channel and this instance (rows.ts, listenForChanges); $7 the schema id the rows were
 * checked with (../schemas.ts). No such collection, or its schema another, or a search index
 * (searchedInsertBatchSql writes into that): no row answered, and nothing written. Each event's row is made from the row's text as eventRow() makes it. The events'
 * time is PostgreSQL's clock once the collection's row is held (where appendEvents() takes Node's,
 * after advance()): a batch that waited its turn is not stamped before the one it waited for.
 *
 * The keys read the batch once per indexed field (and unique index), from inside the field's lateral
 * subquery (`offset 0` keeps the planner from flattening it into a join it may turn around): a
 * collection with no sort index then reads no row of the batch for them. Written as a join of the
 * batch with the fields, the plan would scan the whole batch against an empty list of fields, all
 * while holding the collection's row.
 */
const plainBatch = {
  before: '',
  schemaId: '$7',
  holdIf: '',
  rows: 'unnest(string_to_array($4::text, chr(10))) with ordinality as t(data, ord)',
  rowColumns: '',
  after: '',
  answer: `select id, before_id + 1 as first_id, before_seq + 1 as first_seq, search, pg_notify($5, $6 || ' ' || id) from counters`,
};
export const insertBatchSql = insertBatch({ ...plainBatch, searched: false });

/**
 * insertBatchSql of rows that name rows of other collections (../../relations/, docs/relations.md), with
 * those rows held as a write that names rows holds them (../../rows/writes.ts, holdFollowers): the
 * collection's row first (`counters`), then each named row FOR KEY SHARE until the commit, in order of
 * collection and id, so that a delete of one waits for the insert's commit, then sees its rows. $8 the
 * named rows' collection ids and $9 their ids, joined by commas, each pair once; $10 how many pairs; $11
 * the expiry now (docs/expiry.md). When fewer live are found the statement stops with RELATION_MISSING,
 * and nothing of it is written: one of them was deleted, or has expired, or is not in the statement's
 * snapshot (taken before it waited for the collection's row), which the transaction that looks again
 * tells apart (../rows.ts, holdNamed).
 */
export const namingInsertBatchSql = insertBatch({
  ...plainBatch,
  searched: false,
  after: `, named as (
    select r.id
      from counters c
        cross join unnest(string_to_array($8::text, ',')::integer[], string_to_array($9::text, ',')::bigint[]) as n(collection_id, id)
        join rows r on r.collection_id = n.collection_id and r.id = n.id and ${liveRowText('r', '$11')}
      order by r.collection_id, r.id
      for key share of r
  )`,
  answer: `select id, before_id + 1 as first_id, before_seq + 1 as first_seq, search, pg_notify($5, $6 || ' ' || id),
    case when (select count(*) from named) < $10 then rowbase_relation_missing() end
    from counters`,
});

/** The SQLSTATE of namingInsertBatchSql's failure when a row it names is not found (migration 0023). */
export const RELATION_MISSING = 'RB422';

/**
 * insertBatchSql into a collection that may have a search index (../../search/indexes.ts),
 * inside a transaction that then writes the rows' words: the statement answers the collection's `search`.
 */
export const searchedInsertBatchSql = insertBatch({ ...plainBatch, searched: true });

/**
 * insertBatchSql into a collection whose search index is over the fields $9 (its `search`, as JSON
 * text), run alone, with the rows' words: $8 each row's words joined by spaces, one row a line (a row
 * of no words an empty line), each written with the collection's id before it (searchTerms()) and its
 * place in the row, as the tsvector's text of sql/search.ts (tsvectorText()) has them: the text's cast
 * merges a word's places, keeps 256 of them and the places past 16383 at 16383. A collection whose
 * search index is now over other fields, or none, is written nothing, as no collection.
 */
export const wordedInsertBatchSql = insertBatch({
  ...plainBatch,
  searched: 'words',
  rows: 'unnest(string_to_array($4::text, chr(10)), string_to_array($8::text, chr(10))) with ordinality as t(data, words, ord)',
  rowColumns: ', t.words',
  after: `, worded as (
    insert into search_rows (collection_id, row_id, words)
      select collection_id, id, coalesce((select string_agg('''' || collection_id || '_' || w || ''':' || least(at, 16383), ' ')
          from unnest(string_to_array(coalesce(words, ''), ' ')) with ordinality as u(w, at)), '')::tsvector
        from batch
  )`,
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
const batchWithAnswers = {
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
  answer: `select h.held, c.id, c.before_id + 1 as first_id, c.before_seq + 1 as first_seq, c.search,
    case when c.id is not null then pg_notify($5, $6 || ' ' || c.id) end,
    case when c.id is not null and (select count(*) from recorded) < h.keys then rowbase_once_taken() end
    from holds h left join counters c on true`,
};
export const insertBatchWithAnswersSql = insertBatch({ ...batchWithAnswers, searched: false });

/** insertBatchWithAnswersSql as searchedInsertBatchSql is insertBatchSql. */
export const searchedInsertBatchWithAnswersSql = insertBatch({ ...batchWithAnswers, searched: true });

/** The SQLSTATE of insertBatchWithAnswersSql's failure when a key was answered meanwhile (migration 0012). */
export const ONCE_TAKEN = 'RB409';

/**
 * What insertBatchSql and insertBatchWithAnswersSql write each their own way: the statements before the
 * collection's row is held, the condition to hold it, the batch's rows and their columns, the
 * statements after the rows are written, and the statement's one row of answer.
 */
interface BatchParts {
  /**
   * Whether the statement runs inside a transaction that writes the rows' words when the collection has
   * a search index. Run alone, it writes nothing into a collection that has one, as into no collection:
   * the rows would be committed without their words. `words`: the statement writes them itself.
   */
  searched: boolean | 'words';
  before: string;
  /** The parameter of the schema id the rows were checked with (../schemas.ts): another, and the statement writes nothing. */
  schemaId: string;
  holdIf: string;
  rows: string;
  rowColumns: string;
  after: string;
  answer: string;
}

function insertBatch({ searched, before, schemaId, holdIf, rows, rowColumns, after, answer }: BatchParts): string {
  return `with ${before}counters as (
    update collections set last_row_id = last_row_id + $3, last_seq = last_seq + $3, row_count = row_count + $3
      where account_id = $1 and name = $2 and schema_id = ${schemaId}::bigint${holdIf}${searchedIf[String(searched)]}
      returning id, last_row_id - $3 as before_id, last_seq - $3 as before_seq, sorted, uniques, search, ttl_field,
        to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at
  ), batch as (
    select c.id as collection_id, c.before_id + t.ord as id, c.before_seq + t.ord as seq, t.data, c.at, c.ttl_field${rowColumns}
      from counters c, ${rows}
  )${rowsWritten}${after}
  ${answer}`;
}

/**
 * A batch's inserts into several collections (../../rows/batch.ts) as one statement run alone, as
 * insertBatchSql is one collection's: $1 the account; $2 the collections' names, one a line; $3 the
 * schema id each one's rows were checked with, and $4 its number of rows, joined by commas, in the same
 * order; $5 the rows' texts, one a line, the first collection's, then the next one's, and so on; $6 and
 * $7 the NOTIFY's channel and this instance. The collections' rows are held first, in the order of
 * their names (by code point, as ../../relations/links.ts, holdingOrder, orders them), so that it never
 * waits in a circle with a batch or a delete over the same collections. Unless every one is there, of
 * the schema its rows were checked with, and without a search index (whose words this does not write),
 * nothing is written and no row answered. Else each collection's rows follow its last id and seq, and it
 * answers, for each collection, its id, its place in $2 (from 1) and its first row's id and seq.
 */
export const insertSeveralSql = `with wanted as (
    select w.name, w.schema_id, w.n, w.place, (sum(w.n) over (order by w.place) - w.n)::bigint as skipped
      from unnest(string_to_array($2::text, chr(10)), string_to_array($3::text, ',')::bigint[], string_to_array($4::text, ',')::bigint[])
        with ordinality as w(name, schema_id, n, place)
  ), held as materialized (
    select c.schema_id = w.schema_id and c.search is null as fits
      from collections c join wanted w on w.name = c.name
      where c.account_id = $1
      order by c.name collate "C"
      for no key update of c
  ), counters as (
    update collections c set last_row_id = c.last_row_id + w.n, last_seq = c.last_seq + w.n, row_count = c.row_count + w.n
      from wanted w
      where c.account_id = $1 and c.name = w.name
        and (select count(*) filter (where fits) from held) = (select count(*) from wanted)
      returning c.id, w.place, w.skipped, w.n, c.last_row_id - w.n as before_id, c.last_seq - w.n as before_seq, c.sorted,
        c.uniques, c.ttl_field, to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at
  ), batch as (
    select c.id as collection_id, c.before_id + t.ord - c.skipped as id, c.before_seq + t.ord - c.skipped as seq, t.data, c.at, c.ttl_field
      from counters c
        join unnest(string_to_array($5::text, chr(10))) with ordinality as t(data, ord) on t.ord > c.skipped and t.ord <= c.skipped + c.n
  )${rowsWritten}
  select id, place, before_id + 1 as first_id, before_seq + 1 as first_seq, pg_notify($6, $7 || ' ' || id) from counters`;

/**
 * An import's rows (../imports.ts), with the ids they bring: `?` the collection's id, `?` the version of
 * the first (each next row's the next), `?` their ids joined by commas, `?` their texts one a line
 * (JSON.stringify writes no line feed), in the same order; each row's expiry by the collection's time to
 * live (./expiry.ts), which an import sets before its rows.
 */
export const importRowsSql = `insert into rows (collection_id, id, data, version, expires_at)
  select c.id, t.id, t.data, f.first + t.n - 1, ${rowExpiry('t.data', 'c.ttl_field')}
    from (select ?::integer as collection_id, ?::bigint as first) f
      join collections c on c.id = f.collection_id,
      unnest(string_to_array(?::text, ',')::bigint[], string_to_array(?::text, chr(10))) with ordinality as t(id, data, n)`;

/**
 * The rows of the collection `collectionId` whose keys in the sort index in `slot` are within `bounds` (the
 * dialect's keyBoundsSql), as a condition on `rows` that needs no other, as ./relations.ts's namingRowsSql
 * reads them: the keys by one range of `sort_keys_order`, each key's row by a probe of the primary key of
 * its own (`offset 0` keeps the planner from turning them into a join that walks the collection). The rows
 * a change by filter tests (../../rows/rows.ts, matchedSql).
 */
export const rangeRowsSql = (collectionId: number, slot: number, bounds: Sql): Sql => ({
  sql: `rows.ctid = any(array(select r.ctid from (select row_id from sort_keys
      where collection_id = (select ?::integer) and slot = ? and ${bounds.sql} offset 0) k
    cross join lateral (select ctid from rows where collection_id = (select ?::integer) and id = k.row_id offset 0) r))`,
  params: [collectionId, slot, ...bounds.params, collectionId],
});

/**
 * The Dialect's rangesRowsSql: the ranges of one shape (../filter.ts, boundsShape; the bench's changes by
 * filter, a range of scores each) as the rows of one VALUES list, each range's keys read by a lateral
 * probe of `sort_keys_order`, so that PostgreSQL plans the statement once whatever the number of
 * ranges, where a subquery of each would be planned each (docs/performance.md); a range of another kind
 * (`$in`, `$prefix`) read by a subquery of its own. Each key's row is then probed by the primary key.
 */
export function rangesRowsSql(collectionId: number, ranges: readonly KeyRange[], where: Sql): Sql {
  const collection = sql`(select ${collectionId}::integer)`;
  const arms: Sql[] = [];
  const shapes = new Map<string, { columns: number; rows: Sql[] }>();
  for (const [n, { slot, bounds, limit }] of ranges.entries()) {
    const shape = boundsShape(bounds);
    if (!shape) {
      arms.push(sql`(select ${n}::integer as n, row_id from sort_keys
        where collection_id = ${collection} and slot = ${slot} and ${keyBoundsSql(bounds)} limit ${limit})`);
      continue;
    }
    const values = listOf([sql`${n}::integer`, sql`${slot}::integer`, sql`${limit}::bigint`, ...shape.values], ', ');
    const same = shapes.get(shape.sql) ?? { columns: shape.values.length, rows: [] };
    same.rows.push(sql`(${values})`);
    shapes.set(shape.sql, same);
  }
  for (const [shape, { columns, rows }] of shapes) {
    const names = ['n', 'slot', 'lim', ...Array.from({ length: columns }, (_, i) => `v${i}`)].join(', ');
    arms.push(sql`(select b.n, k.row_id from (values ${listOf(rows, ', ')}) b(${raw(names)})
      cross join lateral (select row_id from sort_keys where collection_id = ${collection} and slot = b.slot and ${raw(shape)} limit b.lim) k)`);
  }
  return sql`select k.n, r.id, r.data, r.version from (${listOf(arms, ' union all ')}) k
    left join lateral (select id, data, version from rows where collection_id = ${collection} and id = k.row_id and (${where}) offset 0) r on true`;
}
