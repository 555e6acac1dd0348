// Webhook receivers for webhook-latency and webhook-throughput: `node --import tsx bench/receivers.ts
// '<ReceiversJob as JSON>'`. It listens with `receivers` HTTP servers, each on a port of its own on
// 127.0.0.1 (one a webhook, as each webhook has a receiver of its own), each answering every POST 200 at
// once, and prints {"event":"ready","urls":[…]}; then {"event":"first"} when the first delivery arrives.
// It notes, for every delivery, the receiver, its `webhook-id`, the row id and seq of its change, and
// when it arrived (the monotonic clock every process on the machine shares, as the writer's).
//
// Then it reads one command a line on stdin:
//   {"deliveries":{"ids":[…],"sentUs":[…]},"drainMs":n}  (webhook-latency) the rows the writer inserted in
//     the measured window and when each 201 came; waits up to drainMs for every one to reach the first
//     receiver, then prints {"event":"done", …} with the latency of each;
//   {"window":{"warmupMs":n,"durationMs":n,"expected":n}}  (webhook-throughput) from the first delivery,
//     waits `warmupMs`, then counts the deliveries of `durationMs` (less, if all `expected` came before),
//     and prints {"event":"done", …} with them and the window.
// It exits when stdin closes (the harness went away, or is done with it).
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { monotonicUs } from './measure.ts';

export interface ReceiversJob {
  receivers: number;
}

/** A delivery as it arrived. */
interface Arrival {
  receiver: number;
  webhookId: string;
  rowId: number;
  seq: number;
  atUs: number;
}

const job: ReceiversJob = JSON.parse(process.argv[2]);
const arrivals: Arrival[] = [];
/** Per receiver, the seq last delivered: a seq at or below it is out of order (or sent again). */
const lastSeq: number[] = Array(job.receivers).fill(0);
let outOfOrder = 0;

const servers = await Promise.all(
  Array.from({ length: job.receivers }, async (_, receiver) => {
    const server = createServer((request, response) => {
      let body = '';
      request.setEncoding('utf8');
      request.on('data', (chunk: string) => (body += chunk));
      request.on('end', () => {
        const atUs = monotonicUs();
        response.writeHead(200).end();
        const change = JSON.parse(body);
        if (change.seq <= lastSeq[receiver]) outOfOrder++;
        lastSeq[receiver] = change.seq;
        if (arrivals.length === 0) say({ event: 'first' });
        arrivals.push({ receiver, webhookId: String(request.headers['webhook-id']), rowId: change.row?.id, seq: change.seq, atUs });
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return server;
  }),
);
say({ event: 'ready', urls: servers.map((server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`) });

for await (const line of createInterface({ input: process.stdin })) {
  const command = JSON.parse(line);
  if (command.deliveries) await latencies(command.deliveries, command.drainMs);
  else if (command.window) await window(command.window);
}
for (const server of servers) server.closeAllConnections();
// stdout is a pipe: let it flush before leaving.
process.stdout.write('', () => process.exit(0));

/** Waits up to `drainMs` for every row the writer inserted to reach the first receiver; prints the latency of each that came. */
async function latencies({ ids, sentUs }: { ids: number[]; sentUs: number[] }, drainMs: number): Promise<void> {
  const sent = new Map(ids.map((id, i) => [id, sentUs[i]]));
  const mine = () => arrivals.filter((a) => a.receiver === 0 && sent.has(a.rowId));
  const deadline = Date.now() + drainMs;
  while (new Set(mine().map((a) => a.rowId)).size < ids.length && Date.now() < deadline) await sleep(20);
  const seen = new Set<number>();
  const latenciesUs: number[] = [];
  let duplicates = 0;
  for (const a of mine()) {
    if (seen.has(a.rowId)) duplicates++;
    else latenciesUs.push(a.atUs - sent.get(a.rowId)!);
    seen.add(a.rowId);
  }
  say({ event: 'done', expected: ids.length, delivered: seen.size, duplicates, outOfOrder, latenciesUs });
}

/** Counts the deliveries of the window that opens `warmupMs` after the first. */
async function window({ warmupMs, durationMs, expected }: { warmupMs: number; durationMs: number; expected: number }): Promise<void> {
  while (arrivals.length === 0) await sleep(10);
  await sleep(warmupMs);
  const from = monotonicUs();
  const before = arrivals.length;
  const deadline = Date.now() + durationMs;
  while (Date.now() < deadline && arrivals.length < expected) await sleep(10);
  const to = monotonicUs();
  const inWindow = arrivals.slice(before);
  const ids = new Set(arrivals.map((a) => a.webhookId));
  say({
    event: 'done',
    expected,
    delivered: inWindow.length,
    // Of every delivery so far: each change to each webhook once, in seq order.
    duplicates: arrivals.length - ids.size,
    outOfOrder,
    drained: arrivals.length >= expected,
    windowUs: [from, to],
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function say(line: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}
