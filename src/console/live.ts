// How a change from the feed moves the rows on screen, so that the table stays the page's rows as the
// collection now has them, under the view's filter (the same rules as the server's: src/query/evaluate.ts):
// an inserted row that matches appears, a changed row is replaced if it still matches and goes if it
// no longer does (or appears if it now does), a deleted row goes.
import type { Row } from './api.ts';
import type { Change } from './feed.ts';

/** A row on screen and how it came there: `fresh` rows flash once, for the change of `seq` that arrived live. */
export interface ShownRow {
  row: Row;
  fresh?: 'inserted' | 'updated';
  seq?: number;
}

/** The rows after `change`, given whether a row matches the view's filter. */
export function applyChange(shown: ShownRow[], change: Change, matches: (row: Row) => boolean): ShownRow[] {
  const index = shown.findIndex(({ row }) => row.id === change.row.id);
  const keep = change.type !== 'delete' && matches(change.row);
  if (!keep) return index === -1 ? shown : shown.toSpliced(index, 1);
  const fresh = change.type === 'insert' ? 'inserted' : 'updated';
  const changed = { row: change.row, fresh, seq: change.seq } as const;
  return index === -1 ? [...shown, changed] : shown.with(index, changed);
}
