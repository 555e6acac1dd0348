// The events table: each row change's event, read in order by the feed and the changes over HTTP.
import { collectionNotFound } from '../../errors.ts';
import type { EventRow, Row } from '../../rows.ts';
import type { Dialect, WriteTx } from '../engine/dialect.ts';
import { boundedEventsSql, eventsSql, feedStartSql, latestSeqSql } from '../engine/sql/events.ts';

export type EventType = 'insert' | 'update' | 'delete';

/** Why a row was deleted, when no request deleted it: its collection's time to live said it expired (../expiry/sweep.ts). */
export type EventReason = 'expired';

export interface StoredEvent {
  collectionId: number;
  seq: number;
  type: EventType;
  row: Row;
  /**
   * An update's row as it was before (asyncapi.yaml, UpdateMessage): undefined for inserts and
   * deletes, and for updates stored before events kept it.
   */
  previous?: Row;
  at: string;
  /** A delete's reason (asyncapi.yaml, DeleteMessage): undefined for a request's. */
  reason?: EventReason;
  /** The characters of its rows' JSON as stored (the row, and the row before), as readEvents() read them. */
  chars?: number;
  /**
   * Its rows' JSON as stored (`row`, and `previous` for an update that kept it), as readEvents() read
   * them: every row is stored as JSON.stringify writes it, so a message made of these texts
   * (../../feed/messages.ts, changeMessageJson) is the text of the message made of the rows parsed.
   */
  texts?: { row: string; previous?: string };
}

/** An event as readEvents() reads it: its rows parsed only when first asked for (a message made of their texts never parses them). */
class ReadEvent implements StoredEvent {
  private parsed?: { row: Row; previous?: Row };

  constructor(
    readonly collectionId: number,
    readonly seq: number,
    readonly type: EventType,
    readonly at: string,
    readonly reason: EventReason | undefined,
    readonly texts: { row: string; previous?: string },
  ) {}

  get row(): Row {
    return this.rows().row;
  }

  get previous(): Row | undefined {
    return this.rows().previous;
  }

  get chars(): number {
    return this.texts.row.length + (this.texts.previous?.length ?? 0);
  }

  private rows() {
    const { row, previous } = this.texts;
    this.parsed ??= { row: JSON.parse(row), previous: previous === undefined ? undefined : JSON.parse(previous) };
    return this.parsed;
  }
}

/**
 * Writes the events of one change inside its transaction. `lastSeq` is the collection's seq after the
 * change, so the events take the consecutive numbers that end there. The feed is woken after commit.
 */
export async function appendEvents(
  db: Dialect,
  trx: WriteTx,
  collectionId: number,
  lastSeq: number,
  type: EventType,
  rows: EventRow[],
  reason?: EventReason,
): Promise<void> {
  const at = new Date().toISOString();
  const first = lastSeq - rows.length + 1;
  for (let start = 0; start < rows.length; start += EVENTS_PER_STATEMENT) {
    const chunk = rows.slice(start, start + EVENTS_PER_STATEMENT);
    const { sql, params } = db.insertEventsSql({ collectionId, first: first + start, type, at, rows: chunk, reason });
    await db.run(trx, sql, params);
  }
  await db.announce(trx, collectionId);
}

/** Events a statement writes at most: on SQLite seven or eight bound values each, well under its limit of 32,766. */
const EVENTS_PER_STATEMENT = 1000;

/** Where a feed of the account's collection `name` can start. */
export interface FeedStart {
  collectionId: number;
  /** The collection's latest seq; 0 before its first change. */
  lastSeq: number;
  /**
   * The oldest `since` that can be resumed from: every event after it is still retained. Retained
   * events always end at `lastSeq` and have no gaps (pruning removes the oldest first).
   */
  resumableFrom: number;
}

/**
 * Read by one statement, so in one snapshot: read apart, a collection deleted in between (its events
 * with it) looked like one whose events were all pruned, and a `since` was refused 410, not 404.
 */
export async function feedStart({ query }: Dialect, accountId: number, name: string): Promise<FeedStart> {
  const [collection] = await query<{ id: number | string; last_seq: number | string; oldest: number | string | null }>(feedStartSql, [
    accountId,
    name,
  ]);
  if (!collection) throw collectionNotFound(name);
  const collectionId = Number(collection.id);
  const lastSeq = Number(collection.last_seq);
  const resumableFrom = collection.oldest === null ? lastSeq : Number(collection.oldest) - 1;
  return { collectionId, lastSeq, resumableFrom };
}

/** The collection's latest seq, or undefined once it has been deleted. */
export async function latestSeq({ query }: Dialect, collectionId: number): Promise<number | undefined> {
  const [collection] = await query<{ last_seq: number | string }>(latestSeqSql, [collectionId]);
  return collection ? Number(collection.last_seq) : undefined;
}

/** Which of a collection's events to read: those with `after` < seq ≤ `upTo`, the first `limit` of them. */
export interface EventPage {
  after: number;
  /** Default: no upper bound. */
  upTo?: number;
  limit: number;
  /**
   * Stop before the event that would take the rows read past this many characters (but always read one
   * event): with rows of up to a request body each, a page bounded by count alone could be huge.
   */
  maxChars?: number;
}

/** One page of the collection's events, in seq order. */
export async function readEvents({ query }: Dialect, collectionId: number, page: EventPage): Promise<StoredEvent[]> {
  const { after, limit, maxChars } = page;
  const upTo = page.upTo ?? Number.MAX_SAFE_INTEGER;
  const rows = await query<{
    seq: number | string;
    type: EventType;
    row: string;
    previous: string | null;
    at: string;
    reason: EventReason | null;
  }>(
    maxChars === undefined ? eventsSql : boundedEventsSql,
    maxChars === undefined ? [collectionId, after, upTo, limit] : [collectionId, after, upTo, limit, maxChars],
  );
  return rows.map(
    (event) =>
      new ReadEvent(collectionId, Number(event.seq), event.type, event.at, event.reason ?? undefined, {
        row: event.row,
        previous: event.previous ?? undefined,
      }),
  );
}
