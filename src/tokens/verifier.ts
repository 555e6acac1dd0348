// End users' tokens (docs/access.md, "Token issuers"): a JWT (RFC 7519) is accepted for an account when
// its `iss` is one of the account's issuers, its `aud` names one of that issuer's audiences, it is
// signed by that issuer's key (the key its `kid` names, of an algorithm the issuer uses) and `exp` and
// `nbf` hold, within 60 s of skew. jose does the parsing and the checks (RFC 8725's advice: an
// algorithm list per key, never `none`); this module chooses the key and says why a token is refused.
import { decodeJwt, decodeProtectedHeader, errors, type JWTPayload, type JWTVerifyGetKey, jwtVerify } from 'jose';
import type { AccountIssuers, Issuer } from '../db/auth/issuers.ts';
import { ApiError, invalidToken } from '../errors.ts';
import { GuardedFetcher } from '../net/guarded-fetch.ts';
import { KeySets, KeysUnavailable } from './key-sets.ts';

/** The longest token read: a longer one is refused before it is parsed. */
const MAX_TOKEN_LENGTH = 16 * 1024;
/** The skew allowed between our clock and the issuer's, in seconds, on `exp` and `nbf`. */
const CLOCK_TOLERANCE_S = 60;
/** How long a verified token is trusted without verifying it again, at most (and never past its `exp`). */
const VERIFIED_TTL_MS = 60_000;
/** The characters of the verified tokens remembered, at most: a token may be up to MAX_TOKEN_LENGTH long. */
const MAX_REMEMBERED_CHARS = 8 * 1024 * 1024;
/** The algorithms of issuers with a key set, and of those with a shared secret (RFC 7518 §3.1, RFC 8037). */
const ASYMMETRIC = ['RS256', 'PS256', 'ES256', 'EdDSA'];
const SYMMETRIC = ['HS256'];

/** A token's claims: plain JSON data, as JSON.parse made it (`__proto__` is a key like any other), frozen. */
export type Claims = Readonly<Record<string, unknown>>;

interface Verified {
  claims: Claims;
  /** The issuer it was verified with, its id and settings then: a token is verified again once they change. */
  fingerprint: string;
  /** Until when it is trusted (ms since the epoch). */
  until: number;
}

export interface TokenVerifierOptions {
  /** No address rule on issuers' URLs (ROWBASE_WEBHOOKS_ALLOW_PRIVATE). Default false. */
  allowPrivate?: boolean;
  /** Verified tokens remembered at most; the oldest go first. Default 10,000. */
  maxTokens?: number;
  /** Characters of the verified tokens remembered at most, all told; the oldest go first. Default 8 Mi. */
  maxTokenChars?: number;
  /** Milliseconds since the epoch. Default `Date.now`. */
  clock?: () => number;
  /** Reads issuers' documents. Default a GuardedFetcher of `allowPrivate` (64 KiB, 5 s, no redirect). */
  fetcher?: GuardedFetcher;
}

/**
 * Verifies end users' tokens against their account's issuers. A token verified is remembered, by account
 * and the token's exact text, until the earlier of its `exp` and a minute, so that a client sending it with
 * every request costs one verification a minute; it is verified again as soon as the issuer it was
 * verified with is changed or deleted, which the account's issuers (read at most half a second ago:
 * Store.findIssuers) show every instance within a second.
 */
export class TokenVerifier {
  /** By account and the token's exact text (a hash of it cost each request more than the lookup), oldest first. */
  private readonly verified = new Map<string, Verified>();
  /** The characters of the keys of `verified`, all told. */
  private rememberedChars = 0;
  private readonly fingerprints = new WeakMap<Issuer, string>();
  private readonly keySets: KeySets;
  private readonly fetcher: GuardedFetcher;
  private readonly clock: () => number;
  private readonly maxTokens: number;
  private readonly maxTokenChars: number;

  constructor(options: TokenVerifierOptions = {}) {
    const allowPrivate = options.allowPrivate ?? false;
    this.clock = options.clock ?? Date.now;
    this.maxTokens = options.maxTokens ?? 10_000;
    this.maxTokenChars = options.maxTokenChars ?? MAX_REMEMBERED_CHARS;
    this.fetcher = options.fetcher ?? new GuardedFetcher({ allowPrivate });
    this.keySets = new KeySets({ fetcher: this.fetcher, allowPrivate, clock: this.clock });
  }

  /** The token's claims, or the 401 `invalid_token` (thrown) whose detail says why it is refused. */
  async verifyToken(token: string, { accountId, issuers }: AccountIssuers): Promise<Claims> {
    if (token.length > MAX_TOKEN_LENGTH) throw invalidToken(`The token is longer than ${MAX_TOKEN_LENGTH} characters.`);
    const now = this.clock();
    const cacheKey = `${accountId} ${token}`;
    const known = this.verified.get(cacheKey);
    if (known && now < known.until && issuers.some((issuer) => this.fingerprintOf(issuer) === known.fingerprint)) return known.claims;
    if (known) this.forget(cacheKey);
    const issuer = issuerOf(token, issuers);
    const payload = await this.verifyWith(token, issuer, now);
    const claims = deepFreeze(payload) as Claims;
    const until = Math.min(now + VERIFIED_TTL_MS, typeof payload.exp === 'number' ? payload.exp * 1000 : now);
    this.remember(cacheKey, { claims, fingerprint: this.fingerprintOf(issuer), until });
    return claims;
  }

  /** Ends the connections to issuers. */
  close(): Promise<void> {
    return this.fetcher.close();
  }

  private async verifyWith(token: string, issuer: Issuer, now: number): Promise<JWTPayload> {
    const options = {
      algorithms: issuer.secret === null ? ASYMMETRIC : SYMMETRIC,
      issuer: issuer.issuer,
      audience: issuer.audiences,
      clockTolerance: CLOCK_TOLERANCE_S,
      requiredClaims: ['exp'],
      currentDate: new Date(now),
    };
    // `none`, and HS256 signed with an issuer's public key (algorithm confusion), are refused here.
    const algorithm = algorithmOf(token);
    if (!options.algorithms.includes(algorithm)) throw invalidToken(`The token's algorithm ${algorithm} is not one its issuer uses.`);
    try {
      if (issuer.secret !== null) return (await jwtVerify(token, new TextEncoder().encode(issuer.secret), options)).payload;
      const keys = await this.keySets.keysOf(issuer);
      try {
        return (await jwtVerify(token, keys, options)).payload;
      } catch (error) {
        // A key the set lacks may be a key the issuer has added since: read the set again, at most once a minute.
        if (!(error instanceof errors.JWKSNoMatchingKey)) throw error;
        const again: JWTVerifyGetKey | undefined = await this.keySets.refetched(issuer);
        if (!again) throw error;
        return (await jwtVerify(token, again, options)).payload;
      }
    } catch (error) {
      throw refusal(error);
    }
  }

  private remember(cacheKey: string, entry: Verified): void {
    if (entry.until <= this.clock()) return;
    this.forget(cacheKey);
    this.verified.set(cacheKey, entry);
    this.rememberedChars += cacheKey.length;
    for (const [oldest, { until }] of this.verified) {
      if (this.verified.size <= this.maxTokens && this.rememberedChars <= this.maxTokenChars && until > this.clock()) break;
      this.forget(oldest);
    }
  }

  private forget(cacheKey: string): void {
    if (this.verified.delete(cacheKey)) this.rememberedChars -= cacheKey.length;
  }

  /** What of an issuer a verification depends on: a token is verified again once any of it changes. */
  private fingerprintOf(issuer: Issuer): string {
    let fingerprint = this.fingerprints.get(issuer);
    if (fingerprint === undefined) {
      const { id, issuer: iss, audiences, jwks_uri, discovery_url, secret } = issuer;
      fingerprint = JSON.stringify([id, iss, audiences, jwks_uri, discovery_url, secret]);
      this.fingerprints.set(issuer, fingerprint);
    }
    return fingerprint;
  }
}

/**
 * The moment, in ms since the epoch, from which a verified token with these claims is refused as expired:
 * its `exp` (which every verified token has) and the skew allowed. The feed closes a socket then.
 */
export const refusedFrom = (claims: Claims): number => ((claims.exp as number) + CLOCK_TOLERANCE_S) * 1000;

/**
 * The issuer a token names by its `iss` (read before it is verified, to choose the key): of several with
 * that `iss`, the first whose audiences its `aud` names. 401 for a token that is no JWT, or names no issuer
 * of the account.
 */
function issuerOf(token: string, issuers: readonly Issuer[]): Issuer {
  let payload: JWTPayload;
  try {
    payload = decodeJwt(token);
  } catch {
    throw invalidToken('The token is no JWT.');
  }
  const named = issuers.filter(({ issuer }) => issuer === payload.iss);
  if (named.length === 0) throw invalidToken('The token is of an issuer the account does not have (its iss).');
  const audiences = typeof payload.aud === 'string' ? [payload.aud] : Array.isArray(payload.aud) ? payload.aud : [];
  return named.find((issuer) => issuer.audiences.some((audience) => audiences.includes(audience))) ?? named[0];
}

function algorithmOf(token: string): string {
  try {
    return String(decodeProtectedHeader(token).alg);
  } catch {
    throw invalidToken('The token is no JWT.');
  }
}

/** Why jose (or the issuer's keys) refused the token, as the 401 that says it. */
function refusal(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof KeysUnavailable) return invalidToken(`The keys of the token's issuer cannot be read: ${error.message}.`);
  if (error instanceof errors.JWTExpired) return invalidToken('The token has expired.');
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.reason === 'missing') return invalidToken(`The token has no ${error.claim} claim.`);
    if (error.claim === 'nbf') return invalidToken('The token is not yet valid.');
    if (error.claim === 'aud') return invalidToken('The token is for another audience.');
    return invalidToken(`The token's ${error.claim} claim is refused.`);
  }
  if (error instanceof errors.JOSEAlgNotAllowed) return invalidToken("The token's algorithm is not one its issuer uses.");
  if (error instanceof errors.JWSSignatureVerificationFailed) return invalidToken("The token's signature does not verify.");
  if (error instanceof errors.JWKSNoMatchingKey) return invalidToken("No key of the token's issuer matches its kid.");
  if (error instanceof errors.JWKSMultipleMatchingKeys)
    return invalidToken("Several keys of the token's issuer match it: it names no kid.");
  if (error instanceof errors.JOSEError || error instanceof TypeError) return invalidToken('The token is no valid JWT.');
  return invalidToken('The token cannot be verified.');
}

/** `value` and every object in it frozen: claims are shared by every request that sends the token. */
function deepFreeze(value: unknown): unknown {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}
