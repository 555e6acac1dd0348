// The seeded data of seed.ts without HTTP, for the scripts that time the driver (patch-cost.ts,
// patch-ceiling.ts). A module of its own: the load generator and the baselines import seed.ts, and
// need none of rowbase's data layer.
import { createCollection } from '../src/db/collections.ts';
import { openDatabase } from '../src/db/connect.ts';
import { insertRows } from '../src/db/rows.ts';
import { makeSortIndex } from '../src/db/sort-keys.ts';
import { benchRow, collections } from './seed.ts';

/**
 * A new SQLite file at `file` with an account, the collection `bench` of `rows` rows and its sort
 * index on score, written through rowbase's own data layer. Answers the account's id.
 */
export async function seedFile(file: string, rows: number): Promise<number> {
  const db = await openDatabase(`sqlite:${file}`);
  try {
    const [accountId] = await db.knex('accounts').insert({ name: 'bench', plan: 'free', created_at: new Date().toISOString() });
    await createCollection(db.knex, accountId, collections.rows);
    for (let first = 1; first <= rows; first += 1000) {
      const count = Math.min(1000, rows - first + 1);
      await insertRows(
        db.knex,
        accountId,
        collections.rows,
        Array.from({ length: count }, (_, i) => ({ ...benchRow(first + i) })),
      );
    }
    await makeSortIndex(db.knex, accountId, collections.rows, 'score', 16);
    return accountId;
  } finally {
    await db.close();
  }
}
