// The statements both dialects run as they are, and the pieces of SQL both build their own from. Each
// dialect's own statements are in sqlite/sql.ts and postgres/sql.ts; `npm run generate` writes every
// statement of each dialect, whole, to generated/sql/. Values a client sends are always bindings, never
// part of the text.

/**
 * The first statement of every write transaction (collections.ts, advance()): moves the collection's
 * counters by `?` new row ids, `?` events and `?` rows, found by account and name, and answers its id,
 * counters and sorted fields.
 */
export const advanceSql = `update collections set last_row_id = last_row_id + ?, last_seq = last_seq + ?, row_count = row_count + ?
  where account_id = ? and name = ? returning id, last_row_id, last_seq, sorted`;

/**
 * The first statement of a collection's creation: writes the account's row, which holds it until
 * commit, so that creations of one account count their collections one after another.
 */
export const lockAccountSql = 'update accounts set id = id where id = ?';

/** Makes the account's collection, unless it holds `?` collections already: then no row is answered. */
export const createCollectionSql = `insert into collections (account_id, name, created_at, row_count)
  select ?, ?, ?, 0 where (select count(*) from collections where account_id = ?) < ? returning name`;

/** The events of a change, `n` of them, six values each: collection, seq, type, row id, row, time. */
export const insertEventsSql = (n: number) =>
  `insert into events (collection_id, seq, type, row_id, row, at) values ${Array.from({ length: n }, () => '(?, ?, ?, ?, ?, ?)').join(', ')}`;

/** The account's collection by name, as a page ordered through a sort index needs it. */
export const collectionSql = 'select id, row_count, sorted from collections where account_id = ? and name = ?';

/** Deletes a row of the collection by id and answers its text, as it was, for the event. */
export const deleteRowSql = 'delete from rows where collection_id = ? and id = ? returning data';

/** A row's keys, of every slot. */
export const deleteSortKeysSql = 'delete from sort_keys where collection_id = ? and row_id = ?';

/** Lists one more field among the collection's sort indexes: `sorted` is the JSON array of them all. */
export const setSortedSql = 'update collections set sorted = ? where id = ?';

/** How many rows have a value for the field of the sort index in a slot: where its missing ones start. */
export const presentCountSql = 'select count(*) as n from sort_keys where collection_id = ? and slot = ? and rank < 5';

/**
 * A page's LIMIT and OFFSET, each a binding. SQLite reads the value bound to a bare `limit ?` when it
 * prepares the statement, and marks the statement to be prepared again whenever that binding is bound
 * again, which the driver does on every run. A LIMIT of `+?` is an expression that SQLite reads when the
 * statement runs, as it reads OFFSET; PostgreSQL takes it as it takes `?`.
 */
export const pageRange = 'limit +? offset ?';

/**
 * A row's JSON text from its columns `id` and `data` (its fields but id, as JSON.stringify wrote
 * them), as rowJson() in rows.ts makes it: `rest` is the SQL of `data` after its `{`.
 */
export const rowJsonWith = (rest: string) => `'{"id":' || id || case data when '{}' then '}' else ',' || ${rest} end`;

/**
 * After an INSERT … SELECT of sort keys, a row's key replaces the one it had (SQLite needs the WHERE to
 * read the upsert's ON CONFLICT as one).
 */
export const replaceKey =
  'where true on conflict (collection_id, row_id, slot) do update set rank = excluded.rank, num = excluded.num, str = excluded.str';

/** The order of sort keys (`k` their table's alias and a dot, or empty), and of rows with equal keys by id. */
export const keyOrder = (k: string, dir: 'asc' | 'desc') => `${k}rank ${dir}, ${k}num ${dir}, ${k}str ${dir}, ${k}row_id ${dir}`;
