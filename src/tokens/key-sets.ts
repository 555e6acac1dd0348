// The public keys of token issuers (docs/access.md, "Token issuers"): each issuer's JSON Web Key Set,
// read through the guarded fetcher (src/net/guarded-fetch.ts: the address rule on every connection, no
// redirect, 64 KiB, 5 s) from its `jwks_uri`, or from the `jwks_uri` of its OpenID discovery document
// (OpenID Connect Discovery 1.0, §4), read once. jose verifies with the keys we read ourselves
// (createLocalJWKSet), so that no connection is made that the address rule did not check.
import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import type { Issuer } from '../db/auth/issuers.ts';
import { FetchError, type GuardedFetcher } from '../net/guarded-fetch.ts';
import { urlProblem } from '../webhooks/address.ts';

const SECOND = 1000;
/** How long a key set is kept when its answer says nothing (Cache-Control `max-age`), and the bounds of what it may say. */
const DEFAULT_MAX_AGE_MS = 5 * 60 * SECOND;
const MIN_MAX_AGE_MS = 60 * SECOND;
const MAX_MAX_AGE_MS = 24 * 60 * 60 * SECOND;
/** The issuers whose sets are kept at most. */
const MAX_ISSUERS = 10_000;
/** A token naming a key the set lacks reads the set again, at most this often an issuer. */
const REFETCH_INTERVAL_MS = 60 * SECOND;

/** The keys of an issuer could not be read, and none were read before; `message` says why. */
export class KeysUnavailable extends Error {}

/** An issuer's keys as last read. */
interface KeySet {
  getKey: JWTVerifyGetKey;
  /** Until when they are used without reading them again (ms since the epoch). */
  freshUntil: number;
}

interface IssuerKeys {
  /** The JWKS's URL: the issuer's `jwks_uri`, or its discovery document's, once read. */
  jwksUri?: string;
  keys?: KeySet;
  /** When the set was last asked for (ms since the epoch), whatever came of it. */
  triedAt: number;
  /** A read under way, which concurrent tokens share. */
  reading?: Promise<KeySet>;
}

export interface KeySetsOptions {
  /** Reads the documents. */
  fetcher: GuardedFetcher;
  /** No address rule on the URLs a discovery document names (ROWBASE_WEBHOOKS_ALLOW_PRIVATE). */
  allowPrivate: boolean;
  /** Milliseconds since the epoch. */
  clock: () => number;
}

/**
 * The key sets of issuers, by issuer id and key source: an issuer changed or made again (a new id) starts
 * afresh. A set is read again once its `Cache-Control: max-age` (60 s to 24 h; 5 minutes when it says
 * none) has passed, or when a token names a key it lacks, at most once a minute an issuer; a read that
 * fails keeps the keys last read, tried again a minute later.
 */
export class KeySets {
  private readonly issuers = new Map<string, IssuerKeys>();

  constructor(private readonly options: KeySetsOptions) {}

  /** The issuer's keys, read when there are none yet or they are stale; KeysUnavailable when none can be had. */
  async keysOf(issuer: Issuer): Promise<JWTVerifyGetKey> {
    const state = this.stateOf(issuer);
    const now = this.options.clock();
    if (state.keys && now < state.keys.freshUntil) return state.keys.getKey;
    return (await this.read(issuer, state)).getKey;
  }

  /**
   * The issuer's keys read again, for a token that names a key they lack, unless they were asked for
   * less than a minute ago: then undefined.
   */
  async refetched(issuer: Issuer): Promise<JWTVerifyGetKey | undefined> {
    const state = this.stateOf(issuer);
    if (this.options.clock() - state.triedAt < REFETCH_INTERVAL_MS) return undefined;
    return (await this.read(issuer, state)).getKey;
  }

  private stateOf(issuer: Issuer): IssuerKeys {
    const key = `${issuer.id} ${issuer.jwks_uri ?? ''} ${issuer.discovery_url ?? ''}`;
    let state = this.issuers.get(key);
    if (!state) {
      state = { jwksUri: issuer.jwks_uri ?? undefined, triedAt: Number.NEGATIVE_INFINITY };
      this.issuers.set(key, state);
      // Issuers changed or deleted leave their sets behind: the oldest go first past the bound.
      if (this.issuers.size > MAX_ISSUERS) this.issuers.delete(this.issuers.keys().next().value as string);
    }
    return state;
  }

  /** Reads the set (one read at a time an issuer); on failure keeps the keys it has, and tries again a minute later. */
  private read(issuer: Issuer, state: IssuerKeys): Promise<KeySet> {
    if (state.reading) return state.reading;
    const started = this.options.clock();
    state.triedAt = started;
    state.reading = this.fetchKeys(issuer, state)
      .then((keys) => {
        state.keys = keys;
        return keys;
      })
      .catch((error: unknown) => {
        const reason = error instanceof FetchError || error instanceof KeysUnavailable ? error.message : 'failed';
        if (!state.keys) throw new KeysUnavailable(reason);
        state.keys.freshUntil = started + REFETCH_INTERVAL_MS;
        return state.keys;
      })
      .finally(() => {
        state.reading = undefined;
      });
    return state.reading;
  }

  private async fetchKeys(issuer: Issuer, state: IssuerKeys): Promise<KeySet> {
    state.jwksUri ??= await this.discover(issuer);
    const { headers, body } = await this.options.fetcher.get(state.jwksUri);
    const jwks = parsed(body, 'key set') as unknown as JSONWebKeySet;
    let getKey: JWTVerifyGetKey;
    try {
      getKey = createLocalJWKSet(jwks);
    } catch {
      throw new KeysUnavailable('the key set is no JSON Web Key Set');
    }
    return { getKey, freshUntil: this.options.clock() + maxAgeOf(headers['cache-control']) };
  }

  /** The `jwks_uri` of the issuer's discovery document, which must name the issuer itself (OpenID Connect Discovery 1.0, §4.3). */
  private async discover(issuer: Issuer): Promise<string> {
    const document = parsed((await this.options.fetcher.get(issuer.discovery_url as string)).body, 'discovery document');
    if (document.issuer !== issuer.issuer) throw new KeysUnavailable('the discovery document names another issuer');
    if (typeof document.jwks_uri !== 'string') throw new KeysUnavailable('the discovery document names no jwks_uri');
    const problem = await urlProblem(document.jwks_uri, this.options.allowPrivate);
    if (problem) throw new KeysUnavailable(`the discovery document's jwks_uri ${problem}`);
    return document.jwks_uri;
  }
}

/** The JSON object `text` holds; KeysUnavailable naming `what` when it holds none. */
function parsed(text: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new KeysUnavailable(`the ${what} is no JSON`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new KeysUnavailable(`the ${what} is no JSON object`);
  return value as Record<string, unknown>;
}

/** How long an answer may be kept, in ms: its `max-age` (RFC 9111 §5.2.2.1) within the bounds, else the default. */
function maxAgeOf(cacheControl: string | string[] | undefined): number {
  const text = Array.isArray(cacheControl) ? cacheControl.join(',') : (cacheControl ?? '');
  const match = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?\s*(?:,|$)/i.exec(text);
  if (!match) return DEFAULT_MAX_AGE_MS;
  return Math.min(MAX_MAX_AGE_MS, Math.max(MIN_MAX_AGE_MS, Number(match[1]) * SECOND));
}
