import type { Knex } from 'knex';
import type { components } from '../../generated/openapi.ts';
import { conflict, notFound } from '../errors.ts';
import { announceChange } from './changes.ts';
import { isUniqueViolation } from './errors.ts';
import { byCodePoint, query, type WriteTx } from './query.ts';

export type Collection = components['schemas']['Collection'];

// `seq` is last_seq, read with row_count from the same row: the count is that of the events up to it.
const columns = ['name', 'created_at', 'row_count', 'last_seq'] as const;
const toCollection = (row: { name: string; created_at: string; row_count: number | string; last_seq: number | string }): Collection => ({
  name: row.name,
  created_at: row.created_at,
  row_count: Number(row.row_count),
  seq: Number(row.last_seq),
});

/** The account's collections, by name in code point order (openapi.yaml, listCollections). */
export async function listCollections(knex: Knex, accountId: number): Promise<Collection[]> {
  const rows = await knex('collections').where({ account_id: accountId }).orderBy(byCodePoint(knex, 'name')).select(columns);
  return rows.map(toCollection);
}

/**
 * Makes the account's collection `name`: 409 when the account has one of that name, or holds `max`
 * collections already (default: no bound). Exact under concurrency: on PostgreSQL the account's row
 * is locked first, so that creations of one account count one after another; SQLite has one writer,
 * and the count and the insert are one statement.
 */
export async function createCollection(knex: Knex, accountId: number, name: string, max = Number.MAX_SAFE_INTEGER): Promise<Collection> {
  const created_at = new Date().toISOString();
  try {
    const inserted = await knex.transaction(async (trx) => {
      if (trx.client.dialect === 'postgresql') await query(trx, 'select id from accounts where id = ? for update', [accountId]);
      return query<{ name: string }>(
        trx,
        `insert into collections (account_id, name, created_at, row_count)
          select ?, ?, ?, 0 where (select count(*) from collections where account_id = ?) < ? returning name`,
        [accountId, name, created_at, accountId, max],
      );
    });
    if (inserted.length === 0) throw conflict(`The account holds ${max} collections, the most it may: delete one to make another.`);
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(`A collection named ${name} already exists.`);
    throw error;
  }
  return { name, created_at, row_count: 0, seq: 0 };
}

export async function getCollection(knex: Knex, accountId: number, name: string): Promise<Collection> {
  const row = await knex('collections').where({ account_id: accountId, name }).first(columns);
  if (!row) throw collectionNotFound(name);
  return toCollection(row);
}

/** Deletes the collection with its rows and events; its feed subscribers are woken to hear it. */
export async function deleteCollection(knex: Knex, accountId: number, name: string): Promise<void> {
  await knex.transaction(async (trx) => {
    const { id } = await advance(trx, accountId, name, 0);
    await trx('rows').where({ collection_id: id }).delete();
    await trx('events').where({ collection_id: id }).delete();
    await trx('sort_keys').where({ collection_id: id }).delete();
    await trx('collections').where({ id }).delete();
    await announceChange(trx, id);
  });
}

/** The internal id of the account's collection `name`; 404 when the account has none of that name. */
export async function collectionId(knex: Knex, accountId: number, name: string): Promise<number> {
  const row = await knex('collections').where({ account_id: accountId, name }).first('id');
  if (!row) throw collectionNotFound(name);
  return Number(row.id);
}

/**
 * The id of the account's collection `name` as a subquery, for reads that find the collection in the
 * same statement as its rows: no id is ever remembered between statements, so a collection deleted
 * (or deleted and made again) by another instance is never read by a stale id. Ids are never reused.
 */
export const collectionIdQuery = (knex: Knex, accountId: number, name: string) =>
  knex('collections').where({ account_id: accountId, name }).select('id');

export const collectionNotFound = (name: string) => notFound(`There is no collection named ${name}.`);

/**
 * Moves the counters of the account's collection by one change: `events` events, `rowIds` new ids and
 * `rowDelta` rows added or removed. Returns the collection's id, the last row id and event seq, now
 * taken, and the fields it has sort indexes for (sort-keys.ts), and with `readRow` that row's stored
 * text; 404 when the account has no such collection.
 *
 * It is the first statement of every write transaction, and a write: the transaction takes the write
 * lock at once (waiting its turn, where a read first would fail on SQLite when another process wrote
 * in between), and it holds the collection's row until commit, so writers to one collection take their
 * seqs in commit order.
 */
export async function advance(
  trx: WriteTx,
  accountId: number,
  collection: string,
  events: number,
  rowIds = 0,
  rowDelta = 0,
  readRow?: number,
) {
  // `readRow`: the row of that id is read in the same statement, as it is before the change. PostgreSQL
  // only (SQLite patches in sqlite-procedures.ts). Locked, because a plain read would see the statement's
  // snapshot, taken before it waited for the collection's row: a patch of the row committed meanwhile
  // would be lost. A locked read in READ COMMITTED gets the row's latest committed version.
  const current =
    readRow === undefined ? '' : ', (select data from rows where collection_id = collections.id and id = ? for update) as current';
  const [counters] = await query<{
    id: number | string;
    last_row_id: number | string;
    last_seq: number | string;
    sorted: string;
    current?: string | null;
  }>(
    trx,
    `update collections set last_row_id = last_row_id + ?, last_seq = last_seq + ?, row_count = row_count + ?
      where account_id = ? and name = ? returning id, last_row_id, last_seq, sorted${current}`,
    [rowIds, events, rowDelta, accountId, collection, ...(readRow === undefined ? [] : [readRow])],
  );
  if (!counters) throw collectionNotFound(collection);
  return {
    id: Number(counters.id),
    lastRowId: Number(counters.last_row_id),
    lastSeq: Number(counters.last_seq),
    sorted: JSON.parse(counters.sorted) as string[],
    /** The text of row `readRow`, or null when there is none; undefined without `readRow`. */
    current: counters.current,
  };
}
