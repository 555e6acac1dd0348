// Every /v1 request and every feed upgrade looks its key up. Looking it up in the database each time
// costs a query per request; the answer, kept here by the key's hash, is read again once it is
// `ttlMs` old. A revoked key must stop working within a second on every instance (contract.md,
// "Authentication and tenancy"): an answer is trusted for at most `ttlMs` from the moment its query
// began, so a revocation committed after that moment is seen at most `ttlMs` after it committed, and
// the rest of the second is left to a request admitted just before. Unknown and revoked keys are
// remembered the same way, so a client hammering with a bad key costs one query per `ttlMs` too.
import type { Principal } from './keys.ts';

export interface PrincipalCacheOptions {
  /** How long an answer, found or not, is trusted, in ms. Default 500: half the contract's second. */
  ttlMs?: number;
  /** Keys remembered at most; the oldest answers go first. Default 10,000. */
  maxEntries?: number;
  /** Milliseconds since the epoch. Default `Date.now`. */
  clock?: () => number;
}

interface Entry {
  principal: Principal | undefined;
  /** When the query that found it began. */
  readAt: number;
}

export class PrincipalCache {
  /** By key hash, in the order they were read: the oldest first. */
  private readonly entries = new Map<string, Entry>();
  /** Lookups under way, so that concurrent requests with one key make one query. */
  private readonly reading = new Map<string, Promise<Principal | undefined>>();
  /** Moves on every forget(): a lookup begun before it does not store its answer. */
  private generation = 0;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly clock: () => number;

  constructor(
    private readonly lookup: (hash: string) => Promise<Principal | undefined>,
    options: PrincipalCacheOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 500;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.clock = options.clock ?? Date.now;
  }

  /** The account of the live key whose hash is `hash`, or undefined for an unknown or revoked one. */
  find(hash: string): Promise<Principal | undefined> {
    const now = this.clock();
    const entry = this.entries.get(hash);
    if (entry && now - entry.readAt < this.ttlMs) return Promise.resolve(entry.principal);
    let reading = this.reading.get(hash);
    if (!reading) {
      const started = this.read(hash, now).finally(() => {
        if (this.reading.get(hash) === started) this.reading.delete(hash);
      });
      reading = started;
      this.reading.set(hash, reading);
    }
    return reading;
  }

  /** Forgets every answer, and those being read: after a key is revoked or made in this process. */
  forget(): void {
    this.generation++;
    this.entries.clear();
    this.reading.clear();
  }

  private async read(hash: string, readAt: number): Promise<Principal | undefined> {
    const generation = this.generation;
    const principal = await this.lookup(hash);
    if (generation !== this.generation) return principal;
    this.entries.delete(hash); // re-inserted last: the map stays in the order answers were read
    this.entries.set(hash, { principal, readAt });
    for (const [oldest, { readAt: oldestAt }] of this.entries) {
      if (this.entries.size <= this.maxEntries && readAt - oldestAt < this.ttlMs) break;
      this.entries.delete(oldest);
    }
    return principal;
  }
}
