// The webhook workloads (issue 45), driven from run.ts beside the feed's, each on a rowbase of its own
// (SQLite, and PostgreSQL on a database of its own) with ROWBASE_WEBHOOKS_ALLOW_PRIVATE=on: its receivers
// listen on 127.0.0.1, in a client process of their own (receivers.ts), and nothing else is ever sent to.
//
// webhook-latency: one webhook to an idle receiver, and one feed socket (subscribers.ts) on the same
//   collection; the writer (writer.ts) inserts one row a request at `webhookRate` a second. The latency of
//   a delivery is the time the receiver read its POST − the time the writer got its 201, as fanout's is
//   to the socket, on the monotonic clock every process shares; the socket's, of the same writes, is
//   measured beside it. Every write must arrive, once.
// webhook-throughput: `webhooks` webhooks, each to a receiver of its own, on one collection, disabled
//   while `webhookBacklog` changes are written, then enabled together: each owes every change. From the
//   first delivery, after the warm-up, the deliveries of `durationSeconds` are counted, with rowbase's
//   CPU time in that window. No change may arrive twice or out of seq order.
// Each measurement deletes its webhooks at its end: the worker of a service without webhooks does nothing.

import { startClients } from './feed.ts';
import { histogramOf, histogramPercentile, type Measured, milliseconds, percentile } from './measure.ts';
import { jsonLines, outputOf, type Started, sampleCpu, sampleRss, spawnNode, stop } from './processes.ts';
import type { ReceiversJob } from './receivers.ts';
import type { Measurement } from './report.ts';
import { batchOf, send } from './seed.ts';
import type { Settings } from './settings.ts';
import type { WriterJob, Written } from './writer.ts';

export const webhookCollections = { latency: 'webhook-latency', throughput: 'webhook-throughput' } as const;
/** The webhook workloads, on SQLite and on PostgreSQL. */
export const webhookWorkloads = ['webhook-latency', 'webhook-throughput', 'webhook-latency-postgres', 'webhook-throughput-postgres'];

/** A child process's answers have no deadline of their own beyond this. */
const answerTimeoutMs = 10 * 60 * 1000;

type WebhookMeasurement = Pick<Measurement, 'measured' | 'peakRssKb' | 'cpu'>;

/** webhook-latency or webhook-throughput (on either backend), once, on `server`. */
export function measureWebhooks(
  server: Started,
  key: string,
  settings: Settings,
  workload: string,
  durationSeconds = settings.durationSeconds,
): Promise<WebhookMeasurement> {
  const measure = workload.startsWith('webhook-latency') ? measureLatency : measureThroughput;
  return measure(server, key, settings, durationSeconds);
}

async function measureLatency(server: Started, key: string, settings: Settings, durationSeconds: number): Promise<WebhookMeasurement> {
  const collection = webhookCollections.latency;
  const rss = sampleRss(server.pid, settings.rssSampleMs);
  const receivers = startReceivers(1);
  const [socket] = startClients(server, key, settings, [1], () => collection);
  const made: number[] = [];
  try {
    const [{ urls }] = await Promise.all([receivers.lines.next('ready', answerTimeoutMs), socket.lines.next('ready', answerTimeoutMs)]);
    made.push(await makeWebhook(server, key, (urls as string[])[0], collection));
    // One change delivered before the writer starts: the worker listens (it looks for webhooks every second).
    await send(server.url, key, 'POST', `/v1/collections/${collection}/rows`, batchOf(1, 1));
    await receivers.lines.next('first', answerTimeoutMs);
    const writerJob: WriterJob = {
      url: server.url,
      key,
      collection,
      rate: settings.webhookRate,
      warmupSeconds: Math.max(1, settings.warmupSeconds),
      durationSeconds,
      timeoutSeconds: settings.timeoutSeconds,
    };
    const written: Written = JSON.parse(await outputOf(spawnNode('bench/writer.ts', [JSON.stringify(writerJob)])));
    const deliveries = { ids: written.ids, rows: written.stored, sentUs: written.sentUs };
    const drainMs = settings.feedDrainSeconds * 1000;
    receivers.child.stdin!.write(`${JSON.stringify({ deliveries, drainMs })}\n`);
    socket.child.stdin!.end(`${JSON.stringify({ deliveries, drainMs })}\n`);
    const [received, heard] = await Promise.all([
      receivers.lines.next('done', drainMs + answerTimeoutMs),
      socket.lines.next('done', drainMs + answerTimeoutMs),
    ]);
    const latenciesUs = (received.latenciesUs as number[]).sort((a, b) => a - b);
    const measured: Measured = {
      requests: written.requests,
      rows: Number(received.delivered),
      seconds: written.seconds,
      p50Ms: percentile(latenciesUs, 0.5) / 1000,
      p99Ms: percentile(latenciesUs, 0.99) / 1000,
      failures: written.failures,
      statusCodes: written.statusCodes,
      windowUs: written.windowUs,
      webhooks: {
        webhooks: 1,
        collections: 1,
        expected: Number(received.expected),
        delivered: Number(received.delivered),
        duplicates: Number(received.duplicates),
        outOfOrder: Number(received.outOfOrder),
        latencyHistogram: histogramOf(latenciesUs),
        feedLatencyHistogram: histogramOf(heard.latenciesUs as number[]),
      },
    };
    return { measured, peakRssKb: rss.done() };
  } finally {
    rss.done();
    await deleteWebhooks(server, key, made);
    await Promise.all([receivers.end(settings.stopGraceMs), socket.end(settings.stopGraceMs)]);
  }
}

async function measureThroughput(server: Started, key: string, settings: Settings, durationSeconds: number): Promise<WebhookMeasurement> {
  const collection = webhookCollections.throughput;
  const receivers = startReceivers(settings.webhooks);
  const made: number[] = [];
  try {
    const { urls } = await receivers.lines.next('ready', answerTimeoutMs);
    for (const url of urls as string[]) {
      const id = await makeWebhook(server, key, url, collection);
      made.push(id);
      await send(server.url, key, 'PATCH', `/v1/webhooks/${id}`, { enabled: false });
    }
    for (let first = 1; first <= settings.webhookBacklog; first += settings.batchSize) {
      const rows = batchOf(first, Math.min(settings.batchSize, settings.webhookBacklog - first + 1));
      await send(server.url, key, 'POST', `/v1/collections/${collection}/rows`, rows);
    }
    const rss = sampleRss(server.pid, settings.rssSampleMs);
    const cpu = sampleCpu(server.pid, settings.rssSampleMs);
    await Promise.all(made.map((id) => send(server.url, key, 'PATCH', `/v1/webhooks/${id}`, { enabled: true })));
    const window = {
      warmupMs: settings.warmupSeconds * 1000,
      durationMs: durationSeconds * 1000,
      expected: made.length * settings.webhookBacklog,
    };
    receivers.child.stdin!.write(`${JSON.stringify({ window })}\n`);
    await receivers.lines.next('first', answerTimeoutMs);
    const done = await receivers.lines.next('done', window.warmupMs + window.durationMs + answerTimeoutMs);
    const windowUs = done.windowUs as [number, number];
    const delivered = Number(done.delivered);
    const used = cpu.done(windowUs);
    const measured: Measured = {
      requests: delivered,
      rows: delivered,
      seconds: (windowUs[1] - windowUs[0]) / 1e6,
      p50Ms: Number.NaN,
      p99Ms: Number.NaN,
      failures: 0,
      statusCodes: {},
      windowUs,
      webhooks: {
        webhooks: made.length,
        collections: 1,
        expected: window.expected,
        delivered,
        duplicates: Number(done.duplicates),
        outOfOrder: Number(done.outOfOrder),
        drained: Boolean(done.drained),
      },
    };
    const perDelivery = (us: number) => us / delivered;
    return {
      measured,
      peakRssKb: rss.done(),
      cpu: {
        mainUsPerRequest: perDelivery(used.mainUs),
        processUsPerRequest: perDelivery(used.processUs),
        mainBusy: used.busy,
        mainWaiting: used.waiting,
      },
    };
  } finally {
    await deleteWebhooks(server, key, made);
    await receivers.end(settings.stopGraceMs);
  }
}

/** The receivers' process (receivers.ts): `receivers` servers on 127.0.0.1. */
function startReceivers(receivers: number) {
  const job: ReceiversJob = { receivers };
  const child = spawnNode('bench/receivers.ts', [JSON.stringify(job)], {}, [], { stdin: true });
  child.stdin!.on('error', () => {}); // it may be gone already when told to stop
  const lines = jsonLines(child);
  /** It leaves by itself once its stdin closes; if not within `graceMs`, it is stopped. */
  const end = async (graceMs: number) => {
    child.stdin!.end();
    const timer = setTimeout(() => void stop(child, graceMs), graceMs);
    if (child.exitCode === null && child.signalCode === null) await new Promise((resolve) => child.once('exit', resolve));
    clearTimeout(timer);
  };
  return { child, lines, end };
}

async function makeWebhook(server: Started, key: string, url: string, collection: string): Promise<number> {
  const made = (await send(server.url, key, 'POST', '/v1/webhooks', { url, collections: [collection] })) as { id: number };
  return made.id;
}

/** Deletes the measurement's webhooks (their streams and delivery logs with them). */
async function deleteWebhooks(server: Started, key: string, ids: number[]): Promise<void> {
  for (const id of ids) await send(server.url, key, 'DELETE', `/v1/webhooks/${id}`, undefined);
}

/** A webhook measurement in a line, as run.ts reports each: its latency beside the feed socket's, or its deliveries. */
export function webhooksLine({ p50Ms, p99Ms, rows, seconds, webhooks }: Measured): string {
  if (!webhooks) return '';
  const { expected, delivered, duplicates, outOfOrder, feedLatencyHistogram, drained } = webhooks;
  const wrong = `${duplicates ? `, ${duplicates} twice` : ''}${outOfOrder ? `, ${outOfOrder} out of order` : ''}`;
  if (feedLatencyHistogram) {
    const feed = (p: number) => milliseconds(histogramPercentile(feedLatencyHistogram, p));
    return (
      `delivery p50 ${milliseconds(p50Ms)} ms  p99 ${milliseconds(p99Ms)} ms (the feed socket beside it: p50 ${feed(0.5)} ms, p99 ${feed(0.99)} ms)  ` +
      `${delivered} of ${expected} delivered${wrong}`
    );
  }
  return `${Math.round(rows / seconds)} deliveries/s to ${webhooks.webhooks} webhooks, ${delivered} in ${seconds.toFixed(1)} s${drained ? ' (the backlog ran out)' : ''}${wrong}`;
}
