// Every /v1 request and every feed upgrade looks its key up. Looking it up in the database each time
// costs a query per request; the answer, kept here by the key itself (hashing it would cost more than
// the rest of a hit), is read again once it is `ttlMs` old. A revoked key must stop working within a
// second on every instance (openapi.yaml, `info.description`): an answer is trusted for at
// most `ttlMs` from the moment its query began, so a revocation committed after that moment is seen
// at most `ttlMs` after it committed, and the rest of the second is left to a request admitted just
// before. Unknown and revoked keys are remembered the same way, so a client hammering with a bad key
// costs one query per `ttlMs` too; the store asks only about keys no longer than ours, so what is kept
// stays small.
import type { Principal } from './keys.ts';

export interface PrincipalCacheOptions {
  /** How long an answer, found or not, is trusted, in ms. Default 500: half the second a revocation may take. */
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
  /** By key, in the order they were read: the oldest first. */
  private readonly entries = new Map<string, Entry>();
  /** Lookups under way, so that concurrent requests with one key make one query. */
  private readonly reading = new Map<string, Promise<Principal | undefined>>();
  /** Moves on every forget(): a lookup begun before it does not store its answer. */
  private generation = 0;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly clock: () => number;

  constructor(
    private readonly lookup: (key: string) => Promise<Principal | undefined>,
    options: PrincipalCacheOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 500;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.clock = options.clock ?? Date.now;
  }

  /** The account of the live key `key`, or undefined for an unknown or revoked one. */
  find(key: string): Promise<Principal | undefined> {
    const now = this.clock();
    const entry = this.entries.get(key);
    if (entry && now - entry.readAt < this.ttlMs) return Promise.resolve(entry.principal);
    let reading = this.reading.get(key);
    if (!reading) {
      const started = this.read(key, now).finally(() => {
        if (this.reading.get(key) === started) this.reading.delete(key);
      });
      reading = started;
      this.reading.set(key, reading);
    }
    return reading;
  }

  /** Forgets every answer, and those being read: after a key is revoked or made in this process. */
  forget(): void {
    this.generation++;
    this.entries.clear();
    this.reading.clear();
  }

  private async read(key: string, readAt: number): Promise<Principal | undefined> {
    const generation = this.generation;
    const principal = await this.lookup(key);
    if (generation !== this.generation) return principal;
    this.entries.delete(key); // re-inserted last: the map stays in the order answers were read
    this.entries.set(key, { principal, readAt });
    for (const [oldest, { readAt: oldestAt }] of this.entries) {
      if (this.entries.size <= this.maxEntries && readAt - oldestAt < this.ttlMs) break;
      this.entries.delete(oldest);
    }
    return principal;
  }
}
