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

/** Sets the collection's `search` column: its search index's fields, or null. */
const setSearchSql = 'update collections set search = ? where id = ?';

/** Rows a search index's making reads at a time. */
const MAKING_ROWS = 1000;

/** Sets the words of `rows` (their ids and fields) in the collection's search index, inside the write `trx`. */
export async function putWords(db: Dialect, trx: WriteTx, index: SearchIndex, rows: readonly { id: number; fields: Fields }[]) {
  if (rows.length === 0) return;
  const entries = rows.map(({ id, fields }) => [id, db.searchSql.words(searchTerms(index.collectionId, rowWords(fields, index.fields)))]);
  await db.run(trx, db.searchSql.put, [index.collectionId, JSON.stringify(entries)]);
}

/**
 * Makes the collection's search index inside `trx`, which holds the collection's row (advance()), so
 * that no write of the collection comes between: its fields listed, and the words of every row written.
 */
export async function makeSearchIndex(db: Dialect, trx: WriteTx, index: SearchIndex): Promise<void> {
  await db.run(trx, setSearchSql, [JSON.stringify(index.fields), index.collectionId]);
  const sql = 'select id, data from rows where collection_id = ? and id > ? order by id limit ?';
  for (let after = 0; ; ) {
    const rows = await db.run<{ id: number | string; data: string }>(trx, sql, [index.collectionId, after, MAKING_ROWS]);
    await putWords(
      db,
      trx,
      index,
      rows.map((row) => ({ id: Number(row.id), fields: JSON.parse(row.data) as Fields })),
    );
    if (rows.length < MAKING_ROWS) return;
    after = Number(rows[rows.length - 1].id);
  }
}

/** Drops the collection's search index inside `trx`: no field listed, and every row's words removed. */
export async function dropSearchIndex(db: Dialect, trx: WriteTx, collectionId: number): Promise<void> {
  await db.run(trx, setSearchSql, [null, collectionId]);
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
