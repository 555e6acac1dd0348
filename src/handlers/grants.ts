// The rules a request with a publishable key is held to (src/rules/access.ts; docs/access.md).
import type { Principal } from '../db/accounts/keys.ts';
import type { Store } from '../db/open-store.ts';
import { ApiError } from '../errors.ts';
import { Grant } from '../rules/access.ts';
import { type Claims, NO_ACCESS } from '../rules/compile.ts';
import type { Claims as TokenClaims } from '../tokens/verifier.ts';

/** What the caller may do with `collection`: undefined for a secret key, which no rule binds; 404 for no such collection. */
export async function grantIn(
  store: Store,
  principal: Principal,
  claims: TokenClaims | null | undefined,
  collection: string,
): Promise<Grant | undefined> {
  if (claims === undefined) return undefined;
  // A verified token's claims are JSON, as parsed from it.
  return new Grant(await store.findRules(principal.accountId, collection), claims as Claims, collection);
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
