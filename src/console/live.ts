// How a change from the feed moves the rows on screen, so that the table stays the page's rows as the
// collection now has them. The feed is subscribed with the view's filter, and sends only the changes of
// rows that match it (asyncapi.yaml, filtered subscriptions): an inserted row appears, a changed row is
// replaced (or appears, if it has just come to match), an update marked `matches: false` and a deleted
// row go.
import type { Row } from './api.ts';
import type { Change } from './feed.ts';

/** A row on screen and how it came there: `fresh` rows flash once, for the change of `seq` that arrived live. */
export interface ShownRow {
  row: Row;
  fresh?: 'inserted' | 'updated';
  seq?: number;
}

/** The rows after `change`. */
export function applyChange(shown: ShownRow[], change: Change): ShownRow[] {
  const index = shown.findIndex(({ row }) => row.id === change.row.id);
  const keep = change.type !== 'delete' && change.matches !== false;
  if (!keep) return index === -1 ? shown : shown.toSpliced(index, 1);
  const fresh = change.type === 'insert' ? 'inserted' : 'updated';
  const changed = { row: change.row, fresh, seq: change.seq } as const;
  return index === -1 ? [...shown, changed] : shown.with(index, changed);
}
