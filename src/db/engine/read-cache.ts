// Answers a request needs on every call and an admin rarely changes (an account's token issuers, a
// collection's rules), kept for a moment so that they cost no query a request (ReadCache).

export interface ReadCacheOptions {
  /** How long an answer is trusted, in ms. Default 500: half the second a change may take. */
  ttlMs?: number;
  /** Answers remembered at most; the oldest go first. Default 10,000. */
  maxEntries?: number;
  /** Milliseconds since the epoch. Default `Date.now`. */
  clock?: () => number;
}

interface Entry<V> {
  value: V;
  /** When the query that found it began. */
  readAt: number;
}

/**
 * As the principals' cache keeps keys (../accounts/principals.ts, PrincipalCache), an answer is trusted
 * for at most `ttlMs` from the moment its query began, so that a change is seen by every instance within
 * a second (docs/access.md); this instance forgets its answers as soon as it makes a change. Concurrent
 * lookups of one key make one query; a lookup that fails is not kept.
 */
export class ReadCache<K, V> {
  /** By key, in the order they were read: the oldest first. */
  private readonly entries = new Map<K, Entry<V>>();
  private readonly reading = new Map<K, Promise<V>>();
  /** Moves on every forget(): a lookup begun before it does not store its answer. */
  private generation = 0;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly clock: () => number;

  constructor(
    private readonly lookup: (key: K) => Promise<V>,
    options: ReadCacheOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 500;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.clock = options.clock ?? Date.now;
  }

  /** The answer for `key`, read at most `ttlMs` ago. */
  find(key: K): Promise<V> {
    const now = this.clock();
    const entry = this.entries.get(key);
    if (entry && now - entry.readAt < this.ttlMs) return Promise.resolve(entry.value);
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

  /** Forgets every answer, and those being read: after a change made in this process. */
  forget(): void {
    this.generation++;
    this.entries.clear();
    this.reading.clear();
  }

  private async read(key: K, readAt: number): Promise<V> {
    const generation = this.generation;
    const value = await this.lookup(key);
    if (generation !== this.generation) return value;
    this.entries.delete(key); // re-inserted last: the map stays in the order answers were read
    this.entries.set(key, { value, readAt });
    for (const [oldest, { readAt: oldestAt }] of this.entries) {
      if (this.entries.size <= this.maxEntries && readAt - oldestAt < this.ttlMs) break;
      this.entries.delete(oldest);
    }
    return value;
  }
}
