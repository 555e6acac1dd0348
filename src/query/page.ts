// A page of a collection's rows as asked for (openapi.yaml, listRows and queryRows): its size, order,
// filter and place, and what it answers beside its rows. Read by the data layer (src/db/reads/pages.ts).
import type { Position } from './cursor.ts';
import type { Filter } from './filter.ts';
import type { SortKey } from './order.ts';

export interface Page {
  limit: number;
  offset: number;
  /**
   * The keys that order the rows, at least one, each field once; ties break by id in the last key's
   * direction (unless `id` is a key).
   */
  order: readonly SortKey[];
  /** Only the rows that match (src/query/filter.ts); all of them when absent. */
  filter?: Filter;
  /** Also count the rows that match, in the page's snapshot (RowsPage.total). */
  count?: boolean;
  /** Answer each row with its ETag (openapi.yaml, VersionedRow), sorted whole as a filtered page is. */
  versions?: boolean;
  /** Only the rows after this place in the order. */
  after?: Position;
  /**
   * Read each row's relevance to the search at the filter's top level (rankedSearch()), which the page
   * then holds: ordered by it when the order is `_score`, and answered in RowsPage.scores.
   */
  scored?: boolean;
}
