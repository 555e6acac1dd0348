// Usage metering and enforcement (openapi.yaml, getUsage and the RateLimit-* headers), and the rate per
// end user of a publishable key (end-users.ts). Counting happens in memory, so it costs no write per
// request; pending counts are added to the database at least every second and on close, so a crash
// loses at most a second of counts. Deciding and counting are one synchronous step, so on one instance
// a quota of N admits exactly N requests, whatever the concurrency.
import type { Plan } from '../db/accounts/plans.ts';
import type { Store } from '../db/open-store.ts';
import { ApiError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { type EndUser, EndUserMeter } from './end-users.ts';
import { periodAt } from './periods.ts';

export interface MeterOptions {
  /** Milliseconds since the epoch. Default `Date.now`; tests move time with their own. */
  clock?: () => number;
  /** How often pending counts are written, in ms. Default 1000. */
  flushIntervalMs?: number;
  /** How long an account's plan (and the total of other instances) is trusted before it is read again, in ms. Default 1000. */
  refreshMs?: number;
}

/** What a request learns about its quota once admitted: the RateLimit-* headers. */
export interface Admission {
  limit: number;
  remaining: number;
  /** Seconds until the period ends. */
  reset: number;
  /** The end user the request counted for, if any: a batch's operations past the first count for them too (admitMore). */
  endUser?: EndUser;
}

export interface Usage {
  plan: Plan;
  period_start: string;
  period_end: string;
  used: number;
  remaining: number;
}

interface AccountMeter {
  plan: Plan;
  readAt: number;
  lastSeen: number;
  periodStart: string;
  periodEnd: number;
  /** The period's total in the database when last read or written; excludes `writing` and `pending`. */
  base: number;
  /** Counted here and being written now. */
  writing: number;
  /** Counted here and not yet written. */
  pending: number;
  /** Token bucket for the plan's rate: up to `rate` tokens, refilled at `rate` a second. */
  tokens: number;
  tokensAt: number;
}

const IDLE_EVICTION_MS = 10 * 60_000;
/** Accounts seen this recently have their totals read back on every flush. */
const RECENT_MS = 60_000;

/** Requests admitted and refused since the meter started, by reason (the metrics, docs/operations.md). */
export interface AdmissionCounts {
  admitted: number;
  quota_exceeded: number;
  rate_limited: number;
  /** Refused for the rate per end user of their publishable key (answered `rate_limited`, as the plan's rate). */
  end_user_rate_limited: number;
}

export class Meter {
  /** What admit() decided, counted since the start. */
  readonly counts: AdmissionCounts = { admitted: 0, quota_exceeded: 0, rate_limited: 0, end_user_rate_limited: 0 };
  private readonly accounts = new Map<number, AccountMeter>();
  private readonly endUsers: EndUserMeter;
  private readonly refreshing = new Map<number, Promise<AccountMeter>>();
  /** Counts of periods that ended before they were written. */
  private retired: { accountId: number; periodStart: string; count: number }[] = [];
  private readonly clock: () => number;
  private readonly refreshMs: number;
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    options: MeterOptions = {},
  ) {
    this.clock = options.clock ?? Date.now;
    this.refreshMs = options.refreshMs ?? 1000;
    this.endUsers = new EndUserMeter(store, log);
    this.timer = setInterval(() => void this.flush(), options.flushIntervalMs ?? 1000);
    this.timer.unref();
  }

  /**
   * Counts `units` requests of the account (default 1; a batch counts one per operation, openapi.yaml
   * writeBatch), or throws 429 (and counts nothing) when its plan's quota has fewer left, or its rate
   * not one, or, for a request of `endUser` (default none: a secret key's, or a publishable key's
   * without a rate per end user), that end user's rate not one. The units past the first are taken from
   * the rates' buckets all the same, which may go below zero: the requests after them wait until they
   * fill again. Synchronous while the account's meter is fresh, as it is for all but about one request
   * a second: no promise, and no turn of the microtask queue, per request.
   */
  admit(accountId: number, units = 1, endUser?: EndUser): Admission | Promise<Admission> {
    const meter = this.fresh(accountId);
    return meter ? this.count(meter, units, endUser) : this.current(accountId).then((read) => this.count(read, units, endUser));
  }

  /**
   * Counts `units` more requests of the account, and of the end user it counted for, toward a request's
   * `admission` (a batch's operations past the first), which then tells what remains; 429 as admit()
   * when its plan or the end user's rate has fewer left.
   */
  async admitMore(accountId: number, units: number, admission: Admission): Promise<void> {
    try {
      Object.assign(admission, await this.admit(accountId, units, admission.endUser));
    } catch (error) {
      if (!(error instanceof TooMany)) throw error;
      // The answer carries the request's admission as the refusal left it, and the refusal's Retry-After.
      Object.assign(admission, error.admission);
      throw new ApiError(error.code, error.detail, { headers: { 'Retry-After': String(error.retryAfter) } });
    }
  }

  private count(meter: AccountMeter, units: number, endUser: EndUser | undefined): Admission {
    const now = this.clock();
    const used = meter.base + meter.writing + meter.pending;
    const { quota, rate } = meter.plan;
    const reset = Math.max(0, Math.ceil((meter.periodEnd - now) / 1000));
    if (used + units > quota) {
      this.counts.quota_exceeded++;
      const until = new Date(meter.periodEnd).toISOString();
      const left = Math.max(0, quota - used);
      throw tooMany(
        'quota_exceeded',
        left === 0
          ? `The plan's quota of ${quota} requests a ${meter.plan.period} is used up until ${until}.`
          : `This batch counts as ${units} requests, and the plan's quota of ${quota} requests a ${meter.plan.period} has ${left} left until ${until}.`,
        {
          admission: { limit: quota, remaining: left, reset },
          retryAfter: Math.max(1, reset),
        },
      );
    }
    if (rate !== null) {
      meter.tokens = Math.min(rate, meter.tokens + ((now - meter.tokensAt) / 1000) * rate);
      meter.tokensAt = now;
      if (meter.tokens < 1) {
        this.counts.rate_limited++;
        throw tooMany('rate_limited', `The plan allows ${rate} requests a second.`, {
          admission: { limit: quota, remaining: quota - used, reset },
          retryAfter: Math.max(1, Math.ceil((1 - meter.tokens) / rate)),
        });
      }
    }
    // Last, as it takes from the end user's bucket when it admits: nothing refuses the request after it.
    const endUserWait = endUser && this.endUsers.admit(endUser, units, now);
    if (endUser && endUserWait !== undefined) {
      this.counts.end_user_rate_limited++;
      throw tooMany('rate_limited', endUserRateDetail(endUser), {
        admission: { limit: quota, remaining: quota - used, reset },
        retryAfter: endUserWait,
      });
    }
    if (rate !== null) meter.tokens -= units;
    meter.pending += units;
    meter.lastSeen = now;
    this.counts.admitted++;
    return { limit: quota, remaining: quota - used - units, reset, endUser };
  }

  /** The account's usage in the current period, as counted so far. */
  async usage(accountId: number): Promise<Usage> {
    const meter = await this.current(accountId);
    const used = meter.base + meter.writing + meter.pending;
    return {
      plan: meter.plan,
      period_start: meter.periodStart,
      period_end: new Date(meter.periodEnd).toISOString(),
      used,
      remaining: Math.max(0, meter.plan.quota - used),
    };
  }

  /** Writes every pending count. Runs one at a time; a failed write is kept for the next. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  /** Stops the timer and writes what is pending. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async write(): Promise<void> {
    const retired = this.retired;
    this.retired = [];
    for (const entry of retired) {
      try {
        await this.store.addUsage(entry.accountId, entry.periodStart, entry.count);
      } catch (error) {
        this.retired.push(entry);
        this.log.error({ err: error }, 'could not write usage');
      }
    }
    const now = this.clock();
    for (const [accountId, meter] of this.accounts) {
      if (meter.pending === 0) {
        if (now - meter.lastSeen > IDLE_EVICTION_MS) this.accounts.delete(accountId);
        // Other instances count too: take their writes in. Only here, between our own writes, so the
        // total read never misses one of ours nor counts it twice.
        else if (now - meter.lastSeen < RECENT_MS) meter.base = await this.readTotal(accountId, meter);
        continue;
      }
      const count = meter.pending;
      meter.pending = 0;
      meter.writing += count;
      try {
        meter.base = await this.store.addUsage(accountId, meter.periodStart, count);
      } catch (error) {
        meter.pending += count;
        this.log.error({ err: error }, 'could not write usage');
      } finally {
        meter.writing -= count;
      }
    }
    await this.endUsers.write(this.clock());
  }

  private async readTotal(accountId: number, meter: AccountMeter): Promise<number> {
    try {
      return await this.store.readUsage(accountId, meter.periodStart);
    } catch (error) {
      this.log.error({ err: error }, 'could not read usage');
      return meter.base;
    }
  }

  /** The account's meter if it need not be read again: its plan is younger than `refreshMs`, its period still on. */
  private fresh(accountId: number): AccountMeter | undefined {
    const meter = this.accounts.get(accountId);
    const now = this.clock();
    return meter && now - meter.readAt < this.refreshMs && now < meter.periodEnd ? meter : undefined;
  }

  /** The account's meter, read again when it is not fresh. */
  private async current(accountId: number): Promise<AccountMeter> {
    const meter = this.fresh(accountId);
    if (meter) return meter;
    const now = this.clock();
    let refresh = this.refreshing.get(accountId);
    if (!refresh) {
      refresh = this.refresh(accountId, now).finally(() => this.refreshing.delete(accountId));
      this.refreshing.set(accountId, refresh);
    }
    return refresh;
  }

  private async refresh(accountId: number, now: number): Promise<AccountMeter> {
    const plan = await this.store.accountPlan(accountId);
    const period = periodAt(plan.period, now);
    const periodStart = period.start.toISOString();
    const meter = this.accounts.get(accountId);
    if (meter && meter.periodStart === periodStart) {
      if (plan.rate !== meter.plan.rate) meter.tokens = Math.min(meter.tokens, plan.rate ?? 0);
      meter.plan = plan;
      meter.readAt = now;
      return meter;
    }
    if (meter && meter.pending > 0) {
      this.retired.push({ accountId, periodStart: meter.periodStart, count: meter.pending });
    }
    const fresh: AccountMeter = {
      plan,
      readAt: now,
      lastSeen: now,
      periodStart,
      periodEnd: period.end.getTime(),
      base: await this.store.readUsage(accountId, periodStart),
      writing: 0,
      pending: 0,
      tokens: plan.rate ?? 0,
      tokensAt: now,
    };
    this.accounts.set(accountId, fresh);
    return fresh;
  }
}

/** A 429's detail for an end user past their rate: which limit it is, and how the end user was told apart. */
const endUserRateDetail = ({ rate, by }: EndUser) =>
  `The key's end_user_rate allows ${rate} requests a second to each end user, and this one (${
    by === 'token' ? "the token's sub" : 'the client address: the request has no token with a sub'
  }) has made them.`;

/** The RateLimit-* headers (openapi.yaml) of an admission: names and values in turn, as writeHead takes them. */
export function rateLimitHeaders({ limit, remaining, reset }: Admission): string[] {
  return ['RateLimit-Limit', String(limit), 'RateLimit-Remaining', String(remaining), 'RateLimit-Reset', String(reset)];
}

/** A 429 of the meter, with the RateLimit-* headers of the `admission` it refused and its Retry-After. */
class TooMany extends ApiError {
  constructor(
    code: 'quota_exceeded' | 'rate_limited',
    detail: string,
    readonly admission: Admission,
    readonly retryAfter: number,
  ) {
    const headers: Record<string, string> = {};
    const limits = rateLimitHeaders(admission);
    for (let index = 0; index < limits.length; index += 2) headers[limits[index]] = limits[index + 1];
    headers['Retry-After'] = String(retryAfter);
    super(code, detail, { headers });
  }
}

function tooMany(
  code: 'quota_exceeded' | 'rate_limited',
  detail: string,
  { admission, retryAfter }: { admission: Admission; retryAfter: number },
) {
  return new TooMany(code, detail, admission, retryAfter);
}
