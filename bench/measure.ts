// What each benchmark's client prints when it is done, read by run.ts and report.ts.
/** What a load worker (or the driver baseline) prints, as one JSON line, when it is done. */
export interface Measured {
  /** Answers with a 2xx status in the measured window (for the driver: transactions), and the rows they carried. */
  requests: number;
  rows: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  /** Anything but a 2xx: errors, timeouts and other statuses. A measurement with any is marked. */
  failures: number;
  statusCodes: Record<string, number>;
  /** The measured window, in microseconds of the monotonic clock that every process on the machine shares. */
  windowUs: [number, number];
  /** The HTTP workloads (load.ts): the load generator's own CPU in the measured window, µs a request (on a host of two cores, a ratio can be bound by it). */
  loadCpuUsPerRequest?: number;
  /** The feed workloads (fanout, idle-sockets): what their subscribers saw. */
  feed?: FeedMeasured;
  /** The webhook workloads (webhook-latency, webhook-throughput): what their receivers saw. */
  webhooks?: WebhooksMeasured;
  /** declaration-100 (declarations.ts): each stage's time, and the other account's reads during each. */
  declarations?: DeclarationsMeasured;
  /** The expiry workloads (expiry.ts): reads beside rows that expire, and the sweeper's rate. */
  expiry?: ExpiryMeasured;
  /** idle-server and its PostgreSQL twin (idle-server.ts): what the server held after its seconds of nothing. */
  idle?: IdleServerMeasured;
}

/** The reads of another account under way during a stage of declaration-100: how many, their p99 and the longest (ms). */
export interface ReadsDuring {
  reads: number;
  p99Ms: number;
  maxMs: number;
}

export interface DeclarationsMeasured {
  /** Collections declared, and the changes their plan onto the empty account lists. */
  collections: number;
  changes: number;
  /** POST /v1/declaration/plan (with the contract's diff), the apply of the declaration, the plan again (no change): ms each. */
  planMs: number;
  applyMs: number;
  replanMs: number;
  /** The other account's reads alone (the warm-up), during the plan, during the apply. */
  before: ReadsDuring;
  plan: ReadsDuring;
  apply: ReadsDuring;
}

/** What an idle server held (idle-server.ts): after its seconds of nothing (VmRSS), and at its peak since it started (VmHWM). */
export interface IdleServerMeasured {
  seconds: number;
  rssKb: number;
  hwmKb: number;
}

/** What the expiry workloads measured (issue 65: expiry.ts). */
export interface ExpiryMeasured {
  /** Rows of each of the two collections, those of them that expired over the minute, and how many had before the reads began. */
  rows: number;
  expiringRows: number;
  expiredBeforeMeasuring: number;
  /** get-row's and list's rate of the collection with a time to live ÷ that of its twin without, over the minute; and of each turn. */
  getRowRatio: number;
  listRatio: number;
  getRowRatios: number[];
  listRatios: number[];
  /** Whether the sweeper had deleted every expired row two minutes after the last expired. */
  sweptInTime: boolean;
  /** The burst: rows expired at once, deleted a second, and get-row's p99 before and while they were swept. */
  burstRows: number;
  deletionsPerSecond: number;
  getRowP99QuietMs: number;
  getRowP99SweepingMs: number;
}

export interface WebhooksMeasured {
  /** Webhooks, each with a receiver of its own, over how many collections. */
  webhooks: number;
  collections: number;
  /**
   * Deliveries due (webhook-latency: the writes of the measured window; webhook-throughput: the backlog,
   * webhooks × changes), arrived (webhook-throughput: within its window), and arrived twice or out of seq order.
   */
  expected: number;
  delivered: number;
  duplicates: number;
  outOfOrder: number;
  /** webhook-latency: receipt − the writer's 201, of every delivery, in 0.1 ms bins; and of the same writes to one feed socket beside it. */
  latencyHistogram?: Histogram;
  feedLatencyHistogram?: Histogram;
  /** webhook-throughput: whether the backlog ran out before the window's end (the window is then shorter). */
  drained?: boolean;
}

export interface FeedMeasured {
  /** Sockets asked for, over how many client processes and collections; those that got their `ready`. */
  subscribers: number;
  clientProcesses: number;
  collections: number;
  ready: number;
  /** Why the others did not, and sockets the server closed while they were held: by reason or close code. */
  socketFailures: Record<string, number>;
  /**
   * fanout: insert messages due (ready sockets × inserts of the measured window; with fanout-filtered,
   * each socket's those its filter matches), arrived, and arrived twice; and, fanout-filtered, arrived
   * to a socket whose filter they do not match.
   */
  expected: number;
  delivered: number;
  duplicates: number;
  undue?: number;
  /** fanout: receipt − the writer's 201, of every (message × subscriber) pair, in 0.1 ms bins. */
  latencyHistogram?: Histogram;
  /**
   * fanout: CPU time per insert (user + system), from the writer's start to its end, warm-up included:
   * rowbase's process, and the subscriber processes' together. Where the delivery latency's time goes.
   */
  serverCpuMsPerInsert?: number;
  clientCpuMsPerInsert?: number;
  /** idle-sockets: the server's VmRSS before the first socket, and its highest while all were open. */
  rssBeforeKb?: number;
  rssConnectedKb?: number;
}

/** Microseconds of the monotonic clock: the clock of `node --cpu-prof` timestamps too. */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

/** The value at fraction `p` of an ascending list (nearest rank); NaN for an empty one. */
export const percentile = (sorted: number[], p: number): number =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

/**
 * What a measurement of one request at a time (or of many, each timed) measured: `latencies` (ms, each a
 * 2xx's, sorted here) as its requests, p50 and p99, `rows` carried, over the window from `started` to
 * `finished` (monotonicUs()).
 */
export function measuredOf(
  latencies: number[],
  rows: number,
  [started, finished]: [number, number],
  failures: number,
  statusCodes: Record<string, number>,
): Measured {
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    rows,
    seconds: (finished - started) / 1e6,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    failures,
    statusCodes,
    windowUs: [started, finished],
  };
}

/** A Measured line as printed; JSON has no NaN, so a latency of no answers at all comes back as null. */
export function parseMeasured(line: string): Measured {
  const measured = JSON.parse(line);
  return { ...measured, p50Ms: measured.p50Ms ?? Number.NaN, p99Ms: measured.p99Ms ?? Number.NaN };
}

/** Milliseconds to three significant digits or so; `-` when nothing was measured. */
export const milliseconds = (value: number) =>
  Number.isNaN(value) ? '-' : value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);

/**
 * Latencies of the feed as a histogram of 0.1 ms bins (bin → count): exact enough for p50 and p99 in
 * milliseconds, small enough for results.json, and the rounds of a workload add up into one.
 */
export type Histogram = Record<string, number>;
const binUs = 100;

export function histogramOf(valuesUs: number[], into: Histogram = {}): Histogram {
  for (const us of valuesUs) {
    const bin = Math.floor(us / binUs);
    into[bin] = (into[bin] ?? 0) + 1;
  }
  return into;
}

export const mergeHistograms = (histograms: Histogram[]): Histogram =>
  histograms.reduce<Histogram>((all, h) => {
    for (const [bin, count] of Object.entries(h)) all[bin] = (all[bin] ?? 0) + count;
    return all;
  }, {});

/** The value at fraction `p` (nearest rank), in milliseconds at the middle of its bin; NaN for an empty histogram. */
export function histogramPercentile(histogram: Histogram, p: number): number {
  const bins = Object.entries(histogram)
    .map(([bin, count]) => [Number(bin), count] as const)
    .sort((a, b) => a[0] - b[0]);
  const total = bins.reduce((n, [, count]) => n + count, 0);
  if (total === 0) return Number.NaN;
  const rank = Math.min(total - 1, Math.floor(p * total));
  let seen = 0;
  for (const [bin, count] of bins) {
    seen += count;
    if (seen > rank) return ((bin + 0.5) * binUs) / 1000;
  }
  return Number.NaN;
}

/**
 * Runs `writeBatch` back to back for the warm-up, then for the measured duration, and reports it as a
 * load worker would: one request per batch of `settings.batchSize` rows.
 */
export async function timeBatches(
  writeBatch: () => Promise<void>,
  settings: { warmupSeconds: number; durationSeconds: number; batchSize: number },
): Promise<Measured> {
  const warmupEnds = performance.now() + settings.warmupSeconds * 1000;
  while (performance.now() < warmupEnds) await writeBatch();

  const latencies: number[] = [];
  const started = performance.now();
  const startedUs = monotonicUs();
  const ends = started + settings.durationSeconds * 1000;
  while (performance.now() < ends) {
    const before = performance.now();
    await writeBatch();
    latencies.push(performance.now() - before);
  }
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    rows: latencies.length * settings.batchSize,
    seconds,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    failures: 0,
    statusCodes: {},
    windowUs: [startedUs, monotonicUs()],
  };
}
