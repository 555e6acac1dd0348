// Every bound of a benchmark run in one place: what `npm run bench` does, and what BENCHMARKS.md prints
// as "Settings". `--quick` keeps the data and the workloads and shortens the measurements.

export interface Settings {
  mode: 'full' | 'quick';
  /** Rows seeded into the `bench` collection, and the ids get-row and patch pick from (1..rows). */
  rows: number;
  /** Rows per seeding request, and per insert-batch request (rowbase's largest batch). */
  batchSize: number;
  /**
   * Open connections of the load generator, for every HTTP workload. Each keeps one request in flight,
   * so a workload that takes t seconds a request, one at a time, answers in about connections × t.
   */
  connections: number;
  /** Seconds of load before each measurement, not counted. */
  warmupSeconds: number;
  /** Seconds of each measurement. */
  durationSeconds: number;
  /** Times the whole interleaved sequence of measurements runs: rates are totals, ratios and latencies medians. */
  rounds: number;
  /** Page size of list and list-deep, and the offset of list-deep. */
  pageSize: number;
  deepOffset: number;
  /** Every response slower than this counts as a timeout (autocannon's timeout): generous, list-deep is slow. */
  timeoutSeconds: number;
  /** How often the server's resident memory is sampled during a measurement. */
  rssSampleMs: number;
  /** Profile at the end of the run: rowbase under `node --cpu-prof`, one run per workload. */
  profile: boolean;
  /** The workloads profiled, besides every rowbase workload that missed its target. */
  profileWorkloads: string[];
  /** Seconds of each profiled run, after a warm-up of `warmupSeconds`. */
  profileSeconds: number;
  /** Grace for any child process to stop after SIGTERM before it is killed. */
  stopGraceMs: number;
}

const full: Settings = {
  mode: 'full',
  rows: 100_000,
  batchSize: 1000,
  connections: 10,
  warmupSeconds: 1,
  durationSeconds: 5,
  rounds: 3,
  pageSize: 50,
  deepOffset: 90_000,
  timeoutSeconds: 30,
  rssSampleMs: 100,
  profile: true,
  profileWorkloads: ['get-row', 'list'],
  profileSeconds: 8,
  stopGraceMs: 5000,
};

const quick: Settings = { ...full, mode: 'quick', durationSeconds: 2, rounds: 1, profile: false };

export function settingsFromArgs(args: string[]): Settings {
  const unknown = args.filter((arg) => arg !== '--quick');
  if (unknown.length > 0) throw new Error(`unknown argument ${unknown[0]}; usage: npm run bench [-- --quick]`);
  return args.includes('--quick') ? quick : full;
}
