// Filters through relations (docs/relations.md, "Filtering through a relation"): `{"author": {"$match":
// {…}}}` and `{"comments": {"$some": {…}}}`, each replaced by the ids its related rows give, read first
// (through a sort index of theirs when the inner filter's top level names an indexed field: a range, read
// as a change by filter reads its rows, ../rows/rows.ts's filterMatchSql), so that the filter left names
// only fields of the row and runs as any other (through the field's sort index, which a relation's field
// has). A page and an aggregate read them in their own snapshot
// (../reads/related.ts); a change by filter just before its transaction (the Store's bindRelations).

import { collectionNotFound, validationFailed } from '../../errors.ts';
import type { Filter, RelatedCondition } from '../../query/filter.ts';
import { assignable } from '../../rows.ts';
import type { Dialect, Read } from '../engine/dialect.ts';
import type { PageSource } from '../engine/read-port.ts';
import type { SortedEntry } from '../engine/sorted.ts';
import { relationsOfNamedSql } from '../engine/sql/relations.ts';
import { liveWhere } from '../expiry/live.ts';
import { indexedFields } from '../reads/filter-indexes.ts';
import { filterMatchSql } from '../rows/rows.ts';
import { bindSearch } from '../search/indexes.ts';

/** The related rows one condition may find at most: past it, a 400 asks for a narrower filter. */
export const MAX_RELATED_ROWS = 10_000;

/**
 * A relation of the collection or to it (relationsOfNamedSql), with the fields each side has sort indexes
 * of, and the related collection's unique indexes.
 */
export type RelationRow = {
  name: string;
  field: string;
  reverse: string | null;
  collection_id: number | string;
  target_id: number | string;
  source_name: string;
  target_name: string;
  source_sorted: string;
  source_ttl: string | null;
  target_sorted: string;
  target_ttl: string | null;
  target_uniques: string;
};

/**
 * How the related rows are read: `query` runs a read (alone, or in a page's snapshot:
 * ../reads/related.ts), `filterSql`, `keyBoundsSql` and `rangeRowsSql` write a filter, a sort index's range
 * and the rows of that range as the dialect does. A Dialect is one.
 */
export type RelatedReads = Pick<Dialect, 'filterSql' | 'keyBoundsSql' | 'rangeRowsSql'> & { query: Read };

/** What a page's source reads the related rows with: its reads (in a snapshot, the snapshot's). */
export const relatedReadsOf = (source: PageSource): RelatedReads => ({
  query: (sql, params) => source.read(sql, params),
  filterSql: source.filterSql,
  keyBoundsSql: source.keyBoundsSql,
  rangeRowsSql: source.rangeRowsSql,
});

/**
 * `filter` with each `$match` and `$some` of the account's collection replaced by a condition on the ids
 * its related rows give (nested ones first); a filter without them comes back as it is, unread. 400 for a
 * name that is no relation of its collection, or a condition that finds more than MAX_RELATED_ROWS rows.
 */
export async function bindRelations<F extends Filter | undefined>(
  db: RelatedReads,
  accountId: number,
  collection: string,
  filter: F,
): Promise<F> {
  if (!filter || !holds(filter)) return filter;
  const found = await db.query<{ id: number | string } & Partial<RelationRow>>(relationsOfNamedSql, [accountId, collection]);
  if (found.length === 0) throw collectionNotFound(collection);
  const id = Number(found[0].id);
  const relations = found.filter((row): row is { id: number | string } & RelationRow => row.name != null);
  return (await bound(db, accountId, collection, id, relations, filter)) as F;
}

const holds = (filter: Filter): boolean =>
  filter.kind === 'related' ||
  (filter.kind === 'not' ? holds(filter.filter) : (filter.kind === 'and' || filter.kind === 'or') && filter.filters.some(holds));

async function bound(
  db: RelatedReads,
  accountId: number,
  collection: string,
  id: number,
  relations: RelationRow[],
  filter: Filter,
): Promise<Filter> {
  switch (filter.kind) {
    case 'and':
    case 'or': {
      const filters: Filter[] = [];
      for (const each of filter.filters) filters.push(await bound(db, accountId, collection, id, relations, each));
      return { kind: filter.kind, filters };
    }
    case 'not':
      return { kind: 'not', filter: await bound(db, accountId, collection, id, relations, filter.filter) };
    case 'related':
      return related(db, accountId, collection, id, relations, filter);
    default:
      return filter;
  }
}

/** One `$match` (a to-one: its field among the ids of the rows that match) or `$some` (a to-many: the row's id among their fields). */
async function related(
  db: RelatedReads,
  accountId: number,
  collection: string,
  id: number,
  relations: RelationRow[],
  condition: RelatedCondition,
) {
  const toOne = relations.find((r) => Number(r.collection_id) === id && r.name === condition.relation);
  const toMany = relations.find((r) => Number(r.target_id) === id && r.reverse === condition.relation);
  const relation = condition.op === '$match' ? toOne : toMany;
  if (!relation) {
    const kind = condition.op === '$match' ? 'to-one' : 'to-many';
    throw validationFailed(`Collection ${collection} has no ${kind} relation named ${condition.relation}.`, [
      { in: 'query', name: 'filter', message: `${condition.relation}: ${condition.op} names no ${kind} relation of ${collection}` },
    ]);
  }
  const [otherName, otherId, otherSorted] =
    condition.op === '$match'
      ? [relation.target_name, relation.target_id, relation.target_sorted]
      : [relation.source_name, relation.collection_id, relation.source_sorted];
  const inner = await bindSearch(db.query, accountId, otherName, await bindRelations(db, accountId, otherName, condition.filter));
  // Through a sort index of the related collection, when the inner filter's top level holds a condition on one of its fields.
  const match = { where: liveWhere(db.filterSql(inner)), fields: indexedFields(inner) };
  const sorted = JSON.parse(otherSorted) as SortedEntry[];
  const { sql, params } = filterMatchSql(db, Number(otherId), match, MAX_RELATED_ROWS + 1, sorted);
  const rows = await db.query<{ id: number | string; data: string }>(sql, params);
  if (rows.length > MAX_RELATED_ROWS)
    throw validationFailed(
      `A ${condition.op} finds at most ${MAX_RELATED_ROWS} related rows, and this one finds more: narrow its filter.`,
      [
        {
          in: 'query',
          name: 'filter',
          message: `${condition.relation}: ${condition.op} matches more than ${MAX_RELATED_ROWS} rows of ${otherName}`,
        },
      ],
    );
  const ids =
    condition.op === '$match'
      ? rows.map((row) => Number(row.id))
      : [...new Set(rows.map((row) => (JSON.parse(row.data) as Record<string, unknown>)[relation.field]))].filter(
          (value): value is number => typeof value === 'number' && assignable(value),
        );
  // None found: a condition no row meets (an `or` of nothing).
  if (ids.length === 0) return { kind: 'or', filters: [] } satisfies Filter;
  return { kind: 'field', path: [condition.op === '$match' ? relation.field : 'id'], op: '$in', operand: ids } satisfies Filter;
}
