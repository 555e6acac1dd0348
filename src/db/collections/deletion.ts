// A collection's deletion, with its rows, events, indexes and the relations of and to it.
import type { Once } from '../../idempotency/answers.ts';
import { type AfterCommit, afterCommit } from '../engine/after-commit.ts';
import type { Dialect, WriteTx } from '../engine/dialect.ts';
import { deleteCollectionSqls, uniqueIndexIdsSql, uniqueIndexName } from '../engine/sql/collections.ts';
import { dropRelationsOf } from '../relations/relations.ts';
import { beginOnce, recordOnce } from '../rows/idempotency.ts';
import { advance } from './collections.ts';

/** Deletes the collection with its rows, events and relations (the fields of other collections' rows keep their ids); its feed subscribers are woken to hear it. */
export async function deleteCollection(db: Dialect, accountId: number, name: string, once?: Once<void>): Promise<void> {
  let after: AfterCommit = [];
  await db.knex.transaction(async (trx) => {
    after = [];
    if (once) await beginOnce(db, trx, accountId, once);
    await deleteCollectionIn(db, trx, after, accountId, name);
    if (once) await recordOnce(db, trx, accountId, once, undefined);
  });
  await afterCommit(after);
}

/** deleteCollection() inside the write `trx`; its database indexes are dropped after the commit (`after`). */
export async function deleteCollectionIn(db: Dialect, trx: WriteTx, after: AfterCommit, accountId: number, name: string): Promise<void> {
  const { id } = await advance(db, trx, accountId, name, 0);
  // The database's unique indexes of its rows go once it has: a drop waits for the table's lock.
  const dropped = (await db.run<{ id: number | string }>(trx, uniqueIndexIdsSql, [id])).map((row) => uniqueIndexName(Number(row.id)));
  await dropRelationsOf(db, trx, id);
  for (const sql of deleteCollectionSqls) await db.run(trx, sql, [id]);
  await db.announce(trx, id);
  after.push(async () => {
    for (const index of dropped) await db.query(db.uniqueIndexSql.drop(index), []);
  });
}
