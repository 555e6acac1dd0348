// The statements both dialects run as they are (or with the clause that orders text by code point), and
// the pieces of SQL both build their own from. Each dialect's own statements are in sqlite/sql.ts and
// postgres/sql.ts; `npm run generate` writes every statement of each dialect, whole, to generated/sql/.
// Values a client sends are always bindings, never part of the text.
import { type Sql, sql } from './reads/filter.ts';

/**
 * The first statement of every write transaction (collections.ts, advance()): moves the collection's
 * counters by `?` new row ids, `?` events and `?` rows, found by account and name, and answers its id,
 * counters and sorted fields.
 */
export const advanceSql = `update collections set last_row_id = last_row_id + ?, last_seq = last_seq + ?, row_count = row_count + ?
  where account_id = ? and name = ? returning id, last_row_id, last_seq, sorted, schema_id`;

/**
 * The first statement of a collection's creation: writes the account's row, which holds it until
 * commit, so that creations of one account count their collections one after another.
 */
export const lockAccountSql = 'update accounts set id = id where id = ?';

/** Makes the account's collection, unless it holds `?` collections already: then no row is answered. */
export const createCollectionSql = `insert into collections (account_id, name, created_at, row_count)
  select ?, ?, ?, 0 where (select count(*) from collections where account_id = ?) < ? returning id`;

/** The events of a change, `n` of them, seven values each: collection, seq, type, row id, row, the row before (or null), time. */
export const insertEventsSql = (n: number) =>
  `insert into events (collection_id, seq, type, row_id, row, previous, at) values ${Array.from({ length: n }, () => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`;

/** The account's collection by name, as a page ordered through a sort index needs it. */
export const collectionSql = 'select id, row_count, sorted from collections where account_id = ? and name = ?';

/** Deletes a row of the collection by id and answers its text, as it was, for the event, and its version, for If-Match. */
export const deleteRowSql = 'delete from rows where collection_id = ? and id = ? returning data, version';

/**
 * Changes by filter (row-writes.ts): the rows of the collection `?` that the filter `where` (SQL on
 * `id` and `data`, its bindings after the collection's id) matches, in id order, at most `?` of them.
 */
export const matchedRowsSql = (where: string) => `select id, data from rows where collection_id = ? and (${where}) order by id limit ?`;

/** The rows of the collection `?` that `where` matches, deleted. */
export const deleteRowsWhereSql = (where: string) => `delete from rows where collection_id = ? and (${where})`;

/** The sort keys of the collection `?` of its rows (the collection `?` again) that `where` matches, deleted before the rows. */
export const deleteKeysWhereSql = (where: string) =>
  `delete from sort_keys where collection_id = ? and row_id in (select id from rows where collection_id = ? and (${where}))`;

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
 * them; or the column named `data`), as rowJson() in rows.ts makes it: `rest` is the SQL of that
 * text after its `{`.
 */
export const rowJsonWith = (rest: string, data = 'data') => `'{"id":' || id || case ${data} when '{}' then '}' else ',' || ${rest} end`;

/**
 * A row of a page read with `versions` (openapi.yaml, VersionedRow): its ETag, made of the columns
 * `collection_id` and `version` as versionOf() in rows.ts makes its text, and the row as rowJsonWith(rest).
 */
export const versionedRowJsonWith = (rest: string) =>
  `'{"etag":"\\"' || collection_id || '.' || version || '\\"","row":' || ${rowJsonWith(rest)} || '}'`;

/** The columns of `rows` a page reads: the row, and its collection and version when it answers them (versionedRowJsonWith). */
export const pageColumns = (versions: boolean | undefined) => (versions ? 'id, data, collection_id, version' : 'id, data');

/**
 * After an INSERT … SELECT of sort keys, a row's key replaces the one it had (SQLite needs the WHERE to
 * read the upsert's ON CONFLICT as one).
 */
export const replaceKey =
  'where true on conflict (collection_id, row_id, slot) do update set rank = excluded.rank, num = excluded.num, str = excluded.str';

/** The order of sort keys (`k` their table's alias and a dot, or empty), and of rows with equal keys by id. */
export const keyOrder = (k: string, dir: 'asc' | 'desc') => `${k}rank ${dir}, ${k}num ${dir}, ${k}str ${dir}, ${k}row_id ${dir}`;

// The cold paths: collections, keys, plans, usage, the feed's event reads and retention. `collate` is the
// dialect's clause that orders text by code point (Dialect.codePointOrder): names are listed so.

const collectionColumns = 'name, created_at, row_count, last_seq';
export const listCollectionsSql = (collate: string) =>
  `select ${collectionColumns} from collections where account_id = ? order by name${collate}`;
/** The collection, with its schema's text (null for none). */
export const listCollectionSchemasSql = (collate: string) => `select c.name, s.schema from collections c
  left join collection_schemas s on s.id = c.schema_id where c.account_id = ? order by c.name${collate}`;
export const getCollectionSql = `select ${collectionColumns}, s.schema from collections c left join collection_schemas s on s.id = c.schema_id
  where c.account_id = ? and c.name = ?`;
export const collectionIdSql = 'select id from collections where account_id = ? and name = ?';
/** A collection's deletion, after advance() holds its row: its rows, events, sort keys, indexes, webhook streams, then itself. */
export const deleteCollectionSqls = [
  'delete from rows where collection_id = ?',
  'delete from events where collection_id = ?',
  'delete from sort_keys where collection_id = ?',
  'delete from collection_schemas where collection_id = ?',
  'delete from collection_indexes where collection_id = ?',
  'delete from webhook_streams where collection_id = ?',
  'delete from collections where id = ?',
];

/** The name of the database's index that a unique index of a collection is (indexes.ts), by its id. */
export const uniqueIndexName = (id: number) => `rows_unique_${id}`;
/** The ids of the collection `?`'s unique indexes. */
export const uniqueIndexIdsSql = 'select id from collection_indexes where collection_id = ? and is_unique';

// Schemas (schemas.ts; openapi.yaml, RowSchema).

/** The account's collection's schema id (0 for none), by name. */
export const schemaIdSql = 'select schema_id from collections where account_id = ? and name = ?';
/** A schema's text, by its id. */
export const schemaTextSql = 'select schema from collection_schemas where id = ?';
/** Stores a schema of the collection `?`, answering its new id. */
export const insertSchemaSql = 'insert into collection_schemas (collection_id, schema) values (?, ?) returning id';
/** Makes schema `?` the collection `?`'s (0: none). */
export const setSchemaIdSql = 'update collections set schema_id = ? where id = ?';
/** The collection `?`'s schemas but `?`, gone. */
export const dropOtherSchemasSql = 'delete from collection_schemas where collection_id = ? and id <> ?';

/** The account, made on its first key; a write first, so that the transaction takes SQLite's write lock at once. */
export const ensureAccountSql = "insert into accounts (name, plan, created_at) values (?, 'free', ?) on conflict (name) do nothing";
export const planExistsSql = 'select name from plans where name = ?';
export const setAccountPlanSql = 'update accounts set plan = ? where name = ?';
export const accountByNameSql = 'select id, plan from accounts where name = ?';
export const accountByIdSql = 'select name, plan from accounts where id = ?';
/**
 * Makes a key of the account, unless the account holds `?` live keys already (neither revoked nor
 * expired at `?`): then no row is answered.
 */
export const insertKeySql = `insert into api_keys (account_id, prefix, hash, created_at, name, scope, collections, expires_at)
  select ?, ?, ?, ?, ?, ?, ?, ?
  where (select count(*) from api_keys where account_id = ? and revoked_at is null and (expires_at is null or expires_at > ?)) < ?
  returning id`;
const keyColumns = 'k.prefix, k.name, k.scope, k.collections, k.expires_at, k.created_at, k.last_used_at';
export const listKeysSql = (collate: string, ofOneAccount: boolean) =>
  `select ${keyColumns}, a.name as account, a.plan, k.revoked_at
  from api_keys k join accounts a on a.id = k.account_id ${ofOneAccount ? 'where a.name = ?' : ''} order by a.name${collate}, k.id`;
/** The account's keys that are neither revoked nor expired at `?`. */
export const listAccountKeysSql = `select k.id, ${keyColumns} from api_keys k
  where k.account_id = ? and k.revoked_at is null and (k.expires_at is null or k.expires_at > ?) order by k.id`;
/** Revokes the live keys whose hash (`?`) or prefix (`?`) is given, and answers them. */
export const revokeKeysSql = `update api_keys set revoked_at = ? where revoked_at is null and (hash = ? or prefix = ?)
  returning account_id, prefix, created_at`;
/** Revokes the account's key by its id, unless it is revoked already. */
export const revokeAccountKeySql = 'update api_keys set revoked_at = ? where account_id = ? and id = ? and revoked_at is null returning id';
export const keyOfHashOrPrefixSql = 'select prefix, revoked_at from api_keys where hash = ? or prefix = ? limit 1';
export const liveKeyHashesSql = (n: number) =>
  `select hash from api_keys where revoked_at is null and hash in (${Array.from({ length: n }, () => '?').join(', ')})`;
export const principalSql = `select k.id, k.prefix, k.scope, k.collections, k.expires_at, a.id as account_id, a.name as account
  from api_keys k join accounts a on a.id = k.account_id where k.hash = ? and k.revoked_at is null`;
/** Notes the minute a key was last used (`?`), unless a later one is noted already. */
export const noteKeyUseSql = 'update api_keys set last_used_at = ? where id = ? and (last_used_at is null or last_used_at < ?)';

export const listPlansSql = (collate: string) => `select name, quota, period, rate from plans order by name${collate}`;
/** Adds the plan or changes its quota and period, and its rate when `withRate`. */
export const setPlanSql = (withRate: boolean) => `insert into plans (name, quota, period, rate) values (?, ?, ?, ?)
  on conflict (name) do update set quota = excluded.quota, period = excluded.period${withRate ? ', rate = excluded.rate' : ''}
  returning name, quota, period, rate`;
export const accountPlanSql = 'select p.name, p.quota, p.period, p.rate from accounts a join plans p on p.name = a.plan where a.id = ?';

export const readUsageSql = 'select count from usage_counts where account_id = ? and period_start = ?';
export const addUsageSql = `insert into usage_counts (account_id, period_start, count) values (?, ?, ?)
  on conflict (account_id, period_start) do update set count = usage_counts.count + excluded.count returning count`;

/** Where a feed can start, in one statement, so in one snapshot: the collection, its latest seq, its oldest retained event. */
export const feedStartSql = `select id, last_seq, (select min(seq) from events where collection_id = collections.id) as oldest
  from collections where account_id = ? and name = ?`;
export const latestSeqSql = 'select last_seq from collections where id = ?';
/** A page of a collection's events after a seq, up to a seq: their sizes (the row before an update counted too), then the events. */
export const eventSizesSql = `select seq, length(row) + coalesce(length(previous), 0) as size from events
  where collection_id = ? and seq > ? and seq <= ? order by seq limit ?`;
export const eventsSql =
  'select seq, type, row, previous, at from events where collection_id = ? and seq > ? and seq <= ? order by seq limit ?';

/** The stored answer to the account's Idempotency-Key `?`, unless it expired (at `?`). */
export const onceAnswerSql =
  'select request_hash, status, headers, body from idempotency_keys where account_id = ? and key = ? and expires_at > ?';
/**
 * Stores the answer to a request sent with an Idempotency-Key, in the transaction of the change it
 * answers: a new key, or one whose answer expired. Answers no row when the key holds an answer that
 * has not expired (another request stored it first).
 */
export const recordOnceSql = `insert into idempotency_keys (account_id, key, request_hash, status, headers, body, created_at, expires_at)
  values (?, ?, ?, ?, ?, ?, ?, ?)
  on conflict (account_id, key) do update set request_hash = excluded.request_hash, status = excluded.status,
    headers = excluded.headers, body = excluded.body, created_at = excluded.created_at, expires_at = excluded.expires_at
    where idempotency_keys.expires_at <= excluded.created_at
  returning account_id`;

export const collectionsAfterSql = 'select id, last_seq from collections where id > ? order by id limit ?';
export const oldestEventsSql = 'select seq, at from events where collection_id = ? order by seq limit ?';
export const pruneEventsSql = 'delete from events where collection_id = ? and seq <= ?';

// Export and import (exports.ts, imports.ts; docs/operations.md, "Export and import").

/** The rows of one page of an export at most: a bound on what the command holds at once. */
export const EXPORT_PAGE_ROWS = 1000;
/** The collection as an export describes it, read in the export's snapshot. */
export const exportedCollectionSql = `select c.id, c.name, c.created_at, c.row_count, c.last_row_id, c.last_seq, s.schema
  from collections c left join collection_schemas s on s.id = c.schema_id where c.account_id = ? and c.name = ?`;
/** The collection's declared indexes, in the order they were made. */
export const exportedIndexesSql = 'select fields, is_unique from collection_indexes where collection_id = ? order by id';
/** The page of an export after row id `?`, by id: keyset pages, each found through the primary key. */
export const exportRowsSql = `select id, data from rows where collection_id = ? and id > ? order by id limit ${EXPORT_PAGE_ROWS}`;
/**
 * An import's first statement (imports.ts), advance() for rows that bring their own ids: moves the
 * collection's seq by `?` events and its row count by `?` rows, and its last row id up to `?` (never
 * down); found by account and name, and only while its last row id is below `?`, the first id
 * imported. Answers its id, its last seq, now taken, and its sorted fields.
 */
export const importAdvanceSql = `update collections set last_seq = last_seq + ?, row_count = row_count + ?,
    last_row_id = case when last_row_id < ? then ? else last_row_id end
  where account_id = ? and name = ? and last_row_id < ? returning id, last_seq, sorted, schema_id`;
/** The last row id the collection has handed out, where an import resumed goes on from. */
export const lastRowIdSql = 'select last_row_id from collections where account_id = ? and name = ?';

/**
 * An aggregate's count of the rows whose keys in the sort index in `slot` are within `bounds` (the
 * dialect's keyBoundsSql), read from the index alone (aggregates.ts), with the collection's latest
 * event seq in the same statement.
 */
export const keyCountSql = (collection: { id: Sql; lastSeq: Sql }, slot: number, bounds: Sql): Sql =>
  sql`select count(*) as n, ${collection.lastSeq} as seq from sort_keys where collection_id = ${collection.id} and slot = ${slot} and ${bounds}`;
// Webhooks (webhooks.ts; docs/webhooks.md). `enabled` is bound as 1 or 0 and compared, which both dialects store as their boolean.
const webhookColumns =
  'w.id, w.url, w.collections, w.events, w.filter, w.description, w.enabled, w.disabled_reason, w.created_at, w.updated_at';
/** Makes the account's webhook, unless it holds `?` already: then no row is answered. */
export const insertWebhookSql = `insert into webhooks (account_id, url, collections, events, filter, description, secret, enabled, created_at, updated_at)
  select ?, ?, ?, ?, ?, ?, ?, (? = 1), ?, ? where (select count(*) from webhooks where account_id = ?) < ? returning id`;
export const listWebhooksSql = `select ${webhookColumns} from webhooks w where w.account_id = ? order by w.id`;
export const webhookSql = `select ${webhookColumns} from webhooks w where w.account_id = ? and w.id = ?`;
/** A webhook's state: what it owes (the events after each stream's acknowledged seq), since when it fails, and what retention dropped. */
export const webhookStateSql = `select coalesce(sum(c.last_seq - s.acked_seq), 0) as pending, min(s.failing_since) as failing_since,
  coalesce(sum(s.dropped), 0) as dropped from webhook_streams s join collections c on c.id = s.collection_id where s.webhook_id = ?`;
export const lastWebhookDeliverySql = `select ${deliveryColumns()} from webhook_deliveries where webhook_id = ? order by id desc limit 1`;
export const updateWebhookSql = `update webhooks set url = ?, collections = ?, events = ?, filter = ?, description = ?, enabled = (? = 1),
  disabled_reason = ?, updated_at = ? where account_id = ? and id = ? returning id`;
export const setWebhookSecretSql = 'update webhooks set secret = ?, updated_at = ? where account_id = ? and id = ? returning secret';
export const deleteWebhookSql = 'delete from webhooks where account_id = ? and id = ? returning id';
export const deleteWebhookStreamsSql = 'delete from webhook_streams where webhook_id = ?';
export const deleteWebhookDeliveriesSql = 'delete from webhook_deliveries where webhook_id = ?';
/** The account's collections, with their latest seq: the streams a webhook starts at (from now on). */
export const accountCollectionSeqsSql = 'select id, name, last_seq from collections where account_id = ?';
export const webhookStreamIdsSql = 'select collection_id from webhook_streams where webhook_id = ?';
export const insertWebhookStreamSql = `insert into webhook_streams (webhook_id, collection_id, acked_seq, attempt, next_at)
  values (?, ?, ?, 0, ?) on conflict (webhook_id, collection_id) do nothing`;
export const deleteWebhookStreamSql = 'delete from webhook_streams where webhook_id = ? and collection_id = ?';
/** Re-enabled: each stream's next attempt is due now, its count of attempts starts over. */
export const resumeWebhookStreamsSql = 'update webhook_streams set attempt = 0, next_at = ?, failing_since = null where webhook_id = ?';
/** What a stream claimed needs to deliver: its webhook's settings and its collection's name, by the stream's key. */
export const streamDeliverySql = `select w.url, w.secret, w.events, w.filter, w.enabled, c.name as collection from webhook_streams s
  join webhooks w on w.id = s.webhook_id join collections c on c.id = s.collection_id where s.webhook_id = ? and s.collection_id = ?`;
/** Acknowledged up to `?` (or moved past changes the webhook does not take), the lease renewed: held by `?` only. */
export const ackWebhookStreamSql = `update webhook_streams set acked_seq = ?, attempt = 0, failing_since = null, lease_until = ?
  where webhook_id = ? and collection_id = ? and lease_owner = ?`;
/** An attempt failed: the next is due at `?`; the lease is let go. */
export const failWebhookStreamSql = `update webhook_streams set attempt = ?, next_at = ?, failing_since = coalesce(failing_since, ?),
  lease_owner = null, lease_until = null where webhook_id = ? and collection_id = ? and lease_owner = ?`;
/** Retention dropped events the stream owed: it moves past them, counting them. */
export const skipDroppedSql = `update webhook_streams set acked_seq = ?, dropped = dropped + ?
  where webhook_id = ? and collection_id = ? and lease_owner = ?`;
export const releaseWebhookStreamSql = `update webhook_streams set lease_owner = null, lease_until = null
  where webhook_id = ? and collection_id = ? and lease_owner = ?`;
export const disableWebhookSql = 'update webhooks set enabled = (? = 1), disabled_reason = ?, updated_at = ? where id = ?';
export const insertWebhookDeliverySql = `insert into webhook_deliveries (webhook_id, collection, seq, message_id, attempt, outcome, status,
  duration_ms, error, next_attempt_at, at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
/** A page of a webhook's deliveries, newest first, before the delivery `?` (its id). */
export const webhookDeliveriesSql = `select ${deliveryColumns()} from webhook_deliveries where webhook_id = ? and id < ? order by id desc limit ?`;
/**
 * The oldest seq of the collection `?` that a webhook still owes, within the backlog limit: retention
 * keeps the events after it (retention.ts).
 */
export const webhookFloorSql = 'select min(acked_seq) as floor from webhook_streams where collection_id = ?';

function deliveryColumns(): string {
  return 'id, collection, seq, message_id, attempt, outcome, status, duration_ms, error, next_attempt_at, at';
}
/** Whether any webhook is enabled: the worker claims nothing until one is. */
export const anyWebhookSql = 'select id from webhooks where enabled limit 1';
/** One attempt of the webhook's log, by id. */
export const webhookDeliverySql = 'select collection, seq, outcome from webhook_deliveries where webhook_id = ? and id = ?';
/** The next attempt of the stream of the account's collection `?` made due at `?`, while it has not acknowledged the seq `?`. */
export const retryWebhookStreamSql = `update webhook_streams set next_at = ? where webhook_id = ?
  and collection_id = (select id from collections where account_id = ? and name = ?) and acked_seq < ? returning webhook_id`;
/** Per webhook: the changes owed, when the oldest of those its streams are stuck on was made, and those retention dropped. */
export const webhookBacklogSql = `select w.id as webhook_id, coalesce(sum(c.last_seq - s.acked_seq), 0) as pending, min(e.at) as oldest,
  coalesce(sum(s.dropped), 0) as dropped from webhooks w left join webhook_streams s on s.webhook_id = w.id
  left join collections c on c.id = s.collection_id left join events e on e.collection_id = s.collection_id and e.seq = s.acked_seq + 1
  group by w.id order by w.id`;
/** Deletes up to `?` (the second) attempts of the delivery log made before `?`, oldest first. */
export const pruneWebhookDeliveriesSql = `delete from webhook_deliveries where id in
  (select id from webhook_deliveries where at < ? order by id limit ?) returning id`;
/** Every webhook's collections of its account that it has no stream of (they were made after it). */
export const streamsMissingSql = `select w.id, w.collections, c.id as collection_id, c.name from webhooks w
  join collections c on c.account_id = w.account_id
  where not exists (select 1 from webhook_streams s where s.webhook_id = w.id and s.collection_id = c.id)`;
/** streamsMissingSql of the collection `?` alone. */
export const collectionStreamsMissingSql = `${streamsMissingSql} and c.id = ?`;
