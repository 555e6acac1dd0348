// The checks an upgrade to `GET /ws` passes before it becomes a WebSocket, and the HTTP refusal when
// it does not (asyncapi.yaml, `x-upgrade-refusals`). Guard clauses in order: request target (400), route,
// method, HTTP/1.1, handshake headers (Host, once; no subprotocol, no body), key (401), beside a
// publishable key the end user's token (401 invalid_token) and the page's Origin (403
// origin_not_allowed), sockets and usage (429), query (400; its filter read as the HTTP API reads one),
// collection (404, also for one the key is not limited to), with a publishable key the collection's rules
// (403), `since` (400, 410): the order of the HTTP API's stages (app.ts). Every key's scope grants the
// feed (`read`); a publishable key is refused (403) unless openapi.yaml's openFeed takes one
// (`x-rowbase-publishable`).
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { ErrorObject } from 'ajv';
import type { components } from '../../generated/asyncapi.ts';
import { validateFeedQuery } from '../../generated/feed-validators.js';
import openapi from '../../generated/openapi-server.json' with { type: 'json' };
import { hashKey } from '../api-keys/hash.ts';
import type { Principal } from '../db/accounts/keys.ts';
import type { EventType, FeedStart } from '../db/events/events.ts';
import type { Store } from '../db/open-store.ts';
import {
  ApiError,
  collectionNotFound,
  type FieldError,
  gone,
  hostRepeated,
  hostRequired,
  notFound,
  secretKeyNeeded,
  tokenBesideSecretKey,
  unauthorized,
  validationFailed,
} from '../errors.ts';
import { keyIn, tokenIn } from '../http/authentication.ts';
import { allows, originNotAllowed } from '../http/cors.ts';
import { headerLines, pathOf, targetOf } from '../http/target.ts';
import { type Filter, holdsRelated, parseFilterText, relatedRefused } from '../query/filter.ts';
import type { Claims as RuleClaims } from '../rules/compile.ts';
import { refusedFrom, type TokenVerifier } from '../tokens/verifier.ts';
import { eventKinds } from './messages.ts';
import { type EndUser, endUserView, type FeedView, feedView } from './view.ts';

type FeedQuery = components['schemas']['FeedQuery'];

/** An upgrade that passed every check: who asks, and what to send them. */
export interface FeedRequest {
  principal: Principal;
  /** The hash of its key, checked while the socket is open (a revoked key's sockets close). */
  keyHash: string;
  collection: string;
  collectionId: number;
  /** The kinds asked for, in the order `ready.events` lists them. */
  kinds: EventType[];
  /** Replay the events after this seq first; absent: only what is committed from now on. */
  since?: number;
  /** Only the changes of the rows that match it, before or after; absent: every change. */
  filter?: Filter;
  /** What the subscriber sees of each change: the filter's rows, and with a publishable key its end user's (view.ts). */
  view: FeedView;
  /** With a publishable key, the end user (anonymous, or of a verified token) whose rules hold the subscription. */
  endUser?: EndUser;
}

export interface UpgradeChecks {
  store: Store;
  /** Verifies the end user's token beside a publishable key, against the account's issuers. */
  tokens: TokenVerifier;
  /**
   * Runs once the key (and its token and Origin) are known, before anything else about the subscription
   * is checked: it counts the upgrade, or throws to refuse it (429). `claims`: a publishable key's end
   * user's (null when anonymous), undefined for a secret key. Default: admit everyone.
   */
  admit?: (principal: Principal, claims: RuleClaims | null | undefined) => Promise<void> | void;
}

export const FEED_PATH = '/ws';

/** Whether the feed takes a publishable key: openapi.yaml's openFeed says so (`x-rowbase-publishable`), as the HTTP API's operations do. */
const FEED_TAKES_PUBLISHABLE = (openapi.paths[FEED_PATH].get as { 'x-rowbase-publishable'?: boolean })['x-rowbase-publishable'] === true;

/** Throws the ApiError to refuse `request` with, or returns what it asks for. */
export async function checkUpgrade(request: IncomingMessage, { store, tokens, admit = () => {} }: UpgradeChecks): Promise<FeedRequest> {
  const url = targetOf(request.url);
  const path = pathOf(request.url);
  if (path !== FEED_PATH) throw notFound(`There is no WebSocket route ${path}; the feed is on ${FEED_PATH}.`);
  if (request.method !== 'GET') throw methodNotAllowed();
  // RFC 6455 §4.1: the handshake is an HTTP/1.1 request (or later; Node reads only HTTP/1.x).
  if (request.httpVersion === '1.0') throw validationFailed('A WebSocket upgrade is an HTTP/1.1 request; this one is HTTP/1.0.');
  const errors = [...handshakeErrors(request), ...upgradeOnlyErrors(request.headers)];
  if (errors.length > 0) throw validationFailed('The request is not a valid WebSocket upgrade.', errors);

  const key = keyIn(request, url.searchParams);
  const principal = key === undefined ? undefined : await store.findPrincipal(key);
  if (!principal || key === undefined) throw unauthorized();
  // As the HTTP API does, the token and the Origin before the count: neither a forged token nor a page
  // of another origin spends the account's plan.
  let endUser: Omit<EndUser, 'rules'> | undefined;
  if (principal.kind === 'publishable') {
    const token = tokenIn(request, url.searchParams);
    if (token === undefined) endUser = { claims: null };
    else {
      const claims = await tokens.verifyToken(token, await store.findIssuers(principal.accountId));
      // A verified token's claims are JSON, as parsed from it.
      endUser = { token, claims: claims as RuleClaims, refusedFrom: refusedFrom(claims) };
    }
    const { origin } = request.headers;
    if (origin !== undefined && !allows(principal, origin)) throw originNotAllowed(origin);
  }
  // As a /v1 request once its key is known: counted whatever the outcome, unless refused 429 here.
  await admit(principal, endUser?.claims);
  if (principal.kind === 'publishable' && !FEED_TAKES_PUBLISHABLE) throw secretKeyNeeded(`GET ${FEED_PATH}`);

  const query = queryOf(url.searchParams);
  if (query.access_token !== undefined && !endUser) throw tokenBesideSecretKey();
  const { since, ...subscription } = await subscriptionOf(store, principal, endUser, {
    collection: query.collection,
    events: query.events,
    filter: query.filter,
    since: query.since === undefined ? undefined : Number(query.since),
  });
  return { ...subscription, keyHash: hashKey(key), since: query.since === undefined ? undefined : since };
}

/** What a subscription asks for, as its query says it (the feed's, or a changes request's: handlers/feed.ts). */
export interface SubscriptionQuery {
  collection: string;
  /** A comma list of the kinds of change. */
  events: string;
  /** The filter's JSON text. */
  filter?: string;
  /** Start after this seq; absent: from the latest. */
  since?: number;
  /** The name of the parameter that holds `since`, for its errors. Default `since`. */
  sinceName?: string;
  /**
   * Where it starts when that is known without a read (a waiting long poll's, from the feed's tail:
   * Feed.startAfter); undefined, or none given: Store.feedStart reads it.
   */
  knownStart?: (accountId: number, collection: string, since: number | undefined) => Promise<FeedStart | undefined> | undefined;
}

/** A subscription checked: what FeedRequest says, and where it starts. */
export interface Subscription extends Omit<FeedRequest, 'keyHash' | 'since'> {
  /** The collection's latest seq when it was checked. */
  lastSeq: number;
  /** Where it starts: the query's `since`, or `lastSeq`. */
  since: number;
}

/**
 * Checks what `principal` (with a publishable key, as `endUser`) subscribes to, as the feed and the
 * changes over HTTP check it, in the order of the HTTP API's stages: its filter (400, its errors
 * pointing into it), its collection (404, also for one the key is not limited to), with a publishable key
 * the collection's rules (403), `since` (400 past the latest seq, 410 before the oldest retained event).
 */
export async function subscriptionOf(
  store: Store,
  principal: Principal,
  endUser: Omit<EndUser, 'rules'> | undefined,
  query: SubscriptionQuery,
): Promise<Subscription> {
  const read = query.filter === undefined ? undefined : parseFilterText(query.filter);
  // A change is tested alone, in memory, where no related row is at hand.
  if (read && holdsRelated(read))
    throw validationFailed(relatedRefused("A feed's"), [{ in: 'query', name: 'filter', message: 'holds $match or $some' }]);
  if (principal.collections && !principal.collections.has(query.collection)) throw collectionNotFound(query.collection);
  // A search tests the rows' words in the fields of the collection's search index as it is now.
  const filter = await store.searchFilter(principal.accountId, query.collection, read);
  const { collectionId, lastSeq, resumableFrom } =
    (await query.knownStart?.(principal.accountId, query.collection, query.since)) ??
    (await store.feedStart(principal.accountId, query.collection));
  // With a publishable key, 403 where the rules refuse the subscription, as they refuse a read.
  const heldToRules = endUser && { ...endUser, rules: await store.findRules(principal.accountId, query.collection) };
  const subscription: Subscription = {
    principal,
    collection: query.collection,
    collectionId,
    kinds: kindsOf(query.events),
    filter,
    view: heldToRules ? endUserView(filter, heldToRules, heldToRules.rules, query.collection) : feedView(filter, undefined),
    endUser: heldToRules,
    lastSeq,
    since: lastSeq,
  };
  const { since, sinceName = 'since' } = query;
  if (since === undefined) return subscription;
  if (since > lastSeq) {
    throw validationFailed(`${sinceName} is after the latest seq of ${query.collection}.`, [
      {
        in: sinceName === 'since' ? 'query' : 'header',
        name: sinceName,
        message: `must be at most ${lastSeq}, the collection's latest seq`,
      },
    ]);
  }
  if (since < resumableFrom) {
    throw gone(
      `Events after seq ${since} of ${query.collection} are no longer retained (the oldest follows seq ${resumableFrom}). ` +
        'Read the rows again, then subscribe without since.',
    );
  }
  return { ...subscription, since };
}

/**
 * The refusal of a request for the feed that is no upgrade at all, and so reached the HTTP API: 405 for
 * another method, else 400 naming what a WebSocket handshake lacks. Like a malformed handshake, it is
 * refused before its key is looked at, and so never counts toward usage.
 */
export function notAnUpgrade(method: string, request: Pick<IncomingMessage, 'headers' | 'rawHeaders'>): ApiError {
  // HEAD answers as GET does, without the body (openapi.yaml: every GET route also answers HEAD).
  if (method !== 'GET' && method !== 'HEAD') return methodNotAllowed('GET, HEAD');
  return validationFailed(`${FEED_PATH} takes a WebSocket upgrade (asyncapi.yaml); this request is not one.`, handshakeErrors(request));
}

const methodNotAllowed = (allow = 'GET') =>
  new ApiError('method_not_allowed', `${FEED_PATH} answers ${allow}.`, { headers: { Allow: allow } });

/**
 * What Node needs to see an upgrade (Connection) and what `ws` checks in handleUpgrade, checked here
 * first so that a malformed handshake, too, is refused with a problem body (RFC 6455 §4.2.1).
 */
function handshakeErrors({ headers, rawHeaders }: Pick<IncomingMessage, 'headers' | 'rawHeaders'>): FieldError[] {
  const errors: FieldError[] = [];
  const connection = (headers.connection ?? '').split(',').map((option) => option.trim().toLowerCase());
  if (!connection.includes('upgrade')) errors.push({ in: 'header', name: 'connection', message: 'must include Upgrade' });
  if (headers.upgrade?.toLowerCase() !== 'websocket') errors.push({ in: 'header', name: 'upgrade', message: 'must be websocket' });
  if (!/^[+/0-9A-Za-z]{22}==$/.test(headers['sec-websocket-key'] ?? '')) {
    errors.push({ in: 'header', name: 'sec-websocket-key', message: 'must be 16 bytes in base64' });
  }
  const version = headers['sec-websocket-version'];
  if (version !== '13' && version !== '8') errors.push({ in: 'header', name: 'sec-websocket-version', message: 'must be 13' });
  if (!headers.host) errors.push(hostRequired);
  else if (headerLines(rawHeaders, 'host') > 1) errors.push(hostRepeated);
  return errors;
}

/**
 * What a WebSocket handshake may not carry here, though `ws` would take it: a subprotocol (the feed
 * speaks none, and `ws` agrees by default to the first one offered, or answers a malformed list with a
 * plain-text 400), and a body (`ws` reads its bytes as the client's first frames). RFC 6455 §4.2.2 lets
 * a server refuse a handshake it does not accept with an HTTP error.
 */
function upgradeOnlyErrors(headers: IncomingHttpHeaders): FieldError[] {
  const errors: FieldError[] = [];
  if (headers['sec-websocket-protocol'] !== undefined) {
    errors.push({ in: 'header', name: 'sec-websocket-protocol', message: 'must be absent: the feed speaks no subprotocol' });
  }
  if (headers['content-length'] !== undefined && headers['content-length'] !== '0') {
    errors.push({ in: 'header', name: 'content-length', message: 'must be absent or 0: an upgrade request has no body' });
  }
  if (headers['transfer-encoding'] !== undefined) {
    errors.push({ in: 'header', name: 'transfer-encoding', message: 'must be absent: an upgrade request has no body' });
  }
  return errors;
}

/** The query validated against asyncapi.yaml's FeedQuery, with its defaults; each parameter at most once. */
function queryOf(params: URLSearchParams): Required<Pick<FeedQuery, 'collection' | 'events'>> & FeedQuery {
  const query: Record<string, string> = {};
  const errors: FieldError[] = [];
  for (const [name, value] of params) {
    if (name in query) errors.push({ in: 'query', name, message: 'is given more than once' });
    query[name] = value;
  }
  if (!validateFeedQuery(query)) errors.push(...(validateFeedQuery.errors ?? []).map(queryError));
  if (errors.length > 0) throw validationFailed('The request does not match the feed description (asyncapi.yaml).', unique(errors));
  return query as FeedQuery & { events: string };
}

function queryError(error: ErrorObject): FieldError {
  if (error.keyword === 'additionalProperties') {
    return { in: 'query', name: String(error.params.additionalProperty), message: 'is not a known parameter' };
  }
  if (error.keyword === 'required') return { in: 'query', name: String(error.params.missingProperty), message: 'is required' };
  const name = error.instancePath.slice(1);
  if (name === 'events') return { in: 'query', name, message: `must be a comma-separated list of ${eventKinds.join(', ')}` };
  if (name === 'since') return { in: 'query', name, message: "must be an integer from 0 to the collection's latest seq" };
  return { in: 'query', name, message: error.message ?? 'is invalid' };
}

function unique(errors: FieldError[]): FieldError[] {
  const byText = new Map(errors.map((error) => [`${error.in} ${error.name} ${error.message}`, error]));
  return [...byText.values()];
}

const kindsOf = (events: string): EventType[] => eventKinds.filter((kind) => events.split(',').includes(kind));
