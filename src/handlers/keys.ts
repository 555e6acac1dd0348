// The handlers of the `keys` tag: the account's API keys, listed, made and revoked.
import type { components } from '../../generated/openapi.ts';
import { originError } from '../api-keys/origins.ts';
import { scopes } from '../api-keys/scopes.ts';
import { instantOf } from '../date-time.ts';
import type { AccountKey, KeyKindOf, KeyLimits, Principal } from '../db/accounts/keys.ts';
import { conflict, type FieldError, forbidden, notFound, validationFailed } from '../errors.ts';
import { answerOnce } from '../idempotency/answers.ts';
import type { Handlers, Result } from './types.ts';

type Key = components['schemas']['Key'];
type NewKey = components['schemas']['NewKey'];

// A key manages only the keys it could have made (openapi.yaml, the `keys` tag): it lists them, makes
// them and revokes them, and the others of its account are as absent to it as another account's.
export const keyHandlers: Handlers<'listKeys' | 'createKey' | 'revokeKey'> = {
  async listKeys({ principal }, { store }) {
    const keys = await store.listAccountKeys(principal.accountId);
    return { status: 200, body: keys.filter((key) => widerThan(principal, key) === undefined).map(shown) };
  },

  async createKey({ principal, body, once }, { store, config }) {
    const kind = kindOf(body);
    const limits = limitsOf(body, principal);
    const wider = widerThan(principal, limits);
    if (wider !== undefined) throw forbidden(`A key makes only keys no wider than itself, and ${wider}.`);
    const made = await store.createAccountKey(
      principal.accountId,
      { ...limits, ...kind, name: body.name },
      config.maxKeysPerAccount,
      once && answerOnce(once, answerCreated),
    );
    return answerCreated(made);
  },

  async revokeKey({ principal, path, once }, { store }) {
    const keys = await store.listAccountKeys(principal.accountId);
    const matching = keys.filter((key) => key.prefix === path.prefix && widerThan(principal, key) === undefined);
    if (matching.length > 1) {
      throw conflict(`${matching.length} keys of the account have the prefix ${path.prefix}; revoke one with rowbase keys revoke <key>.`);
    }
    // A key revoked meanwhile, by another request or instance, is as absent as one never made.
    if (
      matching.length === 0 ||
      !(await store.revokeAccountKey(principal.accountId, matching[0].id, once && answerOnce(once, answerRevoked)))
    ) {
      throw notFound(`There is no key ${path.prefix}.`);
    }
    return answerRevoked();
  },
};

// The answers of the writes, each made by one function, which a write sent with an Idempotency-Key also
// hands the store, to keep the answer it makes (http/idempotency.ts). The key made is kept in the stored
// answer until it expires, as its one answer (openapi.yaml, IdempotencyKey).

function answerCreated({ id: _, ...made }: AccountKey & { key: string }): Result {
  return { status: 201, body: made };
}

function answerRevoked(): Result {
  return { status: 204 };
}

const shown = ({ id: _, ...key }: AccountKey): Key => key;

/**
 * The limits a new key asks for: `collections` and `expires_at` left out are the maker's own; a
 * publishable key's scope is write.
 */
function limitsOf(body: NewKey, maker: Principal): KeyLimits {
  let expiresAt = maker.expiresAt;
  if (body.expires_at !== undefined) expiresAt = body.expires_at === null ? null : expiryOf(body.expires_at);
  return {
    scope: body.scope ?? 'write',
    collections: body.collections === undefined ? maker.collections && [...maker.collections] : body.collections,
    expires_at: expiresAt === null ? null : new Date(expiresAt).toISOString(),
  };
}

/**
 * What a new key's kind says of it (openapi.yaml, NewKey), or the 400 naming every place that does not
 * fit its kind: a secret key needs a scope and takes no origins nor rate per end user; a publishable key
 * needs its origins, each one web origin (api-keys/origins.ts), and its scope is write.
 */
function kindOf({ kind = 'secret', scope, origins, end_user_rate }: NewKey): KeyKindOf {
  const errors: FieldError[] = [];
  if (kind === 'secret') {
    if (scope === undefined) errors.push({ in: 'body', name: '/scope', message: 'is required for a secret key' });
    if (origins != null) errors.push({ in: 'body', name: '/origins', message: 'is only for a publishable key' });
    if (end_user_rate != null) errors.push({ in: 'body', name: '/end_user_rate', message: 'is only for a publishable key' });
  } else {
    if (scope !== undefined && scope !== 'write') {
      errors.push({ in: 'body', name: '/scope', message: "must be write, or left out: a publishable key's rights come from rules" });
    }
    if (origins == null) errors.push({ in: 'body', name: '/origins', message: 'is required for a publishable key' });
    origins?.forEach((origin, i) => {
      const wrong = originError(origin);
      if (wrong !== undefined) errors.push({ in: 'body', name: `/origins/${i}`, message: wrong });
    });
  }
  if (errors.length > 0) throw validationFailed(`The ${kind} key asked for is not one the service makes.`, errors);
  return { kind, origins: origins ?? null, end_user_rate: end_user_rate ?? null };
}

/** The time a new key's `expires_at` names, or the 400 for one that is no time, or not in the future. */
function expiryOf(text: string): number {
  const at = instantOf(text);
  const wrong = at === undefined ? 'must be an RFC 3339 date-time before the year 10000' : at <= Date.now() ? 'must be in the future' : '';
  if (wrong) throw validationFailed(`expires_at ${wrong}.`, [{ in: 'body', name: '/expires_at', message: wrong }]);
  return at as number;
}

/** How a key of `limits` would be wider than `maker` (in words), or undefined when `maker` could have made it. */
function widerThan(maker: Principal, { scope, collections, expires_at }: KeyLimits): string | undefined {
  if (scopes.indexOf(scope) > scopes.indexOf(maker.scope)) return `this one's scope is ${maker.scope}, not ${scope}`;
  if (maker.collections) {
    if (collections === null) return 'this one is limited to collections, not every one';
    const outside = collections.find((name) => !maker.collections?.has(name));
    if (outside !== undefined) return `this one is not limited to ${outside}`;
  }
  if (maker.expiresAt !== null) {
    const expiry = new Date(maker.expiresAt).toISOString();
    if (expires_at === null) return `this one expires at ${expiry}, and so must a key it makes`;
    if (Date.parse(expires_at) > maker.expiresAt) return `this one expires at ${expiry}, not later`;
  }
  return undefined;
}
