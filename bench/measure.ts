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
}

/** Microseconds of the monotonic clock: the clock of `node --cpu-prof` timestamps too. */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

/** The value at fraction `p` of an ascending list (nearest rank); NaN for an empty one. */
export const percentile = (sorted: number[], p: number): number =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

/** A Measured line as printed; JSON has no NaN, so a latency of no answers at all comes back as null. */
export function parseMeasured(line: string): Measured {
  const measured = JSON.parse(line);
  return { ...measured, p50Ms: measured.p50Ms ?? Number.NaN, p99Ms: measured.p99Ms ?? Number.NaN };
}

/** Milliseconds to three significant digits or so; `-` when nothing was measured. */
export const milliseconds = (value: number) =>
  Number.isNaN(value) ? '-' : value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
