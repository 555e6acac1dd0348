import { createHash, randomBytes } from 'node:crypto';
import type { Dialect } from './dialect.ts';

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
export async function createKey({ knex }: Dialect, account: string, plan?: string): Promise<KeyInfo & { key: string }> {
  const key = `rb_${randomBytes(24).toString('base64url')}`;
  const created_at = new Date().toISOString();
  return knex.transaction(async (trx) => {
    // A write first, so the transaction takes SQLite's write lock at once (see collections.ts, advance()).
    await trx('accounts').insert({ name: account, plan: 'free', created_at }).onConflict('name').ignore();
    if (plan !== undefined && !(await trx('plans').where({ name: plan }).first())) {
      throw new KeyError(`unknown plan ${JSON.stringify(plan)}; see: rowbase plans list`);
    }
    if (plan !== undefined) await trx('accounts').where({ name: account }).update({ plan });
    const { id, plan: accountPlan } = await trx('accounts').where({ name: account }).first('id', 'plan');
    const prefix = key.slice(0, PREFIX_LENGTH);
    await trx('api_keys').insert({ account_id: id, prefix, hash: hashKey(key), created_at });
    return { key, prefix, account, plan: accountPlan, created_at, revoked_at: null };
  });
}

export async function listKeys({ knex, byCodePoint }: Dialect, account?: string): Promise<KeyInfo[]> {
  const query = knex('api_keys')
    .join('accounts', 'accounts.id', 'api_keys.account_id')
    .select('api_keys.prefix', 'accounts.name as account', 'accounts.plan', 'api_keys.created_at', 'api_keys.revoked_at')
    .orderBy([{ column: byCodePoint('accounts.name') }, { column: 'api_keys.id' }]);
  if (account !== undefined) query.where('accounts.name', account);
  return query;
}

/** Revokes the key given whole or by its prefix; a prefix must name exactly one live key. */
export async function revokeKey({ knex }: Dialect, keyOrPrefix: string): Promise<KeyInfo> {
  return knex.transaction(async (trx) => {
    const revoked_at = new Date().toISOString();
    const revoked = await trx('api_keys')
      .whereNull('revoked_at')
      .andWhere((q) => q.where('hash', hashKey(keyOrPrefix)).orWhere('prefix', keyOrPrefix))
      .update({ revoked_at }, ['account_id', 'prefix', 'created_at']);
    if (revoked.length === 0) {
      const earlier = await trx('api_keys')
        .where((q) => q.where('hash', hashKey(keyOrPrefix)).orWhere('prefix', keyOrPrefix))
        .first('prefix', 'revoked_at');
      if (earlier) throw new KeyError(`key ${earlier.prefix} was already revoked at ${earlier.revoked_at}`);
      throw new KeyError(`no key matches ${JSON.stringify(keyOrPrefix)}; see: rowbase keys list`);
    }
    // Rolls the transaction back: nothing is revoked.
    if (revoked.length > 1) throw new KeyError(`${revoked.length} keys match ${JSON.stringify(keyOrPrefix)}; give the whole key`);
    const [{ account_id, prefix, created_at }] = revoked;
    const { name: account, plan } = await trx('accounts').where({ id: account_id }).first('name', 'plan');
    return { prefix, account, plan, created_at, revoked_at };
  });
}

/** Those of `hashes` that are the hashes of live keys: the feed closes the sockets of the others. */
export async function liveKeyHashes({ knex }: Dialect, hashes: string[]): Promise<string[]> {
  const rows: { hash: string }[] = await knex('api_keys').whereIn('hash', hashes).whereNull('revoked_at').select('hash');
  return rows.map(({ hash }) => hash);
}

/**
 * The account of the live key whose hash is `hash`, or undefined for an unknown or revoked one. The
 * store answers requests through a cache of these (see principals.ts).
 */
export async function principalOf({ knex }: Dialect, hash: string): Promise<Principal | undefined> {
  const row = await knex('api_keys')
    .join('accounts', 'accounts.id', 'api_keys.account_id')
    .where('api_keys.hash', hash)
    .whereNull('api_keys.revoked_at')
    .first('accounts.id as accountId', 'accounts.name as account');
  return row ? { accountId: Number(row.accountId), account: row.account } : undefined;
}
