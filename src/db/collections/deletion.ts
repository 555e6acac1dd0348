// A collection's deletion, with its rows, events, indexes and the relations of and to it.
import type { Once } from '../../idempotency/answers.ts';
import type { Dialect, WriteTx } from '../engine/dialect.ts';
import { deleteCollectionSqls } from '../engine/sql/collections.ts';
import { dropRelationsOf } from '../relations/relations.ts';
import { beginOnce, recordOnce } from '../rows/idempotency.ts';
import { advance } from './collections.ts';

/** Deletes the collection with its rows, events and relations (the fields of other collections' rows keep their ids); its feed subscribers are woken to hear it. */
export async function deleteCollection(db: Dialect, accountId: number, name: string, once?: Once<void>): Promise<void> {
  await db.knex.transaction(async (trx) => {
    if (once) await beginOnce(db, trx, accountId, once);
    await deleteCollectionIn(db, trx, accountId, name);
    if (once) await recordOnce(db, trx, accountId, once, undefined);
  });
}

/** deleteCollection() inside the write `trx`. */
export async function deleteCollectionIn(db: Dialect, trx: WriteTx, accountId: number, name: string): Promise<void> {
  const { id } = await advance(db, trx, accountId, name, 0);
  await dropRelationsOf(db, trx, id);
  for (const sql of deleteCollectionSqls) await db.run(trx, sql, [id]);
  await db.announce(trx, id);
}
