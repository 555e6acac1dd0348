// changes-catch-up's client (issue 56): `node --import tsx bench/catch-up.ts '<CatchUpJob as JSON>'`. One
// client catching up a collection's log over plain HTTP as a nightly job would: GET …/changes from
// since=0, `limit` a page, each page from the last one's next_since, until caught_up; walk after walk
// for `durationSeconds` after `warmupSeconds` of the same (the last walk finishes, so at least one is
// measured whole). Prints one JSON line: Measured, the changes read as its rows, the pages as its
// requests, their latencies as its p50 and p99; a walk that does not read every change of the log, each
// once and in order, counts as a failure.
import { Agent, request } from 'undici';
import { measuredOf, monotonicUs } from './measure.ts';

export interface CatchUpJob {
  url: string;
  key: string;
  collection: string;
  /** The changes the log holds: a walk reads seqs 1..changes. */
  changes: number;
  limit: number;
  warmupSeconds: number;
  durationSeconds: number;
  timeoutSeconds: number;
}

const job: CatchUpJob = JSON.parse(process.argv[2]);
const dispatcher = new Agent({ connections: 1, headersTimeout: job.timeoutSeconds * 1000, bodyTimeout: job.timeoutSeconds * 1000 });
const headers = { authorization: `Bearer ${job.key}` };
const statusCodes: Record<string, number> = {};
let failures = 0;

const warmUntil = performance.now() + job.warmupSeconds * 1000;
while (performance.now() < warmUntil) await walk(() => {});

const latencies: number[] = [];
let changes = 0;
const started = monotonicUs();
const until = performance.now() + job.durationSeconds * 1000;
do changes += await walk((ms) => latencies.push(ms));
while (performance.now() < until);
const finished = monotonicUs();
await dispatcher.close();

const measured = measuredOf(latencies, changes, [started, finished], failures, statusCodes);
process.stdout.write(`${JSON.stringify(measured)}\n`);

/** One walk of the whole log, each page's latency to `paged`: the changes it read. */
async function walk(paged: (ms: number) => void): Promise<number> {
  let since = 0;
  let read = 0;
  for (;;) {
    const before = performance.now();
    const { statusCode, body } = await request(`${job.url}/v1/collections/${job.collection}/changes?since=${since}&limit=${job.limit}`, {
      dispatcher,
      headers,
    });
    const text = await body.text();
    paged(performance.now() - before);
    statusCodes[statusCode] = (statusCodes[statusCode] ?? 0) + 1;
    if (statusCode !== 200) {
      failures++;
      return read;
    }
    const page = JSON.parse(text) as { changes: { type: string; seq: number }[]; next_since: number; caught_up: boolean };
    if (page.changes.some((change, i) => change.seq !== since + 1 + i)) failures++;
    read += page.changes.length;
    since = page.next_since;
    if (page.caught_up) break;
  }
  if (read !== job.changes || since !== job.changes) failures++;
  return read;
}
