// The SQL of reads both dialects share: the pieces of a page (its range, a row's JSON text, the order of
// sort keys) and the statements a page or an aggregate runs as they are.
import type { Direction } from '../../../query/order.ts';
import { keyOrder } from './collections.ts';
import { liveKeySql, liveRowSql } from './expiry.ts';
import { raw, type Sql, sql } from './template.ts';

/** The account's collection by name, as a page ordered through a sort index needs it (its time to live's field: KnownCollection). */
export const collectionSql = 'select id, row_count, sorted, ttl_field from collections where account_id = ? and name = ?';

/**
 * How many rows that live at `now` (ms since the epoch) have a value for the field of the sort index in
 * `slot` of the collection `collectionId` (within `prefix`, of a pair's: ../sorted.ts): where its missing ones start,
 * as a page of them counts its offset.
 */
export const presentCountSql = (collectionId: number, slot: number, now: number, prefix?: string): Sql =>
  sql`select count(*) as n from sort_keys where collection_id = ${collectionId} and slot = ${slot}${prefix === undefined ? raw('') : sql` and prefix = ${prefix}`}
    and rank < 5 and ${liveKeySql(sql`${collectionId}`, now)}`;

/** What starts every row's JSON text (rowJsonWith), its characters as they are. */
export const ROW_START = '{"id":';

/** A row's JSON text (rowJsonWith) past its ROW_START: its id, then the rest. */
export const rowJsonPast = (rest: string, data = 'data') => `id || case ${data} when '{}' then '}' else ',' || ${rest} end`;

/**
 * A row's JSON text from its columns `id` and `data` (its fields but id, as JSON.stringify wrote
 * them; or the column named `data`), as rowJson() in rows.ts makes it: `rest` is the SQL of that
 * text after its `{`.
 */
export const rowJsonWith = (rest: string, data = 'data') => `'${ROW_START}' || ${rowJsonPast(rest, data)}`;

/**
 * A row of a page read with `versions` (openapi.yaml, VersionedRow): its ETag, made of the columns
 * `collection_id` and `version` as versionOf() in rows.ts makes its text, and the row as rowJsonWith(rest).
 */
export const versionedRowJsonWith = (rest: string) =>
  `'{"etag":"\\"' || collection_id || '.' || version || '\\"","row":' || ${rowJsonWith(rest)} || '}'`;

/** The columns of `rows` a page reads: the row, and its collection and version when it answers them (versionedRowJsonWith). */
export const pageColumns = (versions: boolean | undefined) => (versions ? 'id, data, rows.collection_id, version' : 'id, data');

/**
 * An aggregate's count of the rows that live at `now` whose keys in the sort index in `slot` are within
 * `bounds` (the dialect's keyBoundsSql), read from the index alone (aggregates.ts) in a collection without
 * a time to live (else each key's row looked up: liveKeyText), with the collection's latest event seq in
 * the same statement.
 */
export const keyCountSql = (collection: { id: Sql; lastSeq: Sql }, slot: number, bounds: Sql, now: number): Sql =>
  sql`select count(*) as n, ${collection.lastSeq} as seq from sort_keys
    where collection_id = ${collection.id} and slot = ${slot} and ${bounds} and ${liveKeySql(collection.id, now)}`;

/** How many keys of the sort index in `slot` are within `bounds`, counted up to `most` only. */
export const keyCountUpToSql = (collectionId: number, slot: number, bounds: Sql, most: number): Sql =>
  sql`select count(*) as n from (select 1 from sort_keys where collection_id = ${collectionId} and slot = ${slot} and ${bounds} limit ${most}) k`;

/**
 * The keys a filtered page reads (PageSource.filteredSortedPage): those of the sort index in `slot` of
 * the collection `collectionId` within `bounds` (the dialect's keyBoundsSql), in `order`, of its first
 * `scan` only when given.
 */
export interface KeysWithin {
  /** The collection's id, the slot and the scan: numbers, or a template's holes for them (template.ts). */
  collectionId: number | Sql;
  slot: number | Sql;
  order: Direction;
  bounds: Sql;
  scan?: number | Sql;
  /** A condition on the collection's row the page is read under: when it does not hold, the page's seq is null (pages.ts, byId). */
  guard?: Sql;
}

/**
 * The table of keys a filtered page reads from: all of `sort_keys`, or with `scan` the first `scan` keys
 * within the bounds, in order. The LIMIT is `+` its binding, as SQLite cuts a page (./pages.ts, PageCut):
 * SQLite prepares a statement whose LIMIT is a bare binding again each time it runs.
 */
export const firstKeys = ({ collectionId, slot, order, bounds, scan }: KeysWithin): Sql =>
  scan === undefined
    ? raw('sort_keys')
    : sql`(select * from sort_keys where collection_id = ${collectionId} and slot = ${slot} and ${bounds}
      order by ${raw(keyOrder('', order))} limit +${scan})`;

/**
 * The related row a key of an order through a relation reads (../reads/pages.ts, FieldOrder), as a scalar
 * subquery of `what` (SQL on the alias `rel`): the row of the related collection, found by name in the
 * account of the page's collection (`collectionId`, SQL of its id), whose id is `id` (SQL on the page's
 * `rows`: the relation's field as an id, or null), that lives at `now` (docs/expiry.md) and that `filter` keeps (SQL on `rel`: a caller's read rule). A post whose author
 * expired sorts as one that names no author. Each row's related row is one lookup of the primary key; the
 * collections are looked up once a statement.
 */
export const relatedRowSql = (what: Sql, collection: string, collectionId: Sql, id: Sql, now: number, filter: Sql | undefined): Sql =>
  sql`(select ${what} from rows rel where rel.collection_id = (select id from collections where name = ${collection}
        and account_id = (select account_id from collections where id = ${collectionId})) and rel.id = ${id} and ${liveRowSql('rel', now)}${filter ? sql` and (${filter})` : raw('')})`;
