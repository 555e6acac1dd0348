// PostgreSQL's SQL of rows that expire (docs/expiry.md): the trigger that sets a row's expiry
// (`expires_at`, ms since the epoch) from its collection's time to live's field before every write of
// it, whatever the statement, and drop it.

/**
 * Before each insert of a row, and each update of its text: its collection's field (one look at the
 * collection's row by its key, and nothing more for a collection without a time to live), read as an
 * RFC 3339 date-time (any offset, `T` and `Z` of either case), else null: the row never expires. Text
 * PostgreSQL cannot read as jsonb or as a time (February 30th) is none.
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

/** Now, in ms since the epoch: the statement's time, read once a statement (a subquery of no table is an InitPlan), not once a row. */
export const nowMs = '(select (extract(epoch from statement_timestamp()) * 1000)::bigint)';

/** Whether the row `r` (a table's alias) lives: it has no expiry, or one past now. */
export const liveRow = (r: string) => `(${r}.expires_at is null or ${r}.expires_at > ${nowMs})`;
