// Which message of a committed change each subscriber gets (asyncapi.yaml, "Filtered subscriptions"),
// made and framed once for all of them: a change has at most two messages, the one every subscriber
// whose view holds the row after it gets, and, for an update, the one that tells a filtered subscriber
// the row left its view (`"matches": false`).
import type { StoredEvent } from '../db/events/events.ts';
import type { RowTest } from '../query/evaluate.ts';
import { textFrame } from './frames.ts';
import { changeMessage } from './messages.ts';

/** A committed change on its way to the subscribers: its event, and its messages framed once, when first asked for. */
export class Delivery {
  private kept: Buffer | undefined;
  private left: Buffer | undefined;

  constructor(
    private readonly collection: string,
    readonly event: StoredEvent,
  ) {}

  get type(): StoredEvent['type'] {
    return this.event.type;
  }

  /**
   * The frame for a subscriber whose filter is `test` (undefined: every row), or undefined when the
   * change never touched its view. An insert goes when its row matches, a delete when the deleted row
   * did, an update when its row matches after the change (an ordinary update) or before it (the row
   * left: `"matches": false`). An update whose event kept no row before it (stored by an older
   * version) goes to every filtered subscriber: as one that left when its row does not match now,
   * which removes nothing a view should keep.
   */
  frameFor(test: RowTest | undefined): Buffer | undefined {
    const view = viewOf(this.event, test);
    if (view === 'kept') {
      this.kept ??= textFrame(JSON.stringify(changeMessage(this.collection, this.event)));
      return this.kept;
    }
    if (view === undefined) return undefined;
    this.left ??= textFrame(JSON.stringify(changeMessage(this.collection, this.event, true)));
    return this.left;
  }
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
