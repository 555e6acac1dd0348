// The feed workloads (issue 6, issue 25), driven from run.ts. The subscribers live in client processes of
// their own (subscribers.ts), never in the server's or the harness's; the writer too (writer.ts).
//
// fanout: `fanoutSubscribers` sockets on the collection `fanout`; once every one has its `ready`, the
//   writer inserts one row per request at `fanoutRate` a second. Each subscriber notes when each insert
//   message arrives; the delivery latency of a (message × subscriber) pair is that time − the time the
//   writer got its 201, both read from the monotonic clock every process on the machine shares
//   (process.hrtime, CLOCK_MONOTONIC on Linux). Every pair due must arrive, each once.
// fanout-filtered: fanout, each subscriber with a filter of its own (seed.ts, fanoutFilter()): a pair is
//   due when the row matches the subscriber's filter, and none other may arrive.
// fanout-rules: fanout, each subscriber an app's user of its own (a publishable key and a token whose
//   claims give it a tenth of the scores, end-user.ts, fanoutRules): a pair is due when the rule grants
//   the user the row, none other may arrive, and none may show the hidden `text`.
// fanout-sse, fanout-long-poll (issue 56): fanout, each subscriber a client of the changes over plain HTTP
//   (subscribers.ts): a server-sent event stream (`fanoutSubscribers` of them), or a long-polling client
//   (`longPollSubscribers`); the same writer at the same rate, the same clock, every pair due once.
// idle-sockets: `idleSubscribers` sockets, one collection per client process, on a server of their own
//   (nothing else ran in it); its VmRSS before the first, and its highest while all are open.
// idle-streams (issue 56): idle-sockets, each socket a server-sent event stream of the changes.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { type Histogram, histogramOf, type Measured, monotonicUs, percentile } from './measure.ts';
import { jsonLines, memoryKb, outputOf, type Started, sampleRss, spawnNode, stop } from './processes.ts';
import type { Settings } from './settings.ts';
import type { SubscribersJob } from './subscribers.ts';
import type { WriterJob, Written } from './writer.ts';

export const fanoutCollection = 'fanout';
export const idleCollections = (settings: Settings) => Array.from({ length: settings.idleProcesses }, (_, i) => `idle-${i + 1}`);

export interface FeedMeasurement {
  measured: Measured;
  /** The server's highest VmRSS during the measurement. */
  peakRssKb: number;
}

/** Client processes' answers have no deadline of their own beyond this (each socket has `timeoutSeconds`). */
const readyTimeoutMs = 10 * 60 * 1000;

/**
 * The fanout workloads: every subscriber gets every insert, or those its own filter matches
 * (fanout-filtered), or those the collection's rule grants its user (fanout-rules).
 */
export const fanoutWorkloads = ['fanout', 'fanout-filtered', 'fanout-rules', 'fanout-sse', 'fanout-long-poll'];
/** The idle workloads, and how their clients hold on: feed sockets, streams of the changes, or long polls waiting for one. */
export const idleWorkloads: Record<string, SubscribersJob['transport']> = {
  'idle-sockets': 'websocket',
  'idle-streams': 'sse',
  'idle-long-polls': 'long-poll',
};

/** How a fanout workload's subscribers hear the changes. */
const transports: Record<string, SubscribersJob['transport']> = { 'fanout-sse': 'sse', 'fanout-long-poll': 'long-poll' };
/** A fanout workload's subscribers. */
export const fanoutCount = (settings: Settings, workload: string) =>
  workload === 'fanout-long-poll' ? settings.longPollSubscribers : settings.fanoutSubscribers;

/**
 * A fanout workload, once: subscribers, then the writer, then every subscriber's deliveries. `appKey`:
 * fanout-rules' publishable key, whose account's issuer signs its users' tokens (end-user.ts).
 */
export async function measureFanout(
  server: Started,
  key: string,
  settings: Settings,
  workload: string,
  durationSeconds = settings.durationSeconds,
  appKey?: string,
) {
  const rss = sampleRss(server.pid, settings.rssSampleMs);
  const counts = split(fanoutCount(settings, workload), settings.fanoutProcesses);
  const first = (index: number) => counts.slice(0, index).reduce((sum, count) => sum + count, 0);
  const own = (index: number): Partial<SubscribersJob> =>
    workload === 'fanout-filtered'
      ? { filteredFrom: first(index) }
      : workload === 'fanout-rules'
        ? { ruledFrom: first(index), key: appKey }
        : { transport: transports[workload] };
  const clients = startClients(server, key, settings, counts, () => fanoutCollection, own);
  try {
    const ready = await Promise.all(clients.map((client) => client.lines.next('ready', readyTimeoutMs)));
    const writerJob: WriterJob = {
      url: server.url,
      key,
      collection: fanoutCollection,
      rate: settings.fanoutRate,
      // At least a second, 20 inserts: with a quick run's half second, the first deliveries measured
      // still met code not yet optimized in the server and the subscribers, and p99 read that.
      warmupSeconds: Math.max(1, settings.warmupSeconds),
      durationSeconds,
      timeoutSeconds: settings.timeoutSeconds,
      teams: workload === 'fanout-rules',
    };
    const serverCpuBefore = cpuMs(server.pid);
    const written: Written = JSON.parse(await outputOf(spawnNode('bench/writer.ts', [JSON.stringify(writerJob)])));
    const serverCpuMs = cpuMs(server.pid) - serverCpuBefore;
    const command = {
      deliveries: { ids: written.ids, rows: written.stored, sentUs: written.sentUs },
      drainMs: settings.feedDrainSeconds * 1000,
    };
    for (const client of clients) client.child.stdin!.end(`${JSON.stringify(command)}\n`);
    const done = await Promise.all(clients.map((client) => client.lines.next('done', settings.feedDrainSeconds * 1000 + readyTimeoutMs)));

    const latenciesUs = done.flatMap((d) => d.latenciesUs as number[]).sort((a, b) => a - b);
    const socketFailures = addUp([...ready, ...done].map((line) => line.failures as Record<string, number>));
    const lostSockets = Object.values(socketFailures).reduce((a, b) => a + b, 0);
    const measured: Measured = {
      requests: written.requests,
      rows: latenciesUs.length,
      seconds: written.seconds,
      p50Ms: percentile(latenciesUs, 0.5) / 1000,
      p99Ms: percentile(latenciesUs, 0.99) / 1000,
      failures: written.failures + lostSockets,
      statusCodes: written.statusCodes,
      windowUs: written.windowUs,
      feed: {
        subscribers: fanoutCount(settings, workload),
        clientProcesses: clients.length,
        collections: 1,
        ready: sumOf(ready, 'ready'),
        socketFailures,
        expected: sumOf(done, 'expected'),
        delivered: sumOf(done, 'delivered'),
        duplicates: sumOf(done, 'duplicates'),
        undue: sumOf(done, 'wrong'),
        latencyHistogram: histogramOf(latenciesUs) satisfies Histogram,
        serverCpuMsPerInsert: serverCpuMs / written.inserts,
        clientCpuMsPerInsert: sumOf(done, 'cpuMs') / written.inserts,
      },
    };
    return { measured, peakRssKb: rss.done() } satisfies FeedMeasurement;
  } finally {
    rss.done();
    await Promise.all(clients.map((client) => client.end(settings.stopGraceMs)));
  }
}

/** An idle workload, once, on a server that has served nothing else: its RSS before, and with every socket open. */
export async function measureIdle(
  server: Started,
  key: string,
  settings: Settings,
  workload: string,
): Promise<FeedMeasurement & { hwmKb: number }> {
  const rssBeforeKb = memoryKb(server.pid, 'VmRSS');
  const rss = sampleRss(server.pid, settings.rssSampleMs);
  const started = monotonicUs();
  const names = idleCollections(settings);
  const clients = startClients(
    server,
    key,
    settings,
    split(settings.idleSubscribers, settings.idleProcesses),
    (i) => names[i],
    () => ({
      transport: idleWorkloads[workload],
    }),
  );
  try {
    const ready = await Promise.all(clients.map((client) => client.lines.next('ready', readyTimeoutMs)));
    const connected = monotonicUs();
    const held = sampleRss(server.pid, settings.rssSampleMs);
    await new Promise((resolve) => setTimeout(resolve, settings.idleHoldSeconds * 1000));
    const rssConnectedKb = held.done();
    const hwmKb = memoryKb(server.pid, 'VmHWM');
    for (const client of clients) client.child.stdin!.end(`${JSON.stringify({ stop: true })}\n`);
    const done = await Promise.all(clients.map((client) => client.lines.next('done', readyTimeoutMs)));

    const readyMs = ready.flatMap((line) => line.readyMs as number[]).sort((a, b) => a - b);
    const socketFailures = addUp([...ready, ...done].map((line) => line.failures as Record<string, number>));
    const measured: Measured = {
      requests: readyMs.length,
      rows: 0,
      seconds: (connected - started) / 1e6,
      p50Ms: percentile(readyMs, 0.5),
      p99Ms: percentile(readyMs, 0.99),
      failures: Object.values(socketFailures).reduce((a, b) => a + b, 0),
      statusCodes: {},
      windowUs: [started, monotonicUs()],
      feed: {
        subscribers: settings.idleSubscribers,
        clientProcesses: clients.length,
        collections: names.length,
        ready: sumOf(ready, 'ready'),
        socketFailures,
        expected: 0,
        delivered: 0,
        duplicates: 0,
        rssBeforeKb,
        rssConnectedKb,
      },
    };
    return { measured, peakRssKb: rss.done(), hwmKb };
  } finally {
    rss.done();
    await Promise.all(clients.map((client) => client.end(settings.stopGraceMs)));
  }
}

/**
 * One client process per entry of `counts`, each on its own loopback source address (127.0.0.2, .3, …)
 * so that thousands of sockets never run short of ephemeral ports, and with room for its sockets in
 * its open-files limit.
 */
export function startClients(
  server: Started,
  key: string,
  settings: Settings,
  counts: number[],
  collection: (index: number) => string,
  own: (index: number) => Partial<SubscribersJob> = () => ({}),
) {
  return counts.map((sockets, index) => {
    const job: SubscribersJob = {
      url: server.url,
      key,
      collection: collection(index),
      sockets,
      concurrency: settings.feedConcurrency,
      localAddress: `127.0.0.${2 + index}`,
      timeoutSeconds: settings.timeoutSeconds,
      ...own(index),
    };
    const child = spawnNode('bench/subscribers.ts', [JSON.stringify(job)], {}, [], { stdin: true, openFiles: sockets + 1024 });
    child.stdin!.on('error', () => {}); // it may be gone already when told to stop
    const exited = once(child, 'exit');
    /** It leaves by itself once its stdin closes; if not within `graceMs`, it is stopped. */
    const end = async (graceMs: number) => {
      child.stdin!.end();
      const timer = setTimeout(() => void stop(child, graceMs), graceMs);
      await exited.catch(() => {});
      clearTimeout(timer);
    };
    return { child, lines: jsonLines(child), end };
  });
}

/** `total` in `parts` near-equal whole parts (no part empty). */
function split(total: number, parts: number): number[] {
  const n = Math.max(1, Math.min(parts, total));
  return Array.from({ length: n }, (_, i) => Math.floor(total / n) + (i < total % n ? 1 : 0));
}

/** CPU time (user + system) of a process so far, from /proc (in clock ticks of 10 ms); NaN when unreadable. */
function cpuMs(pid: number): number {
  try {
    // After the command's closing parenthesis: state is field 3, utime and stime are fields 14 and 15.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

const sumOf = (lines: Record<string, unknown>[], field: string) => lines.reduce((n, line) => n + Number(line[field] ?? 0), 0);

function addUp(counts: Record<string, number>[]): Record<string, number> {
  const all: Record<string, number> = {};
  for (const c of counts) for (const [reason, n] of Object.entries(c ?? {})) all[reason] = (all[reason] ?? 0) + n;
  return all;
}
