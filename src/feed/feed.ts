// The real-time feed on `GET /ws` (asyncapi.yaml). It shares the HTTP server: each upgrade request is
// checked and refused with a real HTTP response before anything is upgraded (upgrade.ts); an accepted
// socket becomes a Subscriber of its collection's Tail, which forwards committed events from the events
// table when the data layer announces a commit (db/changes.ts). The changes over plain HTTP
// (handlers/feed.ts) are served here too: a stream is a Subscriber writing to its response
// (sinks.ts), a long poll a Waiter of the same tail (waiter.ts).
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { Config } from '../config.ts';
import type { Principal } from '../db/accounts/keys.ts';
import type { FeedStart } from '../db/events/events.ts';
import type { Store } from '../db/open-store.ts';
import { unavailable } from '../errors.ts';
import { FEED_OPERATION, type Observer } from '../http/observe.ts';
import { toApiError, writeProblem } from '../http/problems.ts';
import { requestIdOf } from '../http/request-id.ts';
import type { LaterAnswer, StreamedBody } from '../http/responder.ts';
import type { Logger } from '../log.ts';
import { Pruner } from '../pruner.ts';
import type { Claims as RuleClaims } from '../rules/compile.ts';
import { Sweeper } from '../sweeper.ts';
import type { TokenVerifier } from '../tokens/verifier.ts';
import { CredentialChecks, type Credentials } from './credentials.ts';
import type { Delivery } from './delivery.ts';
import type { Encoding } from './encodings.ts';
import { closeCodes } from './messages.ts';
import { AccountPlaces } from './places.ts';
import { LongPolls } from './polls.ts';
import { ResponseSink, type Sink, WebSocketSink } from './sinks.ts';
import { type FeedCounts, Subscriber } from './subscriber.ts';
import { PAGE, Tails } from './tails.ts';
import { checkUpgrade, FEED_PATH, type FeedRequest } from './upgrade.ts';
import type { PollWait } from './waiter.ts';

/** Clients send nothing; anything larger than this closes their socket with 1009. */
const MAX_CLIENT_MESSAGE_BYTES = 1024;
/** Events one pruning statement deletes at most. */
const PRUNE_BATCH = 500;
export interface FeedOptions {
  store: Store;
  config: Config;
  log: Logger;
  /** Verifies end users' tokens beside publishable keys, at the upgrade and while their sockets are open. */
  tokens: TokenVerifier;
  /**
   * Runs for each upgrade with a valid key, before its query and collection are checked: the seam for
   * usage and plans (such an upgrade counts as one request whatever its outcome, as a /v1 request does;
   * over quota or rate it is refused with 429, whatever else is wrong with it, and not counted).
   * Throw an ApiError to refuse the upgrade with it. Takes the upgrade's request and, with a publishable
   * key, the claims of its end user's token (null when anonymous): its end user is one or the other. Default: admit everyone.
   */
  admit?: (principal: Principal, request: IncomingMessage, claims: RuleClaims | null | undefined) => Promise<void> | void;
  /** Told of every upgrade answered, accepted (101) or refused, as the HTTP API's requests are (http/observe.ts). Default none. */
  observers?: readonly Observer[];
}

export interface Feed {
  /** The HTTP server's `upgrade` listener. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Feed connections open and not being closed. */
  readonly connections: number;
  /** Collections followed for this instance's subscribers. */
  readonly collections: number;
  /** Messages sent and slow consumers closed since the start. */
  readonly counts: FeedCounts;
  /**
   * How many events this instance has yet to forward: for each collection it follows, the database's
   * latest seq minus the last seq it forwarded, summed. One read of the latest seq per collection.
   */
  lag(): Promise<number>;
  /** Prunes events past retention (also done every `eventsPruneIntervalMs`). */
  readonly pruner: Pruner;
  /** The sweeper of expired rows (docs/expiry.md). */
  readonly sweeper: Sweeper;
  /**
   * A changes stream over HTTP (handlers/feed.ts) of `request`, checked as an upgrade is (upgrade.ts,
   * subscriptionOf): it takes one of the account's places now (429 too_many_connections), and is then a
   * subscriber as a feed socket is, its messages in `encoding`, once its response's head is written.
   */
  openStream(request: FeedRequest, encoding: Encoding): StreamedBody;
  /**
   * One of the account's places for a long poll while it waits (handlers/feed.ts), as a stream and a
   * feed socket hold one while open: what gives it back (once, however often called), or undefined when
   * the account holds as many as it may (the poll then answers at once, without waiting).
   */
  placeForPoll(accountId: number): (() => void) | undefined;
  /**
   * A long poll that waits (handlers/feed.ts), the feed's from now on, its request's stages over: once
   * its response is given (LaterAnswer.start), it follows its collection's tail as a Waiter until a
   * change after the seq it waits after that it shows is committed (with no read of its own while
   * nothing changes), its deadline passes or the feed closes, then answers (PollWait.answer). A client
   * that goes away stops it at once, and its place is given back.
   */
  waitForPage(poll: PollWait): LaterAnswer;
  /**
   * Where a long poll of the account's collection after `since` starts (Store.feedStart), when this
   * instance's tail of it knows without a read (Tail.startAfter); else undefined.
   */
  startAfter(accountId: number, collection: string, since: number | undefined): Promise<FeedStart | undefined> | undefined;
  /**
   * Keeps this instance's tail of the account's collection, made if need be, a moment past the last
   * long poll that asks (Tail.linger), also one that answers at once: the next finds it live.
   */
  keepTail(accountId: number, collectionId: number, collection: string): void;
  /** The deliveries after `after` that this instance's tail of the collection still holds, or undefined (Tail.changesAfter). */
  changesAfter(collectionId: number, after: number, limit: number, atLeast: number): readonly Delivery[] | undefined;
  /** Long polls waiting on this instance (waitForPage). */
  readonly waitingPolls: number;
  /** Refuses new upgrades, closes every socket with 1001 (terminating those still open after `graceMs`, default 10 s), and stops. */
  close(graceMs?: number): Promise<void>;
}

/** Logs a subscription as it starts, its key's account, collection, events and encoding. */
function logSubscribed(connectionLog: Logger, request: FeedRequest, subscriber: Subscriber): void {
  const { principal, collection, kinds, since, filter, endUser } = request;
  connectionLog.info(
    {
      account: principal.account,
      collection,
      events: kinds,
      since,
      filtered: filter !== undefined,
      endUser: endUser === undefined ? undefined : endUser.token === undefined ? 'anonymous' : 'token',
      encoding: subscriber.sink.encoding.name,
    },
    'feed subscribed',
  );
}

/** The WebSocket server of the upgrades checked, on no port of its own (the HTTP server hands it each). */
function socketServer(): WebSocketServer {
  const server = new WebSocketServer({
    noServer: true,
    clientTracking: false,
    // Off, and must stay off while messages are framed once for every socket (frames.ts).
    perMessageDeflate: false,
    maxPayload: MAX_CLIENT_MESSAGE_BYTES,
  });
  // The 101 carries the request's id too, as every other answer does.
  server.on('headers', (headers, request) => headers.push(`X-Request-Id: ${requestIdOf(request)}`));
  return server;
}

/** Tells `observers` of the upgrade's answer, once given: its status, the bytes written, how long it took since now. */
function answerObserved(observers: readonly Observer[], request: IncomingMessage, requestId: string, accountId: () => number | undefined) {
  const startedAt = performance.now();
  return (status: number, bytes: number) => {
    const seconds = (performance.now() - startedAt) / 1000;
    const answer = {
      requestId,
      method: request.method ?? 'GET',
      operation: FEED_OPERATION,
      route: FEED_PATH,
      status,
      seconds,
      bytes,
      accountId: accountId(),
    };
    for (const observer of observers) observer.answered(answer);
  };
}

export function createFeed({ store, config, log, tokens, admit, observers = [] }: FeedOptions): Feed {
  const server = socketServer();
  const counts: FeedCounts = { messagesSent: 0, slowConsumerCloses: 0 };
  const tails = new Tails(store, log);
  /** Every open subscriber, with the hash of its key and when that expires (ms since the epoch, or null), and its end user's token. */
  const subscribers = new Map<Subscriber, Credentials>();
  const checking = new Set<Promise<void>>();
  const places = new AccountPlaces(config.feedMaxSocketsPerAccount);
  const checks = new CredentialChecks(subscribers, store, tokens, log);
  let closing = false;

  const heartbeat = setInterval(() => {
    for (const subscriber of subscribers.keys()) subscriber.heartbeat();
  }, config.feedPingIntervalMs);
  heartbeat.unref();
  const pruner = new Pruner(
    store,
    { keepCount: config.eventsRetainCount, keepMs: config.eventsRetainMs, batchSize: PRUNE_BATCH },
    config.eventsPruneIntervalMs,
    log,
  );
  const sweeper = new Sweeper(store, config.expirySweepIntervalMs, log);

  const polls = new LongPolls(tails, log);

  async function upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const requestId = requestIdOf(request);
    let accountId: number | undefined;
    const answered = answerObserved(observers, request, requestId, () => accountId);
    try {
      if (closing) throw unavailable('The server is shutting down.');
      const feedRequest = await checkUpgrade(request, {
        store,
        tokens,
        admit: async (principal, claims) => {
          accountId = principal.accountId;
          socket.once('close', places.take(principal.accountId));
          await admit?.(principal, request, claims);
        },
      });
      if (closing) throw unavailable('The server is shutting down.');
      server.handleUpgrade(request, socket, head, (websocket) => {
        answered(101, 0);
        const connectionLog = log.child({ requestId });
        const subscriber = subscribe(new WebSocketSink(websocket, socket, connectionLog), feedRequest, connectionLog);
        websocket.once('close', (code) => connectionLog.info({ collection: feedRequest.collection, code }, 'feed closed'));
        logSubscribed(connectionLog, feedRequest, subscriber);
      });
    } catch (error) {
      const problem = toApiError(error);
      // Never the request's URL: it may carry the key.
      if (problem.status >= 500) log.error({ requestId, err: error, path: FEED_PATH }, 'feed upgrade failed');
      else log.debug({ requestId, status: problem.status, code: problem.code }, 'feed upgrade refused');
      answered(problem.status, writeProblem(socket, problem, { requestId }));
    }
  }

  /** `connectionLog`: the log of this connection, whose lines carry its request id. */
  function subscribe(sink: Sink, request: FeedRequest, connectionLog: Logger): Subscriber {
    const { collectionId, collection, kinds, since, filter, view, endUser, principal } = request;
    const subscriber = new Subscriber(sink, {
      collection,
      kinds,
      since,
      filter,
      view,
      endUser,
      rules: () => store.findRules(principal.accountId, collection),
      maxBufferBytes: config.feedMaxBufferBytes,
      readEvents: (after, upTo) => store.readEvents(collectionId, { ...PAGE, after, upTo }),
      latestSeq: () => store.latestSeq(collectionId),
      counts,
      log: connectionLog,
    });
    const token = endUser?.token === undefined ? undefined : { token: endUser.token, refusedFrom: endUser.refusedFrom as number };
    subscribers.set(subscriber, { hash: request.keyHash, expiresAt: principal.expiresAt, accountId: principal.accountId, token });
    sink.onClose(() => subscribers.delete(subscriber));
    tails.of(principal.accountId, collectionId, collection).join(subscriber);
    return subscriber;
  }

  return {
    handleUpgrade(request, socket, head) {
      // A peer that resets the connection while its upgrade is checked must not take the process down.
      socket.on('error', () => socket.destroy());
      const check = upgrade(request, socket, head).finally(() => checking.delete(check));
      checking.add(check);
    },
    get connections() {
      return [...subscribers.keys()].filter((subscriber) => subscriber.open).length;
    },
    get collections() {
      return tails.size;
    },
    counts,
    openStream(request, encoding) {
      if (closing) throw unavailable('The server is shutting down.');
      const release = places.take(request.principal.accountId);
      return {
        start(response) {
          const sink = new ResponseSink(response, encoding, config.feedPingIntervalMs);
          sink.onClose(release);
          const connectionLog = log.child({ requestId: requestIdOf(response.req) });
          const subscriber = subscribe(sink, request, connectionLog);
          sink.onClose(() => connectionLog.info({ collection: request.collection }, 'changes stream closed'));
          logSubscribed(connectionLog, request, subscriber);
        },
        drop: release,
      };
    },
    placeForPoll: (accountId) => places.free(accountId),
    get waitingPolls() {
      return polls.waiting;
    },
    waitForPage: (poll) => polls.later(poll),
    startAfter: (accountId, collection, since) => tails.named(accountId, collection)?.startAfter(since),
    keepTail: (accountId, collectionId, collection) => tails.of(accountId, collectionId, collection).linger(),
    changesAfter: (collectionId, after, limit, atLeast) => tails.following(collectionId)?.changesAfter(after, limit, atLeast),
    lag: () => tails.lag(),
    pruner,
    sweeper,
    async close(graceMs = 10_000) {
      closing = true;
      clearInterval(heartbeat);
      tails.stop();
      await Promise.all([pruner.stop(), sweeper.stop(), checks.stop(), ...checking]);
      const open = [...subscribers.keys()];
      for (const subscriber of open) subscriber.close(closeCodes.shuttingDown);
      const answered = polls.close();
      const timer = setTimeout(() => {
        for (const subscriber of open) subscriber.sink.terminate();
      }, graceMs);
      await Promise.all(open.map((subscriber) => subscriber.closed));
      clearTimeout(timer);
      await Promise.all([...tails.values().map((tail) => tail.idle), ...open.map((subscriber) => subscriber.replaying), answered]);
    },
  };
}
