// Aggregates of a collection's rows (openapi.yaml, aggregateRows), read the same way on both dialects:
// one statement of the dialect's (sqlite/sql/reads.ts, postgres/sql/reads.ts, aggregateSql) reads the groups of the
// rows the filter keeps, with what each aggregate needs of them, and the collection's latest event seq,
// all in one snapshot; here its rows become the answer, by the rules of src/query/aggregate.ts. The
// statement runs as a filtered page does (pages.ts): timed, past ROWBASE_QUERY_TIMEOUT_MS stopped; on the
// range of a sort index when the filter's top level bounds an indexed field; and a count under an
// equality of an indexed field alone counts the index's keys, never reading a row.

import { collectionNotFound, type FieldError, validationFailed } from '../../errors.ts';
import type { AggregateAnswer, AggregateQuery, Decimal, Group } from '../../query/aggregate.ts';
import { canonical, decimalOfText, exactSum, orderGroups } from '../../query/aggregate.ts';
import { setMember } from '../../rows.ts';
import type { AggregateSource } from '../engine/read-port.ts';
import { byId, byName, type CollectionRef, withinIndex } from '../engine/sql/pages.ts';
import { keyCountSql } from '../engine/sql/reads.ts';
import type { Sql } from '../engine/sql/template.ts';
import { bindSearch } from '../search/indexes.ts';
import { type InIndex, indexedFields, inIndex } from './filter-indexes.ts';
import { lookUpIndex } from './pages.ts';

/**
 * A row of an aggregate's statement; `k` names its group (the same text in every part of one group), `v`
 * is a JSON array:
 * - part 0, one per group: the JSON text of each group field's value (null for the group `null`), the
 *   group's row count, then one item per aggregate: null for `count`; for `count_distinct` the count;
 *   for `sum` and `avg` `[how many numbers, their exact sum as a decimal text or null, and, for a dialect
 *   that sums in parts, the high and low halves of its integers' sum]` (high × 10^9 + low); for `min` and
 *   `max` the JSON text of the value, or null (when parts 2 bring it);
 * - part 1, more terms of a `sum` or `avg` (aggregate `x`), for a dialect that sums in parts (SQLite):
 *   `[exponent, high, low]`, the sum of some of its numbers being (high × 10^9 + low) × 10^exponent;
 * - part 2, the value of a `min` or `max` (aggregate `x`): `[its JSON text]`;
 * - part 3, once: `[the collection's latest event seq]`, null when there is no such collection.
 */
interface AggregatePart {
  part: number | string;
  x: number | string | null;
  k: string | null;
  v: string;
}

/** An answer, and the collection's latest event seq in the snapshot it was read from. */
export type AggregateResult = AggregateAnswer & { seq: number };

/**
 * The answer to `asked` over the account's collection's rows that live at `now` (ms since the epoch), its `$search` bound to the collection's search
 * index (400 when it has none); 404 when there is none. `maxGroupsRead`: the groups the database may
 * find at most before the query is refused as too wide, a 400 whose one error is `place` (the
 * request's group_by).
 */
export async function readAggregates(
  source: AggregateSource,
  accountId: number,
  collection: string,
  asked: AggregateQuery,
  maxGroupsRead: number,
  place: FieldError,
  now: number,
): Promise<AggregateResult> {
  const filter = await bindSearch((sql, params) => source.read(sql, params, 'point'), accountId, collection, asked.filter);
  const query = { ...asked, filter };
  const index = query.filter && indexedFields(query.filter).length > 0 ? await findIndex(source, accountId, collection, query) : undefined;
  if (index) {
    const read = await readInIndex(source, query, maxGroupsRead, place, index, now);
    if (read) return read;
  }
  const where = query.filter && source.filterSql(query.filter);
  const result = await readGroups(source, byName(accountId, collection), query, where, maxGroupsRead, place, now);
  if (!result) throw collectionNotFound(collection);
  return result;
}

/** The index the filter's top level can read, with the collection's id; made now as a filtered page would make it. */
async function findIndex(source: AggregateSource, accountId: number, collection: string, query: AggregateQuery) {
  const fields = indexedFields(query.filter as NonNullable<AggregateQuery['filter']>);
  const known = source.knownIndexes.get(accountId, collection);
  const found = known && inIndex(known.sorted, fields);
  if (known && found) return { id: known.id, index: found };
  const looked = await lookUpIndex(
    source,
    accountId,
    collection,
    fields.map(({ field }) => field),
  );
  const index = inIndex(looked.sorted, fields);
  return index && { id: looked.id, index };
}

/**
 * The answer read on the range of a sort index: a count under an equality that is the whole filter, of
 * keys that hold whole values, from the keys alone; otherwise the rows of the range, tested. Undefined
 * when the collection of that id is gone (then it is read by name).
 */
async function readInIndex(
  source: AggregateSource,
  query: AggregateQuery,
  maxGroupsRead: number,
  place: FieldError,
  { id, index }: { id: number; index: InIndex },
  now: number,
): Promise<AggregateResult | undefined> {
  const ref = byId(id);
  const bounds = source.keyBoundsSql(index.bounds);
  // One equality, the whole filter: its keys are exactly its rows where they hold the value whole.
  const [{ op, operand }] = index.bounds.conditions;
  const exact =
    index.whole &&
    index.bounds.conditions.length === 1 &&
    op === '$eq' &&
    (index.bounds.rank !== 2 || source.wholeStringKeys || source.keyHoldsWhole(String(operand)));
  if (exact && query.groupBy.length === 0 && query.aggregates.every(({ op }) => op === 'count')) {
    const statement = keyCountSql(ref, index.slot, bounds, now);
    const [{ n, seq }] = await source.read<{ n: number | string; seq: number | string | null }>(statement.sql, statement.params, 'sort');
    if (seq === null) return undefined;
    const group: Group = {};
    for (const { alias } of query.aggregates) setMember(group, alias, Number(n));
    return { ...orderGroups([group], query), seq: Number(seq) };
  }
  const where = withinIndex(ref, index.slot, bounds, source.filterSql(query.filter as NonNullable<AggregateQuery['filter']>));
  return readGroups(source, ref, query, where, maxGroupsRead, place, now);
}

/** The groups of the rows `where` keeps, made into the answer; undefined when the collection is gone. */
async function readGroups(
  source: AggregateSource,
  ref: CollectionRef,
  query: AggregateQuery,
  where: Sql | undefined,
  maxGroupsRead: number,
  place: FieldError,
  now: number,
): Promise<AggregateResult | undefined> {
  const statement = source.aggregateSql(ref, query, where, maxGroupsRead + 1, now);
  const parts = await source.read<AggregatePart>(statement.sql, statement.params, 'once');
  const groups = new Map<string, GroupParts>();
  let seq: number | null = null;
  for (const { part, x, k, v } of parts) {
    const values = JSON.parse(v) as unknown[];
    if (Number(part) === 3) {
      seq = values[0] === null ? null : Number(values[0]);
      continue;
    }
    let group = groups.get(k as string);
    if (!group) {
      group = { main: undefined, terms: new Map(), extremes: new Map() };
      groups.set(k as string, group);
    }
    if (Number(part) === 0) group.main = values;
    else if (Number(part) === 1) {
      const [exponent, high, low] = values as [number, string, string];
      const terms = group.terms.get(Number(x)) ?? [];
      terms.push({ digits: BigInt(high) * 1_000_000_000n + BigInt(low), exponent: Number(exponent) });
      group.terms.set(Number(x), terms);
    } else group.extremes.set(Number(x), values[0] as string);
  }
  if (seq === null) return undefined;
  if (groups.size > maxGroupsRead) {
    throw validationFailed(
      `The rows fall into more than ${maxGroupsRead} groups, more than an aggregate may read: narrow the filter, or group by fewer fields.`,
      [place],
    );
  }
  const answered: Group[] = [];
  for (const group of groups.values()) if (group.main) answered.push(groupOf(source, query, group));
  return { ...orderGroups(answered, query), seq };
}

interface GroupParts {
  main: unknown[] | undefined;
  terms: Map<number, Decimal[]>;
  extremes: Map<number, string>;
}

/** One group of the answer from its parts, by the rules of src/query/aggregate.ts. */
function groupOf(source: AggregateSource, query: AggregateQuery, { main, terms, extremes }: GroupParts): Group {
  const values = main as unknown[];
  const group: Group = {};
  const json = (text: unknown) => (text === null || text === undefined ? null : canonical(source.jsonOf(text as string)));
  query.groupBy.forEach((field, index) => {
    setMember(group, field, json(values[index]));
  });
  const count = Number(values[query.groupBy.length]);
  query.aggregates.forEach((aggregate, index) => {
    const piece = values[query.groupBy.length + 1 + index];
    switch (aggregate.op) {
      case 'count':
        setMember(group, aggregate.alias, count);
        return;
      case 'count_distinct':
        setMember(group, aggregate.alias, Number(piece));
        return;
      case 'sum':
      case 'avg': {
        const [numbers, sum, high, low] = piece as [number | string, string | null, string | null | undefined, string | null | undefined];
        if (Number(numbers) === 0) {
          setMember(group, aggregate.alias, null);
          return;
        }
        const parts = terms.get(index) ?? [];
        if (sum !== null) parts.push(decimalOfText(sum));
        if (typeof high === 'string' && typeof low === 'string')
          parts.push({ digits: BigInt(high) * 1_000_000_000n + BigInt(low), exponent: 0 });
        const total = exactSum(parts);
        const value = aggregate.op === 'sum' ? total : total / Number(numbers);
        setMember(group, aggregate.alias, Number.isFinite(value) ? value : null);
        return;
      }
      case 'min':
      case 'max': {
        const text = piece ?? extremes.get(index) ?? null;
        setMember(group, aggregate.alias, json(text));
        return;
      }
    }
  });
  return group;
}
