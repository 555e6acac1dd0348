// The cache of keys' principals that every request's key is looked up through (PrincipalCache), and the
// minute of each key's last use it notes for the store to write.
import type { Principal } from './keys.ts';

const MINUTE_MS = 60_000;

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
  /** The start of the latest minute its key's use was noted in (ms), if any. */
  usedMinute?: number;
}

/**
 * Every /v1 request and every feed upgrade looks its key up. Looking it up in the database each time
 * costs a query per request; the answer, kept here by the key itself (hashing it would cost more than
 * the rest of a hit), is read again once it is `ttlMs` old. A revoked key must stop working within a
 * second on every instance (openapi.yaml, `info.description`): an answer is trusted for at
 * most `ttlMs` from the moment its query began, so a revocation committed after that moment is seen
 * at most `ttlMs` after it committed, and the rest of the second is left to a request admitted just
 * before. Unknown and revoked keys are remembered the same way, so a client hammering with a bad key
 * costs one query per `ttlMs` too; the store asks only about keys no longer than ours, so what is kept
 * stays small. A key past its expiry is answered as unknown, whenever it was read.
 *
 * The cache also notes, to the minute, when each key was last used (openapi.yaml, Key.last_used_at):
 * a key's first answer in a minute notes it, and the store writes what was noted every second
 * (assembleStore, above), so that a key in constant use costs about one write a minute, not one a request.
 */
export class PrincipalCache {
  /** By key, in the order they were read: the oldest first. */
  private readonly entries = new Map<string, Entry>();
  /** Lookups under way, so that concurrent requests with one key make one query. */
  private readonly reading = new Map<string, Promise<Entry>>();
  /** Uses noted since the last takeUses(): by key id, the start of the latest minute it was used in. */
  private uses = new Map<number, number>();
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

  /** The principal of the live key `key`, noting its use; undefined for an unknown, revoked or expired one. */
  find(key: string): Promise<Principal | undefined> {
    const now = this.clock();
    const entry = this.entries.get(key);
    if (entry && now - entry.readAt < this.ttlMs) return Promise.resolve(this.use(entry, now));
    let reading = this.reading.get(key);
    if (!reading) {
      const started = this.read(key, now, entry?.usedMinute).finally(() => {
        if (this.reading.get(key) === started) this.reading.delete(key);
      });
      reading = started;
      this.reading.set(key, reading);
    }
    return reading.then((read) => this.use(read, this.clock()));
  }

  /** The uses noted since the last call (see `uses`), handed over to be written. */
  takeUses(): Map<number, number> {
    const taken = this.uses;
    this.uses = new Map();
    return taken;
  }

  /** Notes again uses that could not be written, unless a later use of the key is noted already. */
  returnUses(uses: ReadonlyMap<number, number>): void {
    for (const [keyId, minute] of uses) if (!((this.uses.get(keyId) ?? 0) >= minute)) this.uses.set(keyId, minute);
  }

  /** Forgets every answer, and those being read: after a key is revoked or made in this process. */
  forget(): void {
    this.generation++;
    this.entries.clear();
    this.reading.clear();
  }

  /** The entry's principal, unless it is none or expired at `now`; its key's first use in a minute is noted. */
  private use(entry: Entry, now: number): Principal | undefined {
    const { principal } = entry;
    if (principal === undefined || (principal.expiresAt !== null && now >= principal.expiresAt)) return undefined;
    const minute = now - (now % MINUTE_MS);
    if (entry.usedMinute !== minute) {
      entry.usedMinute = minute;
      this.uses.set(principal.keyId, minute);
    }
    return principal;
  }

  /** Looks the key up; `usedMinute` is the one its previous answer noted, kept so that a new answer does not note it again. */
  private async read(key: string, readAt: number, usedMinute: number | undefined): Promise<Entry> {
    const generation = this.generation;
    const entry: Entry = { principal: await this.lookup(key), readAt, usedMinute };
    if (generation !== this.generation) return entry;
    this.entries.delete(key); // re-inserted last: the map stays in the order answers were read
    this.entries.set(key, entry);
    for (const [oldest, { readAt: oldestAt }] of this.entries) {
      if (this.entries.size <= this.maxEntries && readAt - oldestAt < this.ttlMs) break;
      this.entries.delete(oldest);
    }
    return entry;
  }
}
