// One process of feed subscribers, for the fanout workloads and the idle ones: `node --import tsx
// bench/subscribers.ts '<SubscribersJob as JSON>'`. It opens `sockets` WebSockets to /ws with the key in
// `api_key` (for fanout-filtered, each with its own filter, seed.ts; for fanout-rules, `key` is a publishable
// key and each socket has a token of its own user and claims in `access_token`), or with `transport`, as many
// clients of the changes over plain HTTP (issue 56): server-sent event streams (fanout-sse, idle-streams), or
// long polls, each asking `wait=30` from its last answer's next_since as soon as that answer came
// (fanout-long-poll); at most `concurrency` handshakes under way at a time, and prints one JSON line once
// every socket has its `ready` (a long poll: its first answer) (or failed): {"event":"ready", …}. From then on it notes, for every insert message, its row
// id and the time it arrived (the monotonic clock every process on the machine shares, as the writer's).
//
// Then it waits for one line on stdin:
//   {"deliveries":{"ids":[…],"rows":[…],"sentUs":[…]},"drainMs":n}  (fanout) the rows the writer
//     inserted in the measured window and when each 201 came; waits up to drainMs for every ready
//     socket to have all of them due to it (those its filter matches, if it has one), then prints {"event":"done", …} with the latency of every (message × socket) pair, and its
//     CPU time from `ready` until the command came;
//   {"stop":true}  (idle-sockets) prints {"event":"done", …} with the sockets the server closed meanwhile.
// It then drops every socket and exits; it exits too when stdin closes (the harness went away).
import { createInterface } from 'node:readline';
import { Agent, request } from 'undici';
import WebSocket from 'ws';
import { compileFilter, type Row, type RowTest } from '../src/query/evaluate.ts';
import { parseFilter } from '../src/query/filter.ts';
import { endUserToken } from './end-user.ts';
import { monotonicUs } from './measure.ts';
import { fanoutClaims, fanoutFilter } from './seed.ts';

export interface SubscribersJob {
  url: string;
  key: string;
  collection: string;
  sockets: number;
  /** Handshakes under way at once (opened, not yet `ready`). */
  concurrency: number;
  /** A loopback address of its own to connect from, so that many sockets do not run out of ports. */
  localAddress: string;
  /** A socket without its `ready` this long after it was opened counts as failed. */
  timeoutSeconds: number;
  /** fanout-filtered: the index of this process's first socket among all, each socket subscribing with fanoutFilter() of its own. */
  filteredFrom?: number;
  /** fanout-rules: the index of this process's first socket among all, each socket a user of its own with fanoutClaims() (end-user.ts, fanoutRules). */
  ruledFrom?: number;
  /** How each client hears the changes: a feed socket (the default), a server-sent event stream, or long polls. */
  transport?: 'websocket' | 'sse' | 'long-poll';
}

/** What a socket heard: the row ids of the insert messages, and when each arrived. */
interface Heard {
  /** Drops its socket, stream or poll. */
  close: () => void;
  /** Its filter, as a test of a row; none: every row is due. */
  test?: RowTest;
  ready: boolean;
  ids: number[];
  atUs: number[];
}

const job: SubscribersJob = JSON.parse(process.argv[2]);
const feedUrl = (filter?: unknown, token?: string) =>
  `${job.url.replace(/^http/, 'ws')}/ws?${new URLSearchParams({
    api_key: job.key,
    collection: job.collection,
    ...(filter ? { filter: JSON.stringify(filter) } : {}),
    ...(token ? { access_token: token } : {}),
  })}`;
const heard: Heard[] = [];
const readyMs: number[] = [];
const failures: Record<string, number> = {};
const count = (reason: string) => {
  failures[reason] = (failures[reason] ?? 0) + 1;
};
let stopping = false;
/** The HTTP clients' connections, each from the process's own address, none timed out (a stream may idle for minutes). */
const dispatcher = new Agent({ localAddress: job.localAddress, headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 60_000 });
const changesUrl = `${job.url}/v1/collections/${job.collection}/changes`;
const authorization = `Bearer ${job.key}`;

await openAll();
say({ event: 'ready', ready: heard.filter((h) => h.ready).length, failures: { ...failures }, readyMs });
const cpuAtReady = process.cpuUsage();
// Failures from here on are sockets lost while held: reported with `done`.
for (const reason of Object.keys(failures)) delete failures[reason];

// The one command, or the end of stdin without one.
for await (const line of createInterface({ input: process.stdin })) {
  const command = JSON.parse(line);
  if (command.deliveries) await deliveries(command.deliveries, command.drainMs);
  else say({ event: 'done', failures });
  break;
}
finish();

/** Opens every socket, `concurrency` at a time; resolves once each has its `ready` or has failed. */
async function openAll(): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < job.sockets) {
      next++;
      await open();
    }
  };
  await Promise.all(Array.from({ length: Math.min(job.concurrency, job.sockets) }, lane));
}

function open(): Promise<void> {
  if (job.transport === 'sse') return openStream();
  if (job.transport === 'long-poll') return openPoll();
  return openSocket();
}

async function openSocket(): Promise<void> {
  const index = heard.length;
  const filter = job.filteredFrom === undefined ? undefined : fanoutFilter(job.filteredFrom + index);
  // A user's rows are those its rule grants: the rule's filter with the user's claims.
  const claims = job.ruledFrom === undefined ? undefined : fanoutClaims(job.ruledFrom + index);
  const token = claims && (await endUserToken(job.timeoutSeconds + 3600, claims, `fanout-user-${job.ruledFrom! + index}`));
  const due = filter ?? (claims && { team: { $in: claims.teams } });
  const openedUs = monotonicUs();
  const socket = new WebSocket(feedUrl(filter, token), { localAddress: job.localAddress, perMessageDeflate: false });
  const mine: Heard = { close: () => socket.terminate(), test: due && compileFilter(parseFilter(due)), ready: false, ids: [], atUs: [] };
  heard.push(mine);
  return new Promise((resolve) => {
    const { ready, lost } = handshake(mine, openedUs, resolve);
    socket.on('message', (data: Buffer) => {
      const atUs = monotonicUs();
      const message = JSON.parse(data.toString());
      // fanoutRules hides `text` from every user.
      if (claims && message.type === 'insert' && 'text' in message.row) count('a hidden field shown');
      if (message.type === 'ready') ready(atUs);
      else note(mine, message, atUs);
    });
    socket.on('unexpected-response', (_request, response) => lost(`upgrade refused with ${response.statusCode}`));
    // After `ready`, the close that follows counts.
    socket.on('error', (error) => mine.ready || lost(error.message));
    socket.on('close', (code) => lost(mine.ready ? `closed by the server with ${code}` : `closed with ${code} before ready`));
  });
}

/** Notes an insert message's row id and when it arrived. */
function note(mine: Heard, message: { type: string; row?: { id: number } }, atUs: number): void {
  if (message.type !== 'insert') return;
  mine.ids.push(message.row!.id);
  mine.atUs.push(atUs);
}

/** The handshake's end for a client: its `ready`, or why it failed (then it is dropped). */
function handshake(mine: Heard, openedUs: number, resolve: () => void) {
  let settled = false;
  const timer = setTimeout(() => fail(`no ready within ${job.timeoutSeconds} s`), job.timeoutSeconds * 1000);
  function fail(reason: string) {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    count(reason);
    mine.close();
    resolve();
  }
  function ready(atUs: number) {
    if (settled) return;
    settled = true;
    mine.ready = true;
    clearTimeout(timer);
    readyMs.push((atUs - openedUs) / 1000);
    resolve();
  }
  /** A failure after `ready`, unless the process is stopping. */
  const lost = (reason: string) => (mine.ready ? !stopping && count(reason) : fail(reason));
  return { ready, lost };
}

/** A server-sent event stream of the changes after the latest (`Accept: text/event-stream`); ready at its `ready` event. */
function openStream(): Promise<void> {
  const aborted = new AbortController();
  const mine: Heard = { close: () => aborted.abort(), ready: false, ids: [], atUs: [] };
  heard.push(mine);
  const openedUs = monotonicUs();
  return new Promise((resolve) => {
    const { ready, lost } = handshake(mine, openedUs, resolve);
    request(changesUrl, { dispatcher, signal: aborted.signal, headers: { authorization, accept: 'text/event-stream' } }).then(
      ({ statusCode, body }) => {
        if (statusCode !== 200) {
          body.dump().catch(() => {});
          return lost(`answered ${statusCode}`);
        }
        let pending = '';
        body.setEncoding('utf8');
        body.on('data', (chunk: string) => {
          const atUs = monotonicUs();
          const events = (pending + chunk).split('\n\n');
          pending = events.pop()!;
          for (const event of events) {
            const data = event.split('\n').find((line) => line.startsWith('data: '));
            if (!data) continue; // a heartbeat, or a comment
            const message = JSON.parse(data.slice('data: '.length));
            if (message.type === 'ready') ready(atUs);
            else note(mine, message, atUs);
          }
        });
        body.on('error', (error: Error) => lost(error.message));
        body.on('end', () => lost('closed by the server'));
      },
      (error: Error) => lost(error.message),
    );
  });
}

/**
 * A long-polling client: a first page from the latest seq (the collection's Rowbase-Seq) with no wait,
 * its `ready`; then `wait=30` from each answer's next_since, asked as soon as that answer came.
 */
function openPoll(): Promise<void> {
  const aborted = new AbortController();
  const mine: Heard = { close: () => aborted.abort(), ready: false, ids: [], atUs: [] };
  heard.push(mine);
  const openedUs = monotonicUs();
  const get = async (url: string) => {
    const { statusCode, headers, body } = await request(url, { dispatcher, signal: aborted.signal, headers: { authorization } });
    const text = await body.text();
    return { statusCode, headers, text, atUs: monotonicUs() };
  };
  return new Promise((resolve) => {
    const { ready, lost } = handshake(mine, openedUs, resolve);
    (async () => {
      const rows = await get(`${job.url}/v1/collections/${job.collection}/rows?limit=1`);
      if (rows.statusCode !== 200) return lost(`rows answered ${rows.statusCode}`);
      let since = Number(rows.headers['rowbase-seq']);
      let wait = 0;
      for (;;) {
        const page = await get(`${changesUrl}?since=${since}&limit=1000&wait=${wait}`);
        if (page.statusCode !== 200) return lost(`answered ${page.statusCode}`);
        const { changes, next_since } = JSON.parse(page.text) as { changes: { type: string; row?: { id: number } }[]; next_since: number };
        if (wait === 0) ready(page.atUs);
        for (const message of changes) note(mine, message, page.atUs);
        since = next_since;
        wait = 30;
      }
    })().catch((error: Error) => lost(error.message));
  });
}

/** Waits up to `drainMs` for every ready socket to have every id due to it; prints the latency of each pair that came. */
async function deliveries({ ids, rows, sentUs }: { ids: number[]; rows: Row[]; sentUs: number[] }, drainMs: number): Promise<void> {
  // From `ready` to the writer's end (the harness sends this as soon as the writer is done).
  const { user, system } = process.cpuUsage(cpuAtReady);
  const sent = new Map(ids.map((id, i) => [id, sentUs[i]]));
  const listening = heard.filter((h) => h.ready);
  const due = listening.map(({ test }) => new Set(test ? ids.filter((_, i) => test(rows[i])) : ids));
  const expected = due.reduce((n, ids) => n + ids.size, 0);
  const arrived = () => listening.reduce((n, h, i) => n + h.ids.filter((id) => due[i].has(id)).length, 0);
  const deadline = Date.now() + drainMs;
  while (arrived() < expected && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));

  const latenciesUs: number[] = [];
  let delivered = 0;
  let duplicates = 0;
  /** Rows that came to a socket whose filter they do not match. */
  let wrong = 0;
  for (const [index, h] of listening.entries()) {
    const seen = new Set<number>();
    h.ids.forEach((id, i) => {
      const at = sent.get(id);
      if (at === undefined) return; // the warm-up's, or later than the writer's measured window
      if (!due[index].has(id)) {
        wrong++;
        return;
      }
      if (seen.has(id)) {
        duplicates++;
        return;
      }
      seen.add(id);
      delivered++;
      latenciesUs.push(h.atUs[i] - at);
    });
  }
  say({ event: 'done', expected, delivered, duplicates, wrong, failures, latenciesUs, cpuMs: (user + system) / 1000 });
}

function finish(): void {
  if (stopping) return;
  stopping = true;
  for (const h of heard) h.close();
  // stdout is a pipe: let it flush before leaving.
  process.stdout.write('', () => process.exit(0));
}

function say(line: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}
