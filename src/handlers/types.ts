// What a handler is: the validated input of its operation, the service's parts, and its answer.
import type { IncomingHttpHeaders } from 'node:http';
import type { operations } from '../../generated/openapi.ts';
import type { Config } from '../config.ts';
import type { AccountContracts } from '../contract/served.ts';
import type { Principal } from '../db/accounts/keys.ts';
import type { FeedStart } from '../db/events/events.ts';
import type { Store } from '../db/open-store.ts';
import type { Delivery } from '../feed/delivery.ts';
import type { Encoding } from '../feed/encodings.ts';
import type { FeedRequest } from '../feed/upgrade.ts';
import type { PollWait } from '../feed/waiter.ts';
import type { Credentials } from '../http/authentication.ts';
import type { BodyBudget } from '../http/body-budget.ts';
import type { LaterAnswer, Result, StreamedBody } from '../http/responder.ts';
import type { OnceRequest } from '../idempotency/answers.ts';
import type { Claims, TokenVerifier } from '../tokens/verifier.ts';
import type { Admission, Meter } from '../usage/meter.ts';

export type { Result } from '../http/responder.ts';

/**
 * The operations of openapi.yaml that a handler answers: not its `head` operations, which their path's
 * `get` answers (http/operations.ts), nor the feed's `openFeed` (and `headFeed`), answered by the feed.
 */
export type OperationId = Exclude<keyof operations, `head${string}` | 'openFeed'>;

type Content<K extends OperationId> = operations[K] extends { requestBody: { content: infer C } } ? C : undefined;
/** The body of any media type the operation takes (most take `application/json` alone). */
type Body<K extends OperationId> = Content<K> extends undefined ? undefined : Content<K>[keyof Content<K>];
/** The media types the operation's body may be sent in, as openapi.yaml lists them. */
type MediaType<K extends OperationId> = Content<K> extends undefined ? undefined : keyof Content<K> & string;

/** What a handler receives: the request as validated, coerced and defaulted against openapi.yaml. */
export interface Input<K extends OperationId> {
  path: operations[K]['parameters']['path'];
  /** Every query parameter of ours has a default, so after validation every one is present. */
  query: Required<NonNullable<operations[K]['parameters']['query']>>;
  body: Body<K>;
  /** The body's media type, which says how to read it (a PATCH of rows: src/patches/). */
  mediaType: MediaType<K>;
  /** The key's account; absent on the routes that need no key. */
  principal: Principal;
  /** The request's headers as Node reads them: the header parameters of openapi.yaml are read from here. */
  headers: IncomingHttpHeaders;
  /** A write's Idempotency-Key, when it carries one: its write stores its answer (http/idempotency.ts; idempotency/answers.ts, answerOnce). */
  once?: OnceRequest;
  /** What the request counted toward its account's plan, when metered: a batch counts more (usage/meter.ts, admitMore). */
  admission?: Admission;
  /**
   * With a publishable key, the claims of the end user's verified token, or null for an anonymous
   * caller; undefined with a secret key, which rules never bind (docs/access.md).
   */
  claims?: Claims | null;
  /** What the key's request authenticated with: the key, and the end user's token (http/authentication.ts); absent where no key is needed. */
  credentials: Credentials;
}

export interface Deps {
  store: Store;
  config: Config;
  meter: Meter;
  /** The bytes of request bodies worked on at once (http/body-budget.ts, BodyBudget). */
  bodies: BodyBudget;
  /** The contract documents, as served. */
  documents: { openapi: string; asyncapi: string };
  /** The account's own documents, built from them (openapi.yaml, getAccountOpenApi). */
  contracts: AccountContracts;
  /** Verifies end users' tokens against their account's issuers (docs/access.md). */
  tokens: TokenVerifier;
  /** The real-time feed, which serves the changes' streams and wakes their long polls (handlers/feed.ts). */
  feed: ChangesFeed;
}

/** What the changes over HTTP use of the real-time feed (feed/feed.ts, Feed: openStream, placeForPoll, waitForPage, startAfter, keepTail, changesAfter). */
interface ChangesFeed {
  openStream(request: FeedRequest, encoding: Encoding): StreamedBody;
  placeForPoll(accountId: number): (() => void) | undefined;
  waitForPage(poll: PollWait): LaterAnswer;
  startAfter(accountId: number, collection: string, since: number | undefined): Promise<FeedStart | undefined> | undefined;
  keepTail(accountId: number, collectionId: number, collection: string): void;
  changesAfter(collectionId: number, after: number, limit: number, atLeast: number): readonly Delivery[] | undefined;
}

export type Handler<K extends OperationId> = (input: Input<K>, deps: Deps) => Promise<Result> | Result;
export type Handlers<K extends OperationId> = { [Id in K]: Handler<Id> };
