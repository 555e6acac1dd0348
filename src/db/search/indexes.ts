// The words of a collection's search index (docs/search.md), as both dialects write and search them:
// each row's words made by the one tokenization (src/search/words.ts), written beside the row in the
// write's own transaction, in the dialect's tables (Dialect.searchSql). A collection has one search index
// at most; its fields are in `search` of the collection's row, which every write reads (advance()).
import { collectionNotFound, validationFailed } from '../../errors.ts';
import { type Filter, holdsSearch } from '../../query/filter.ts';
import { rowWords } from '../../search/words.ts';
import type { Dialect, Read, WriteTx } from '../engine/dialect.ts';
import { type SearchIndex, searchIndexOf, searchTerms } from '../engine/sql/search.ts';

/** A row's fields but id, as stored. */
type Fields = Record<string, unknown>;

/** Sets the collection's `search` column (its search index's fields, or null) and `search_fill` (what is left of its making). */
const setSearchSql = 'update collections set search = ?, search_fill = ? where id = ?';

/** Rows a search index's making writes the words of in one transaction: the writer is held for this many at a time. */
const FILL_ROWS = 1000;

/** What is left of a search index's making (`collections.search_fill`): the rows of ids past `after`, up to `until`. */
interface Fill {
  after: number;
  until: number;
}

/** Sets the words of `rows` (their ids and fields) in the collection's search index, inside the write `trx`. */
export async function putWords(db: Dialect, trx: WriteTx, index: SearchIndex, rows: readonly { id: number; fields: Fields }[]) {
  if (rows.length === 0) return;
  const entries = rows.map(({ id, fields }) => [id, db.searchSql.words(searchTerms(index.collectionId, rowWords(fields, index.fields)))]);
  await db.run(trx, db.searchSql.put, [index.collectionId, JSON.stringify(entries)]);
}

/**
 * Declares the collection's search index inside `trx`, which holds the collection's row (advance()): its
 * fields listed, which every write reads from then on and keeps the words of its rows by, and the rows
 * already there (ids up to `lastRowId`) left to fill (fillSearchIndex), after the commit.
 */
export async function makeSearchIndex(db: Dialect, trx: WriteTx, index: SearchIndex, lastRowId: number): Promise<void> {
  const fill: Fill | null = lastRowId > 0 ? { after: 0, until: lastRowId } : null;
  await db.run(trx, setSearchSql, [JSON.stringify(index.fields), fill && JSON.stringify(fill), index.collectionId]);
}

/**
 * Writes the words of the rows a search index was declared over (makeSearchIndex), FILL_ROWS rows a
 * transaction, each holding the collection's row as a write does: between them the collection's writes,
 * and on SQLite every write of the database, take their turn. What is left is kept in the collection's
 * row, so that any process may go on with it (a process that stopped half-way, another instance at the
 * same time: each batch reads where the last ended). Stops when nothing is left, when the collection or
 * its index has gone, or between batches once `stopped` says so.
 */
export async function fillSearchIndex(db: Dialect, collectionId: number, stopped: () => boolean = () => false): Promise<void> {
  for (let left = true; left && !stopped(); ) left = await db.knex.transaction((trx) => fillBatch(db, trx, collectionId));
}

/** Takes the collection's row, as advance() does, answering its search index and what is left to fill of it. */
const takeFillSql = 'update collections set search_fill = search_fill where id = ? returning search, search_fill';
const fillRowsSql = 'select id, data from rows where collection_id = ? and id > ? and id <= ? order by id limit ?';
const setFillSql = 'update collections set search_fill = ? where id = ?';

/** One batch of fillSearchIndex() inside `trx`; whether more is left. */
async function fillBatch(db: Dialect, trx: WriteTx, collectionId: number): Promise<boolean> {
  const [found] = await db.run<{ search: string | null; search_fill: string | null }>(trx, takeFillSql, [collectionId]);
  const index = found && searchIndexOf(collectionId, found.search);
  if (!index || !found.search_fill) return false;
  const { after, until } = JSON.parse(found.search_fill) as Fill;
  const rows = await db.run<{ id: number | string; data: string }>(trx, fillRowsSql, [collectionId, after, until, FILL_ROWS]);
  const read = rows.map((row) => ({ id: Number(row.id), fields: JSON.parse(row.data) as Fields }));
  await putWords(db, trx, index, read);
  const left = read.length === FILL_ROWS && read[read.length - 1].id < until;
  await db.run(trx, setFillSql, [left ? JSON.stringify({ after: read[read.length - 1].id, until }) : null, collectionId]);
  return left;
}

/** The collections whose search index's making is not done, by id: each filled (fillSearchIndex); answers how many. */
export async function resumeSearchFills(db: Dialect, stopped: () => boolean): Promise<number> {
  const collections = await db.query<{ id: number | string }>('select id from collections where search_fill is not null order by id', []);
  for (const { id } of collections) if (!stopped()) await fillSearchIndex(db, Number(id), stopped);
  return collections.length;
}

/** Drops the collection's search index inside `trx`: no field listed, nothing left to fill, and every row's words removed. */
export async function dropSearchIndex(db: Dialect, trx: WriteTx, collectionId: number): Promise<void> {
  await db.run(trx, setSearchSql, [null, null, collectionId]);
  await db.run(trx, db.searchSql.removeAll, [collectionId]);
}

/** `filter` with each `$search` in it bound to `index`. */
function bound(filter: Filter, index: SearchIndex): Filter {
  switch (filter.kind) {
    case 'and':
    case 'or':
      return { kind: filter.kind, filters: filter.filters.map((each) => bound(each, index)) };
    case 'not':
      return { kind: 'not', filter: bound(filter.filter, index) };
    case 'search':
      return { ...filter, index };
    default:
      return filter;
  }
}

/**
 * `filter` with each `$search` in it bound to the account's collection's search index, as the database
 * has it now (openapi.yaml, Filter): 400 when the collection has none, saying which to declare; 404 when
 * there is no such collection. A filter without a search comes back as it is, unread. An index dropped
 * after this look, before the read that runs the filter, holds no words: the search finds nothing.
 */
export async function bindSearch<F extends Filter | undefined>(read: Read, accountId: number, collection: string, filter: F): Promise<F> {
  if (!filter || !holdsSearch(filter)) return filter;
  const [found] = await read<{ id: number | string; search: string | null }>(searchOfCollectionSql, [accountId, collection]);
  if (!found) throw collectionNotFound(collection);
  const index = searchIndexOf(Number(found.id), found.search);
  if (!index) {
    throw validationFailed(
      `Collection ${collection} has no search index for $search to search: declare one over the fields that hold its words, ` +
        `POST /v1/collections/${collection}/indexes with {"type": "search", "fields": […]}.`,
    );
  }
  return bound(filter, index) as F;
}

/** The account's collection's id and search index fields (`search`), by name. */
const searchOfCollectionSql = 'select id, search from collections where account_id = ? and name = ?';

/** bindSearch() of the Store (the feed's filters): `filter` bound to the collection's search index as it is now. */
export const searchFilter = <F extends Filter | undefined>(db: Dialect, accountId: number, collection: string, filter: F) =>
  bindSearch(db.query, accountId, collection, filter);
