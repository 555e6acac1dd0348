// PostgreSQL's SQL of rows that expire (docs/expiry.md): a row's expiry (`expires_at`, ms since the
// epoch) from its collection's time to live's field, as each write of the row's text sets it (rows.ts:
// a batch of inserts, a patch, a change by filter, an import). Whether a row lives is the same in both
// (../../engine/sql/expiry.ts, liveRowText).
import { rowJsonSql } from './reads.ts';

/**
 * Migration 0026's function: the expiry of the row whose text is `data` by its field `field`, read as
 * an RFC 3339 date-time (any offset, `T` and `Z` of either case), else null: the row never expires.
 * Text PostgreSQL cannot read as jsonb or as a time (February 30th) is none. STRICT: a null field (a
 * collection without a time to live) is null without a call, reading nothing of the row.
 */
export const expiryFunctionSql = `create or replace function rowbase_expiry_of(data text, field text) returns bigint
    language plpgsql immutable strict parallel safe as $$
    declare
      document jsonb;
      value text;
    begin
      document := data::jsonb;
      value := document ->> field;
      if jsonb_typeof(document -> field) = 'string'
        and value ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+){0,1}([Zz]|[+-][0-9]{2}:[0-9]{2})$' then
        return round(extract(epoch from value::timestamptz) * 1000)::bigint;
      end if;
      return null;
    exception when others then
      return null;
    end $$`;

export const dropExpiryFunctionSql = 'drop function if exists rowbase_expiry_of(text, text)';

/** The expiry of the row whose text is `data` (SQL) by the field `field` (SQL of its name, null for none): expiryFunctionSql's. */
export const rowExpiry = (data: string, field: string) => `rowbase_expiry_of(${data}, ${field})`;

/** Sets every row's expiry of the collection `?` by its time to live's field as it is now (../../expiry/ttl.ts, putTtlIn). */
export const refreshExpiriesSql = `update rows r set expires_at = ${rowExpiry('r.data', 'c.ttl_field')}
  from collections c where c.id = r.collection_id and r.collection_id = ?`;

/**
 * Migration 0025's trigger, which set a row's expiry before each write of it, and 0026 drops: a
 * write's own statement sets it since (rowExpiry), where the trigger cost a write into a collection
 * without a time to live a call and a look at its collection a row (docs/performance.md).
 */
export const expiryTriggersSql = [
  `create or replace function rowbase_row_expiry() returns trigger language plpgsql as $$
    declare
      field text;
      value text;
    begin
      select ttl_field into field from collections where id = new.collection_id;
      if field is null then return new; end if;
      new.expires_at := null;
      begin
        value := new.data::jsonb ->> field;
        if jsonb_typeof(new.data::jsonb -> field) = 'string'
          and value ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+){0,1}([Zz]|[+-][0-9]{2}:[0-9]{2})$' then
          new.expires_at := round(extract(epoch from value::timestamptz) * 1000)::bigint;
        end if;
      exception when others then
        new.expires_at := null;
      end;
      return new;
    end $$`,
  'create trigger rows_expiry before insert or update of data on rows for each row execute function rowbase_row_expiry()',
];

export const dropExpiryTriggersSql = ['drop trigger if exists rows_expiry on rows', 'drop function if exists rowbase_row_expiry()'];

/**
 * A sweep's batch, first (Dialect.sweepAlone; ../../expiry/sweep.ts): the collection `?`'s row held until
 * the commit, as every write holds it, with whether it has a sort index (its keys to delete) and whether
 * it has relations, in or out (then the batch takes the transaction's path, deleteRowsIn, whose deletes
 * follow them).
 */
export const holdSweptSql = `select c.sorted <> '[]' as sorted,
    exists (select 1 from collection_relations x where x.target_id = c.id or x.collection_id = c.id) as related
  from collections c where c.id = ? for no key update`;

/**
 * A sweep's batch once holdSweptSql holds its collection, as one statement, where the transaction's path
 * sends eight (the ids, the rows read again, the counters, the keys, the rows, the events, the NOTIFY) and
 * the rows' texts go to the process and back as their events. $1 the collection's id, $2 now (ms since the
 * epoch), $3 the rows at most, $4 1 when it has sort keys (0 when not), $5 and $6 the NOTIFY's channel and
 * payload (rows.ts, listenForChanges). The rows expired by $2, the first to expire, each deleted with its sort keys
 * (each row and key probed by its id as rowIdsSql() probes them, ./relations.ts; its unique keys go by the
 * trigger of `rows`, its words by their foreign key), the collection's counters moved, and a delete event
 * each, in id order, marked expired, as appendEvents() writes them. Its snapshot is taken after the hold,
 * so it sees every write of the collection committed before.
 */
export const sweepBatchSql = `with doomed as materialized (
    select r.id from rows r
      where r.collection_id = $1 and r.expires_at <= $2
      order by r.expires_at limit $3
      for update
  ), gone as (
    delete from rows r where r.ctid = any(array(select p.ctid from doomed d
        cross join lateral (select ctid from rows where collection_id = (select $1::integer) and id = d.id offset 0) p))
      returning r.id, r.data
  ), counted as materialized (
    select count(*) as n from gone
  ), counters as (
    update collections c set last_seq = c.last_seq + k.n, row_count = c.row_count - k.n
      from counted k where c.id = $1 and k.n > 0
      returning c.last_seq - k.n as before_seq,
        to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at
  ), unkeyed as (
    delete from sort_keys k where $4::integer = 1 and k.ctid = any(array(select p.ctid from gone g
        cross join lateral (select ctid from sort_keys where collection_id = (select $1::integer) and row_id = g.id offset 0) p))
  ), logged as (
    insert into events (collection_id, seq, type, row_id, row, previous, at, reason)
      select $1, c.before_seq + g.place, 'delete', g.id, ${rowJsonSql}, null, c.at, 'expired'
        from counters c, (select id, data, row_number() over (order by id) as place from gone) g
  )
  select n, case when n > 0 then pg_notify($5, $6) end as notified from counted`;
