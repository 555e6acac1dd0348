// Filters through relations read by the page's own statement (issue 63; docs/relations.md, "Filtering
// through a relation"). A `$match` or `$some` whose inner filter an index of the related collection serves
// is no read of its own before the page (as bindRelations, filters.ts, reads it) but a subquery of the
// page's one statement: the related collection's index range, then the relation field's sort index. It is bound with
// what this process last saw: the collection's schema id, whose row holds its relations and which changes
// whenever they do (../collections/schemas.ts; ids are never taken again), and the ids and sort indexes of
// both collections (KnownIndexes, only ever added to). The page is read only while the collection still
// has that schema id (its guard: ../reads/pages.ts, guardedPage), and the related rows are no more than a
// `$match` may find; otherwise what it was bound with is looked up again, and it is bound by reads of its own.

import { type Filter, holdsRelated, holdsSearch, type RelatedCondition } from '../../query/filter.ts';
import type { SchemaCache, UniqueIndexes } from '../engine/dialect.ts';
import { StaleSchema } from '../engine/errors.ts';
import type { PageSource } from '../engine/read-port.ts';
import type { SortedEntry } from '../engine/sorted.ts';
import { liveRowSql } from '../engine/sql/expiry.ts';
import { relationsOfNamedSql } from '../engine/sql/relations.ts';
import { allOf, raw, type Sql, sql, TRUE } from '../engine/sql/template.ts';
import { indexedFields, inIndex, oneValue } from '../reads/filter-indexes.ts';
import { keepsExactly } from '../reads/pages.ts';
import { MAX_RELATED_ROWS, type RelationRow } from './filters.ts';
import type { RelationLinks } from './links.ts';

/** A collection as last seen: its id and the fields of its sort indexes, by slot. */
type Known = { id: number; sorted: readonly SortedEntry[] };

/** A filter bound to be read in one statement of the collection `known`, while its row meets `guard`. */
export interface BoundFilter {
  filter: Filter;
  known: Known;
  guard: Sql;
}

/** What binding a filter alone needs: the page's source and the schemas as last seen. */
export interface Binding {
  source: PageSource;
  schemas: SchemaCache;
  accountId: number;
  /** The expiry now the related rows live at (the page's). */
  now: number;
}

/**
 * `filter` of the account's collection with each `$match` and `$some` bound to be read in the page's
 * statement (RelatedCondition.bound), with what that statement's page needs; `unknown` when something it
 * needs has not been seen (learnRelations() would see it); undefined when a condition is of another kind
 * (an inner filter through relations or by a search, or one no index of the related collection serves).
 */
export async function boundAlone(binding: Binding, collection: string, filter: Filter): Promise<BoundFilter | 'unknown' | undefined> {
  const { source, schemas, accountId } = binding;
  const schemaId = schemas.hint(accountId, collection);
  const known = source.knownIndexes.get(accountId, collection);
  if (schemaId === 0 || !known) return 'unknown';
  let links: RelationLinks | undefined;
  try {
    links = await schemas.links((text, params) => source.read(text, params, 'point'), schemaId);
  } catch (error) {
    if (error instanceof StaleSchema) return 'unknown';
    throw error;
  }
  const few: Sql[] = [];
  const bind = (condition: RelatedCondition) => {
    const bound = boundRelated(binding, known, links, condition);
    if (typeof bound === 'object') few.push(atMost(bound.ids, bound.one ? 1 : MAX_RELATED_ROWS));
    return bound;
  };
  const bound = boundIn(filter, bind);
  if (typeof bound !== 'object') return bound;
  return { filter: bound, known, guard: allOf([sql`schema_id = ${schemaId}`, ...few]) };
}

/**
 * Whether the subquery `ids` reads `most` rows at most: as many related rows as a `$match` may find
 * (MAX_RELATED_ROWS), else the page is read again, to be refused; one, where it was bound as one at most.
 */
const atMost = (ids: Sql, most: number) => sql`(select count(*) from (${ids} limit ${raw(String(most + 1))}) m) <= ${raw(String(most))}`;

/** `filter` with each related condition as `bind` binds it; the first one it cannot bind, `unknown` or undefined, instead. */
function boundIn(
  filter: Filter,
  bind: (condition: RelatedCondition) => NonNullable<RelatedCondition['bound']> | 'unknown' | undefined,
): Filter | 'unknown' | undefined {
  switch (filter.kind) {
    case 'and':
    case 'or': {
      const filters: Filter[] = [];
      for (const each of filter.filters) {
        const bound = boundIn(each, bind);
        if (typeof bound !== 'object') return bound;
        filters.push(bound);
      }
      return { kind: filter.kind, filters };
    }
    case 'not': {
      const bound = boundIn(filter.filter, bind);
      return typeof bound === 'object' ? { kind: 'not', filter: bound } : bound;
    }
    case 'related': {
      const bound = bind(filter);
      return typeof bound === 'object' ? { ...filter, bound } : bound;
    }
    default:
      return filter;
  }
}

/**
 * A `$match` or `$some` bound (RelatedCondition.bound): the ids of the related rows its inner filter
 * matches, read through the related collection's index of a field of its top level, of the rows that live
 * at `now`; tested by the inner filter too, unless the index range is exactly what it keeps (as a page's:
 * pages.ts). A `$match` is then read through the sort index of the collection's relation field, a `$some`
 * through that of the related collection's (each related row's key is the id of the row it names).
 */
function boundRelated(
  { source, accountId, now }: Binding,
  known: Known,
  links: RelationLinks | undefined,
  condition: RelatedCondition,
): NonNullable<RelatedCondition['bound']> | 'unknown' | undefined {
  const inner = condition.filter;
  if (holdsRelated(inner) || holdsSearch(inner)) return undefined;
  const toOne = condition.op === '$match';
  const relation = toOne
    ? links?.out.find((each) => each.name === condition.relation && each.source === known.id)
    : links?.in.find((each) => each.reverse === condition.relation && each.target === known.id);
  if (!relation) return 'unknown';
  const [otherName, otherId] = toOne ? [relation.targetName, relation.target] : [relation.sourceName, relation.source];
  const other = source.knownIndexes.get(accountId, otherName);
  // What the related collection holds unique tells a `$match` whether it finds one row at most.
  const unique = toOne ? source.knownIndexes.uniqueFields(otherId) : [];
  const slot = (toOne ? known : other)?.sorted.indexOf(relation.field) ?? -1;
  if (slot < 0 || other?.id !== otherId || !unique) return 'unknown';
  const index = inIndex(other.sorted, indexedFields(inner));
  if (!index) return undefined;
  const test = keepsExactly(source, index) ? TRUE : source.filterSql(inner);
  // The keys of the range first, each key's row found by its primary key.
  const ids = sql`select rows.id from sort_keys k join rows on rows.collection_id = k.collection_id and rows.id = k.row_id
      where k.collection_id = ${other.id} and k.slot = ${index.slot} and ${source.keyBoundsSql(index.bounds)}
        and ${liveRowSql('rows', now)} and (${test})`;
  const one = oneValue(index.bounds) && unique.includes(index.field);
  return { collectionId: toOne ? known.id : other.id, field: relation.field, slot, ids, one };
}

/**
 * Notes what boundAlone() binds with as the database has it now, in one read: the collection's schema
 * id, its id and sort indexes and those of each collection it is related to, and the fields those it
 * names hold unique.
 */
export async function learnRelations({ source, schemas, accountId }: Binding, collection: string): Promise<void> {
  type Found = { id: number | string; schema_id: number | string; sorted: string; ttl_field: string | null } & Partial<RelationRow>;
  const found = await source.read<Found>(relationsOfNamedSql, [accountId, collection], 'point');
  if (found.length === 0) return;
  const [first] = found;
  schemas.note(accountId, collection, Number(first.schema_id));
  const { knownIndexes } = source;
  const known = (id: number | string, sorted: string, ttl: string | null) => ({
    id: Number(id),
    sorted: JSON.parse(sorted) as SortedEntry[],
    expiring: ttl !== null,
  });
  knownIndexes.set(accountId, collection, known(first.id, first.sorted, first.ttl_field));
  for (const row of found.filter((each): each is Found & RelationRow => each.name != null)) {
    knownIndexes.set(accountId, row.source_name, known(row.collection_id, row.source_sorted, row.source_ttl));
    knownIndexes.set(accountId, row.target_name, known(row.target_id, row.target_sorted, row.target_ttl));
    const uniques = JSON.parse(row.target_uniques) as UniqueIndexes;
    knownIndexes.setUniqueFields(
      Number(row.target_id),
      uniques.flatMap(([, fields]) => (fields.length === 1 ? fields : [])),
    );
  }
}
