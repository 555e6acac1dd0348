// The rules a request with a publishable key is held to (src/rules/access.ts; docs/access.md).
import type { Principal } from '../db/accounts/keys.ts';
import type { Store } from '../db/open-store.ts';
import { ApiError } from '../errors.ts';
import { Grant } from '../rules/access.ts';
import { type Claims, type CompiledRules, NO_ACCESS } from '../rules/compile.ts';
import type { Claims as TokenClaims } from '../tokens/verifier.ts';

/** The key of an anonymous caller's grants (no token: claims null). */
const ANONYMOUS = {};

/**
 * The grants made, by the compiled rules they were made of, then by the caller's claims. A Grant is a
 * pure function of the rules, the claims and the collection's name, and never changes once made, so the
 * requests of one token share one while the rules stay. Both keys are objects that stand for a version:
 * the store hands one CompiledRules object per collection and rules version (CompiledRulesCache, read
 * through Store.findRules, which every change of rules in this process forgets at once and every other
 * instance sees within half a second), and the verifier one frozen claims object per token, verified
 * again (a new object) once its issuer changes or a minute has passed (TokenVerifier). New rules, or a
 * token verified again, are new keys: a grant of the old ones is never found again, and goes with them
 * (weak keys). NO_ACCESS, every collection's without rules, is one object for them all: its grants are
 * made each time, as a denial costs little.
 */
const grants = new WeakMap<CompiledRules, WeakMap<object, Grant>>();

/** What the caller may do with `collection`: undefined for a secret key, which no rule binds; 404 for no such collection. */
export async function grantIn(
  store: Store,
  principal: Principal,
  claims: TokenClaims | null | undefined,
  collection: string,
): Promise<Grant | undefined> {
  if (claims === undefined) return undefined;
  const rules = await store.findRules(principal.accountId, collection);
  // A verified token's claims are JSON, as parsed from it.
  if (rules === NO_ACCESS) return new Grant(rules, claims as Claims, collection);
  let made = grants.get(rules);
  if (!made) {
    made = new WeakMap();
    grants.set(rules, made);
  }
  const key = claims ?? ANONYMOUS;
  const kept = made.get(key);
  // A collection's rules are its own (their id is the collection's): the name checked all the same.
  if (kept && kept.collection === collection) return kept;
  const grant = new Grant(rules, claims as Claims, collection);
  made.set(key, grant);
  return grant;
}

/**
 * What the caller may do with each of `collections`, by name, for a batch: undefined for a secret key. A
 * collection that does not exist grants nothing (were it made before the batch runs, the batch could write
 * it unchecked); the batch's operation on it answers its 404.
 */
export async function grantsIn(
  store: Store,
  principal: Principal,
  claims: TokenClaims | null | undefined,
  collections: Iterable<string>,
): Promise<Map<string, Grant> | undefined> {
  if (claims === undefined) return undefined;
  const grants = new Map<string, Grant>();
  for (const collection of new Set(collections)) {
    const grant = await grantIn(store, principal, claims, collection).catch((error) => {
      if (error instanceof ApiError && error.code === 'not_found') return new Grant(NO_ACCESS, claims as Claims, collection);
      throw error;
    });
    grants.set(collection, grant as Grant);
  }
  return grants;
}
