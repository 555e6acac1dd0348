// Which message of a committed change each subscriber gets (asyncapi.yaml, "Filtered subscriptions" and
// "Rules"), made and framed once for all the subscribers it is the same for: a change has at most two
// messages for subscribers its rows reach whole, the one every subscriber whose view holds the row after
// it gets, and, for an update, the one that tells a subscriber the row left its view (`"matches":
// false`). A subscriber held to rules may be shown a row by its id alone, or without the fields hidden
// from it: its message is framed once for every subscriber shown the same.
import type { StoredEvent } from '../db/events/events.ts';
import type { RowTest } from '../query/evaluate.ts';
import type { Row } from '../rows.ts';
import type { Grant } from '../rules/access.ts';
import { textFrame } from './frames.ts';
import { changeMessage } from './messages.ts';
import type { FeedView } from './view.ts';

/** A committed change on its way to the subscribers: its event, and its messages framed once, when first asked for. */
export class Delivery {
  private kept: Buffer | undefined;
  private left: Buffer | undefined;
  /** The messages of subscribers held to rules, by what they show of the rows (shownAs). */
  private readonly shown = new Map<string, Buffer>();

  constructor(
    private readonly collection: string,
    readonly event: StoredEvent,
  ) {}

  get type(): StoredEvent['type'] {
    return this.event.type;
  }

  /**
   * The frame for a subscriber of `view`, or undefined when the change never touched its view. An
   * insert goes when its row matches the view's test, a delete when the deleted row did, an update when
   * its row matches after the change (an ordinary update) or before it (the row left: `"matches":
   * false`). An update whose event kept no row before it (stored by an older version) goes to every
   * filtered subscriber: as one that left when its row does not match now, which removes nothing a view
   * should keep. Rules may throw: the caller answers for one subscriber's failure.
   */
  frameFor({ test, grant }: FeedView): Buffer | undefined {
    const touch = viewOf(this.event, test);
    if (touch === undefined) return undefined;
    if (grant) return this.ruledFrame(touch, grant);
    if (touch === 'kept') {
      this.kept ??= textFrame(JSON.stringify(changeMessage(this.collection, this.event)));
      return this.kept;
    }
    this.left ??= textFrame(JSON.stringify(changeMessage(this.collection, this.event, true)));
    return this.left;
  }

  /**
   * The frame for a subscriber held to `grant`: a row the message carries that the end user may not read
   * (the row after an update that took it out of their reach, or before one that brought it in) is shown
   * by its id alone, and every other without the fields the grant hides.
   */
  private ruledFrame(touch: 'kept' | 'left', grant: Grant): Buffer {
    const { row, previous } = this.event;
    const shownRow = touch === 'left' && !grant.reads(row) ? { id: row.id } : grant.mask(row);
    const shownPrevious = previous && (touch === 'kept' && !grant.reads(previous) ? { id: previous.id } : grant.mask(previous));
    const key = JSON.stringify([touch, shownAs(row, shownRow), previous && shownAs(previous, shownPrevious as Row)]);
    let frame = this.shown.get(key);
    if (!frame) {
      const event = { ...this.event, row: shownRow, previous: shownPrevious };
      frame = textFrame(JSON.stringify(changeMessage(this.collection, event, touch === 'left')));
      this.shown.set(key, frame);
    }
    return frame;
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
export function viewOf({ type, row, previous }: StoredEvent, test: RowTest | undefined): 'kept' | 'left' | undefined {
  if (!test || test(row)) return 'kept';
  if (type !== 'update' || (previous !== undefined && !test(previous))) return undefined;
  return 'left';
}
