// Reads that reach into related rows (docs/relations.md), each read in one snapshot with them: a page
// whose filter goes through relations (`$match`, `$some`: the related rows it finds, then the page) or
// that expands its rows (the related rows set into them), and an aggregate whose filter goes through
// relations. A read that reaches no related row is read as it is, outside any snapshot.
import type { FieldError } from '../../errors.ts';
import type { AggregateQuery } from '../../query/aggregate.ts';
import { holdsRelated } from '../../query/filter.ts';
import { KnownIndexes } from '../collections/sort-indexes.ts';
import { bindRelations, relatedReadsOf } from '../relations/filters.ts';
import { type AggregateResult, type AggregateSource, readAggregates } from './aggregates.ts';
import { type Expansion, expandRows } from './expand.ts';
import { type Page, type PageSource, type RowsPage, readPage, type SnapshotRead } from './pages.ts';

type Fields = Record<string, unknown>;

/**
 * The page `page` of the collection (readPage), its filter's conditions through relations bound to the
 * related rows they find, with `expansions` set into its rows: the related rows and the page all read in
 * one snapshot, so that the page is exactly as of the related rows it was chosen by.
 */
export function readRelatedPage(
  source: PageSource,
  accountId: number,
  collection: string,
  page: Page,
  expansions: readonly Expansion[] | undefined,
): Promise<RowsPage> {
  const expanding = expansions !== undefined && expansions.length > 0;
  if (!expanding && !(page.filter && holdsRelated(page.filter))) return readPage(source, accountId, collection, page);
  return source.snapshot(async (read) => {
    const reads = inSnapshot(source, read);
    const filter = await bindRelations(relatedReadsOf(reads), accountId, collection, page.filter);
    const answer = await readPage(reads, accountId, collection, { ...page, filter });
    if (!expanding) return answer;
    const rows = JSON.parse(answer.json) as Fields[];
    await expandRows(reads, accountId, page.versions ? rows.map((item) => item.row as Fields) : rows, expansions);
    return { ...answer, json: JSON.stringify(rows) };
  });
}

/** The answer to an aggregate query (readAggregates), its filter's conditions through relations bound in its snapshot, as a page's. */
export function readRelatedAggregates(
  source: AggregateSource,
  accountId: number,
  collection: string,
  query: AggregateQuery,
  maxGroupsRead: number,
  place: FieldError,
): Promise<AggregateResult> {
  if (!query.filter || !holdsRelated(query.filter)) return readAggregates(source, accountId, collection, query, maxGroupsRead, place);
  return source.snapshot(async (read) => {
    const reads = inSnapshot(source, read);
    const filter = await bindRelations(relatedReadsOf(reads), accountId, collection, query.filter);
    return readAggregates(reads, accountId, collection, { ...query, filter }, maxGroupsRead, place);
  });
}

/**
 * `source` with every read in the snapshot `read`. Inside it, no sort index is made (one made meanwhile
 * would not be in the snapshot): a page whose field has none yet sorts whole.
 */
const inSnapshot = <S extends PageSource>(source: S, read: SnapshotRead): S => ({
  ...source,
  read: (sql, params) => read(sql, params),
  knownIndexes: new KnownIndexes(),
  sortIndexes: { ...source.sortIndexes, max: 0 },
});
