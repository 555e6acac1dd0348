// Which message of a committed change each subscriber gets (asyncapi.yaml, "Filtered subscriptions" and
// "Rules"), made and framed once for all the subscribers it is the same for: a change has at most two
// messages for subscribers its rows reach whole, the one every subscriber whose view holds the row after
// it gets, and, for an update, the one that tells a subscriber the row left its view (`"matches":
// false`). A subscriber held to rules may be shown a row by its id alone, or without the fields hidden
// from it: its message is framed once for every subscriber shown the same. The changes over plain HTTP
// (handlers/feed.ts) take the same messages: as JSON in their pages, encoded in their streams.
import type { StoredEvent } from '../db/events/events.ts';
import type { RowTest } from '../query/evaluate.ts';
import type { Row } from '../rows.ts';
import { type Encoding, websocketFrames } from './encodings.ts';
import { changeMessage, changeMessageJson } from './messages.ts';
import type { FeedView } from './view.ts';

/** A committed change on its way to the subscribers: its event, and its messages as JSON and encoded once, when first asked for. */
export class Delivery {
  /** The JSON of each message of the change, by what it shows (shownFor). */
  private readonly texts = new Map<string, string>();
  /** Each message encoded, by encoding, then by what it shows; made when first asked for (a page of changes encodes none). */
  private encoded?: Map<Encoding, Map<string, Buffer>>;

  constructor(
    private readonly collection: string,
    readonly event: StoredEvent,
  ) {}

  get type(): StoredEvent['type'] {
    return this.event.type;
  }

  /** The WebSocket frame for a subscriber of `view` (encodedFor). */
  frameFor(view: FeedView): Buffer | undefined {
    return this.encodedFor(view, websocketFrames);
  }

  /**
   * The message for a subscriber of `view` in `encoding`, or undefined when the change never touched
   * its view. An insert goes when its row matches the view's test, a delete when the deleted row did,
   * an update when its row matches after the change (an ordinary update) or before it (the row left:
   * `"matches": false`). An update whose event kept no row before it (stored by an older version) goes
   * to every filtered subscriber: as one that left when its row does not match now, which removes
   * nothing a view should keep. Rules may throw: the caller answers for one subscriber's failure.
   */
  encodedFor(view: FeedView, encoding: Encoding): Buffer | undefined {
    const shown = this.shownFor(view);
    if (!shown) return undefined;
    this.encoded ??= new Map();
    let encoded = this.encoded.get(encoding);
    if (!encoded) {
      encoded = new Map();
      this.encoded.set(encoding, encoded);
    }
    let bytes = encoded.get(shown.key);
    if (!bytes) {
      bytes = encoding.encode(shown.text, this.event.type, this.event.seq);
      encoded.set(shown.key, bytes);
    }
    return bytes;
  }

  /** The message's JSON for a subscriber of `view`, or undefined (as encodedFor). */
  textFor(view: FeedView): string | undefined {
    return this.shownFor(view)?.text;
  }

  /**
   * The message a subscriber of `view` gets, and what it shows of the rows (its key among the change's
   * messages). Held to a grant, a row the message carries that the end user may not read (the row after
   * an update that took it out of their reach, or before one that brought it in) is shown by its id
   * alone, and every other without the fields the grant hides.
   */
  private shownFor({ test, grant }: FeedView): { key: string; text: string } | undefined {
    const touch = viewOf(this.event, test);
    if (touch === undefined) return undefined;
    const left = touch === 'left';
    if (!grant) {
      return this.message(touch, () => changeMessageJson(this.collection, this.event, left));
    }
    const { type, seq, at, reason, row, previous } = this.event;
    const shownRow = left && !grant.reads(row) ? { id: row.id } : grant.mask(row);
    const shownPrevious = previous && (!left && !grant.reads(previous) ? { id: previous.id } : grant.mask(previous));
    const key = JSON.stringify([touch, shownAs(row, shownRow), previous && shownAs(previous, shownPrevious as Row)]);
    return this.message(key, () =>
      // The event's own fields named: an event read from the table has its rows as getters, which a spread would not copy.
      JSON.stringify(changeMessage(this.collection, { type, seq, at, reason, row: shownRow, previous: shownPrevious }, left)),
    );
  }

  private message(key: string, make: () => string): { key: string; text: string } {
    let text = this.texts.get(key);
    if (text === undefined) {
      text = make();
      this.texts.set(key, text);
    }
    return { key, text };
  }
}

/** What `shown` shows of `row`: the names of the fields it leaves out. */
function shownAs(row: Row, shown: Row): string[] {
  return row === shown ? [] : Object.keys(row).filter((field) => !Object.hasOwn(shown, field));
}

/**
 * How the change `event` touches the view of a filter `test` (undefined: every row), as frameFor()
 * tells: `kept` (its message), `left` (an update whose row left the view: `"matches": false`), or
 * undefined (not at all). Webhooks apply filters by the same rule (src/webhooks/worker.ts).
 */
export function viewOf(event: StoredEvent, test: RowTest | undefined): 'kept' | 'left' | undefined {
  // Read only with a test: an event's rows are parsed when first read (events.ts, readEvents).
  if (!test || test(event.row)) return 'kept';
  if (event.type !== 'update' || (event.previous !== undefined && !test(event.previous))) return undefined;
  return 'left';
}
