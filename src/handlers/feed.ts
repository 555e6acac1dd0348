// A collection's changes over plain HTTP (openapi.yaml, getChanges; docs/feed.md, "Changes over plain
// HTTP"): the feed's messages, from the same events table and checked as a subscription is
// (feed/upgrade.ts, subscriptionOf), as a page, a long poll, or a stream of server-sent events or JSON
// lines, which the feed serves as one of its subscribers (feed/feed.ts, openStream). A long poll that
// waits is handed to the feed too (Feed.waitForPage), and its request's stages end: what it holds while
// it waits is what its answer needs.
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { hashKey } from '../api-keys/hash.ts';
import type { EventType } from '../db/events/events.ts';
import type { Store } from '../db/open-store.ts';
import { ApiError, collectionNotFound, gone, tokenBesideSecretKey, validationFailed } from '../errors.ts';
import { Delivery } from '../feed/delivery.ts';
import { type Encoding, jsonLines, serverSentEvents } from '../feed/encodings.ts';
import { type Subscription, subscriptionOf } from '../feed/upgrade.ts';
import type { EndUser, FeedView } from '../feed/view.ts';
import type { ChangeWait, PollWait } from '../feed/waiter.ts';
import { etagOf, ifNoneMatch } from '../http/conditional.ts';
import type { Claims as RuleClaims } from '../rules/compile.ts';
import { refusedFrom } from '../tokens/verifier.ts';
import type { Deps, Handlers, Input, Result } from './types.ts';

/** The rows a page reads at most (their JSON text), beside `limit`: the feed's page. */
const PAGE_CHARS = 1024 * 1024;

/** The forms of the changes, by the media type `Accept` picks, in the order a tie picks them. */
const FORMS = { 'application/json': undefined, 'text/event-stream': serverSentEvents, 'application/jsonl': jsonLines } as const;
type MediaType = keyof typeof FORMS;

/** A page of changes that never changes may be kept by the client's caches; the last one may not. */
const IMMUTABLE = 'private, max-age=31536000, immutable';
/** What an answer depends on beside its URL: the form asked for, whose view it is, and (CORS) the page's origin. */
const VARY = 'Accept, Authorization, X-Api-Key, Origin';

export const feedHandlers: Handlers<'getChanges'> = {
  async getChanges(input, { store, feed }) {
    const { principal, path, query, headers, claims, credentials } = input;
    const mediaType = acceptedForm(headers.accept);
    const encoding = FORMS[mediaType];
    const resumeFrom = encoding === serverSentEvents ? lastEventId(headers) : undefined;
    if (query.access_token !== undefined && claims === undefined) throw tokenBesideSecretKey();
    // Without since, a page reads from the oldest retained event; a stream goes live, as a feed socket does (openapi.yaml).
    const since = resumeFrom ?? query.since ?? (encoding ? undefined : 0);
    const subscription = await subscriptionOf(store, principal, endUserOf(claims, credentials.token), {
      collection: path.collection_name,
      events: query.events,
      filter: query.filter,
      since,
      sinceName: resumeFrom === undefined ? 'since' : 'last-event-id',
      // A long poll that may wait starts where the feed's tail knows, without a read: a commit it has
      // not heard of yet wakes the poll as it waits (a page that does not wait reads the latest seq).
      knownStart: !encoding && query.wait > 0 ? feed.startAfter : undefined,
    });
    if (encoding) {
      return {
        status: 200,
        contentType: mediaType === 'text/event-stream' ? 'text/event-stream; charset=utf-8' : 'application/jsonl; charset=utf-8',
        headers: { 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no', Vary: VARY },
        stream: feed.openStream({ ...subscription, keyHash: hashKey(credentials.key) }, encoding as Encoding),
      };
    }
    const { limit, wait } = query;
    if (wait > 0) feed.keepTail(principal.accountId, subscription.collectionId, subscription.collection);
    const page = await pageAfter(store, feed, subscription, subscription.since, limit);
    if (wait === 0 || !isEmpty(page)) return answerPage(headers, page);
    // A long poll that waits holds one of the account's places, as a stream does: with none left, it answers at once.
    const release = feed.placeForPoll(principal.accountId);
    if (!release) return answerPage(headers, { ...page, waitSkipped: true });
    const condition = headers['if-none-match'] === undefined ? {} : { 'if-none-match': headers['if-none-match'] };
    const poll = new WaitingPoll(store, feed, subscription, limit, condition, page.nextSince, Date.now() + wait * 1000, release);
    return { status: 200, later: feed.waitForPage(poll) };
  },
};

/** A page read: the messages' JSON, where the next starts, and whether it reached the latest seq. */
interface PageRead {
  texts: string[];
  nextSince: number;
  caughtUp: boolean;
  /** A long poll that did not wait, as the account had no place left for it (openapi.yaml, getChanges: `Rowbase-Wait-Skipped`). */
  waitSkipped?: true;
}

/** A page a long poll waits past: caught up, and not one message. */
const isEmpty = (page: PageRead) => page.caughtUp && page.texts.length === 0;

/**
 * A long poll that waits, as the feed holds it once its request's stages are over (Feed.waitForPage):
 * what its page needs (the subscription, `limit`, its If-None-Match) and nothing more of the request.
 * Woken as the feed's sockets are, by a change it shows, it answers the page after the seq it waited
 * after, or waits again when that page shows nothing after all; it gives the account's place back
 * before it answers, or as soon as its client goes away, whose answer is then not read.
 */
class WaitingPoll implements PollWait {
  readonly change: ChangeWait;

  constructor(
    private readonly store: Store,
    private readonly feed: Deps['feed'],
    private readonly subscription: Subscription,
    private readonly limit: number,
    private readonly condition: IncomingHttpHeaders,
    after: number,
    readonly deadline: number,
    readonly release: () => void,
  ) {
    const { principal, collectionId, collection, kinds, view } = subscription;
    this.change = { accountId: principal.accountId, collectionId, collection, after, kinds, view };
  }

  async answer(after: number, final: boolean): Promise<Result | number> {
    const page = await pageAfter(this.store, this.feed, this.subscription, after, this.limit);
    if (!final && isEmpty(page)) return page.nextSince;
    return answerPage(this.condition, page);
  }
}

/**
 * The page after `since`: from the deliveries the feed's tail of the collection forwarded last when it
 * holds them all (Feed.changesAfter: it has forwarded at least the latest seq this request read), without
 * a read; else read from the events table (readPage). Either is the page as the latest seq read stood.
 */
async function pageAfter(store: Store, feed: Deps['feed'], subscription: Subscription, since: number, limit: number): Promise<PageRead> {
  const { collectionId, kinds, view, lastSeq } = subscription;
  const recent = feed.changesAfter(collectionId, since, limit, lastSeq);
  if (!recent) return readPage(store, subscription, since, limit);
  const texts = textsOf(recent, kinds, view);
  // The tail holds more than a page (tail.ts, RECENT): more than a page's characters is read as a page, bounded.
  if (texts.reduce((chars, text) => chars + text.length, 0) > PAGE_CHARS) return readPage(store, subscription, since, limit);
  return { texts, nextSince: recent.at(-1)?.event.seq ?? since, caughtUp: true };
}

/** The messages of `deliveries` as the subscription's subscriber would get them: of its kinds, in its view. */
function textsOf(deliveries: readonly Delivery[], kinds: readonly EventType[], view: FeedView): string[] {
  const texts: string[] = [];
  for (const delivery of deliveries) {
    if (!kinds.includes(delivery.type)) continue;
    const text = delivery.textFor(view);
    if (text !== undefined) texts.push(text);
  }
  return texts;
}

/**
 * The messages of the events after `since`, `limit` events at most (and about PAGE_CHARS of rows), as
 * the subscription's subscriber would get them (Delivery). Retained events have no gaps: one missing
 * was pruned since the request was checked (410), or went with the collection (404).
 */
async function readPage(store: Store, subscription: Subscription, since: number, limit: number): Promise<PageRead> {
  const { collectionId, collection, kinds, view } = subscription;
  const latest = await store.latestSeq(collectionId);
  if (latest === undefined) throw collectionNotFound(collection);
  if (since >= latest) return { texts: [], nextSince: since, caughtUp: true };
  const events = await store.readEvents(collectionId, { after: since, upTo: latest, limit, maxChars: PAGE_CHARS });
  if (events[0]?.seq !== since + 1) {
    if ((await store.latestSeq(collectionId)) === undefined) throw collectionNotFound(collection);
    throw gone(
      `Events after seq ${since} of ${collection} are no longer retained. Read the rows again, then read changes after their Rowbase-Seq.`,
    );
  }
  const texts = textsOf(
    events.map((event) => new Delivery(collection, event)),
    kinds,
    view,
  );
  const nextSince = (events.at(-1) as (typeof events)[number]).seq;
  return { texts, nextSince, caughtUp: nextSince >= latest };
}

/** A page, cached when it is not the last (its ETag, and 304 to an If-None-Match naming it). */
function answerPage(headers: IncomingHttpHeaders, { texts, nextSince, caughtUp, waitSkipped }: PageRead): Result {
  // The messages are JSON text already: placed in the answer as they are.
  const body = `{"changes":[${texts.join(',')}],"next_since":${nextSince},"caught_up":${caughtUp}}`;
  if (caughtUp) {
    const last = { 'Cache-Control': 'no-store', Vary: VARY, ...(waitSkipped && { 'Rowbase-Wait-Skipped': 'too_many_connections' }) };
    return { status: 200, body, contentType: 'application/json', headers: last };
  }
  // Its bytes made once, for the hash and the answer alike: each would encode the text again.
  const bytes = Buffer.from(body);
  const version = createHash('sha256').update(bytes).digest('base64url').slice(0, 22);
  const cached = { ETag: etagOf(version), 'Cache-Control': IMMUTABLE, Vary: VARY };
  if (ifNoneMatch(headers)(version)) return { status: 304, headers: { ETag: cached.ETag } };
  return { status: 200, body: bytes, contentType: 'application/json', headers: cached };
}

/** With a publishable key (`claims` defined), the end user the subscription is held to. */
function endUserOf(claims: Input<'getChanges'>['claims'], token: string | undefined): Omit<EndUser, 'rules'> | undefined {
  if (claims === undefined) return undefined;
  if (claims === null || token === undefined) return { claims: null };
  // A verified token's claims are JSON, as parsed from it.
  return { token, claims: claims as RuleClaims, refusedFrom: refusedFrom(claims) };
}

/** `Last-Event-ID`, the seq an EventSource resumes after; undefined when absent. */
function lastEventId(headers: IncomingHttpHeaders): number | undefined {
  const value = headers['last-event-id'];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^(0|[1-9][0-9]{0,15})$/.test(value.trim())) {
    throw validationFailed('Last-Event-ID is not a seq.', [{ in: 'header', name: 'last-event-id', message: 'must be a decimal integer' }]);
  }
  return Number(value.trim());
}

/**
 * The form `Accept` picks (RFC 9110 §12.5.1): of the media types the changes are answered in, the one
 * of the highest quality, a type named exactly before `type/*` before `*\/*`, ties in the order of
 * FORMS; none, or no Accept: a page. 406 when it accepts none of them.
 */
function acceptedForm(accept: string | undefined): MediaType {
  if (accept === undefined || accept.trim() === '') return 'application/json';
  const ranges = accept.split(',').map((part) => {
    const [range, ...parameters] = part.split(';').map((piece) => piece.trim().toLowerCase());
    const q = parameters.find((parameter) => parameter.startsWith('q='));
    const quality = q === undefined ? 1 : Number(q.slice(2));
    return { range, quality: Number.isFinite(quality) ? quality : 0 };
  });
  let best: { type: MediaType; quality: number } | undefined;
  for (const type of Object.keys(FORMS) as MediaType[]) {
    const family = `${type.split('/')[0]}/*`;
    const match =
      ranges.find(({ range }) => range === type) ??
      ranges.find(({ range }) => range === family) ??
      ranges.find(({ range }) => range === '*/*');
    if (match && match.quality > 0 && (!best || match.quality > best.quality)) best = { type, quality: match.quality };
  }
  if (!best) {
    throw new ApiError('not_acceptable', `Accept names none of the forms of the changes: ${Object.keys(FORMS).join(', ')}.`);
  }
  return best.type;
}
