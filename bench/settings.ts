// Every bound of a benchmark run in one place: what `npm run bench` does, and what BENCHMARKS.md prints
// as "Settings". `--quick` keeps the data and the workloads, shortens the measurements and opens fewer
// idle sockets.

export interface Settings {
  mode: 'full' | 'quick';
  /** Rows seeded into the `bench` collection, and the ids get-row and patch pick from (1..rows). */
  rows: number;
  /**
   * Rows of the `million` collection, on a rowbase of its own (a copy of the seeded file with it added):
   * the filtered pages and the long cursor walk (issue 25, "Speed and size").
   */
  millionRows: number;
  /**
   * Answers of Idempotency-Keys the `bench` account holds before a keyed insert is measured, as a service in
   * use keeps its clients' keys for a day: a key costs more the more keys are kept (docs/performance.md),
   * so insert-1-idempotent is measured against as many, not against an empty index.
   */
  answersKept: number;
  /** Rows per seeding request, and per insert-batch request (rowbase's largest batch). */
  batchSize: number;
  /** Operations of batch-100's batches (POST /v1/batch, each a single-row insert), and rows of insert-100's inserts. */
  batchOperations: number;
  /**
   * Open connections of the load generator, for every HTTP workload. Each keeps one request in flight,
   * so a workload that takes t seconds a request, one at a time, answers in about connections × t.
   * 64: enough that each server answers as many requests as it can, where 10 measured rowbase's
   * latency instead. Baseline (a) answers as many at 10 connections as at 64 (the load generator is
   * what holds it back), but rowbase and the bare driver servers hand work between threads and group
   * writes, and at 10 connections their cores were a third idle (BENCHMARKS.md).
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
  /** The longest a workload's client may run: one still running then is killed, and the run fails. */
  workloadLimitSeconds: number;
  /**
   * fanout: WebSocket subscribers of one collection, spread over `fanoutProcesses` client processes,
   * and the writer's steady rate of one-row inserts a second (for `durationSeconds` after `warmupSeconds`).
   */
  fanoutSubscribers: number;
  fanoutProcesses: number;
  fanoutRate: number;
  /** fanout: how long the subscribers wait, after the writer's last 201, for messages still on their way. */
  feedDrainSeconds: number;
  /**
   * idle-sockets: subscribers held open on a server of their own, spread over `idleProcesses` client
   * processes, each on a collection of its own; their server's RSS is sampled for `idleHoldSeconds`
   * once every socket has its `ready`. Measured once per run, in the last round.
   */
  idleSubscribers: number;
  idleProcesses: number;
  idleHoldSeconds: number;
  /**
   * idle-server (issue 63): how long the service, started on an empty database with one collection, is left
   * with nothing to do before its memory is read. The target is for 30 s; a run with less (--quick) reports.
   */
  idleServerSeconds: number;
  /** Feed handshakes under way at once in each client process (opened, not yet `ready`). */
  feedConcurrency: number;
  /**
   * changes-catch-up (issue 56): the changes the log of the collection `changes` holds, on a rowbase of
   * its own that retains them all, walked from the first by pages of `changesPageSize` (GET …/changes).
   */
  changesLog: number;
  changesPageSize: number;
  /**
   * fanout-long-poll: long-polling clients of the fanout collection (`wait=30` from each answer's
   * next_since), under fanout's writer. Each change costs each of them a request: 1,000 of them at fanout's
   * 20 inserts/s would ask 20,000 requests a second of two cores (docs/performance.md). fanout-sse has
   * fanout's count of streams, and idle-streams idle-sockets' count.
   */
  longPollSubscribers: number;
  /** webhook-latency: the writer's steady rate of one-row inserts a second, each delivered to one idle receiver. */
  webhookRate: number;
  /**
   * webhook-throughput: webhooks on one collection, each to a receiver of its own, and the changes written
   * before they are enabled, each owed to every one: enough to outlast the warm-up and the measurement.
   */
  webhooks: number;
  webhookBacklog: number;
  /**
   * The related rows (issue 54): `people`, `posts` (each naming its author among them) and `comments`
   * (`commentsPerPost` of each post, naming it), on the rowbase of the write workloads and its
   * PostgreSQL twin; and the rows naming one row that cascade-1000 deletes with it, in one request.
   */
  people: number;
  posts: number;
  commentsPerPost: number;
  cascadeNaming: number;
  /**
   * Issue 65's expiry workloads (expiry.ts): the rows of each of their two collections (every tenth of
   * one expiring, spread over `expirySpreadSeconds`), the rows of the burst the sweeper's rate is
   * measured over, and the requests in flight of their reads.
   */
  expiryRows: number;
  expirySpreadSeconds: number;
  expiryBurstRows: number;
  expiryConnections: number;
  /**
   * The PostgreSQL server of the PostgreSQL workloads (get-row, list and insert-batch on PostgreSQL): the
   * run creates a database of its own there and drops it at the end. None answering: they are reported
   * as not measured. Another server:
   * ROWBASE_BENCH_POSTGRES_URL (its admin database, as postgres://user@host:port/postgres).
   */
  postgresUrl: string;
  /**
   * `--only=a,b`: measure just these workloads (with the baselines their ratios are taken to), and
   * with `--profile` profile them; nothing is written. For working on one workload; not for the record.
   */
  only?: string[];
}

const full: Settings = {
  mode: 'full',
  rows: 100_000,
  millionRows: 1_000_000,
  answersKept: 1_000_000,
  batchSize: 1000,
  batchOperations: 100,
  connections: 64,
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
  workloadLimitSeconds: 900,
  fanoutSubscribers: 1000,
  fanoutProcesses: 4,
  fanoutRate: 20,
  feedDrainSeconds: 5,
  idleSubscribers: 10_000,
  idleProcesses: 4,
  idleHoldSeconds: 2,
  idleServerSeconds: 30,
  feedConcurrency: 50,
  changesLog: 100_000,
  changesPageSize: 1000,
  longPollSubscribers: 100,
  webhookRate: 50,
  webhooks: 10,
  webhookBacklog: 5000,
  people: 1000,
  posts: 10_000,
  commentsPerPost: 10,
  cascadeNaming: 1000,
  expiryRows: 1_000_000,
  expirySpreadSeconds: 60,
  expiryBurstRows: 100_000,
  expiryConnections: 16,
  postgresUrl: process.env.ROWBASE_BENCH_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres',
};

/**
 * Shorter warm-ups and measurements, one round, no profiles, a quarter of idle-sockets' subscribers
 * (opening 10,000 takes some 15 s here) and 5 s of the idle server's nothing: their memory is then
 * reported, not judged against the targets for 10,000 and for 30 s. Half a second of warm-up is some
 * thousands of requests at 64 connections; with a second's, the run took 123 s, past its two minutes.
 */
const quick: Settings = {
  ...full,
  mode: 'quick',
  warmupSeconds: 0.5,
  durationSeconds: 2,
  rounds: 1,
  profile: false,
  idleSubscribers: 2500,
  idleServerSeconds: 5,
};

export function settingsFromArgs(args: string[]): Settings {
  const onlyArg = args.find((arg) => arg.startsWith('--only='));
  const connections = wholeNumberArg(args, '--connections');
  const rounds = wholeNumberArg(args, '--rounds');
  const known = (arg: string) => arg === '--quick' || arg === '--profile' || arg === onlyArg || /^--(connections|rounds)=/.test(arg);
  const unknown = args.filter((arg) => !known(arg));
  if (unknown.length > 0) {
    throw new Error(
      `unknown argument ${unknown[0]}; usage: npm run bench [-- --quick] [-- --only=workload,…] [-- --connections=n] [-- --rounds=n]`,
    );
  }
  const chosen = args.includes('--quick') ? quick : full;
  const settings = { ...chosen, connections: connections ?? chosen.connections, rounds: rounds ?? chosen.rounds };
  if (!onlyArg) return settings;
  const only = onlyArg.slice('--only='.length).split(',').filter(Boolean);
  const profile = args.includes('--profile');
  return {
    ...quick,
    connections: settings.connections,
    warmupSeconds: settings.warmupSeconds,
    durationSeconds: settings.durationSeconds,
    idleSubscribers: settings.idleSubscribers,
    idleServerSeconds: settings.idleServerSeconds,
    rounds: rounds ?? quick.rounds,
    only,
    profile,
    profileWorkloads: only,
  };
}

/** The value of `--name=n`, a whole number above 0, when it is given. */
function wholeNumberArg(args: string[], name: string): number | undefined {
  const arg = args.find((each) => each.startsWith(`${name}=`));
  if (!arg) return undefined;
  const value = arg.slice(name.length + 1);
  const n = Number(value);
  if (!(Number.isInteger(n) && n > 0)) throw new Error(`${name} takes a whole number above 0, not ${value}`);
  return n;
}
