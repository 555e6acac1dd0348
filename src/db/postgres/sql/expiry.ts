// PostgreSQL's SQL of rows that expire (docs/expiry.md): a row's expiry (`expires_at`, ms since the
// epoch) from its collection's time to live's field, as each write of the row's text sets it (rows.ts:
// a batch of inserts, a patch, a change by filter, an import). Whether a row lives is the same in both
// (../../engine/sql/expiry.ts, liveRowText).

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
