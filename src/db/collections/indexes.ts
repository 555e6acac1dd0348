// Declared indexes of a collection (openapi.yaml, createIndex): each a row of collection_indexes. A unique
// index is an index of the database itself, on the rows of its collection alone (a partial expression
// index, each dialect's own: UniqueIndexSql), so that the database keeps it whatever writes it, and of
// concurrent writers of one value exactly one wins. Its name is `rows_unique_<id>`, the id of its row.
// Every index, unique or not, also makes a sort index of each of its fields (sort-indexes.ts).
//
// The DDL names the fields in the SQL text, as no binding can stand in an index's expression: only names
// that IndexField's pattern takes reach it (plainField, checked again here).
import { ApiError, collectionNotFound, conflict, notFound } from '../../errors.ts';
import type { Once } from '../../idempotency/answers.ts';
import { type AfterCommit, afterCommit } from '../engine/after-commit.ts';
import type { Dialect, Read, SqlValue, WriteTx } from '../engine/dialect.ts';
import { uniqueIndexName } from '../engine/sql/collections.ts';
import { beginOnce, recordOnce } from '../rows/idempotency.ts';
import type { Fields } from '../rows/rows.ts';
import { dropSearchIndex, makeSearchIndex } from '../search/indexes.ts';
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
  await db.knex.transaction(async (trx) => {
    if (once) await beginOnce(db, trx, accountId, once);
    if (db.uniqueIndexSql.lockRows) await db.run(trx, db.uniqueIndexSql.lockRows, []);
    index = await createIndexIn(db, trx, accountId, collection, fields, unique, search);
    if (once) await recordOnce(db, trx, accountId, once, index);
  });
  return index as Index;
}

/**
 * createIndex() inside the write `trx`, which holds the rows' table already where the dialect makes a
 * unique index so (UniqueIndexSql.lockRows).
 */
export async function createIndexIn(
  db: Dialect,
  trx: WriteTx,
  accountId: number,
  collection: string,
  fields: string[],
  unique: boolean,
  search: boolean,
): Promise<Index> {
  if (!fields.every((field) => plainField.test(field))) throw new Error('index fields are plain names (openapi.yaml, IndexField)');
  if (search && unique) throw new Error('a search index is not unique (openapi.yaml, NewIndex)');
  const index: Index = { name: indexName(fields, search), fields, unique, ...(search ? { type: 'search' } : {}) };
  const { id } = await advance(db, trx, accountId, collection, 0);
  const existing = (await db.run<IndexRow>(trx, indexesOfIdSql, [id])).map(toIndex);
  if (existing.some((other) => other.name === index.name))
    throw conflict(`Collection ${collection} has an index of ${index.name} already.`);
  if (existing.length >= MAX_INDEXES)
    throw conflict(`Collection ${collection} has ${MAX_INDEXES} indexes, the most it may: drop one first.`);
  if (search && existing.some((other) => other.type === 'search'))
    throw conflict(`Collection ${collection} has a search index already, the one it may have: drop it first.`);
  const [stored] = await db.run<{ id: number | string }>(trx, insertIndexSql, [id, JSON.stringify(fields), unique ? 1 : 0, search ? 1 : 0]);
  if (search) await makeSearchIndex(db, trx, { collectionId: id, fields });
  if (unique) {
    const duplicates = await duplicatesOf(db, trx, id, fields);
    if (duplicates.length > 0) {
      throw new ApiError(
        'unique_conflict',
        `Rows of collection ${collection} share values of ${index.name}: no unique index was declared.`,
        { duplicates },
      );
    }
    for (const sql of db.uniqueIndexSql.create(uniqueIndexName(Number(stored.id)), id, fields)) await db.run(trx, sql, []);
  }
  return index;
}

/**
 * Drops the collection's index `name`; 404 when it has none of that name. Its row goes in a transaction;
 * the database's index after it commits (dropUniqueIndexes).
 */
export async function deleteIndex(db: Dialect, accountId: number, collection: string, name: string, once?: Once<void>): Promise<void> {
  let after: AfterCommit = [];
  await db.knex.transaction(async (trx) => {
    after = [];
    if (once) await beginOnce(db, trx, accountId, once);
    await deleteIndexIn(db, trx, after, accountId, collection, name);
    if (once) await recordOnce(db, trx, accountId, once, undefined);
  });
  await afterCommit(after);
}

/** deleteIndex() inside the write `trx`; the database's index is dropped after the commit (`after`). */
export async function deleteIndexIn(db: Dialect, trx: WriteTx, after: AfterCommit, accountId: number, collection: string, name: string) {
  const { id } = await advance(db, trx, accountId, collection, 0);
  const found = (await db.run<IndexRow>(trx, indexesOfIdSql, [id])).find((row) => toIndex(row).name === name);
  if (!found) throw notFound(`Collection ${collection} has no index named ${name}.`);
  if (toIndex(found).type === 'search') await dropSearchIndex(db, trx, id);
  await db.run(trx, deleteIndexSql, [found.id]);
  if (toIndex(found).unique) after.push(() => dropUniqueIndexes(db, [uniqueIndexName(Number(found.id))]));
}

/**
 * Drops the database's indexes `names` once nothing names them: outside any transaction, which on
 * PostgreSQL would hold every collection's rows while it waits for the table's lock. One left by a
 * crash before is harmless (an index of rows no collection holds) and dropped by nothing: it costs its
 * table a check per write.
 */
async function dropUniqueIndexes(db: Dialect, names: readonly string[]): Promise<void> {
  for (const name of names) await db.query(db.uniqueIndexSql.drop(name), []);
}

/** The sets of rows of the collection that share values of `fields` (none missing or null), by the first id of each. */
export async function duplicatesOf(db: Dialect, trx: WriteTx, collectionId: number, fields: readonly string[]) {
  const keys = fields.map((field, index) => `${db.uniqueIndexSql.key(field)} as k${index}`).join(', ');
  const present = fields.map((_, index) => `k${index} is not null`).join(' and ');
  const groupBy = fields.map((_, index) => `k${index}`).join(', ');
  const sql = `select min(id) as first from (select id, ${keys} from rows where collection_id = ?) r
    where ${present} group by ${groupBy} having count(*) > 1 order by first limit ${MAX_DUPLICATES}`;
  const read: Read = (sql, params) => db.run(trx, sql, params);
  const duplicates = [];
  // Each set's values read from its first row: a key is the values' text, or a hash of it.
  for (const { first } of await read<{ first: number | string }>(sql, [collectionId])) {
    const [row] = await read<{ data: string }>('select data from rows where collection_id = ? and id = ?', [collectionId, first]);
    const stored = JSON.parse(row.data) as Fields;
    const values = fields.map((field) => stored[field]);
    duplicates.push({ values, ids: await rowsHolding(db, read, collectionId, fields, values, MAX_DUPLICATE_IDS) });
  }
  return duplicates;
}

/** The unique indexes of the collection `collectionId`. */
export async function uniqueIndexesOf(read: Read, collectionId: number): Promise<Index[]> {
  return (await read<IndexRow>(indexesOfIdSql, [collectionId])).map(toIndex).filter((index) => index.unique);
}

/** The ids of up to `limit` rows of the collection whose `fields` hold `values`, but `except`. */
export async function rowsHolding(
  db: Dialect,
  read: Read,
  collectionId: number,
  fields: readonly string[],
  values: readonly unknown[],
  limit: number,
  except?: number,
): Promise<number[]> {
  const { key, value } = db.uniqueIndexSql;
  const conditions = fields.map((field) => `${key(field)} = ${value}`).join(' and ');
  const sql = `select id from rows where collection_id = ? and ${conditions}${except === undefined ? '' : ' and id <> ?'} order by id limit ${limit}`;
  const params: SqlValue[] = [collectionId, ...values.map((held) => JSON.stringify(held))];
  if (except !== undefined) params.push(except);
  return (await read<{ id: number | string }>(sql, params)).map((row) => Number(row.id));
}

/**
 * Runs the write `write` of rows into the collection; when the database refuses it (`refused`, by
 * default a unique constraint as the dialect tells it) and the rows `rows()` break a unique index, the
 * refusal is that index's 409 unique_violation. Called outside the write's transaction, once it has
 * rolled back: PostgreSQL reads nothing more in a transaction that failed.
 */
export async function keepingUnique<T>(
  db: Dialect,
  accountId: number,
  collection: string,
  rows: () => readonly WrittenRow[],
  write: () => Promise<T>,
): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (db.isUniqueViolation(error)) {
      const violation = await uniqueViolation(db, accountId, collection, rows());
      if (violation) throw violation;
    }
    throw error;
  }
}

/** A written row as a unique index sees it: its id, if it has one already, and its fields. */
export interface WrittenRow {
  id?: number;
  fields: Fields;
}

/**
 * The 409 unique_violation of a write of `rows` into the collection that the database refused as
 * breaking a unique index, or undefined when none of its unique indexes is broken by them (the refusal
 * was another). Each row's values are looked for among the rows written before it and among the stored
 * rows: the first found names the index's fields and the row holding them.
 */
export async function uniqueViolation(
  db: Dialect,
  accountId: number,
  collection: string,
  rows: readonly WrittenRow[],
): Promise<ApiError | undefined> {
  return (await uniqueViolationAt(db, accountId, collection, rows))?.problem;
}

/** uniqueViolation()'s 409, and the place among `rows` of the row that breaks the index. */
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
  for (const { fields, name } of indexes) {
    const seen = new Map<string, number | undefined>();
    for (const [place, row] of rows.entries()) {
      const values = fields.map((field) => row.fields[field]);
      if (values.some((held) => held === undefined || held === null)) continue;
      const key = JSON.stringify(values);
      if (seen.has(key)) return { problem: violation(collection, name, fields, seen.get(key), place), place };
      seen.set(key, row.id);
      const [holder] = await rowsHolding(db, db.query, collectionId, fields, values, 1, row.id);
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
