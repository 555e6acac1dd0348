// The SQL of accounts both dialects run: accounts, API keys, plans and usage. `collate` is the dialect's
// clause that orders text by code point (Dialect.codePointOrder): names are listed so.
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
export const insertKeySql = `insert into api_keys (account_id, prefix, hash, created_at, name, scope, collections, expires_at,
    kind, origins, end_user_rate)
  select ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
  where (select count(*) from api_keys where account_id = ? and revoked_at is null and (expires_at is null or expires_at > ?)) < ?
  returning id`;
const keyColumns =
  'k.prefix, k.name, k.scope, k.collections, k.expires_at, k.kind, k.origins, k.end_user_rate, k.created_at, k.last_used_at';
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
export const principalSql = `select k.id, k.prefix, k.scope, k.collections, k.expires_at, k.kind, k.origins, k.end_user_rate,
  a.id as account_id, a.name as account
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

/**
 * Adds each of `n` end users' counts (key id, end user, count, when: `?` four times a row) to what every
 * instance counted of them, and answers the new totals. A count of 0 only reads the total, and keeps the
 * row from being pruned.
 */
export const addEndUserCountsSql = (n: number) => `insert into end_user_counts (key_id, end_user, count, updated_at)
  values ${Array.from({ length: n }, () => '(?, ?, ?, ?)').join(', ')}
  on conflict (key_id, end_user) do update set count = end_user_counts.count + excluded.count, updated_at = excluded.updated_at
  returning key_id, end_user, count`;
/** Deletes the end users' counts no instance has written since `?`. */
export const pruneEndUserCountsSql = 'delete from end_user_counts where updated_at < ?';
