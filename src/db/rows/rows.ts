// Rows as both dialects store and answer them (openapi.yaml, Row): a row's fields but `id` are stored
// as the JSON text JSON.stringify wrote, and answered as JSON text made from it, never parsed again.
import { ApiError, rowNotFound, validationFailed } from '../../errors.ts';
import type { Once } from '../../idempotency/answers.ts';
import { type Json, MAX_PAGE_BYTES, MAX_ROW_BYTES, type Row, rowJson, versionOf } from '../../rows.ts';
import { collectionId } from '../collections/collections.ts';
import type { Dialect, SqlValue, WriteTx } from '../engine/dialect.ts';
import type { Fields, FirstInserted, MatchedRow } from '../engine/port.ts';
import type { SortedEntry } from '../engine/sorted.ts';
import { matchedByIdSql, matchedRowsSql } from '../engine/sql/rows.ts';
import type { Sql } from '../engine/sql/template.ts';
import { type IndexedField, inIndex } from '../reads/filter-indexes.ts';

export type { Fields, FirstInserted, MatchedRow, VersionedRow } from '../engine/port.ts';

/** Rows of consecutive ids from `firstId` as rowJson() makes each, as one JSON array, appended one by one. */
function rowsJson(firstId: number, texts: string[]): string {
  let json = '[';
  for (let index = 0; index < texts.length; index++) {
    if (index > 0) json += ',';
    json += rowJson(firstId + index, texts[index]);
  }
  return `${json}]`;
}

/** What an insert answers: the rows, and the version of each (versionOf), in order. */
export interface InsertedRows {
  json: Json<Row[]>;
  versions: string[];
}

/** Rows inserted with consecutive ids and seqs from `first`, whose stored texts are `texts`. */
export function insertedRows({ collectionId, id, seq }: FirstInserted, texts: string[]): InsertedRows {
  return { json: rowsJson(id, texts), versions: texts.map((_, index) => versionOf(collectionId, seq + index)) };
}

/** 413 for a write that would make a row weigh more than MAX_ROW_BYTES: nothing of it is stored. */
export const rowTooLarge = () =>
  new ApiError('payload_too_large', `A row may weigh ${MAX_ROW_BYTES} bytes at most, as the JSON text of its fields.`);

/** 400 for a page whose rows weigh more than MAX_PAGE_BYTES: fewer rows at a time can be read. */
export const pageTooLarge = () =>
  validationFailed('The rows of this page are too large to answer at once.', [
    { in: 'query', name: 'limit', message: `asks for rows that add up to more than ${MAX_PAGE_BYTES} bytes; ask for fewer` },
  ]);

/** The rows a change by filter changed, in id order: how many, and their JSON texts as one array. */
export interface ChangedRows {
  count: number;
  json: Json<Row[]>;
}

/**
 * The checks of a caller held to a collection's rules (src/rules/access.ts, Grant), made inside a
 * write's transaction on the rows as stored, before anything of the write is: each throws the write's
 * refusal (404 for a row the caller may not see, 403 for a write the rules refuse), which rolls it back.
 */
export interface RowGuard {
  /** A row about to be written, as it is: 404 when the caller may not see it, before any other check of the write. */
  reading(id: number, fields: Fields): void;
  /** A new row, as it is to be stored. */
  creating(fields: Fields): void;
  /** A row about to be patched, as it was and as it will be. */
  updating(id: number, before: Fields, after: Fields): void;
  /** A row about to be deleted, as it was. */
  deleting(id: number, before: Fields): void;
}

/** What a write of rows asks besides the change itself; `R` its result. */
export interface WriteOptions<R> {
  /**
   * If-Match (RFC 9110 §13.1.1): the versions the row may have for the write to happen; any when
   * absent. Checked in the write's own transaction, so that no write comes between the check and it.
   */
  ifMatch?: readonly string[];
  /** Its Idempotency-Key: its answer is stored in the write's transaction (idempotency.ts). */
  once?: Once<R>;
  /** The rules the caller is held to, when it holds a publishable key. */
  guard?: RowGuard;
}

/** 412 for a row whose version is none of If-Match's: nothing of the write is stored. */
export const preconditionFailed = (collection: string, id: number) =>
  new ApiError('precondition_failed', `Row ${id} of collection ${collection} has changed: its ETag matches none of If-Match.`);

/** Whether a row of `version` may be written under `options` (its If-Match). */
export const versionMatches = (options: { ifMatch?: readonly string[] } | undefined, version: string) =>
  options?.ifMatch === undefined || options.ifMatch.includes(version);

/** The 404 of a row id that is not assignable(): of the collection, when that is absent too. */
export async function noSuchRow(db: Dialect, accountId: number, collection: string, rowId: number): Promise<never> {
  await collectionId(db, accountId, collection);
  throw rowNotFound(collection, rowId);
}

/** 400 for a change by filter that matches more rows than one request may change: nothing of it is written. */
export const tooManyRows = (max: number) =>
  validationFailed(
    `One change by filter changes at most ${max} rows, and this filter matches more: narrow it (by ranges of id, say) and send each part.`,
    [{ in: 'query', name: 'filter', message: `matches more than ${max} rows` }],
  );

/**
 * The rows of the collection `collectionId` that `match` matches, in id order; 400 when there are more
 * than `max`. Read inside the change's transaction, after the collection's row is held (advance()), so
 * that no other write of the collection comes between this read and the change; `sorted`, the fields of
 * its sort indexes as that row lists them, through which a filter's rows are found (FilterMatch).
 */
export async function matchedRows(
  db: Dialect,
  trx: WriteTx,
  collectionId: number,
  match: RowMatch,
  max: number,
  sorted: readonly SortedEntry[] = [],
): Promise<MatchedRow[]> {
  const rows = await readMatched(db, trx, matchedSql(db, collectionId, match, max + 1, sorted));
  if (rows.length > max) throw tooManyRows(max);
  return rows;
}

/** The rows a statement of matchedSql()'s or filterMatchSql()'s answers, inside `trx`. */
export async function readMatched(db: Dialect, trx: WriteTx, { sql, params }: Sql): Promise<MatchedRow[]> {
  // Statements made for this request's filter: prepared for one run (Dialect.run's `once`).
  const rows = await db.run<{ id: number | string; data: string; version: number | string }>(trx, sql, params, true);
  return rows.map((row) => ({ id: Number(row.id), data: row.data, version: row.version }));
}

/**
 * The statement of the first `limit` rows of the collection `collectionId` that `match` matches, in id
 * order, each its id and data; a filter's rows (FilterMatch) found through the first sort index of
 * `sorted` that one of its fields has, else by testing every row of the collection.
 */
export function matchedSql(
  db: Dialect,
  collectionId: number,
  match: RowMatch,
  limit: number,
  sorted: readonly SortedEntry[] = [],
): { sql: string; params: SqlValue[] } {
  const found = (byId: Sql, where?: Sql) => ({
    sql: matchedByIdSql(byId.sql, where?.sql),
    params: [...byId.params, ...(where?.params ?? []), limit],
  });
  if ('fields' in match) return filterMatchSql(db, collectionId, match, limit, sorted);
  if ('ids' in match) return found(db.rowIdsSql(collectionId, match.ids), match.where);
  if ('naming' in match) return found(db.namingRowsSql(collectionId, match.slot, match.naming), match.where);
  return filterMatchSql(db, collectionId, { where: match, fields: [] }, limit, sorted);
}

/**
 * The statement of the first `limit` rows of the collection `collectionId` a filter matches (FilterMatch),
 * in id order, each its id and data: found through the first sort index of `sorted` that one of its
 * fields has (the Dialect's rangeRowsSql: the range's keys, each key's row by its primary key), then
 * tested by the whole filter; else by testing every row of the collection. A change by filter's rows
 * (matchedSql), and the related rows a `$match` or `$some` reads before its page (../relations/filters.ts).
 */
export function filterMatchSql(
  db: Pick<Dialect, 'keyBoundsSql' | 'rangeRowsSql'>,
  collectionId: number,
  { where, fields }: FilterMatch,
  limit: number,
  sorted: readonly SortedEntry[],
): { sql: string; params: SqlValue[] } {
  const index = inIndex(sorted, fields);
  if (!index) return { sql: matchedRowsSql(where.sql), params: [collectionId, ...where.params, limit] };
  const range = db.rangeRowsSql(collectionId, index.slot, db.keyBoundsSql(index.bounds));
  return { sql: matchedByIdSql(range.sql, where.sql), params: [...range.params, ...where.params, limit] };
}

/**
 * What a change matches: the rows a condition on `rows` holds for, a filter's (FilterMatch), or rows found
 * by ids (RowIds, NamingRows).
 */
export type RowMatch = Sql | FilterMatch | RowIds | NamingRows;

/**
 * The rows a change by filter matches: `where`, its condition on `rows` (the filter's, and that they live),
 * and the fields of its top level an index's range could find them by (indexedFields): read through
 * the first of them the collection has a sort index of, each row of the range then tested, as a page
 * reads them (docs/api.md, "Filters and indexes").
 */
export interface FilterMatch {
  where: Sql;
  fields: readonly IndexedField[];
}

/**
 * Rows named by their ids, each found through the primary key (the Dialect's rowIdsSql), that still meet
 * `where`, if given: a cascade's rows, and a sweep's (../expiry/sweep.ts), whose expiry is read again.
 */
export interface RowIds {
  ids: readonly number[];
  where?: Sql;
}

/**
 * Rows whose field of the sort index in `slot` holds one of the ids `naming` (the rows a relation's field
 * has name those rows), found through the index and then each through the primary key (the Dialect's
 * namingRowsSql), that also meet `where`, if given (the relation's filter).
 */
interface NamingRows {
  slot: number;
  naming: readonly number[];
  where?: Sql;
}

/** The account's collection as a write names it to share its transaction (RowPort.write): `accountId/collection`. */
export const writeKey = (accountId: number, collection: string) => `${accountId}/${collection}`;

/** Rows as a change by filter answers them (ChangedRows), from their events' rows or versioned rows, in id order. */
export const changedRows = (rows: { json: string }[]): ChangedRows => ({
  count: rows.length,
  json: `[${rows.map((row) => row.json).join(',')}]`,
});
