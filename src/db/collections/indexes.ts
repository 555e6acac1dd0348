// Declared indexes of a collection (openapi.yaml, createIndex): each a row of collection_indexes. A unique
// index keeps a key of each row of its collection in `unique_keys` (the dialect's UniqueKeySql: its
// fields' values as one text, null when one is missing or null; on SQLite a string of an index over one
// sorted field is its sort index's key instead: docs/development.md, "Unique indexes"), which one index of the database, made
// once (migration 0027_unique_keys), keeps unique per index: whatever writes a row writes its keys in
// the same statement, and of concurrent writers of one value exactly one wins; a row's keys are deleted
// with it (SQLite: a foreign key; PostgreSQL: a statement trigger of `rows`, migration 0029). A collection's unique
// indexes are `uniques` of its row, which every write reads under the row's lock (advance()), as it
// reads `sorted`. Declaring one keys the collection's rows alone: no other collection's rows are read,
// nor their writes held. Every index, unique or not, also makes a sort index of each of its fields
// (sort-indexes.ts).
import { ApiError, collectionNotFound, conflict, notFound } from '../../errors.ts';
import type { Once } from '../../idempotency/answers.ts';
import { type AfterCommit, afterCommit } from '../engine/after-commit.ts';
import type { Dialect, Read, WriteTx } from '../engine/dialect.ts';
import { dropUniqueKeysSql, setUniquesSql } from '../engine/sql/collections.ts';
import { beginOnce, recordOnce } from '../rows/idempotency.ts';
import type { Fields } from '../rows/rows.ts';
import { dropSearchIndex, fillSearchIndex, makeSearchIndex } from '../search/indexes.ts';
import { advance } from './collections.ts';

/** An index as openapi.yaml's Index describes it. */
export interface Index {
  name: string;
  fields: string[];
  unique: boolean;
  /** `search` for a search index (search-indexes.ts); absent for an index of values. */
  type?: 'search';
}

/** Indexes a collection may have at most (openapi.yaml, createIndex). */
const MAX_INDEXES = 8;

/** Sets of duplicates a unique_conflict lists at most, and rows named in each. */
const MAX_DUPLICATES = 100;
const MAX_DUPLICATE_IDS = 10;

/** A field an index may be over (openapi.yaml, IndexField). */
const plainField = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

const indexName = (fields: readonly string[], search: boolean) => `${search ? 'search:' : ''}${fields.join(',')}`;

export type IndexRow = { id: number | string; fields: string; is_unique: boolean | number; is_search: boolean | number };
export const toIndex = (row: IndexRow): Index => {
  const fields = JSON.parse(row.fields) as string[];
  const search = Boolean(row.is_search);
  return { name: indexName(fields, search), fields, unique: Boolean(row.is_unique), ...(search ? { type: 'search' } : {}) };
};

const indexesSql = `select i.id, i.fields, i.is_unique, i.is_search from collection_indexes i join collections c on c.id = i.collection_id
  where c.account_id = ? and c.name = ? order by i.id`;
const indexesOfIdSql = 'select id, fields, is_unique, is_search from collection_indexes where collection_id = ? order by id';
/** `?` (the third) is 1 for a unique index, 0 for another; `?` (the fourth) 1 for a search index. */
const insertIndexSql =
  'insert into collection_indexes (collection_id, fields, is_unique, is_search) values (?, ?, ? = 1, ? = 1) returning id';
const deleteIndexSql = 'delete from collection_indexes where id = ?';

/** The collection's declared indexes, in the order they were made; 404 when there is no such collection. */
export async function listIndexes(db: Dialect, accountId: number, collection: string): Promise<Index[]> {
  const rows = await db.query<IndexRow>(indexesSql, [accountId, collection]);
  if (rows.length === 0) await collectionOrNotFound(db, accountId, collection);
  return rows.map(toIndex);
}

async function collectionOrNotFound(db: Dialect, accountId: number, collection: string) {
  const [found] = await db.query('select id from collections where account_id = ? and name = ?', [accountId, collection]);
  if (!found) throw collectionNotFound(collection);
}

/**
 * Declares an index of the collection over `fields`: 409 when one over the same fields exists or the
 * collection has MAX_INDEXES; a unique one is made only when no two rows share values of them, else 409
 * unique_conflict naming them. Then a sort index of each field (`sortBy`), made by the dialect. A search
 * index (`search`, never unique) holds the words of every row from the start (search-indexes.ts); 409
 * when the collection has one.
 */
export async function createIndex(
  db: Dialect,
  accountId: number,
  collection: string,
  fields: string[],
  unique: boolean,
  once?: Once<Index>,
  search = false,
): Promise<Index> {
  let index: Index | undefined;
  const after: AfterCommit = [];
  await db.knex.transaction(async (trx) => {
    if (once) await beginOnce(db, trx, accountId, once);
    index = await createIndexIn(db, trx, after, accountId, collection, fields, unique, search);
    if (once) await recordOnce(db, trx, accountId, once, index);
  });
  await afterCommit(after);
  return index as Index;
}

/** createIndex() inside the write `trx`; a search index's making over the rows already there is left for `after` its commit. */
export async function createIndexIn(
  db: Dialect,
  trx: WriteTx,
  after: AfterCommit,
  accountId: number,
  collection: string,
  fields: string[],
  unique: boolean,
  search: boolean,
): Promise<Index> {
  if (!fields.every((field) => plainField.test(field))) throw new Error('index fields are plain names (openapi.yaml, IndexField)');
  if (search && unique) throw new Error('a search index is not unique (openapi.yaml, NewIndex)');
  const index: Index = { name: indexName(fields, search), fields, unique, ...(search ? { type: 'search' } : {}) };
  const { id, lastRowId, uniques } = await advance(db, trx, accountId, collection, 0);
  const existing = (await db.run<IndexRow>(trx, indexesOfIdSql, [id])).map(toIndex);
  if (existing.some((other) => other.name === index.name))
    throw conflict(`Collection ${collection} has an index of ${index.name} already.`);
  if (existing.length >= MAX_INDEXES)
    throw conflict(`Collection ${collection} has ${MAX_INDEXES} indexes, the most it may: drop one first.`);
  if (search && existing.some((other) => other.type === 'search'))
    throw conflict(`Collection ${collection} has a search index already, the one it may have: drop it first.`);
  const [stored] = await db.run<{ id: number | string }>(trx, insertIndexSql, [id, JSON.stringify(fields), unique ? 1 : 0, search ? 1 : 0]);
  if (search) {
    await makeSearchIndex(db, trx, { collectionId: id, fields }, lastRowId);
    // The words of the rows already there, a batch a transaction once this one has committed.
    if (lastRowId > 0) after.push(() => fillSearchIndex(db, id));
  }
  if (unique) {
    // A collection that never took a row (its last row id 0) holds none to share values.
    const duplicates = lastRowId > 0 ? await duplicatesOf(db, trx, id, fields) : [];
    if (duplicates.length > 0) {
      throw new ApiError(
        'unique_conflict',
        `Rows of collection ${collection} share values of ${index.name}: no unique index was declared.`,
        { duplicates },
      );
    }
    // Listed first, so that the writes after this one key their rows; then the rows' keys, of this collection alone.
    const indexId = Number(stored.id);
    await db.run(trx, setUniquesSql, [JSON.stringify([...uniques, [indexId, fields]]), id]);
    if (lastRowId > 0) await db.run(trx, db.uniqueKeySql.fill, [indexId, JSON.stringify(fields), id, 1, lastRowId]);
  }
  return index;
}

/** Drops the collection's index `name`, and its keys if it is unique; 404 when it has none of that name. */
export async function deleteIndex(db: Dialect, accountId: number, collection: string, name: string, once?: Once<void>): Promise<void> {
  await db.knex.transaction(async (trx) => {
    if (once) await beginOnce(db, trx, accountId, once);
    await deleteIndexIn(db, trx, accountId, collection, name);
    if (once) await recordOnce(db, trx, accountId, once, undefined);
  });
}

/** deleteIndex() inside the write `trx`. */
export async function deleteIndexIn(db: Dialect, trx: WriteTx, accountId: number, collection: string, name: string) {
  const { id, uniques } = await advance(db, trx, accountId, collection, 0);
  const found = (await db.run<IndexRow>(trx, indexesOfIdSql, [id])).find((row) => toIndex(row).name === name);
  if (!found) throw notFound(`Collection ${collection} has no index named ${name}.`);
  if (toIndex(found).type === 'search') await dropSearchIndex(db, trx, id);
  await db.run(trx, deleteIndexSql, [found.id]);
  if (toIndex(found).unique) {
    const indexId = Number(found.id);
    await db.run(trx, setUniquesSql, [JSON.stringify(uniques.filter(([held]) => held !== indexId)), id]);
    await db.run(trx, dropUniqueKeysSql, [indexId]);
  }
}

/**
 * The sets of rows of the collection that share values of `fields` (none missing or null), by the first
 * id of each: its keys as a unique index of them would hold them, made from every row of the collection.
 */
export async function duplicatesOf(db: Dialect, trx: WriteTx, collectionId: number, fields: readonly string[]) {
  const { key } = db.uniqueKeySql;
  const keyed = `select id, ${key('data', '?')} as k from rows where collection_id = ?`;
  const setsSql = `select min(id) as first, k from (${keyed}) r where k is not null group by k having count(*) > 1
    order by first limit ${MAX_DUPLICATES}`;
  const idsSql = `select id from (${keyed}) r where k = ? order by id limit ${MAX_DUPLICATE_IDS}`;
  const read: Read = (sql, params) => db.run(trx, sql, params);
  const named = JSON.stringify(fields);
  const duplicates = [];
  // Each set's values read from its first row: a key is the values' text, or a hash of it.
  for (const { first, k } of await read<{ first: number | string; k: string }>(setsSql, [named, collectionId])) {
    const [row] = await read<{ data: string }>('select data from rows where collection_id = ? and id = ?', [collectionId, first]);
    const stored = JSON.parse(row.data) as Fields;
    const ids = await read<{ id: number | string }>(idsSql, [named, collectionId, k]);
    duplicates.push({ values: fields.map((field) => stored[field]), ids: ids.map(({ id }) => Number(id)) });
  }
  return duplicates;
}

/** A unique index of a collection, with its id. */
type UniqueIndex = Index & { id: number };

/** The unique indexes of the collection `collectionId`. */
export async function uniqueIndexesOf(read: Read, collectionId: number): Promise<UniqueIndex[]> {
  return (await read<IndexRow>(indexesOfIdSql, [collectionId]))
    .map((row) => ({ ...toIndex(row), id: Number(row.id) }))
    .filter((index) => index.unique);
}

/**
 * The ids of up to `limit` rows of the collection whose values of the unique index `index` are
 * `values`, but `except`: found by their key.
 */
export async function rowsHolding(
  db: Dialect,
  read: Read,
  collectionId: number,
  index: UniqueIndex,
  values: readonly unknown[],
  limit: number,
  except = 0,
): Promise<number[]> {
  // The values as a row's text holding them, keyed as the row's own text is.
  const text = JSON.stringify(Object.fromEntries(index.fields.map((field, place) => [field, values[place]])));
  const params = [collectionId, index.id, text, JSON.stringify(index.fields), except, limit];
  return (await read<{ id: number | string }>(db.uniqueKeySql.holders, params)).map((row) => Number(row.id));
}

/** A written row as a unique index sees it: its id, if it has one already, and its fields. */
export interface WrittenRow {
  id?: number;
  fields: Fields;
}

/**
 * The 409 unique_violation of a write of `rows` into the collection that the database refused as
 * breaking a unique index, and the place among `rows` of the row that breaks it; or undefined when none of
 * its unique indexes is broken by them (the refusal was another, or the row that held the values is gone).
 * Each row's values are looked for among the rows written before it and among the stored rows: the first
 * found names the index's fields and the row holding them.
 */
export async function uniqueViolationAt(
  db: Dialect,
  accountId: number,
  collection: string,
  rows: readonly WrittenRow[],
): Promise<{ problem: ApiError; place: number } | undefined> {
  const [found] = await db.query<{ id: number | string }>('select id from collections where account_id = ? and name = ?', [
    accountId,
    collection,
  ]);
  if (!found) return undefined;
  const collectionId = Number(found.id);
  const indexes = await uniqueIndexesOf(db.query, collectionId);
  for (const index of indexes) {
    const { fields, name } = index;
    const seen = new Map<string, number | undefined>();
    for (const [place, row] of rows.entries()) {
      const values = fields.map((field) => row.fields[field]);
      if (values.some((held) => held === undefined || held === null)) continue;
      const key = JSON.stringify(values);
      if (seen.has(key)) return { problem: violation(collection, name, fields, seen.get(key), place), place };
      seen.set(key, row.id);
      const [holder] = await rowsHolding(db, db.query, collectionId, index, values, 1, row.id);
      if (holder !== undefined) return { problem: violation(collection, name, fields, holder), place };
    }
  }
  return undefined;
}

function violation(collection: string, name: string, fields: string[], holder: number | undefined, place?: number): ApiError {
  const detail =
    holder === undefined
      ? `Rows of this write share values of ${name}, which collection ${collection} keeps unique (the second is row ${place} of it): nothing was written.`
      : `Row ${holder} of collection ${collection} holds these values of ${name} already: nothing was written.`;
  return new ApiError('unique_violation', detail, holder === undefined ? { fields } : { fields, existing_id: holder });
}
