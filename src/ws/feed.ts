// The real-time feed on `GET /ws` (asyncapi.yaml). It shares the HTTP server: each upgrade request is
// checked and refused with a real HTTP response before anything is upgraded (upgrade.ts); an accepted
// socket becomes a Subscriber of its collection's Tail, which forwards committed events from the events
// table when the data layer announces a commit (db/changes.ts).
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { Config } from '../config.ts';
import type { Principal } from '../db/accounts/keys.ts';
import type { AccountIssuers } from '../db/auth/issuers.ts';
import type { Store } from '../db/engine/store.ts';
import { ApiError, unavailable } from '../errors.ts';
import { FEED_OPERATION, type Observer } from '../http/observe.ts';
import { toApiError, writeProblem } from '../http/problems.ts';
import { requestIdOf } from '../http/request-id.ts';
import type { Logger } from '../log.ts';
import type { Claims as RuleClaims } from '../rules/compile.ts';
import type { TokenVerifier } from '../tokens/verifier.ts';
import { closeCodes } from './messages.ts';
import { Pruner } from './pruner.ts';
import { type FeedCounts, Subscriber } from './subscriber.ts';
import { Tail } from './tail.ts';
import { checkUpgrade, FEED_PATH, type FeedRequest } from './upgrade.ts';

/** Clients send nothing; anything larger than this closes their socket with 1009. */
const MAX_CLIENT_MESSAGE_BYTES = 1024;
/** Events read from the database at a time, by a tail or a replay: at most 500, and about 1 MiB of rows. */
const PAGE = { limit: 500, maxChars: 1024 * 1024 };
/** Events one pruning statement deletes at most. */
const PRUNE_BATCH = 500;
/**
 * How often the keys and tokens of open sockets are checked: an expired key's or token's sockets close
 * (4401) within a second of its expiry, a revoked key's within a second of the revocation, wherever it
 * was made, for which they are looked up again, and a token's within a second of the change of its
 * account's issuers that refuses it, for which they are read again (asyncapi.yaml, close code 4401). One
 * query per pass for up to this many keys, and one for each account whose sockets hold tokens:
 */
const KEY_CHECK_INTERVAL_MS = 500;
const KEY_CHECK_BATCH = 500;

/** What a socket was opened with, checked while it is open. */
interface Credentials {
  /** The hash of its key. */
  hash: string;
  /** When its key expires (ms since the epoch), or null. */
  expiresAt: number | null;
  accountId: number;
  /** Beside a publishable key, the end user's token; absent for a secret key or an anonymous caller. */
  token?: EndUserToken;
}

interface EndUserToken {
  token: string;
  /** When it is refused as expired (ms since the epoch). */
  refusedFrom: number;
}

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
  /** Refuses new upgrades, closes every socket with 1001 (terminating those still open after `graceMs`, default 10 s), and stops. */
  close(graceMs?: number): Promise<void>;
}

export function createFeed({ store, config, log, tokens, admit, observers = [] }: FeedOptions): Feed {
  const server = new WebSocketServer({
    noServer: true,
    clientTracking: false,
    // Off, and must stay off while messages are framed once for every socket (frames.ts).
    perMessageDeflate: false,
    maxPayload: MAX_CLIENT_MESSAGE_BYTES,
  });
  // The 101 carries the request's id too, as every other answer does.
  server.on('headers', (headers, request) => headers.push(`X-Request-Id: ${requestIdOf(request)}`));
  const counts: FeedCounts = { messagesSent: 0, slowConsumerCloses: 0 };
  const tails = new Map<number, Tail>();
  /** Every open subscriber, with the hash of its key and when that expires (ms since the epoch, or null), and its end user's token. */
  const subscribers = new Map<Subscriber, Credentials>();
  const checking = new Set<Promise<void>>();
  let closing = false;

  // Heard only while some collection has a tail: a write that no one follows costs the feed nothing.
  const wake = (collectionId: number) => tails.get(collectionId)?.wake();
  const wakeAll = () => {
    for (const tail of tails.values()) tail.wake();
  };
  store.changes.on('all', wakeAll);
  const heartbeat = setInterval(() => {
    for (const subscriber of subscribers.keys()) subscriber.heartbeat();
  }, config.feedPingIntervalMs);
  heartbeat.unref();
  let keyPass: Promise<void> | undefined;
  const keyCheck = setInterval(() => {
    closeExpired();
    keyPass ??= Promise.all([closeRevoked(), closeRefused()]).then(
      () => {
        keyPass = undefined;
      },
      () => {
        keyPass = undefined;
      },
    );
  }, KEY_CHECK_INTERVAL_MS);
  keyCheck.unref();
  const pruner = new Pruner(
    store,
    { keepCount: config.eventsRetainCount, keepMs: config.eventsRetainMs, batchSize: PRUNE_BATCH },
    config.eventsPruneIntervalMs,
    log,
  );

  /** Feed sockets open, or being upgraded, by account: each holds its place until its connection closes. */
  const socketsByAccount = new Map<number, number>();
  /**
   * Takes one of the account's places for `socket`, before the upgrade is counted (a refusal with 429
   * is not), or throws the 429 when it has none left.
   */
  function takePlace(accountId: number, socket: Duplex): void {
    const held = socketsByAccount.get(accountId) ?? 0;
    if (held >= config.feedMaxSocketsPerAccount) {
      throw new ApiError(
        'too_many_connections',
        `The account holds ${held} feed sockets on this server, as many as it may; close one first.`,
      );
    }
    socketsByAccount.set(accountId, held + 1);
    socket.once('close', () => {
      const left = (socketsByAccount.get(accountId) ?? 1) - 1;
      if (left > 0) socketsByAccount.set(accountId, left);
      else socketsByAccount.delete(accountId);
    });
  }

  async function upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const startedAt = performance.now();
    const requestId = requestIdOf(request);
    let accountId: number | undefined;
    const answered = (status: number, bytes: number) => {
      const seconds = (performance.now() - startedAt) / 1000;
      const answer = {
        requestId,
        method: request.method ?? 'GET',
        operation: FEED_OPERATION,
        route: FEED_PATH,
        status,
        seconds,
        bytes,
        accountId,
      };
      for (const observer of observers) observer.answered(answer);
    };
    try {
      if (closing) throw unavailable('The server is shutting down.');
      const feedRequest = await checkUpgrade(request, {
        store,
        tokens,
        admit: async (principal, claims) => {
          accountId = principal.accountId;
          takePlace(principal.accountId, socket);
          await admit?.(principal, request, claims);
        },
      });
      if (closing) throw unavailable('The server is shutting down.');
      server.handleUpgrade(request, socket, head, (websocket) => {
        answered(101, 0);
        subscribe(websocket, socket, feedRequest, log.child({ requestId }));
      });
    } catch (error) {
      const problem = toApiError(error);
      // Never the request's URL: it may carry the key.
      if (problem.status >= 500) log.error({ requestId, err: error, path: FEED_PATH }, 'feed upgrade failed');
      else log.debug({ requestId, status: problem.status, code: problem.code }, 'feed upgrade refused');
      answered(problem.status, writeProblem(socket, problem, { requestId }));
    }
  }

  /** Closes the sockets whose key or token has expired: the expiry of each is known, and never changes. */
  function closeExpired(): void {
    const now = Date.now();
    for (const [subscriber, { expiresAt, token }] of subscribers) {
      if (expiresAt !== null && now >= expiresAt) subscriber.close(closeCodes.keyExpired);
      else if (token && now >= token.refusedFrom) subscriber.close(closeCodes.tokenExpired);
    }
  }

  /**
   * Closes the sockets whose end user's token no longer verifies with its account's issuers, read again
   * (not the half-second-old answer of Store.findIssuers, which would add its age to the second a change
   * may take): one deleted, or changed so that it refuses the token. A token verified is remembered by
   * the verifier while its issuer is unchanged, so that most passes verify nothing again. Issuers that
   * cannot be read close nothing.
   */
  async function closeRefused(): Promise<void> {
    const byAccount = new Map<number, [Subscriber, EndUserToken][]>();
    for (const [subscriber, { accountId, token }] of subscribers) {
      if (!token) continue;
      const held = byAccount.get(accountId) ?? [];
      held.push([subscriber, token]);
      byAccount.set(accountId, held);
    }
    for (const [accountId, held] of byAccount) {
      let issuers: AccountIssuers;
      try {
        issuers = { accountId, issuers: await store.listIssuers(accountId) };
      } catch (error) {
        log.warn({ err: error }, 'feed could not check the tokens of its sockets');
        continue;
      }
      for (const [subscriber, { token, refusedFrom }] of held) {
        try {
          await tokens.verifyToken(token, issuers);
        } catch (error) {
          if (!(error instanceof ApiError && error.code === 'invalid_token')) {
            log.warn({ err: error }, 'feed could not check the token of a socket');
          } else subscriber.close(Date.now() >= refusedFrom ? closeCodes.tokenExpired : closeCodes.tokenRefused);
        }
      }
    }
  }

  /** Closes the sockets whose key has been revoked. A database that does not answer closes nothing. */
  async function closeRevoked(): Promise<void> {
    const hashes = [...new Set([...subscribers.values()].map(({ hash }) => hash))];
    const live = new Set<string>();
    try {
      for (let start = 0; start < hashes.length; start += KEY_CHECK_BATCH) {
        for (const hash of await store.liveKeyHashes(hashes.slice(start, start + KEY_CHECK_BATCH))) live.add(hash);
      }
    } catch (error) {
      log.warn({ err: error }, 'feed could not check the keys of its sockets');
      return;
    }
    const revoked = new Set(hashes.filter((hash) => !live.has(hash)));
    for (const [subscriber, { hash }] of subscribers) if (revoked.has(hash)) subscriber.close(closeCodes.keyRevoked);
  }

  /** `connectionLog`: the log of this connection, whose lines carry its request id. */
  function subscribe(socket: WebSocket, connection: Duplex, request: FeedRequest, connectionLog: Logger): void {
    const { collectionId, collection, kinds, since, filter, view, endUser, principal } = request;
    const rules = () => store.findRules(principal.accountId, collection);
    const subscriber = new Subscriber(socket, connection, {
      collection,
      kinds,
      since,
      filter,
      view,
      endUser,
      rules,
      maxBufferBytes: config.feedMaxBufferBytes,
      readEvents: (after, upTo) => store.readEvents(collectionId, { ...PAGE, after, upTo }),
      latestSeq: () => store.latestSeq(collectionId),
      counts,
      log: connectionLog,
    });
    const token = endUser?.token === undefined ? undefined : { token: endUser.token, refusedFrom: endUser.refusedFrom as number };
    subscribers.set(subscriber, { hash: request.keyHash, expiresAt: principal.expiresAt, accountId: principal.accountId, token });
    socket.once('close', (code) => {
      subscribers.delete(subscriber);
      connectionLog.info({ collection, code }, 'feed closed');
    });
    let tail = tails.get(collectionId);
    if (!tail) {
      const created: Tail = new Tail({
        collectionId,
        collection,
        latestSeq: () => store.latestSeq(collectionId),
        readEvents: (after) => store.readEvents(collectionId, { ...PAGE, after }),
        rules,
        onEnd: () => {
          if (tails.get(collectionId) !== created) return;
          tails.delete(collectionId);
          if (tails.size === 0) store.changes.off('change', wake);
        },
        log,
      });
      tail = created;
      if (tails.size === 0) store.changes.on('change', wake);
      tails.set(collectionId, tail);
    }
    tail.join(subscriber);
    connectionLog.info(
      {
        account: principal.account,
        collection,
        events: kinds,
        since,
        filtered: filter !== undefined,
        endUser: endUser === undefined ? undefined : endUser.token === undefined ? 'anonymous' : 'token',
      },
      'feed subscribed',
    );
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
    async lag() {
      let behind = 0;
      for (const tail of [...tails.values()]) {
        const { collectionId, forwarded } = tail.position;
        if (forwarded === undefined) continue;
        const latest = await store.latestSeq(collectionId);
        if (latest !== undefined) behind += Math.max(0, latest - forwarded);
      }
      return behind;
    },
    pruner,
    async close(graceMs = 10_000) {
      closing = true;
      clearInterval(heartbeat);
      clearInterval(keyCheck);
      store.changes.off('change', wake);
      store.changes.off('all', wakeAll);
      await Promise.all([pruner.stop(), keyPass, ...checking]);
      const open = [...subscribers.keys()];
      for (const subscriber of open) subscriber.close(closeCodes.shuttingDown);
      const timer = setTimeout(() => {
        for (const subscriber of open) subscriber.socket.terminate();
      }, graceMs);
      await Promise.all(open.map((subscriber) => subscriber.closed));
      clearTimeout(timer);
      await Promise.all([...[...tails.values()].map((tail) => tail.idle), ...open.map((subscriber) => subscriber.replaying)]);
    },
  };
}
