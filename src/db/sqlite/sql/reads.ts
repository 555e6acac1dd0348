// SQLite's SQL of reads: rows by id (merged), pages sorted whole or read through a sort index
// (../../reads/pages.ts, on ../../sql/pages.ts), and aggregates.

import type { Aggregate } from '../../../query/aggregate.ts';
import type { Direction, RelatedKey } from '../../../query/order.ts';
import { CUT, EXPANDED } from '../../../rows.ts';
import type { AggregateSource, PageSource } from '../../engine/read-port.ts';
import { keyOrder } from '../../engine/sql/collections.ts';
import { liveRowSql, liveRowText } from '../../engine/sql/expiry.ts';
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
import { firstKeys, ROW_START, relatedRowSql, rowJsonPast, rowJsonWith, versionedRowJsonWith } from '../../engine/sql/reads.ts';
import { type JoinedRelation, pageRowRelated, type RelatedJson, relatedPage } from '../../engine/sql/related.ts';
import { raw, type Sql, sql } from '../../engine/sql/template.ts';
import { filterSql } from '../filter.ts';

/**
 * The row's own text cut after its first byte, as rowJsonWith() takes it. SQLite's substr() of a text
 * counts characters, so it walks the whole row to find where it ends; of a blob it counts bytes. The `{`
 * is one byte, and `||` makes text of the blob's bytes as they are.
 */
const PAST_BRACE = 'substr(cast(data as blob), 2)';

/** A row's JSON text (rowJsonWith). */
export const rowJsonSql = rowJsonWith(PAST_BRACE);

/**
 * A page's rows as one JSON text. group_concat joins them as they come: a page's FROM starts with its
 * ordered, limited subquery, which SQLite runs as the outer loop (with CROSS JOIN for the rows a sort
 * index's page reads), so they come in order; sorting them again would fill a temporary B-tree with
 * the page's texts. test/http/sort-index.test.ts checks the pages of both kinds against a model. The
 * start every row's text shares is the end of the separator, and written once before the first: a
 * concatenation less a row (null without rows, as group_concat is).
 */
const pageJsonSql = `'${ROW_START}' || group_concat(${rowJsonPast(PAST_BRACE)}, ',${ROW_START}')`;

/** A page's rows with their ETags (versionedRowJsonWith), as one JSON text, joined as pageJsonSql joins them. */
const versionedPageJsonSql = `group_concat(${versionedRowJsonWith(PAST_BRACE)}, ',')`;

/** Names a JSON path label `$."…"` can spell: no quote, backslash or control character. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for.
export const pathSafe = /^[^"\\\u0000-\u001f]*$/;

/**
 * A field name as SQL that compares equal to json_each's `key` for it, and its one binding. A name that
 * is not well-formed UTF-16 (a lone surrogate) cannot be bound as text: the driver writes it as UTF-8,
 * the surrogate as U+FFFD, where SQLite decodes the row's escape `\udXYZ` into the surrogate's own
 * three bytes. So such a name is bound as its JSON text, which SQLite decodes the same way.
 */
export const fieldName = (field: string) =>
  field.isWellFormed() ? { sql: '?', binding: field } : { sql: "json_extract(?, '$')", binding: JSON.stringify(field) };

/**
 * A field of `rows.data`: its JSON type and its value, each with one binding, `key`. Read with a JSON
 * path, `$."name"`; a name a path cannot spell (a quote, a backslash, a control character, a lone
 * surrogate) is looked up among the row's keys with json_each, which compares it as a plain string.
 */
function field(name: string) {
  const byPath = pathSafe.test(name) && name.isWellFormed();
  const named = fieldName(name);
  const [type, value] = byPath
    ? ['json_type(data, ?)', 'json_extract(data, ?)']
    : [
        `(select type from json_each(rows.data) where key = ${named.sql})`,
        `(select value from json_each(rows.data) where key = ${named.sql})`,
      ];
  return { type, value, key: byPath ? `$."${name}"` : named.binding };
}

/**
 * Row reads merged (readers.ts, readMerged): `?` is `[[account id, collection, row id, now], …]`, each row
 * read if it lives at its read's `now` (ms since the epoch). One answer a read whose collection exists,
 * its `data` and `version` null when the row is missing or expired; none when the collection is missing.
 * CROSS JOIN keeps SQLite's planner from reading collections first, and a LEFT JOIN is read in the
 * order written: each read is two primary key lookups.
 */
export const rowsSql = `select j.key as i, r.data, c.id as collection_id, r.version from json_each(?) j
  cross join collections c on c.account_id = j.value ->> 0 and c.name = j.value ->> 1
  left join rows r on r.collection_id = c.id and r.id = j.value ->> 2 and ${liveRowText('r', 'j.value ->> 3')}`;

/**
 * rowsSql of reads that hold their rows to `condition` (a caller's read rule as filterSql() writes it on
 * `r`): a row that fails it is read as missing. Its text is one for every caller of one rule, so their
 * reads merge; each read's bindings are its own, in its array after rowsSql's four, each `?` of the
 * condition the next of them (its SQL is the code's own: no `?` inside a string literal, as on
 * PostgreSQL, ../../postgres/statements.ts). `->>` reads each as it was bound: a text, a number or null.
 */
export function rowsWhereSql(condition: string): string {
  let binding = 4;
  return `${rowsSql} and (${condition.replace(/\?/g, () => `(j.value ->> ${binding++})`)})`;
}

/**
 * One page of the account's collection, sorted whole, as one row `{ n, json, seq }` (pages.ts): `seq`
 * read by the same statement, null when there is no such collection. Each field of the order is read
 * as its JSON type `t<i>` and SQL value `v<i>`, and ordered by its rank (the type's place, missing or
 * null last in both directions), then its value (none for objects and arrays, which tie); ties break
 * by id. Its SQL depends only on the directions and how the fields are read, so a prepared statement
 * serves every field name. Strings compare as UTF-8 bytes (the BINARY collation), which is code
 * point order. A page after a place keeps the rows past it (../../sql/pages.ts, afterPlace).
 */
export const orderedPage: PageSource['orderedPage'] = (collection, page, where, scores) =>
  wholePage(page.versions ? versionedPageJson : pageJson, byField, collection, page, where, scores);

/**
 * A page sorted whole, each row with the rows of its relations set in (PageSource.pageWithRelated): each
 * to-one's field read beside the row as `j<index>` (as a number only: a related row's id), and each row's
 * text made of its own without its closing brace, then its member EXPANDED, each to-one's row read by a
 * scalar subquery of that field (PAST_BRACE's blob, cut a byte short at its end too), a to-many's rows by
 * one of the row's id (toManyMember()). Read where the page's rows are joined, so that no row past the
 * page's limit looks its related rows up.
 */
export const pageWithRelated: NonNullable<PageSource['pageWithRelated']> = (collection, page, joined) =>
  wholePage(pageJson, byField, collection, page, undefined, undefined, joinedJson(joined, page.now));

function joinedJson(joined: readonly JoinedRelation[], now: number): JoinedJson {
  let columns = '';
  const keys: string[] = [];
  joined.forEach((relation, index) => {
    if (relation.many) return;
    const { type, value, key } = field(relation.field);
    columns += `, (case when ${type} in ('integer', 'real') then ${value} end) as j${index}`;
    keys.push(key, key);
  });
  const apart: Sql[] = [];
  const members = joined.map((relation, index) => {
    const { name, collection, where, many } = relation;
    if (many) {
      const { slot, rows } = pageRowRelated(relatedJson, byField, relation, many, now, raw('r.id'));
      apart.push(sql`${slot} is null`);
      return toManyMember(name, many, rows);
    }
    return sql`${`${JSON.stringify(name)}:`} || coalesce((select ${raw(rowJsonSql)} from rows
        where rows.collection_id = ${collection.id} and rows.id = r.j${raw(String(index))} and ${liveRowSql('rows', now)}${where ? sql` and (${where})` : raw('')}), 'null')`;
  });
  const own = `case data when '{}' then '' else ',' || substr(cast(data as blob), 2, length(cast(data as blob)) - 2) end`;
  const row = sql`id || ${raw(own)} || '${raw(`,"${EXPANDED}":{`)}' || ${joinSql(members, " || ',' || ")} || '}}'`;
  return {
    columns: { sql: columns, params: keys },
    joins: raw(''),
    apart: apart.length > 0 ? joinSql(apart, ' or ') : undefined,
    // Joined as they come, in order (pageJsonSql), and answered as the whole array's bytes: the driver
    // hands a blob over as a Buffer, which is answered as it is, where a text is decoded into a string
    // and encoded again to be sent (docs/performance.md, "A comments page's bytes as SQLite made them").
    rows: () => sql`cast('[${raw(ROW_START)}' || group_concat(${row}, '${raw(`,${ROW_START}`)}') || ']' as blob)`,
  };
}

/**
 * A to-many relation's member of a page row's EXPANDED (JoinedRelation.many): its `rows` (pageRowRelated(), the
 * limit and one more) joined as they come, the one past the limit cut off again by its bytes, which its
 * id and data tell without its text (rowJsonPast: its id, then `}` or its data past the brace), the
 * last row's by the one max() or min() of the ids (SQLite's bare columns of a min/max aggregate); cut, the
 * member `$cut` after it.
 */
function toManyMember(name: string, many: { direction: Direction; limit: number }, rows: Sql): Sql {
  const last = many.direction === 'asc' ? 'max(id)' : 'min(id)';
  const lastBytes = `length(id) + case data when '{}' then 1 else length(cast(data as blob)) end`;
  const separator = `,${ROW_START}`;
  const member = `${JSON.stringify(name)}:[`;
  return sql`(select case when n = 0 then ${`${member}]`}
        when n > ${many.limit} then ${member} || cast(substr(cast(g as blob), 1, length(cast(g as blob)) - b - ${separator.length}) as text) || ${`],"${CUT}":${JSON.stringify([name])}`}
        else ${member} || g || ']' end
      from (select count(*) as n, '${raw(ROW_START)}' || group_concat(${raw(rowJsonPast(PAST_BRACE))}, '${raw(separator)}') as g, ${raw(last)}, ${raw(lastBytes)} as b
        from (${rows})))`;
}

/**
 * A page's rows cut by a LIMIT after their ORDER BY, bound as `+?`: SQLite plans a statement with a bare
 * `limit ?` again each time it runs (docs/development.md, "Rules of the hot paths"). One text for every
 * page: a prepared statement's plan does not depend on its bindings.
 */
const pageCut: PageCut = {
  plannedRows: () => undefined,
  cut: (sorted, limit, offset) => `${sorted} limit +${limit}${offset === undefined ? '' : ` offset ${offset}`}`,
};

/**
 * A page's rows and a scored page's scores joined as they come, in order (pageJsonSql): each score as
 * SQLite casts a real to text, the shortest that reads back as the same number; the fence of the rows
 * ordered through a relation (PageJson).
 */
const pageJson: PageJson = {
  ...pageCut,
  rows: () => pageJsonSql,
  scores: () => `group_concat(cast(score as text), ',')`,
  // SQLite merges no subquery with an OFFSET into the query around it.
  fence: 'limit -1 offset 0',
};
const versionedPageJson: PageJson = { ...pageJson, rows: () => versionedPageJsonSql };

/**
 * A key of orderedPage()'s order, its field read as its JSON type `t<index>` and SQL value `v<index>`; a
 * key through a relation, as the JSON text `x<index>` of the related row's field (relatedRowSql; `->`
 * answers it as the row holds it, null when missing), whose type and value are read from it.
 */
const byField: FieldOrder = (key, index, at, collection, now) => {
  const { direction } = key;
  const read = key.related ? relatedField(key.related, index, collection, now) : rowField(key.field, index);
  const { t, v } = read;
  const missing = direction === 'asc' ? 5 : 0;
  const rank = `case when ${t} is null or ${t} = 'null' then ${missing} when ${t} in ('integer', 'real') then 1 when ${t} = 'text' then 2
        when ${t} in ('true', 'false') then 3 else 4 end`;
  return {
    columns: read.columns,
    bindings: read.bindings,
    order: [
      { column: { sql: rank, direction }, at: at ? sql`${at.rank === 5 ? missing : at.rank}` : undefined },
      {
        column: { sql: `case when ${t} in ('object', 'array') then null else ${v} end`, direction },
        at: at ? scalarSql(at.scalar) : undefined,
      },
    ],
  };
};

/**
 * The rows related to a page's, for a relation of the whole page (../../engine/sql/related.ts): the keys
 * read from their JSON array by json_each, each key's rows of a to-many read in their order by a subquery
 * of the key, its sort keys the outer loop (CROSS JOIN), each key's rows joined in their order.
 */
export const relatedRows: PageSource['relatedRows'] = (read) => relatedPage(relatedJson, byField, read);

const relatedJson: RelatedJson = {
  keys: (list) => sql`(select value from json_each(${list}))`,
  // SQLite has no LATERAL, and a subquery in FROM sees no table beside it: a key's rows are read by a
  // scalar subquery of the key, which answers one value, their count and their texts as one text, split
  // again around it. The fence keeps SQLite from merging the query of the keys into the one around it,
  // which would run the subquery once for each of the two parts. The texts are cut from the text as a
  // blob, by bytes (the count before them is digits), where substr of a text counts its characters.
  eachKey: (list, rows) => sql`select k, cast(x as integer) as n, cast(substr(cast(x as blob), instr(x, ' ') + 1) as text) as json
    from (select key.value as k, (select count(*) || ' ' || ${raw(pageJsonSql)} from (${rows}) r) as x
      from json_each(${list}) key ${raw(pageJson.fence)})`,
  fieldKey(name) {
    const { type, value, key } = field(name);
    return { sql: `(case when ${type} = 'integer' then ${value} end)`, params: [key, key] };
  },
  slotOf: (id, field) => sql`(select j.key from collections c, json_each(c.sorted) j where c.id = ${id} and j.value = ${field})`,
  row: rowJsonSql,
  keyedRows: 'sort_keys k cross join rows on rows.collection_id = k.collection_id and rows.id = k.row_id',
  // Joined as they come (pageJsonSql): the subquery hands each key's rows over in their order; an ORDER BY of
  // group_concat would sort them again.
  rows: pageJsonSql,
  fence: pageJson.fence,
  carried: (id) => sql`coalesce(k.carried, (select data from rows where collection_id = ${id} and id = k.row_id))`,
};

/** A field of the row, as the columns `t<index>` and `v<index>`. */
function rowField(named: string, index: number) {
  const { type, value, key } = field(named);
  const [t, v] = [`t${index}`, `v${index}`];
  return { columns: `, ${type} as ${t}, ${value} as ${v}`, bindings: [key, key], t, v };
}

/** A field of the related row (RelatedKey), as the column `x<index>`, its JSON text. */
function relatedField(related: RelatedKey, index: number, collection: CollectionRef, now: number) {
  const idPath = aggregatePath(related.field);
  const id = sql`case when json_type(rows.data, ${idPath}) = 'integer' then json_extract(rows.data, ${idPath}) end`;
  const what = related.name === 'id' ? raw('cast(rel.id as text)') : sql`rel.data -> ${aggregatePath(related.name)}`;
  const filter = related.filter && filterSql(related.filter, 'rel');
  const text = relatedRowSql(what, related.collection, collection.id, id, now, filter);
  const x = `x${index}`;
  return { columns: `, ${text.sql} as ${x}`, bindings: text.params, t: `json_type(${x})`, v: `json_extract(${x}, '$')` };
}

/**
 * A sort key's value as SQLite reads a row's (json_extract): a number or a string through SQLite's own
 * JSON reader, from its JSON text, as the filter binds them (filter.ts); a boolean as 1 or 0. None for
 * an object, an array or a missing value, whose rows tie on it.
 */
function scalarSql(scalar: number | string | boolean | null): Sql | undefined {
  if (scalar === null) return undefined;
  if (typeof scalar === 'boolean') return sql`${scalar ? 1 : 0}`;
  return sql`json_extract(${JSON.stringify(scalar)}, '$')`;
}

/**
 * The rows of a range of the sort index in `slot`, or of the ranges after a place in it, as one row
 * `{ n, json, seq }` (../../sql/pages.ts, sortedPages), each key's row read once: each key joined with its
 * row, kept when that lives (a row of a collection without a time to live has no expiry), where its text
 * is read. A lookup of each key's row for its expiry beside the read of its text would look it up twice
 * (docs/expiry.md). A page past an offset joins the rows of the keys it skips only in a collection with a
 * time to live; of one without, it skips them in the index alone and joins its own rows: the statement
 * reads the collection's row first, and only the branch of its kind reads keys. CROSS JOIN keeps the keys
 * the outer loop, so the rows come in their order. The same text each time for each shape: statements are
 * kept by their text (readers.ts). A key's number or string is bound as its JSON text, read by SQLite's
 * own JSON reader, as the keys' were.
 */
export const { sortedPage, sortedPageAfter } = sortedPages(
  (keys, _order, { collectionId, now, skips }) => {
    const page = (from: string) => `select count(*) as n, ${pageJsonSql} as json,
      (select last_seq from collections where id = ${collectionId}) as seq
    from (${from})`;
    const withRows = `cross join rows r on r.collection_id = ${collectionId} and r.id = k.row_id`;
    const live = liveRowText('r', now);
    if (!skips)
      return page(
        keys({ columns: 'r.id, r.data', from: `sort_keys k ${withRows}`, collection: `k.collection_id = ${collectionId}`, live }),
      );
    const keyed = 'collections c cross join sort_keys k on k.collection_id = c.id';
    const collection = `c.id = ${collectionId}`;
    const plain = keys({ columns: 'rank, num, str, row_id', from: keyed, collection, live: 'c.ttl_field is null' });
    const expiring = keys({
      columns: 'r.id, r.data',
      from: `${keyed} ${withRows}`,
      collection,
      live: `c.ttl_field is not null and ${live}`,
    });
    return page(`select r.id, r.data from (${plain}) k ${withRows}
    union all
    select id, data from (${expiring})`);
  },
  { ...pageCut, param: (n) => `?${n}`, sql: (value) => `json_extract(${value}, '$')`, value: (scalar) => JSON.stringify(scalar) },
);

/**
 * A filtered page ordered by a field with a sort index, the filter's rows within `bounds` of that
 * index (../filter-indexes.ts), as one row `{ n, json, seq }`: the keys of the range in the page's
 * order (CROSS JOIN keeps them the outer loop), each key's row tested by `filter` (SQL on `rows`), the
 * first `limit` after `offset` that match. It reads no more of the range than it needs to fill the
 * page, nor more than its first `scan` keys.
 */
export const filteredSortedPage: PageSource['filteredSortedPage'] = (keys, filter, limit, offset, now) =>
  sql`select count(*) as n, ${raw(pageJsonSql)} as json, ${seqOf(keys.collectionId, keys.guard)} as seq
    from (${cutSql(
      pageCut,
      sql`select rows.id, rows.data from ${firstKeys(keys)} k
      cross join rows on rows.collection_id = k.collection_id and rows.id = k.row_id
      where k.collection_id = ${keys.collectionId} and k.slot = ${keys.slot} and ${keys.bounds} and ${liveRowSql('rows', now)} and (${filter})
      order by ${raw(keyOrder('k.', keys.order))}`,
      limit,
      offset,
    )}) r`;

// Aggregates (../aggregates.ts): one statement reads the groups of the rows a filter keeps. Each field is
// read with a JSON path `$."name"` (a binding), its characters as JSON.stringify escapes them and a quote
// as `\u0022`, as the filter's paths are (filter.ts). `->` answers a value's JSON text as the row holds
// it, so a number's is its exact text.

/** The JSON path of a top-level field. */
const aggregatePath = (name: string) => `$."${JSON.stringify(name).slice(1, -1).replaceAll('"', 'u0022')}"`;

/**
 * A field's value as the key of its group: its JSON text; an object's or an array's, whose members may
 * come in any order, the list of its nodes (json_tree's path, type and JSON text of each) in the order
 * of their paths, so that JSON-equal values have one key; null for null and a missing field.
 */
const groupKey = (path: string) => sql`case json_type(data, ${path})
      when 'null' then null
      when 'object' then ${treeKey(path)}
      when 'array' then ${treeKey(path)}
      else data -> ${path} end`;

const treeKey = (path: string) => sql`(select group_concat(json_array(fullkey, type, case when type in ('object', 'array') then null
        else data -> fullkey end), ',' order by fullkey) from json_tree(data, ${path}))`;

/**
 * The columns part 0 reads the field of aggregate `index` in: its JSON type (`t<index>`) and its SQL
 * value (`v<index>`), each read once a row, from a subquery that is not flattened into the grouping (a
 * subquery with a LIMIT never is, into an aggregate), where each use would read the field again.
 */
const fieldColumns = (index: number) => {
  const [t, v] = [raw(`t${index}`), raw(`v${index}`)];
  return { t, v, number: sql`${t} in ('integer', 'real')`, int64: sql`(${t} = 'integer' and typeof(${v}) = 'integer')` };
};

/**
 * Whether a field is an integer SQLite holds as one: an integer beyond 64 bits is 'integer' to
 * json_type() and a real to json_extract(); JSON.stringify writes it with trailing zeros, which part 1
 * reads exactly.
 */
const int64 = (path: string) => sql`(json_type(data, ${path}) = 'integer' and typeof(data ->> ${path}) = 'integer')`;

/**
 * An aggregate's piece of its group's row (part 0, ../aggregates.ts): a count of distinct keys; a sum's
 * count of numbers and its integers' sum (the terms of the rest come in part 1); nothing of a count, a
 * min or a max (part 2 brings those).
 */
function groupPiece(aggregate: Aggregate, index: number): Sql {
  if (aggregate.op === 'count' || aggregate.op === 'min' || aggregate.op === 'max') return raw('null');
  if (aggregate.op === 'count_distinct') return sql`count(distinct ${groupKey(aggregatePath(aggregate.field))})`;
  const { v, number, int64 } = fieldColumns(index);
  // Integers of 64 bits are summed here in halves of nine digits, which no sum of a billion rows overflows.
  return sql`json_array(count(case when ${number} then 1 end), null,
      cast(sum(case when ${int64} then ${v} / 1000000000 end) as text), cast(sum(case when ${int64} then ${v} % 1000000000 end) as text))`;
}

/**
 * The terms of a sum's other numbers, reals and integers beyond 64 bits (part 1): each one's exact
 * decimal `m` × 10^`e` read off its JSON text (its digits, its `.` and its exponent, trailing zeros
 * dropped so that `m` has 17 digits at most), summed by exponent in halves of nine digits. Node adds the
 * terms exactly (../aggregates.ts).
 */
const sumTerms = (index: number, path: string) => sql`select 1 as part, ${index} as x, hex(k) as k,
      json_array(e, cast(sum(m / 1000000000) as text), cast(sum(m % 1000000000) as text)) as v
    from (select k, cast(rtrim(digits, '0') as integer) as m, power - fraction + length(digits) - length(rtrim(digits, '0')) as e
      from (select k, replace(base, '.', '') as digits, power,
          case instr(base, '.') when 0 then 0 else length(base) - instr(base, '.') end as fraction
        from (select k, case ep when 0 then s else substr(s, 1, ep - 1) end as base,
            case ep when 0 then 0 else cast(substr(s, ep + 1) as integer) end as power
          from (select k, s, instr(s, 'e') as ep
            from (select k, data -> ${path} as s from keyed where json_type(data, ${path}) in ('integer', 'real') and not ${int64(path)})))))
    group by k, e`;

/**
 * The value of a min or a max (part 2): the row of the least or greatest sort value, whose JSON text
 * SQLite answers beside it (a bare column of a query with one min() or max()). Sort values follow a
 * page's order across types: numbers (integers and reals), then text, then blobs: false 01, true 02,
 * objects and arrays 03 and the row's id in 20 digits (the first id for min, the last for max). One row
 * a group, at most as many as part 0 answers: past them the query is refused anyway.
 */
const extreme = (index: number, path: string, op: 'min' | 'max', maxGroups: number) => sql`select 2 as part, ${index} as x, hex(k) as k,
      json_array(v || '') as v
    from (select k, ${raw(op)}(case json_type(data, ${path})
        when 'integer' then data ->> ${path} when 'real' then data ->> ${path} when 'text' then data ->> ${path}
        when 'false' then x'01' when 'true' then x'02' else unhex('03' || printf('%020d', id)) end) as best, data -> ${path} as v
      from keyed where json_type(data, ${path}) <> 'null' group by k limit +${maxGroups})`;

/**
 * The statement of an aggregate (../aggregates.ts, AggregatePart): `keyed` is the rows the filter keeps
 * with their group's key `k` (a JSON array of the group fields' keys); part 0 groups them, at most
 * `maxGroups` (a limit bound as `+?`: pageCut), each with the JSON text of each group
 * field (the least, for an object's: any of its orders) and its pieces, each aggregate's field read once
 * (fieldColumns()); parts 1 and 2 bring the sums' terms and the mins' and maxes' values, reading `keyed`
 * again, where its key is made only for the rows that have what they read; part 3 the collection's latest
 * event seq. `k` is answered in hex, which keeps the bytes of a lone surrogate that the driver would read
 * as U+FFFD.
 */
export const aggregateSql: AggregateSource['aggregateSql'] = (collection, query, where, maxGroups, now) => {
  const paths = query.groupBy.map(aggregatePath);
  const key = paths.length === 0 ? raw(`'[]'`) : sql`json_array(${joinSql(paths.map(groupKey))})`;
  const columns = query.aggregates.flatMap((aggregate, index) => {
    if (aggregate.op === 'count') return [];
    const path = aggregatePath(aggregate.field);
    return [sql`json_type(data, ${path}) as t${raw(String(index))}`, sql`data ->> ${path} as v${raw(String(index))}`];
  });
  const fields = joinSql([raw('id'), raw('data'), raw('k'), ...columns]);
  // `|| ''`: the text alone, without the JSON subtype that would have json_array() hold it as a value.
  const texts = paths.map((path) => sql`min((data -> ${path}) || '')`);
  const pieces = query.aggregates.map(groupPiece);
  const groups = sql`select 0 as part, null as x, hex(${paths.length === 0 ? raw(`'[]'`) : raw('k')}) as k,
      json_array(${joinSql([...texts, raw('count(*)'), ...pieces])}) as v
    from (select ${fields} from keyed limit -1)${paths.length === 0 ? raw('') : raw(' group by k')} limit +${maxGroups}`;
  const parts = [sql`select * from (${groups})`];
  query.aggregates.forEach((aggregate, index) => {
    if (aggregate.op === 'sum' || aggregate.op === 'avg') parts.push(sumTerms(index, aggregatePath(aggregate.field)));
    if (aggregate.op === 'min' || aggregate.op === 'max')
      parts.push(extreme(index, aggregatePath(aggregate.field), aggregate.op, maxGroups));
  });
  parts.push(sql`select 3 as part, null as x, null as k, json_array(${collection.lastSeq}) as v`);
  const filtered = where ? sql` and (${where})` : raw('');
  return sql`with keyed as (select id, data, ${key} as k from rows where collection_id = ${collection.id} and ${liveRowSql('rows', now)}${filtered})
    ${joinSql(parts, '\n    union all ')}`;
};

/** `parts` one after another, separated by `separator` (a comma by default). */
function joinSql(parts: Sql[], separator = ', '): Sql {
  return parts.reduce((joined, part, index) => (index === 0 ? part : sql`${joined}${raw(separator)}${part}`), raw(''));
}
