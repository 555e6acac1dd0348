// SQLite's SQL of rows that expire (docs/expiry.md): the triggers that set a row's expiry (`expires_at`,
// ms since the epoch) from its collection's time to live's field on every write of it, whatever the
// statement (an insert's view, a patch's json_set, an import, a change by filter), and drop them.

/**
 * The row's expiry in ms since the epoch, from `v`, its field's value as json_extract reads it, and `t`,
 * its JSON type: an RFC 3339 date-time (a day that is on the calendar, any offset, `T` and `Z` of either
 * case), else null: the row never expires.
 */
const expiryOf = (v: string, t: string) => `case when ${t} = 'text'
    and ${v} glob '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9][Tt][0-9][0-9]:[0-9][0-9]:[0-9][0-9]*'
    and (${v} glob '*[Zz]' or ${v} glob '*[+-][0-9][0-9]:[0-9][0-9]')
    and date(substr(${v}, 1, 10)) = substr(${v}, 1, 10)
  then cast(round(unixepoch(upper(${v}), 'subsec') * 1000) as integer) end`;

/** The expiry of the row `new`, in a trigger, by its collection's field (named once: the collection's row by its key). */
const setExpiry = `update rows set expires_at = (select ${expiryOf("json_extract(new.data, '$.' || c.ttl_field)", "json_type(new.data, '$.' || c.ttl_field)")}
    from collections c where c.id = new.collection_id) where rowid = new.rowid;`;

/** Whether the row `new`'s collection has a time to live: one look at the collection's row by its key. */
const hasTtl = '(select ttl_field from collections where id = new.collection_id) is not null';

export const expiryTriggersSql = [
  `create trigger rows_expiry_insert after insert on rows when ${hasTtl} begin ${setExpiry} end`,
  `create trigger rows_expiry_update after update of data on rows when ${hasTtl} begin ${setExpiry} end`,
];

export const dropExpiryTriggersSql = ['drop trigger if exists rows_expiry_insert', 'drop trigger if exists rows_expiry_update'];

/** Now, in ms since the epoch: SQLite reads 'now' once a statement (its date functions are constant within one), not once a row. */
export const nowMs = "unixepoch('subsec') * 1000";

/** Whether the row `r` (a table's alias) lives: it has no expiry, or one past now. */
export const liveRow = (r: string) => `(${r}.expires_at is null or ${r}.expires_at > ${nowMs})`;
