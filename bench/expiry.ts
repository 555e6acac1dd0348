// The expiry workloads' client (issue 65, docs/expiry.md): `node --import tsx bench/expiry.ts '<ExpiryJob as JSON>'`.
// Two collections of `rows` rows alike, one without a time to live and one whose every tenth row expires,
// those spread over `spreadSeconds` from an instant after the seeding. Over that minute, windows of
// `windowSeconds` take turns: get-row and list of the one, then of the other (the other first in the next
// turn), each of `connections` requests in flight, so that each pair is measured side by side as rows
// expire and the sweeper deletes them. Then the sweeper's rate: `burstRows` rows of a third collection, all past their
// time, expire at once as its time to live is set, and get-row's latency (of the collection without) is
// measured before and while they are swept. Prints one JSON line: Measured, the burst's deletions as its
// rows and requests, get-row's p50 and p99 during the sweep as its own, and `expiry` (ExpiryMeasured).
import { Agent, request } from 'undici';
import { type ExpiryMeasured, measuredOf, monotonicUs, percentile } from './measure.ts';
import { benchRow } from './seed.ts';

export interface ExpiryJob {
  url: string;
  key: string;
  /** The names of the three collections: without a time to live, with one, and the burst's. */
  plain: string;
  expiring: string;
  burst: string;
  rows: number;
  /** Every `expiringEvery`-th row of `expiring` expires: 10 for a tenth. */
  expiringEvery: number;
  spreadSeconds: number;
  windowSeconds: number;
  connections: number;
  batchSize: number;
  pageSize: number;
  burstRows: number;
  timeoutSeconds: number;
}

const job: ExpiryJob = JSON.parse(process.argv[2]);
const dispatcher = new Agent({
  connections: job.connections + 2,
  headersTimeout: job.timeoutSeconds * 1000,
  bodyTimeout: job.timeoutSeconds * 1000,
});
/**
 * The setup's requests (a million rows' inserts, a sort index made, a time to live set over 100,000
 * rows) each wait as long as they take: the measured reads have the run's timeout.
 */
const setup = new Agent({ connections: 4, headersTimeout: 0, bodyTimeout: 0 });
const headers = { authorization: `Bearer ${job.key}`, 'content-type': 'application/json' };
const statusCodes: Record<string, number> = {};
let failures = 0;
const say = (line: string) => process.stderr.write(`expiry: ${line}\n`);

// The collection without a time to live first: its seeding's time says when the other's will end. The
// first page by score makes each one's sort index (as list's collection has one).
let started = performance.now();
await fill(job.plain, true, (id) => benchRow(id));
await send('GET', listPath(job.plain, 1));
const seedSeconds = (performance.now() - started) / 1000;
await send('POST', '/v1/collections', { name: job.expiring });
await send('PUT', `/v1/collections/${job.expiring}/ttl`, { field: 'expires_at' });
const expiringRows = Math.floor(job.rows / job.expiringEvery);
const firstExpiry = Date.now() + (1.5 * seedSeconds + 10) * 1000;
const expiryOf = (id: number) => firstExpiry + ((id / job.expiringEvery - 1) / expiringRows) * job.spreadSeconds * 1000;
started = performance.now();
await fill(job.expiring, false, (id) =>
  id % job.expiringEvery === 0 ? { ...benchRow(id), expires_at: new Date(expiryOf(id)).toISOString() } : benchRow(id),
);
await send('GET', listPath(job.expiring, 1));
say(
  `seeded ${job.rows} rows twice, and their sort indexes, in ${seedSeconds.toFixed(1)} s and ${((performance.now() - started) / 1000).toFixed(1)} s`,
);
const expiredBefore =
  Date.now() > firstExpiry
    ? Math.min(expiringRows, Math.ceil(((Date.now() - firstExpiry) / (job.spreadSeconds * 1000)) * expiringRows))
    : 0;
/** The twins in the order of `turn`: `first`, then the other, in even turns; the other way in odd ones. */
const inTurn = (turn: number, first: 'plain' | 'expiring') => {
  const second = first === 'plain' ? 'expiring' : 'plain';
  return turn % 2 === 0 ? ([first, second] as const) : ([second, first] as const);
};
const rowPath = (name: string) => () => `/v1/collections/${name}/rows/${1 + Math.floor(Math.random() * job.rows)}`;
// Until the first row expires, both twins are read in turns, uncounted: the reads measured next find each
// one's pages as warm as the other's (the expiring twin, seeded last, was read less than the plain one).
const warmSeconds = Math.min(job.windowSeconds, 2);
for (let turn = 0; Date.now() + 4 * warmSeconds * 1000 <= firstExpiry; turn++) {
  for (const twin of inTurn(turn, 'plain')) {
    await rate(rowPath(job[twin]), false, warmSeconds);
    await rate(() => listPath(job[twin]), false, warmSeconds);
  }
}
if (Date.now() < firstExpiry) await new Promise((resolve) => setTimeout(resolve, firstExpiry - Date.now()));

// The minute over which a tenth of the rows expire: get-row and list of each, side by side, in turns. A
// turn reads one collection (get-row, then list), then the other, the one first in a turn second in the
// next, so that neither twin always follows the seeding or the other's reads. And the sweeper's passes,
// which come every 10 s (ROWBASE_EXPIRY_SWEEP_MS's default) and cost the reads beside them whichever
// collection they read, fall two windows apart, into both twins of one read: with the twins in adjacent
// windows every pass of a run fell into the same twin's windows, whichever the run's start made it.
const reads = { getRow: { expiring: [] as number[], plain: [] as number[] }, list: { expiring: [] as number[], plain: [] as number[] } };
const spreadEnd = firstExpiry + job.spreadSeconds * 1000;
for (let turn = 0; Date.now() + 4 * job.windowSeconds * 1000 <= spreadEnd + job.windowSeconds * 1000; turn++) {
  for (const twin of inTurn(turn, 'expiring')) {
    reads.getRow[twin].push(await rate(rowPath(job[twin]), twin === 'expiring'));
    reads.list[twin].push(await rate(() => listPath(job[twin]), false));
  }
}
const swept = await sweptBy(job.expiring, job.rows + expiringRows, spreadEnd + 120_000);

// The burst: its rows stored past their time while the collection has no time to live, then expired at once.
await fill(job.burst, true, (id) => ({ ...benchRow(id), expires_at: '2001-01-01T00:00:00Z' }), job.burstRows);
const quietEnd = performance.now() + job.windowSeconds * 1000;
const quiet = await latencies(rowPath(job.plain), () => performance.now() >= quietEnd, []);
const before = await seqOf(job.burst);
await send('PUT', `/v1/collections/${job.burst}/ttl`, { field: 'expires_at' });
// get-row's latencies while the sweeper deletes them: from the first delete seen to the last.
const during: number[] = [];
let sweeping = true;
let reader: Promise<number[]> | undefined;
const sweep = await sweepRate(job.burst, before, job.burstRows, () => {
  reader = latencies(rowPath(job.plain), () => !sweeping, during);
});
sweeping = false;
await reader;
await dispatcher.close();
await setup.close();

const expiry: ExpiryMeasured = {
  rows: job.rows,
  expiringRows,
  expiredBeforeMeasuring: expiredBefore,
  getRowRatio: ratio(reads.getRow),
  listRatio: ratio(reads.list),
  getRowRatios: reads.getRow.expiring.map((rate, i) => rate / reads.getRow.plain[i]),
  listRatios: reads.list.expiring.map((rate, i) => rate / reads.list.plain[i]),
  sweptInTime: swept,
  burstRows: job.burstRows,
  deletionsPerSecond: sweep.perSecond,
  getRowP99QuietMs: percentile(
    [...quiet].sort((a, b) => a - b),
    0.99,
  ),
  getRowP99SweepingMs: percentile(
    [...during].sort((a, b) => a - b),
    0.99,
  ),
};
const measured = measuredOf(during, sweep.deleted, sweep.window, failures, statusCodes);
process.stdout.write(`${JSON.stringify({ ...measured, requests: sweep.deleted, expiry })}\n`);

/** Get-row's or list's rate: the summed rates of each window's expiring and plain reads. */
function ratio({ expiring, plain }: { expiring: number[]; plain: number[] }): number {
  return expiring.reduce((a, b) => a + b, 0) / plain.reduce((a, b) => a + b, 0);
}

/** A page of list: `limit` rows (default `pageSize`) by score, highest first. */
function listPath(name: string, limit = job.pageSize): string {
  return `/v1/collections/${name}/rows?limit=${limit}&order_by=score&order=desc`;
}

/** Answers a second of `path()` over one window (`seconds` long), `connections` in flight; `gone` allows a 404 (an expired row). */
async function rate(path: () => string, gone: boolean, seconds = job.windowSeconds): Promise<number> {
  let answered = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: job.connections }, async () => {
      while (performance.now() < end) {
        const status = await get(path());
        if (status === 200 || (gone && status === 404)) answered++;
        else failures++;
      }
    }),
  );
  return answered / seconds;
}

/** get-row's latencies (ms), `connections` in flight, pushed to `into` until `done()` holds. */
async function latencies(path: () => string, done: () => boolean, into: number[]): Promise<number[]> {
  await Promise.all(
    Array.from({ length: job.connections }, async () => {
      while (!done()) {
        const before = performance.now();
        const status = await get(path());
        if (status === 200) into.push(performance.now() - before);
        else failures++;
      }
    }),
  );
  return into;
}

/** Whether the collection's seq reached `seq` (every expired row's delete written) before `deadline`, read every 50 ms. */
async function sweptBy(name: string, seq: number, deadline: number): Promise<boolean> {
  while (Date.now() < deadline) {
    if ((await seqOf(name)) >= seq) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

/**
 * The sweeper's rate over the burst: from the first delete seen (the collection's seq past `seq`; then
 * `begun()`) to the last (`rows` past it), the seq read every 20 ms; the deletes already made when the
 * first was seen are not counted.
 */
async function sweepRate(
  name: string,
  seq: number,
  rows: number,
  begun: () => void,
): Promise<{ perSecond: number; deleted: number; window: [number, number] }> {
  let first: { at: number; us: number; seq: number } | undefined;
  for (;;) {
    const now = await seqOf(name);
    if (first === undefined && now > seq) {
      first = { at: performance.now(), us: monotonicUs(), seq: now };
      begun();
    }
    if (now >= seq + rows) {
      const from = first as { at: number; us: number; seq: number };
      const deleted = seq + rows - from.seq;
      const seconds = (performance.now() - from.at) / 1000;
      return { perSecond: seconds > 0 ? deleted / seconds : Number.NaN, deleted, window: [from.us, monotonicUs()] };
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function seqOf(name: string): Promise<number> {
  return ((await send('GET', `/v1/collections/${name}`)) as { seq: number }).seq;
}

/** Fills `name` (made first when `create`) with `rows` rows of `rowOf`, `batchSize` a request, two under way (as seed.ts fills). */
async function fill(name: string, create: boolean, rowOf: (id: number) => object, rows = job.rows): Promise<void> {
  if (create) await send('POST', '/v1/collections', { name });
  const firsts = Array.from({ length: Math.ceil(rows / job.batchSize) }, (_, i) => 1 + i * job.batchSize);
  const insertNext = async () => {
    for (let first = firsts.shift(); first !== undefined; first = firsts.shift()) {
      const count = Math.min(job.batchSize, rows - first + 1);
      await send(
        'POST',
        `/v1/collections/${name}/rows`,
        Array.from({ length: count }, (_, i) => rowOf(first + i)),
      );
    }
  };
  await Promise.all([insertNext(), insertNext()]);
}

async function get(path: string): Promise<number> {
  const { statusCode, body } = await request(`${job.url}${path}`, { dispatcher, method: 'GET', headers });
  await body.arrayBuffer();
  statusCodes[statusCode] = (statusCodes[statusCode] ?? 0) + 1;
  return statusCode;
}

/** One request of the setup: its answer's JSON (none for a 204); anything but a 2xx stops the client. */
async function send(method: string, path: string, body?: unknown): Promise<unknown> {
  const { statusCode, body: answer } = await request(`${job.url}${path}`, {
    dispatcher: setup,
    method: method as 'GET',
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await answer.text();
  if (statusCode < 200 || statusCode >= 300) throw new Error(`expiry: ${method} ${path} answered ${statusCode}: ${text}`);
  return statusCode === 204 ? undefined : JSON.parse(text);
}
