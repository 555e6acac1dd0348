// fanout's writer: `node --import tsx bench/writer.ts '<WriterJob as JSON>'`. Inserts one row per
// request, one request at a time, at a steady `rate` a second: for `warmupSeconds` (not counted), then
// for `durationSeconds`. Prints one JSON line: Measured (the requests' own latency), plus the id of
// every row inserted in the measured window, the row, and the time its 201 came, on the monotonic clock
// that the subscriber processes read too.
import { type Measured, measuredOf, monotonicUs } from './measure.ts';
import { benchRow, fanoutTeam } from './seed.ts';

export interface WriterJob {
  url: string;
  key: string;
  collection: string;
  /** Requests a second; a request slower than 1/rate delays the next, and the rate achieved is reported. */
  rate: number;
  warmupSeconds: number;
  durationSeconds: number;
  timeoutSeconds: number;
  /** fanout-rules: each row with its team (seed.ts, fanoutTeam), which the collection's rule reads. */
  teams?: boolean;
}

export interface Written extends Measured {
  ids: number[];
  /** Each row as stored: fanout-filtered's subscribers tell from it whether it is due to them. */
  stored: Record<string, unknown>[];
  sentUs: number[];
  /** Inserts in all, the warm-up's too. */
  inserts: number;
}

const job: WriterJob = JSON.parse(process.argv[2]);
const endpoint = `${job.url}/v1/collections/${job.collection}/rows`;
const headers = { authorization: `Bearer ${job.key}`, 'content-type': 'application/json' };
const intervalMs = 1000 / job.rate;
let statusCodes: Record<string, number> = {};
let failures = 0;
let inserts = 0;

await paced(job.warmupSeconds, () => {});
// The warm-up's answers are not counted.
statusCodes = {};
failures = 0;

const ids: number[] = [];
const stored: Record<string, unknown>[] = [];
const sentUs: number[] = [];
const latencies: number[] = [];
const started = monotonicUs();
await paced(job.durationSeconds, (row, atUs, ms) => {
  ids.push(row.id as number);
  stored.push(row);
  sentUs.push(atUs);
  latencies.push(ms);
});
const finished = monotonicUs();

const written: Written = {
  ...measuredOf(latencies, ids.length, [started, finished], failures, statusCodes),
  ids,
  stored,
  sentUs,
  inserts,
};
process.stdout.write(`${JSON.stringify(written)}\n`);

/** One insert every 1/rate seconds for `seconds`; `inserted` gets each stored row, its 201's time and the request's latency. */
async function paced(seconds: number, inserted: (row: Record<string, unknown>, atUs: number, ms: number) => void): Promise<void> {
  const start = performance.now();
  for (let i = 0; i < seconds * job.rate; i++) {
    const wait = start + i * intervalMs - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const before = monotonicUs();
    const response = await fetch(endpoint, {
      method: 'POST',
      headers,
      body: JSON.stringify([job.teams ? { ...benchRow(i + 1), team: fanoutTeam(i + 1) } : benchRow(i + 1)]),
      signal: AbortSignal.timeout(job.timeoutSeconds * 1000),
    });
    const atUs = monotonicUs();
    inserts++;
    statusCodes[response.status] = (statusCodes[response.status] ?? 0) + 1;
    const body = await response.json();
    if (response.status !== 201) {
      failures++;
      continue;
    }
    inserted(body[0], atUs, (atUs - before) / 1000);
  }
}
