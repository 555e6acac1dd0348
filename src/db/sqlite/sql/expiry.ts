// SQLite's SQL of rows that expire (docs/expiry.md): a row's expiry (`expires_at`, ms since the epoch)
// from its collection's time to live's field, as each write of the row's text sets it (rows.ts: an
// insert's view, a patch's json_set, an import, a change by filter). Whether a row lives is the same in
// both (../../engine/sql/expiry.ts, liveRowText).

/**
 * The expiry in ms since the epoch of the row whose text is `data` (SQL), by the field `field` (SQL of
 * its name, as `collections.ttl_field` holds it): an RFC 3339 date-time (a day that is on the calendar,
 * any offset, `T` and `Z` of either case), else null: the row never expires. Null at once, reading
 * nothing of the row, when `field` is null: a collection without a time to live. Every write of a row's
 * text sets it so, in its own statement (rows.ts; refreshExpiriesSql). The field's value is read once,
 * in a subquery an OFFSET keeps SQLite from flattening into the tests that read it; only a JSON string
 * reads as text that starts with a digit (an object or array reads as its JSON text).
 */
export const rowExpiry = (data: string, field: string) => `case when ${field} is null then null else (select case when typeof(v) = 'text'
    and v glob '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9][Tt][0-9][0-9]:[0-9][0-9]:[0-9][0-9]*'
    and (v glob '*[Zz]' or v glob '*[+-][0-9][0-9]:[0-9][0-9]')
    and date(substr(v, 1, 10)) = substr(v, 1, 10)
  then cast(round(unixepoch(upper(v), 'subsec') * 1000) as integer) end
  from (select json_extract(${data}, '$.' || ${field}) as v limit 1 offset 0)) end`;

/** Sets every row's expiry of the collection `?` by its time to live's field as it is now (../../expiry/ttl.ts, putTtlIn). */
export const refreshExpiriesSql = `update rows as r set expires_at = ${rowExpiry('r.data', 'c.ttl_field')}
  from collections c where c.id = r.collection_id and r.collection_id = ?`;

/**
 * Migration 0025's triggers, which set a row's expiry after each write of it, and 0026 drops: a write's
 * own statement sets it since (rowExpiry), where the triggers cost a write into a collection without a
 * time to live a look at its collection a row (docs/performance.md).
 */
const setExpiry = `update rows set expires_at = (select ${rowExpiry('new.data', 'c.ttl_field')}
    from collections c where c.id = new.collection_id) where rowid = new.rowid;`;
const hasTtl = '(select ttl_field from collections where id = new.collection_id) is not null';
export const expiryTriggersSql = [
  `create trigger rows_expiry_insert after insert on rows when ${hasTtl} begin ${setExpiry} end`,
  `create trigger rows_expiry_update after update of data on rows when ${hasTtl} begin ${setExpiry} end`,
];
export const dropExpiryTriggersSql = ['drop trigger if exists rows_expiry_insert', 'drop trigger if exists rows_expiry_update'];
