// One measurement's load generator, in a process of its own so that it competes with no server for an
// event loop: `node --import tsx bench/load.ts '<LoadJob as JSON>'`. It warms up, measures, and prints
// one JSON line (Measured). Latencies are taken from every 2xx answer, to the microsecond.
import autocannon, { type Instance, type Options, type Result } from 'autocannon';
import { type Measured, monotonicUs, percentile } from './measure.ts';
import { collections } from './seed.ts';
import { authHeaders, httpWorkloads, type LoadJob } from './workloads.ts';

const job: LoadJob = JSON.parse(process.argv[2]);
const workload = httpWorkloads[job.workload];
if (!workload) throw new Error(`no workload ${job.workload}`);
const { settings } = job;

const options: Options = {
  url: job.url,
  connections: workload.connections ?? settings.connections,
  pipelining: 1,
  timeout: settings.timeoutSeconds,
  requests: await workload.requests(job),
};

const warmupSeconds = workload.warmupSeconds ?? settings.warmupSeconds;
const durationSeconds = workload.durationSeconds ?? settings.durationSeconds;
if (warmupSeconds > 0) {
  // autocannon stops at its next sample, every sampleInt ms (1,000 by default): half a second of
  // warm-up would last a whole one.
  await autocannon({ ...options, duration: warmupSeconds, sampleInt: 100 });
  await drained();
}

const latencies: number[] = [];
const statusCodes: Record<string, number> = {};
const started = monotonicUs();
const cpuAtStart = process.cpuUsage();
// Without a callback autocannon answers its emitter made thenable; its types know only the promise.
const instance = autocannon({ ...options, duration: durationSeconds }) as unknown as Instance & PromiseLike<Result>;
instance.on('response', (_client, statusCode: number, _bytes, responseTimeMs: number) => {
  statusCodes[statusCode] = (statusCodes[statusCode] ?? 0) + 1;
  if (statusCode >= 200 && statusCode < 300) latencies.push(responseTimeMs);
});
const result = await instance;
const finished = monotonicUs();
const cpu = process.cpuUsage(cpuAtStart);

latencies.sort((a, b) => a - b);
const measured: Measured = {
  requests: latencies.length,
  rows: latencies.length * workload.rowsPerRequest(settings),
  seconds: (finished - started) / 1e6,
  p50Ms: percentile(latencies, 0.5),
  p99Ms: percentile(latencies, 0.99),
  failures: result.errors + result.non2xx, // errors include timeouts
  statusCodes,
  windowUs: [started, finished],
  loadCpuUsPerRequest: (cpu.user + cpu.system) / Math.max(1, result.requests.total),
};
process.stdout.write(`${JSON.stringify(measured)}\n`);

/**
 * autocannon stops without waiting for the answers under way, and the server still works through
 * them: one request more, queued behind them, answers when they are done, so that the warm-up's
 * leftovers do not eat into the measured window. Every server answers GET of row 1, to the bench user too.
 */
async function drained(): Promise<void> {
  const response = await fetch(`${job.url}/v1/collections/${collections.rows}/rows/1`, {
    headers: authHeaders(job),
    signal: AbortSignal.timeout(settings.timeoutSeconds * 1000),
  });
  await response.arrayBuffer();
}
