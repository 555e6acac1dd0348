// cascade-1000's client (issue 54): `node --import tsx bench/cascade.ts '<CascadeJob as JSON>'`. One
// client, one request at a time: it inserts a row of `parents`, then `naming` rows of `children` that
// name it (one insert), then deletes the parent, whose relation's `cascade` deletes the children in the
// same request; the delete alone is timed. Over and over for `durationSeconds` after `warmupSeconds` of
// the same. Prints one JSON line: Measured, the deletes as its requests, the rows they deleted as its
// rows, the deletes' latencies as its p50 and p99 (its seconds hold the inserts too); a delete that is
// not a 204, or that leaves a child behind, counts as a failure.
import { Agent, request } from 'undici';
import { measuredOf, monotonicUs } from './measure.ts';

export interface CascadeJob {
  url: string;
  key: string;
  parents: string;
  children: string;
  /** Rows of `children` naming each parent. */
  naming: number;
  warmupSeconds: number;
  durationSeconds: number;
  timeoutSeconds: number;
}

const job: CascadeJob = JSON.parse(process.argv[2]);
const dispatcher = new Agent({ connections: 1, headersTimeout: job.timeoutSeconds * 1000, bodyTimeout: job.timeoutSeconds * 1000 });
const headers = { authorization: `Bearer ${job.key}`, 'content-type': 'application/json' };
const statusCodes: Record<string, number> = {};
let failures = 0;

const warmUntil = performance.now() + job.warmupSeconds * 1000;
while (performance.now() < warmUntil) await deleteOne(() => {});

const latencies: number[] = [];
const started = monotonicUs();
const until = performance.now() + job.durationSeconds * 1000;
do await deleteOne((ms) => latencies.push(ms));
while (performance.now() < until);
const finished = monotonicUs();
await dispatcher.close();

const measured = measuredOf(latencies, latencies.length * (job.naming + 1), [started, finished], failures, statusCodes);
process.stdout.write(`${JSON.stringify(measured)}\n`);

/** A parent and its `naming` children inserted, then the parent deleted, the delete's latency to `timed`. */
async function deleteOne(timed: (ms: number) => void): Promise<void> {
  const [parent] = (await send('POST', `/v1/collections/${job.parents}/rows`, [{ name: 'parent' }])) as { id: number }[];
  const children = Array.from({ length: job.naming }, (_, i) => ({ parent_id: parent.id, text: `child ${i + 1}` }));
  await send('POST', `/v1/collections/${job.children}/rows`, children);
  const before = performance.now();
  const { statusCode, body } = await request(`${job.url}/v1/collections/${job.parents}/rows/${parent.id}`, {
    dispatcher,
    method: 'DELETE',
    headers,
  });
  await body.text();
  timed(performance.now() - before);
  statusCodes[statusCode] = (statusCodes[statusCode] ?? 0) + 1;
  if (statusCode !== 204) failures++;
  const filter = encodeURIComponent(JSON.stringify({ parent_id: parent.id }));
  const left = (await send('GET', `/v1/collections/${job.children}/rows?filter=${filter}&limit=1`)) as unknown[];
  if (left.length > 0) failures++;
}

/** One request of the setup or the check: its answer's JSON; anything but a 2xx stops the client. */
async function send(method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
  const { statusCode, body: answer } = await request(`${job.url}${path}`, {
    dispatcher,
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await answer.text();
  if (statusCode < 200 || statusCode >= 300) throw new Error(`cascade: ${method} ${path} answered ${statusCode}: ${text}`);
  return JSON.parse(text);
}
