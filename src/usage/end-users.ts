// The rate per end user of a publishable key (`end_user_rate`; docs/access.md, "A rate per end user"),
// kept as the plan's rate is (meter.ts): a token bucket per end user on each instance, decided on in
// memory. Like the plan's usage, each instance adds its counts to a total in the database at every flush
// of the meter and takes in what the other instances added there, which drains its bucket too: an end user
// spread over several instances gets about the key's rate in all, not that rate on each.
import { createHash } from 'node:crypto';
import type { Store } from '../db/open-store.ts';
import type { Logger } from '../log.ts';

/** An end user of a publishable key with a rate per end user, as a request names them. */
export interface EndUser {
  /** The publishable key's id: each key's end users are its own. */
  keyId: number;
  /** The key's requests a second per end user. */
  rate: number;
  /**
   * Who the end user is: `token`, the issuer and subject of their verified token; `address`, the
   * client's address, for callers without a token or whose token has no `sub`.
   */
  by: 'token' | 'address';
  /** What tells the end user apart within `by`: the token's issuer and subject, or the address. */
  id: string;
}

interface Bucket {
  keyId: number;
  /** The hash of who the end user is, as the database keeps it: never the claim or the address itself. */
  hash: string;
  rate: number;
  /** Up to `rate` tokens, refilled at `rate` a second; taken from by this instance and, once known, by the others. */
  tokens: number;
  tokensAt: number;
  lastSeen: number;
  /** Counted here and not yet written. */
  pending: number;
  /** Every instance's count in the database when last written or read; undefined before the first. */
  total?: number;
}

/** End users not seen here for this long are forgotten: their bucket is long full again. */
const IDLE_MS = 60_000;
/** Counts no instance has written for this long are deleted from the database, looked for this often: */
const PRUNE_AFTER_MS = 10 * 60_000;
const PRUNE_EVERY_MS = 60_000;

export class EndUserMeter {
  private readonly buckets = new Map<string, Bucket>();
  private prunedAt = 0;
  /**
   * When this instance last wrote counts: it prunes until what it wrote then is past PRUNE_AFTER_MS, and
   * an instance that never writes any (no key has end_user_rate) writes nothing at all.
   */
  private wroteAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
  ) {}

  /**
   * Takes `units` from the end user's bucket and answers undefined, or, when it holds less than one,
   * takes nothing and answers the seconds until it holds one again (Retry-After).
   */
  admit(endUser: EndUser, units: number, now: number): number | undefined {
    const bucket = this.bucketOf(endUser, now);
    refill(bucket, now);
    if (bucket.tokens < 1) return Math.max(1, Math.ceil((1 - bucket.tokens) / bucket.rate));
    bucket.tokens -= units;
    bucket.pending += units;
    bucket.lastSeen = now;
    return undefined;
  }

  /**
   * Adds the count of every end user seen here in the last minute to the database (0 to only read), and
   * takes what the other instances admitted since the last write from this instance's bucket. A bucket
   * goes below zero for them by one second's worth at most, so that counts learned late (after the
   * database was unreachable, say) hold an end user back for two seconds at most. Called by the meter's
   * flush, one at a time; a failed write is kept for the next.
   */
  async write(now: number): Promise<void> {
    const buckets: Bucket[] = [];
    for (const [name, bucket] of this.buckets) {
      if (bucket.pending === 0 && now - bucket.lastSeen > IDLE_MS) this.buckets.delete(name);
      else buckets.push(bucket);
    }
    if (buckets.length > 0) await this.add(buckets, now);
    if (now - this.prunedAt >= PRUNE_EVERY_MS && this.prunedAt <= this.wroteAt + PRUNE_AFTER_MS) {
      this.prunedAt = now;
      await this.store.pruneEndUserCounts(new Date(now - PRUNE_AFTER_MS).toISOString()).catch((error: unknown) => {
        this.log.error({ err: error }, 'could not prune end users’ counts');
      });
    }
  }

  private async add(buckets: Bucket[], now: number): Promise<void> {
    const written = buckets.map((bucket) => bucket.pending);
    for (const bucket of buckets) bucket.pending = 0;
    let totals: Map<string, number>;
    try {
      const counts = buckets.map(({ keyId, hash }, index) => ({ keyId, endUser: hash, count: written[index] }));
      const stored = await this.store.addEndUserCounts(counts, new Date(now).toISOString());
      totals = new Map(stored.map(({ keyId, endUser, count }) => [`${keyId} ${endUser}`, count]));
      this.wroteAt = now;
    } catch (error) {
      buckets.forEach((bucket, index) => {
        bucket.pending += written[index];
      });
      this.log.error({ err: error }, 'could not write end users’ counts');
      return;
    }
    buckets.forEach((bucket, index) => {
      const total = totals.get(`${bucket.keyId} ${bucket.hash}`);
      if (total === undefined) return;
      // Less than expected: the row was pruned and begun again. The first total read tells nothing of when
      // the others' requests were made: both only set where the next write starts from.
      const others = bucket.total === undefined ? 0 : total - bucket.total - written[index];
      bucket.total = total;
      if (others <= 0) return;
      refill(bucket, now);
      bucket.tokens = Math.max(-bucket.rate, bucket.tokens - others);
    });
  }

  private bucketOf(endUser: EndUser, now: number): Bucket {
    const name = `${endUser.keyId} ${endUser.by} ${endUser.id}`;
    let bucket = this.buckets.get(name);
    if (!bucket) {
      const hash = createHash('sha256').update(`${endUser.by} ${endUser.id}`).digest('base64url');
      bucket = { keyId: endUser.keyId, hash, rate: endUser.rate, tokens: endUser.rate, tokensAt: now, lastSeen: now, pending: 0 };
      this.buckets.set(name, bucket);
    } else if (bucket.rate !== endUser.rate) {
      bucket.rate = endUser.rate;
      bucket.tokens = Math.min(bucket.tokens, endUser.rate);
    }
    return bucket;
  }
}

function refill(bucket: Bucket, now: number): void {
  bucket.tokens = Math.min(bucket.rate, bucket.tokens + (Math.max(0, now - bucket.tokensAt) / 1000) * bucket.rate);
  bucket.tokensAt = now;
}
