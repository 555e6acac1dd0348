// API keys in the database: made, listed, revoked, and found by their hash with the principal they stand for.
import { randomBytes } from 'node:crypto';
import { hashKey } from '../../api-keys/hash.ts';
import type { Scope } from '../../api-keys/scopes.ts';
import { conflict, KeyError } from '../../errors.ts';
import type { Once } from '../../idempotency/answers.ts';
import type { Dialect, WriteTx } from '../engine/dialect.ts';
import {
  accountByIdSql,
  accountByNameSql,
  ensureAccountSql,
  insertKeySql,
  keyOfHashOrPrefixSql,
  listAccountKeysSql,
  listKeysSql,
  liveKeyHashesSql,
  noteKeyUseSql,
  planExistsSql,
  principalSql,
  revokeAccountKeySql,
  revokeKeysSql,
  setAccountPlanSql,
} from '../engine/sql/accounts.ts';
import { lockAccountSql } from '../engine/sql/collections.ts';
import { beginOnce, recordOnce } from '../rows/idempotency.ts';

/** What a key may reach of its account, besides its account (openapi.yaml, Key). */
export interface KeyLimits {
  scope: Scope;
  /** The collections it is limited to, by name, or null for every collection of its account. */
  collections: string[] | null;
  /** When it stops working (ISO 8601 in UTC), or null for never. */
  expires_at: string | null;
}

/** A key's kind (openapi.yaml, KeyKind; docs/access.md): a secret key, or a publishable key with its origins. */
type KeyKind = 'secret' | 'publishable';

/** What a key's kind says of it (openapi.yaml, Key). */
export interface KeyKindOf {
  kind: KeyKind;
  /** The web origins a publishable key may be used from (serialized, as browsers send `Origin`); null for a secret key. */
  origins: string[] | null;
  /** A publishable key's requests per second per end user, or null for no such limit (always, for a secret key). */
  end_user_rate: number | null;
}

/**
 * A key to make: its limits (default: admin, every collection, no expiry), its kind (default secret,
 * no origins, no rate per end user) and its name (default none). The caller has checked that the two
 * agree (a publishable key's scope is write, and it lists its origins).
 */
export type NewKey = Partial<KeyLimits> & Partial<KeyKindOf> & { name?: string | null };

/** The account a request acts for, and what its key may do, as the auth step found it. */
export interface Principal {
  accountId: number;
  account: string;
  keyId: number;
  prefix: string;
  scope: Scope;
  /** The collections the key is limited to, or null for every collection of the account. */
  collections: ReadonlySet<string> | null;
  /** When the key stops working, in ms since the epoch, or null for never. */
  expiresAt: number | null;
  kind: KeyKind;
  /** The web origins a publishable key may be used from; null for a secret key. */
  origins: ReadonlySet<string> | null;
  /** A publishable key's requests per second per end user, or null. */
  endUserRate: number | null;
}

/** A key as the CLI lists it: every key of every account, revoked ones too. */
export interface KeyInfo extends KeyLimits, KeyKindOf {
  prefix: string;
  account: string;
  plan: string;
  name: string | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

/** A live key of an account, as its keys list it over HTTP (openapi.yaml, Key), with its id. */
export interface AccountKey extends KeyLimits, KeyKindOf {
  id: number;
  prefix: string;
  name: string | null;
  created_at: string;
  last_used_at: string | null;
}

/** What each kind of key starts with, before its random part: a publishable key says so in its first characters. */
const KEY_START: Record<KeyKind, string> = { secret: 'rb_', publishable: 'rb_pub_' };
/** The characters of the random part shown in listings, after the key's start: enough to revoke by. */
const PREFIX_RANDOM = 8;

/** The longest a key can be: ours are 35 characters (`rb_` and 32 of base64url), or 39 (`rb_pub_` and 32). */
export const MAX_KEY_LENGTH = 64;

/**
 * Makes a new key for `account`, creating the account on first use. `plan` (default `free` for a new
 * account) sets the account's plan. The key itself is returned once and never stored.
 */
export async function createKey(db: Dialect, account: string, plan?: string, limits: NewKey = {}): Promise<KeyInfo & { key: string }> {
  return db.knex.transaction(async (trx) => {
    // A write first, so the transaction takes SQLite's write lock at once (see collections.ts, advance()).
    await db.run(trx, ensureAccountSql, [account, new Date().toISOString()]);
    if (plan !== undefined && (await db.run(trx, planExistsSql, [plan])).length === 0) {
      throw new KeyError(`unknown plan ${JSON.stringify(plan)}; see: rowbase plans list`);
    }
    if (plan !== undefined) await db.run(trx, setAccountPlanSql, [plan, account]);
    const [{ id, plan: accountPlan }] = await db.run<{ id: number | string; plan: string }>(trx, accountByNameSql, [account]);
    const { id: _, ...made } = await insertKey(db, trx, Number(id), limits);
    return { ...made, account, plan: accountPlan, revoked_at: null };
  });
}

/** The id of the account `name`, or undefined when there is none. */
export async function accountIdOf({ query }: Dialect, name: string): Promise<number | undefined> {
  const [account] = await query<{ id: number | string }>(accountByNameSql, [name]);
  return account ? Number(account.id) : undefined;
}

/**
 * Makes a new key for the account `accountId`, unless it holds `maxLive` live keys already (neither
 * revoked nor expired): then 409. Exact under concurrency, as createCollection is: the transaction's
 * first statement writes the account's row, which holds it until commit.
 */
export async function createAccountKey(
  db: Dialect,
  accountId: number,
  limits: NewKey,
  maxLive: number,
  once?: Once<AccountKey & { key: string }>,
): Promise<AccountKey & { key: string }> {
  return db.knex.transaction(async (trx) => {
    if (once) await beginOnce(db, trx, accountId, once);
    await db.run(trx, lockAccountSql, [accountId]);
    const made = await insertKey(db, trx, accountId, limits, maxLive);
    if (once) await recordOnce(db, trx, accountId, once, made);
    return made;
  });
}

/**
 * A new key of `kind`: its start and 192 random bits in base64url. A secret key's random part never
 * begins with `pub_` (one in 2^24 would), so that `rb_pub_` always says publishable.
 */
function newKey(kind: KeyKind): { key: string; prefix: string } {
  let random: string;
  do random = randomBytes(24).toString('base64url');
  while (kind === 'secret' && random.startsWith('pub_'));
  const key = KEY_START[kind] + random;
  return { key, prefix: key.slice(0, KEY_START[kind].length + PREFIX_RANDOM) };
}

async function insertKey(db: Dialect, trx: WriteTx, accountId: number, limits: NewKey, maxLive = Number.MAX_SAFE_INTEGER) {
  const kind = limits.kind ?? 'secret';
  const { key, prefix } = newKey(kind);
  const created_at = new Date().toISOString();
  const made = {
    key,
    prefix,
    name: limits.name ?? null,
    scope: limits.scope ?? 'admin',
    collections: limits.collections ?? null,
    expires_at: limits.expires_at ?? null,
    kind,
    origins: limits.origins ?? null,
    end_user_rate: limits.end_user_rate ?? null,
    created_at,
    last_used_at: null,
  };
  const { name, scope, collections, expires_at, origins, end_user_rate } = made;
  const stored = collections === null ? null : JSON.stringify(collections);
  const [inserted] = await db.run<{ id: number | string }>(trx, insertKeySql, [
    accountId,
    prefix,
    hashKey(key),
    created_at,
    name,
    scope,
    stored,
    expires_at,
    kind,
    origins === null ? null : JSON.stringify(origins),
    end_user_rate,
    accountId,
    created_at,
    maxLive,
  ]);
  if (!inserted) throw conflict(`The account holds ${maxLive} live keys, the most it may: revoke one to make another.`);
  return { id: Number(inserted.id), ...made };
}

type LimitsRow = {
  scope: Scope;
  collections: string | null;
  expires_at: string | null;
  kind: KeyKind;
  origins: string | null;
  end_user_rate: number | string | null;
};
const limitsOf = ({ scope, collections, expires_at, kind, origins, end_user_rate }: LimitsRow): KeyLimits & KeyKindOf => ({
  scope,
  collections: collections === null ? null : (JSON.parse(collections) as string[]),
  expires_at,
  kind,
  origins: origins === null ? null : (JSON.parse(origins) as string[]),
  end_user_rate: end_user_rate === null ? null : Number(end_user_rate),
});

export async function listKeys({ query, codePointOrder }: Dialect, account?: string): Promise<KeyInfo[]> {
  const rows = await query<Omit<KeyInfo, keyof KeyLimits | keyof KeyKindOf> & LimitsRow>(
    listKeysSql(codePointOrder, account !== undefined),
    account === undefined ? [] : [account],
  );
  return rows.map(({ prefix, account, plan, name, created_at, last_used_at, revoked_at, ...limits }) => ({
    prefix,
    account,
    plan,
    name,
    ...limitsOf(limits),
    created_at,
    last_used_at,
    revoked_at,
  }));
}

/** The account's live keys (neither revoked nor expired at `now`, ms since the epoch), oldest first. */
export async function listAccountKeys({ query }: Dialect, accountId: number, now = Date.now()): Promise<AccountKey[]> {
  const rows = await query<Omit<AccountKey, keyof KeyLimits | keyof KeyKindOf | 'id'> & LimitsRow & { id: number | string }>(
    listAccountKeysSql,
    [accountId, new Date(now).toISOString()],
  );
  return rows.map(({ id, prefix, name, created_at, last_used_at, ...limits }) => ({
    id: Number(id),
    prefix,
    name,
    ...limitsOf(limits),
    created_at,
    last_used_at,
  }));
}

/** Revokes the key given whole or by its prefix; a prefix must name exactly one live key. */
export async function revokeKey(
  db: Dialect,
  keyOrPrefix: string,
): Promise<Pick<KeyInfo, 'prefix' | 'account' | 'plan' | 'created_at' | 'revoked_at'>> {
  return db.knex.transaction(async (trx) => {
    const revoked_at = new Date().toISOString();
    const hash = hashKey(keyOrPrefix);
    const revoked = await db.run<{ account_id: number | string; prefix: string; created_at: string }>(trx, revokeKeysSql, [
      revoked_at,
      hash,
      keyOrPrefix,
    ]);
    if (revoked.length === 0) {
      const [earlier] = await db.run<{ prefix: string; revoked_at: string }>(trx, keyOfHashOrPrefixSql, [hash, keyOrPrefix]);
      if (earlier) throw new KeyError(`key ${earlier.prefix} was already revoked at ${earlier.revoked_at}`);
      throw new KeyError(`no key matches ${JSON.stringify(keyOrPrefix)}; see: rowbase keys list`);
    }
    // Rolls the transaction back: nothing is revoked.
    if (revoked.length > 1) throw new KeyError(`${revoked.length} keys match ${JSON.stringify(keyOrPrefix)}; give the whole key`);
    const [{ account_id, prefix, created_at }] = revoked;
    const [{ name: account, plan }] = await db.run<{ name: string; plan: string }>(trx, accountByIdSql, [Number(account_id)]);
    return { prefix, account, plan, created_at, revoked_at };
  });
}

/**
 * Revokes the account's key `keyId`; false when it has no such key, or revoked it already. With an
 * Idempotency-Key, in a transaction that stores its answer (idempotency.ts).
 */
export async function revokeAccountKey(db: Dialect, accountId: number, keyId: number, once?: Once<boolean>): Promise<boolean> {
  const params = [new Date().toISOString(), accountId, keyId];
  if (!once) return (await db.query(revokeAccountKeySql, params)).length > 0;
  return db.knex.transaction(async (trx) => {
    await beginOnce(db, trx, accountId, once);
    const revoked = (await db.run(trx, revokeAccountKeySql, params)).length > 0;
    // A key not revoked is a 404, which stores no answer.
    if (revoked) await recordOnce(db, trx, accountId, once, revoked);
    return revoked;
  });
}

/** Those of `hashes` that are the hashes of unrevoked keys: the feed closes the sockets of the others. */
export async function liveKeyHashes({ query }: Dialect, hashes: string[]): Promise<string[]> {
  if (hashes.length === 0) return [];
  return (await query<{ hash: string }>(liveKeyHashesSql(hashes.length), hashes)).map(({ hash }) => hash);
}

/**
 * The principal of the unrevoked key whose hash is `hash`, or undefined for an unknown or revoked one.
 * Whether it has expired is for the caller to tell (`expiresAt`). The store answers requests through a
 * cache of these (principals.ts, PrincipalCache).
 */
export async function principalOf({ readCommitted }: Dialect, hash: string): Promise<Principal | undefined> {
  const [row] = await readCommitted<LimitsRow & { id: number | string; prefix: string; account_id: number | string; account: string }>(
    principalSql,
    [hash],
  );
  if (!row) return undefined;
  return {
    accountId: Number(row.account_id),
    account: row.account,
    keyId: Number(row.id),
    prefix: row.prefix,
    scope: row.scope,
    collections: row.collections === null ? null : new Set(JSON.parse(row.collections) as string[]),
    expiresAt: row.expires_at === null ? null : Date.parse(row.expires_at),
    kind: row.kind,
    origins: row.origins === null ? null : new Set(JSON.parse(row.origins) as string[]),
    endUserRate: row.end_user_rate === null ? null : Number(row.end_user_rate),
  };
}

/**
 * Notes when keys were last used: `uses` holds, by key id, the start of the latest minute each was used
 * in (ms since the epoch). A later use noted already, by this instance or another, is kept.
 */
export async function noteKeyUses({ query }: Dialect, uses: ReadonlyMap<number, number>): Promise<void> {
  for (const [keyId, minute] of uses) {
    const at = new Date(minute).toISOString();
    await query(noteKeyUseSql, [at, keyId, at]);
  }
}
