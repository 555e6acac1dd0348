import { createHash, randomBytes } from 'node:crypto';
import type { Dialect } from './dialect.ts';
import {
  accountByIdSql,
  accountByNameSql,
  ensureAccountSql,
  insertKeySql,
  keyOfHashOrPrefixSql,
  listKeysSql,
  liveKeyHashesSql,
  planExistsSql,
  principalSql,
  revokeKeysSql,
  setAccountPlanSql,
} from './sql.ts';

/** The account a request acts for, as the auth step found it. */
export interface Principal {
  accountId: number;
  account: string;
}

export interface KeyInfo {
  prefix: string;
  account: string;
  plan: string;
  created_at: string;
  revoked_at: string | null;
}

export class KeyError extends Error {}

const PREFIX_LENGTH = 11; // "rb_" and 8 characters of the random part: shown in listings, enough to revoke by.

/** The longest a key can be: ours are 35 characters (`rb_` and 32 of base64url). */
export const MAX_KEY_LENGTH = 64;

/** SHA-256 suits keys of 192 random bits: there is nothing to guess that a slow hash would protect. */
export const hashKey = (key: string) => createHash('sha256').update(key).digest('hex');

/**
 * Makes a new key for `account`, creating the account on first use. `plan` (default `free` for a new
 * account) sets the account's plan. The key itself is returned once and never stored.
 */
export async function createKey(db: Dialect, account: string, plan?: string): Promise<KeyInfo & { key: string }> {
  const key = `rb_${randomBytes(24).toString('base64url')}`;
  const created_at = new Date().toISOString();
  return db.knex.transaction(async (trx) => {
    // A write first, so the transaction takes SQLite's write lock at once (see collections.ts, advance()).
    await db.run(trx, ensureAccountSql, [account, created_at]);
    if (plan !== undefined && (await db.run(trx, planExistsSql, [plan])).length === 0) {
      throw new KeyError(`unknown plan ${JSON.stringify(plan)}; see: rowbase plans list`);
    }
    if (plan !== undefined) await db.run(trx, setAccountPlanSql, [plan, account]);
    const [{ id, plan: accountPlan }] = await db.run<{ id: number | string; plan: string }>(trx, accountByNameSql, [account]);
    const prefix = key.slice(0, PREFIX_LENGTH);
    await db.run(trx, insertKeySql, [Number(id), prefix, hashKey(key), created_at]);
    return { key, prefix, account, plan: accountPlan, created_at, revoked_at: null };
  });
}

export async function listKeys({ query, codePointOrder }: Dialect, account?: string): Promise<KeyInfo[]> {
  return query<KeyInfo>(listKeysSql(codePointOrder, account !== undefined), account === undefined ? [] : [account]);
}

/** Revokes the key given whole or by its prefix; a prefix must name exactly one live key. */
export async function revokeKey(db: Dialect, keyOrPrefix: string): Promise<KeyInfo> {
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

/** Those of `hashes` that are the hashes of live keys: the feed closes the sockets of the others. */
export async function liveKeyHashes({ query }: Dialect, hashes: string[]): Promise<string[]> {
  if (hashes.length === 0) return [];
  return (await query<{ hash: string }>(liveKeyHashesSql(hashes.length), hashes)).map(({ hash }) => hash);
}

/**
 * The account of the live key whose hash is `hash`, or undefined for an unknown or revoked one. The
 * store answers requests through a cache of these (see principals.ts).
 */
export async function principalOf({ query }: Dialect, hash: string): Promise<Principal | undefined> {
  const [row] = await query<{ account_id: number | string; account: string }>(principalSql, [hash]);
  return row ? { accountId: Number(row.account_id), account: row.account } : undefined;
}
