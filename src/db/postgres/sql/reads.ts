// PostgreSQL's SQL of reads: a row by id, pages sorted whole or read through a sort index
// (../../reads/pages.ts, on ../../sql/pages.ts), and aggregates.

import type { Aggregate } from '../../../query/aggregate.ts';
import type { RelatedKey } from '../../../query/order.ts';
import { CUT, EXPANDED, MAX_PAGE_BYTES } from '../../../rows.ts';
import type { AggregateSource, PageSource } from '../../engine/read-port.ts';
import { keyOrder } from '../../engine/sql/collections.ts';
import { liveKeyText, liveRowSql, liveRowText } from '../../engine/sql/expiry.ts';
import {
  type CollectionRef,
  cutSql,
  type FieldOrder,
  type JoinedJson,
  type PageCut,
  type PageJson,
  seqOf,
  sortedPages,
  wholePage,
} from '../../engine/sql/pages.ts';
import { firstKeys, ROW_START, relatedRowSql, rowJsonWith, versionedRowJsonWith } from '../../engine/sql/reads.ts';
import { type JoinedRelation, pageRowRelated, type RelatedJson, relatedPage } from '../../engine/sql/related.ts';
import { raw, type Sql, sql } from '../../engine/sql/template.ts';
import { filterSql } from '../filter.ts';
import { document, escapeString, field } from '../jsonb.ts';
import { POSTGRES_KEY_CHARS } from './collections.ts';

/**
 * The text of `data` past its first character, `{`. `right(data, -1)` steps over that one character;
 * `substr(data, 2)` counts every character of the text twice in a multibyte encoding (its length, then
 * its end).
 */
const PAST_BRACE = 'right(data, -1)';

/** A row's JSON text (rowJsonWith). */
export const rowJsonSql = rowJsonWith(PAST_BRACE);

/** A page's rows as one JSON text, joined in `order`, only when they add up to at most MAX_PAGE_BYTES (null otherwise, beside a count above 0). */
const pageJsonSql = (order: string) =>
  `case when sum(octet_length(data)) <= ${MAX_PAGE_BYTES} then string_agg(${rowJsonSql}, ',' order by ${order}) end`;

/** pageJsonSql of rows with their ETags (versionedRowJsonWith). */
const versionedPageJsonSql = (order: string) =>
  `case when sum(octet_length(data)) <= ${MAX_PAGE_BYTES} then string_agg(${versionedRowJsonWith(PAST_BRACE)}, ',' order by ${order}) end`;

/**
 * The row `?` if it lives at `?` (ms since the epoch), of the collection found by account `?` and name
 * `?` in the same statement: one row when the collection exists, its `data` and `version` null when the
 * row is missing or expired; none when the collection is missing. A 404 needs no second statement.
 */
export const getRowSql = rowByIdSql();

/**
 * getRowSql of a row held to `condition` too (a caller's read rule as filterSql() writes it on `r`, its
 * bindings after the row's `now`): a row that fails it is read as missing.
 */
export const getRowWhereSql = (condition: string) => rowByIdSql(` and (${condition})`);

function rowByIdSql(condition = '') {
  return `select r.data, c.id as collection_id, r.version from collections c
  left join rows r on r.collection_id = c.id and r.id = ? and ${liveRowText('r')}${condition}
  where c.account_id = ? and c.name = ?`;
}

/**
 * One page of the account's collection, sorted whole, as one row `{ n, json, seq }` (pages.ts). Each
 * field of the order is read as jsonb `j<i>` and ordered by its rank (the type's place, missing or null
 * last in both directions), its number (false 0, true 1) and its string, as a sort index keys it; ties
 * break by id. Strings compare under the "C" collation, which is code point order in UTF-8 (escaped:
 * escapeString()). A page after a place keeps the rows past it (../../sql/pages.ts, afterPlace).
 */
export const orderedPage: PageSource['orderedPage'] = (collection, page, where, scores) =>
  wholePage(page.versions ? versionedPageJson : pageJson, byField, collection, page, where, scores);

/**
 * The counts of rows PostgreSQL's page statements are written for (pageCut): 1, 2 and 5 times each power
 * of ten from 1 to 100,000, so that a page's is less than two and a half times the rows it reads.
 */
const PLANNED_ROWS = [1, 10, 100, 1_000, 10_000, 100_000].flatMap((scale) => [scale, 2 * scale, 5 * scale]);

/**
 * A page's rows cut to the page where PostgreSQL's planner can count them. A LIMIT or OFFSET bound is no
 * number to the plan made once for every run of a prepared statement (its generic plan), which counts
 * such a page as a tenth of the collection; it never costs less than a plan made for one run's numbers,
 * and PostgreSQL plans every run anew, its planning the larger part of a page's time in the database
 * (docs/performance.md, "Generic plans for PostgreSQL's pages"). So the rows are first cut to a constant
 * of PLANNED_ROWS, the smallest at or past the page's offset and limit (a server's constant, never the
 * client's number: docs/development.md, "Rules of the hot paths"), then to the page exactly by the
 * bindings, which the generic plan counts a tenth of that constant. PostgreSQL hands a subquery's rows
 * to a query that only cuts them in the subquery's order. Past the last constant, cut by the bindings
 * alone.
 */
const pageCut: PageCut = {
  plannedRows: (rows) => PLANNED_ROWS.find((planned) => planned >= rows),
  cut(sorted, limit, offset, planned) {
    const exactly = `limit ${limit}${offset === undefined ? '' : ` offset ${offset}`}`;
    return planned === undefined ? `${sorted} ${exactly}` : `select * from (${sorted} limit ${planned}) cut ${exactly}`;
  },
};

/**
 * A page sorted whole, each row with the rows of its relations set in (PageSource.pageWithRelated). Each
 * row of the page, cut to it (so that no row past the page looks its related rows up), is read as jsonb
 * once (document(), kept apart by `offset 0`) for each to-one's field, a related row's id only when it is
 * a whole number from 1 to MAX_ID (../../reads/expand.ts reads ids so); each related row is looked up by its
 * primary key (LEFT JOIN LATERAL); a to-many's rows of the row's id by a LATERAL subquery, their limit and
 * one more counted and joined but the last. A row's text is its own without its closing brace, then its
 * member EXPANDED; the page's text is the whole JSON array of them, answered as it is (no string joined to
 * it in Node, which would copy it). Null text beside a count above 0 when the rows and related rows add up
 * to more than MAX_PAGE_BYTES.
 */
export const pageWithRelated: NonNullable<PageSource['pageWithRelated']> = (collection, page, joined) =>
  wholePage(pageJson, byField, collection, page, undefined, undefined, joinedJson(joined, page.now));

function joinedJson(joined: readonly JoinedRelation[], now: number): JoinedJson {
  const ones = joined.flatMap((relation, index) => (relation.many ? [] : [{ ...relation, t: `t${index}` }]));
  const ids = ones.map(({ field, t }) => sql`, ${toOneId(sql`(j -> ${escapeString(field)}::text)`)} as ${raw(t)}`);
  const read =
    ones.length === 0
      ? raw('')
      : sql`
      cross join lateral (select 1${joinSql(ids, '')} from (select ${document('r')} as j offset 0) j offset 0) d`;
  const apart: Sql[] = [];
  const related = joined.map((relation, index) => {
    const { collection, where, many } = relation;
    const t = raw(`t${index}`);
    if (many) {
      const { slot, rows } = pageRowRelated(relatedJson, byField, relation, many, now, raw('r.id'));
      apart.push(sql`${slot} is null`);
      return sql`
      left join lateral (select count(*) as n, sum(octet_length(data)) as b,
        array_to_string((array_agg(${raw(rowJsonSql)}))[1:${many.limit}], ',') as json from (${rows}) x) ${t} on true`;
    }
    return sql`
      left join lateral (select ${raw(rowJsonSql)} as json, octet_length(data) as b from rows
        where rows.collection_id = ${collection.id} and rows.id = d.${t} and ${liveRowSql('rows', now)}${where ? sql` and (${where})` : raw('')}) ${t} on true`;
  });
  const members = joined.map(({ name, many }, index) => {
    const t = `t${index}`;
    if (!many) return sql`${`${JSON.stringify(name)}:`} || coalesce(${raw(t)}.json, 'null')`;
    const cut = sql`case when ${raw(t)}.n > ${many.limit} then ${`,"${CUT}":${JSON.stringify([name])}`} else '' end`;
    return sql`${`${JSON.stringify(name)}:[`} || coalesce(${raw(t)}.json, '') || ']' || ${cut}`;
  });
  const bytes = joined.map((_, index) => raw(` + coalesce(sum(t${index}.b), 0)`));
  const own = `case r.data when '{}' then '' else ',' || left(right(r.data, -1), -1) end`;
  const row = sql`'${raw(ROW_START)}' || r.id || ${raw(own)} || '${raw(`,"${EXPANDED}":{`)}' || ${joinSql(members, " || ',' || ")} || '}}'`;
  return {
    columns: raw(''),
    joins: sql`${read}${joinSql(related, '')}`,
    apart: apart.length > 0 ? joinSql(apart, ' or ') : undefined,
    rows: (order) =>
      sql`case when sum(octet_length(r.data))${joinSql(bytes, '')} <= ${raw(String(MAX_PAGE_BYTES))} then '[' || string_agg(${row}, ',' order by ${raw(order)}) || ']' end`,
  };
}

/** A related row's id from `v`, a field's jsonb: a whole number from 1 to MAX_ID, else null (no row). */
const toOneId = (v: Sql) =>
  sql`case when jsonb_typeof(${v}) = 'number' then case when (${v})::numeric between 1 and ${raw(MAX_ID)} and (${v})::numeric % 1 = 0 then (${v})::numeric::bigint end end`;

/** A page's rows and a scored page's scores joined in its order: each score a float8's text, the shortest that reads back as the same number. */
const pageJson: PageJson = {
  ...pageCut,
  rows: pageJsonSql,
  scores: (order) => `string_agg(score::text, ',' order by ${order})`,
  // PostgreSQL pulls no subquery with an OFFSET up into the query around it.
  fence: 'offset 0',
};
const versionedPageJson: PageJson = { ...pageJson, rows: versionedPageJsonSql };

/**
 * A key of orderedPage()'s order, its field read as jsonb `j<index>`: of the row, or of the related row
 * for a key through a relation (relatedRowSql), null when missing.
 */
const byField: FieldOrder = (key, index, at, collection, now) => {
  const { direction } = key;
  const read = key.related ? relatedField(key.related, collection, now) : field(key.field);
  const j = `j${index}`;
  const missing = direction === 'asc' ? 5 : 0;
  const rank = `case jsonb_typeof(${j}) when 'number' then 1 when 'string' then 2 when 'boolean' then 3 when 'object' then 4
        when 'array' then 4 else ${missing} end`;
  const number = `case jsonb_typeof(${j}) when 'number' then (${j})::numeric when 'boolean' then case when (${j})::boolean then 1 else 0 end end`;
  const string = `(case when jsonb_typeof(${j}) = 'string' then ${j} #>> '{}' end) collate "C"`;
  const scalar = at?.scalar ?? null;
  return {
    columns: `, ${read.value} as ${j}`,
    bindings: read.bindings,
    order: [
      { column: { sql: rank, direction }, at: at ? sql`${at.rank === 5 ? missing : at.rank}` : undefined },
      {
        column: { sql: number, direction },
        at: typeof scalar === 'number' || typeof scalar === 'boolean' ? sql`${JSON.stringify(Number(scalar))}::numeric` : undefined,
      },
      { column: { sql: string, direction }, at: typeof scalar === 'string' ? sql`${escapeString(scalar)}::text` : undefined },
    ],
  };
};

/** A key's rows as one JSON text, joined as they come, only when they add up to at most MAX_PAGE_BYTES (null otherwise, beside a count above 0). */
const keyJsonSql = `case when sum(octet_length(data)) <= ${MAX_PAGE_BYTES} then string_agg(${rowJsonSql}, ',') end`;

/**
 * The rows related to a page's, for a relation of the whole page (../../engine/sql/related.ts): the keys
 * read from their JSON array, each key's rows of a to-many read by a LATERAL subquery in their order, its
 * sort keys joined to their rows by the primary key (a plain join: under the subquery's LIMIT the planner
 * looks each row up, and a subquery kept apart by `offset 0` cost a rescan of its own for each row), or
 * where nothing else of the rows is read, their texts the keys carry (./collections.ts, carriedText);
 * each key's rows joined in their order, only when they add up to at most MAX_PAGE_BYTES.
 */
export const relatedRows: PageSource['relatedRows'] = (read) => relatedPage(relatedJson, byField, read);

const relatedJson: RelatedJson = {
  keys: (list, type) => sql`(select jsonb_array_elements_text(${list}::jsonb)::${raw(type === 'id' ? 'bigint' : 'numeric')})`,
  // A key's rows joined as the ordered subquery hands them over, its aggregate's only input (PostgreSQL's
  // documentation, "Aggregate Functions": a sorted subquery, no join at the aggregate's level).
  eachKey: (list, rows) => sql`select key.value as k, r.n, r.json
    from (select jsonb_array_elements_text(${list}::jsonb)::numeric as value) key
    cross join lateral (select count(*) as n, ${raw(keyJsonSql)} as json from (${rows}) r) r`,
  fieldKey(name) {
    const { value, bindings } = field(name);
    return { sql: `(case when jsonb_typeof(${value}) = 'number' then (${value})::numeric end)`, params: [...bindings, ...bindings] };
  },
  slotOf: (id, field) =>
    sql`(select (e.i - 1)::int from collections c cross join jsonb_array_elements_text(c.sorted::jsonb) with ordinality e(f, i)
        where c.id = ${id} and e.f = ${field})`,
  row: rowJsonSql,
  keyedRows: 'sort_keys k join rows on rows.collection_id = k.collection_id and rows.id = k.row_id',
  rows: pageJsonSql('rn'),
  fence: pageJson.fence,
  carried: (id) => sql`coalesce(k.carried, (select data from rows where collection_id = ${id} and id = k.row_id offset 0))`,
};

/** Ids are assigned from 1 and never reach 2^53 (rows.ts, assignable()). */
const MAX_ID = String(2 ** 53 - 1);

/**
 * A field of the related row (RelatedKey) as jsonb, its strings escaped as the row's are; the row's own
 * field read as an id (a bigint) only when it is a number in the ids' range, which no cast can overflow.
 */
function relatedField(related: RelatedKey, collection: CollectionRef, now: number) {
  const id = sql`(select case when jsonb_typeof(v) = 'number' then case when (v)::numeric between 1 and ${raw(MAX_ID)} then (v)::numeric::bigint end end
        from (select ${document('rows')} -> ${escapeString(related.field)}::text as v offset 0) relation_id)`;
  const what = related.name === 'id' ? raw('to_jsonb(rel.id)') : sql`${document('rel')} -> ${escapeString(related.name)}::text`;
  const text = relatedRowSql(what, related.collection, collection.id, id, now, related.filter && filterSql(related.filter, 'rel'));
  return { value: text.sql, bindings: text.params };
}

/**
 * The rows of a range of the sort index in `slot`, or of the ranges after a place in it, as one row
 * `{ n, json, seq, exact }` (../../sql/pages.ts, sortedPages): `exact` whether every string key of the page is
 * shorter than POSTGRES_KEY_CHARS. Each key's row is read by its primary key (LATERAL, kept a subquery
 * by `offset 0`): as a join, the planner hashed the whole collection's rows for the page's few. A page of
 * a collection last seen with a time to live joins each key with its row inside the keys' cut and keeps it
 * when the row lives there, one lookup a row; of one without, the keys are cut first and each one's row
 * read for its text after, each key kept when its row lives (liveKeyText: a lookup only when the
 * collection has a time to live now), the rows' texts not carried through the cut
 * (docs/performance.md, "PostgreSQL's expiry list: each key's row read once"). A place's string is escaped
 * as the keys' are, and one as long as a key is cut at has no exact place in the index.
 */
export const { sortedPage, sortedPageAfter } = sortedPages(
  (keys, order, { collectionId, now, expiring }) => {
    const row = (columns: string) => `(select ${columns} from rows where collection_id = ${collectionId} and id = k.row_id offset 0) r`;
    const page = (from: string) => `select count(*) as n, ${pageJsonSql(order)} as json,
      (select last_seq from collections where id = ${collectionId}) as seq,
      bool_and(k.str is null or length(k.str) < ${POSTGRES_KEY_CHARS}) as exact
    from ${from}`;
    if (expiring)
      return page(
        `(${keys({
          columns: 'k.rank, k.num, k.str, k.row_id, r.id, r.data',
          from: `sort_keys k cross join lateral ${row('id, data, expires_at')}`,
          collection: `k.collection_id = ${collectionId}`,
          live: liveRowText('r', now),
        })}) k`,
      );
    return page(`(${keys({ columns: 'rank, num, str, row_id', from: 'sort_keys', collection: `collection_id = ${collectionId}`, live: liveKeyText(collectionId, now) })}) k
    cross join lateral ${row('id, data')}`);
  },
  {
    ...pageCut,
    param: (n) => `$${n}`,
    sql: (value) => value,
    value(scalar) {
      if (typeof scalar === 'number') return JSON.stringify(scalar);
      const key = escapeString(scalar);
      return key.length < POSTGRES_KEY_CHARS ? key : undefined;
    },
  },
);

/**
 * A filtered page ordered by a field with a sort index, the filter's rows within `bounds` of that
 * index (../filter-indexes.ts), as one row `{ n, json, seq, exact }` (`exact` as sortedPage's): the
 * keys of the range in the page's order, each key's row read by its primary key (LATERAL, as
 * sortedPage's) and tested by `filter` (SQL on `rows`), the first `limit` after `offset` that match, of
 * the first `scan` keys only when given.
 */
export const filteredSortedPage: PageSource['filteredSortedPage'] = (keys, filter, limit, offset, now) =>
  sql`select count(*) as n, ${raw(pageJsonSql(keyOrder('k.', keys.order)))} as json,
      ${seqOf(keys.collectionId, keys.guard)} as seq,
      bool_and(k.str is null or length(k.str) < ${raw(String(POSTGRES_KEY_CHARS))}) as exact
    from (${cutSql(
      pageCut,
      sql`select k.rank, k.num, k.str, k.row_id, rows.id, rows.data from ${firstKeys(keys)} k
      cross join lateral (select id, data, expires_at from rows where collection_id = ${keys.collectionId} and id = k.row_id offset 0) rows
      where k.collection_id = ${keys.collectionId} and k.slot = ${keys.slot} and ${keys.bounds} and ${liveRowSql('rows', now)} and (${filter})
      order by ${raw(keyOrder('k.', keys.order))}`,
      limit,
      offset,
    )}) k`;

// Aggregates (../aggregates.ts): one statement reads the groups of the rows a filter keeps, each row's
// text read as jsonb once (filter.ts, document()), its strings escaped as escapeString() escapes them.
// jsonb's equality is JSON equality, so a group field's jsonb value is its group's key; numbers are
// numeric, exact, so a sum is the exact sum of the numbers' texts; strings compare under "C", by code
// point. Every JSON text answered holds escaped strings, which jsonOf() (index.ts) reads back.

/** A top-level field of the row's jsonb `j`, its name escaped (a binding). */
const member = (name: string) => sql`(j -> ${escapeString(name)}::text)`;

/** A field's value as the key of its group: null for null and a missing field. */
const groupKey = (name: string) => sql`case when jsonb_typeof(${member(name)}) = 'null' then null else ${member(name)} end`;

/**
 * A min's or a max's value as the first of a page ordered by the field would hold it: of the lowest
 * rank among its values for min (numbers, strings, booleans, then objects and arrays, the first by id),
 * of the highest for max (the last by id), as JSON text.
 */
function extremeSql(name: string, op: 'min' | 'max'): Sql {
  const value = member(name);
  const [number, string, boolean, other] = [
    sql`(${raw(op)}(case when jsonb_typeof(${value}) = 'number' then (${value})::numeric end))::text`,
    sql`to_jsonb(${raw(op)}((case when jsonb_typeof(${value}) = 'string' then ${value} #>> '{}' end) collate "C"))::text`,
    sql`(${raw(op === 'min' ? 'bool_and' : 'bool_or')}(case when jsonb_typeof(${value}) = 'boolean' then (${value})::boolean end))::text`,
    sql`substr(${raw(op)}((case when jsonb_typeof(${value}) in ('object', 'array') then lpad(id::text, 20, '0') || (${value})::text end)
        collate "C"), 21)`,
  ];
  const ranks = op === 'min' ? [number, string, boolean, other] : [other, boolean, string, number];
  return sql`coalesce(${joinSql(ranks)})`;
}

/** An aggregate's piece of its group's row (part 0, ../aggregates.ts, AggregatePart). */
function groupPiece(aggregate: Aggregate): Sql {
  if (aggregate.op === 'count') return raw('null');
  const value = member(aggregate.field);
  switch (aggregate.op) {
    case 'count_distinct':
      return sql`count(distinct ${groupKey(aggregate.field)})`;
    case 'sum':
    case 'avg':
      return sql`json_build_array(count(*) filter (where jsonb_typeof(${value}) = 'number'),
        (sum(case when jsonb_typeof(${value}) = 'number' then (${value})::numeric end))::text)`;
    case 'min':
    case 'max':
      return extremeSql(aggregate.field, aggregate.op);
  }
}

/**
 * The statement of an aggregate (../aggregates.ts, AggregatePart): `keyed` is the rows the filter keeps
 * with their jsonb; part 0 groups them by their group fields' values, at most `maxGroups`, each with
 * those values' JSON text, its row count and its pieces (a sum's exact, a min's and a max's value: no
 * other part); part 3 the collection's latest event seq.
 */
export const aggregateSql: AggregateSource['aggregateSql'] = (collection, query, where, maxGroups, now) => {
  const keys = query.groupBy.map((name, index) => sql`${groupKey(name)} as k${raw(String(index))}`);
  const keyNames = query.groupBy.map((_name, index) => raw(`k${index}`));
  const texts = keyNames.map((name) => sql`${name}::text`);
  const identity = keyNames.length === 0 ? raw(`'[]'`) : sql`json_build_array(${joinSql(texts)})::text`;
  const pieces = query.aggregates.map(groupPiece);
  const filtered = where ? sql` and (${where})` : raw('');
  const grouped = keyNames.length === 0 ? raw('') : sql` group by ${joinSql(keyNames)}`;
  return sql`with keyed as (select rows.id, doc.j${keys.length === 0 ? raw('') : sql`, ${joinSql(keys)}`}
      from rows, lateral (select ${document('rows')} as j offset 0) doc
      where rows.collection_id = ${collection.id} and ${liveRowSql('rows', now)}${filtered})
    select * from (select 0 as part, null::integer as x, ${identity} as k,
        json_build_array(${joinSql([...texts, raw('count(*)'), ...pieces])})::text as v
      from keyed${grouped} limit ${maxGroups}) groups
    union all
    select 3 as part, null::integer as x, null as k, json_build_array(${collection.lastSeq})::text as v`;
};

/** `parts` one after another, separated by `separator` (a comma by default). */
function joinSql(parts: Sql[], separator = ', '): Sql {
  return parts.reduce((joined, part, index) => (index === 0 ? part : sql`${joined}${raw(separator)}${part}`), raw(''));
}
