// A collection's time to live (openapi.yaml, the `expiry` tag; docs/expiry.md): the field of its rows
// that says when each expires, read, set and removed. Each row's expiry is kept beside it, set by each
// write of the row (../sqlite/sql/expiry.ts, ../postgres/sql/expiry.ts); the sweeper is sweep.ts.
import { collectionNotFound, conflict, ttlNotFound, validationFailed } from '../../errors.ts';
import { checkTtlField, type Ttl } from '../../expiry/ttl.ts';
import type { Once } from '../../idempotency/answers.ts';
import { advance } from '../collections/collections.ts';
import type { Dialect, WriteTx } from '../engine/dialect.ts';
import type { PagedDialect } from '../engine/read-port.ts';
import { schemaTextSql } from '../engine/sql/collections.ts';
import {
  clearExpiriesSql,
  collectionTtlSql,
  expiredCountSql,
  firstExpiredSql,
  restrictingRelationSql,
  setTtlSql,
  ttlOfCollectionSql,
} from '../engine/sql/expiry.ts';
import { beginOnce, recordOnce } from '../rows/idempotency.ts';

/** The collection's time to live, null when it has none; 404 when there is no such collection. */
export async function getTtl({ query }: Dialect, accountId: number, collection: string): Promise<Ttl | null> {
  const [row] = await query<{ ttl_field: string | null }>(collectionTtlSql, [accountId, collection]);
  if (!row) throw collectionNotFound(collection);
  return row.ttl_field === null ? null : { field: row.ttl_field };
}

/**
 * Makes `ttl` the collection's, replacing any it had, and sets every stored row's expiry by it, in one
 * transaction that holds the collection (writes of it wait). 400 when its schema cannot hold a date-time
 * in the field (checkTtlField), 409 when a relation that restricts deletes names its rows, 404 when
 * there is no such collection.
 */
export async function putTtl(db: PagedDialect, accountId: number, collection: string, ttl: Ttl, once?: Once<Ttl>): Promise<Ttl> {
  await db.rows.writeSeveral(async (trx) => {
    if (once) await beginOnce(db, trx, accountId, once);
    await putTtlIn(db, trx, accountId, collection, ttl);
    if (once) await recordOnce(db, trx, accountId, once, ttl);
  });
  return ttl;
}

/** putTtl() inside the write `trx` (a declaration's apply runs it in its own). */
export async function putTtlIn(db: PagedDialect, trx: WriteTx, accountId: number, collection: string, ttl: Ttl): Promise<void> {
  const { id, schemaId } = await advance(db, trx, accountId, collection, 0);
  const [schema] = schemaId === 0 ? [] : await db.run<{ schema: string }>(trx, schemaTextSql, [schemaId]);
  checkTtlField(ttl.field, schema && schema.schema !== '' ? JSON.parse(schema.schema) : undefined);
  const [restricting] = await db.run<{ name: string; source_name: string }>(trx, restrictingRelationSql, [id]);
  if (restricting)
    throw conflict(
      `Relation ${restricting.name} of collection ${restricting.source_name} restricts deletes of these rows: an expiry is a delete no one can refuse. Declare it with on_delete cascade or set_null first.`,
    );
  await db.run(trx, setTtlSql, [ttl.field, id]);
  await db.run(trx, db.refreshExpiriesSql, [id]);
  db.pages.knownIndexes.setExpiring(accountId, collection, true);
}

/** Rows listed at most by expiredByTtlIn(). */
const FIRST_EXPIRED = 10;

/**
 * The rows of the collection `id` that a time to live over `field` finds expired at `now` (ms since the
 * epoch), which the sweeper deletes once it is set: how many, and the first ids. Sets it as putTtlIn
 * does, each row's expiry by the dialect's refreshExpiriesSql, inside `trx`, which the caller rolls back (a plan's
 * reads, ../declarations/impacts.ts).
 */
export async function expiredByTtlIn(db: Dialect, trx: WriteTx, id: number, field: string, now: number) {
  await db.run(trx, setTtlSql, [field, id]);
  await db.run(trx, db.refreshExpiriesSql, [id]);
  const [{ total }] = await db.run<{ total: number | string }>(trx, expiredCountSql, [id, now]);
  if (Number(total) === 0) return { total: 0, ids: [] };
  const first = await db.run<{ id: number | string }>(trx, firstExpiredSql, [id, now, FIRST_EXPIRED]);
  return { total: Number(total), ids: first.map((row) => Number(row.id)) };
}

/** The collection's rows expire no more; 404 when it had no time to live, or there is no such collection. */
export async function deleteTtl(db: PagedDialect, accountId: number, collection: string, once?: Once<void>): Promise<void> {
  await db.rows.writeSeveral(async (trx) => {
    if (once) await beginOnce(db, trx, accountId, once);
    await deleteTtlIn(db, trx, accountId, collection);
    if (once) await recordOnce(db, trx, accountId, once, undefined);
  });
}

/** deleteTtl() inside the write `trx` (a declaration's apply runs it in its own). */
export async function deleteTtlIn(db: PagedDialect, trx: WriteTx, accountId: number, collection: string): Promise<void> {
  const { id } = await advance(db, trx, accountId, collection, 0);
  const [row] = await db.run<{ ttl_field: string | null }>(trx, collectionTtlSql, [accountId, collection]);
  if (!row || row.ttl_field === null) throw ttlNotFound(collection);
  await db.run(trx, setTtlSql, [null, id]);
  await db.run(trx, clearExpiriesSql, [id]);
  db.pages.knownIndexes.setExpiring(accountId, collection, false);
}

/**
 * 400 for a relation that would restrict deletes of the rows of a collection with a time to live
 * (`target`, its id), inside the declaration's transaction, which holds it (../relations/relations.ts).
 */
export async function refuseRestrictOnExpiring(db: Dialect, trx: WriteTx, target: number, targetName: string): Promise<void> {
  const [row] = await db.run<{ ttl_field: string | null }>(trx, ttlOfCollectionSql, [target]);
  if (row?.ttl_field)
    throw validationFailed(
      `Collection ${targetName}'s rows expire (field ${row.ttl_field}): an expiry is a delete no one can refuse, so no relation may restrict it.`,
      [{ in: 'body', name: '/on_delete', message: 'must be cascade or set_null: the related rows expire' }],
    );
}
