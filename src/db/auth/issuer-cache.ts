// The cache of accounts' token issuers that every end user's token is verified with (IssuerCache).
import type { Issuer } from './issuers.ts';

/** An account's issuers, as a token of the account is verified with them (src/tokens/verifier.ts, verifyToken). */
export interface AccountIssuers {
  accountId: number;
  issuers: readonly Issuer[];
}

export interface IssuerCacheOptions {
  /** How long an answer is trusted, in ms. Default 500: half the second a change may take. */
  ttlMs?: number;
  /** Accounts remembered at most; the oldest answers go first. Default 10,000. */
  maxEntries?: number;
  /** Milliseconds since the epoch. Default `Date.now`. */
  clock?: () => number;
}

interface Entry {
  issuers: AccountIssuers;
  /** When the query that found them began. */
  readAt: number;
}

/**
 * A request with an end user's token needs its account's issuers; reading them each time would cost a
 * query a request. As the principals' cache keeps keys (../accounts/principals.ts, PrincipalCache), an
 * answer is trusted for at most `ttlMs` from the moment its query began, so that a changed or deleted
 * issuer is seen by every instance within a second (docs/access.md, "Token issuers"); this instance
 * forgets its answers as soon as it changes an issuer. Concurrent lookups of one
 * account make one query.
 */
export class IssuerCache {
  /** By account, in the order they were read: the oldest first. */
  private readonly entries = new Map<number, Entry>();
  private readonly reading = new Map<number, Promise<AccountIssuers>>();
  /** Moves on every forget(): a lookup begun before it does not store its answer. */
  private generation = 0;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly clock: () => number;

  constructor(
    private readonly lookup: (accountId: number) => Promise<Issuer[]>,
    options: IssuerCacheOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 500;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.clock = options.clock ?? Date.now;
  }

  /** The account's issuers, read at most `ttlMs` ago. */
  find(accountId: number): Promise<AccountIssuers> {
    const now = this.clock();
    const entry = this.entries.get(accountId);
    if (entry && now - entry.readAt < this.ttlMs) return Promise.resolve(entry.issuers);
    let reading = this.reading.get(accountId);
    if (!reading) {
      const started = this.read(accountId, now).finally(() => {
        if (this.reading.get(accountId) === started) this.reading.delete(accountId);
      });
      reading = started;
      this.reading.set(accountId, reading);
    }
    return reading;
  }

  /** Forgets every answer, and those being read: after an issuer is changed in this process. */
  forget(): void {
    this.generation++;
    this.entries.clear();
    this.reading.clear();
  }

  private async read(accountId: number, readAt: number): Promise<AccountIssuers> {
    const generation = this.generation;
    const issuers: AccountIssuers = { accountId, issuers: await this.lookup(accountId) };
    if (generation !== this.generation) return issuers;
    this.entries.delete(accountId); // re-inserted last: the map stays in the order answers were read
    this.entries.set(accountId, { issuers, readAt });
    for (const [oldest, { readAt: oldestAt }] of this.entries) {
      if (this.entries.size <= this.maxEntries && readAt - oldestAt < this.ttlMs) break;
      this.entries.delete(oldest);
    }
    return issuers;
  }
}
