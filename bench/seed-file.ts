// The bench's set-up outside a server: its key, made with the CLI, and the seeded data of seed.ts
// without HTTP, for the scripts that time the driver (patch-cost.ts, patch-ceiling.ts). A module of its
// own: the load generator and the baselines import seed.ts, and need none of rowbase's data layer.
import { createCollection } from '../src/db/collections.ts';
import { openDatabase } from '../src/db/connect.ts';
import { insertRows } from '../src/db/rows.ts';
import { makeSortIndex } from '../src/db/sort-keys.ts';
import { runToEnd } from './processes.ts';
import { benchRow, collections, plan } from './seed.ts';

/**
 * Fills the SQLite file at `file` (made if need be) with the collection `bench` of `rows` rows and its
 * sort index on score, written through rowbase's own data layer, for the account `bench` (made on
 * the free plan if there is none). Answers the account's id.
 */
export async function seedFile(file: string, rows: number): Promise<number> {
  const db = await openDatabase(`sqlite:${file}`);
  try {
    const made = await db.knex('accounts').where({ name: 'bench' }).first('id');
    const [accountId] = made
      ? [made.id as number]
      : await db.knex('accounts').insert({ name: 'bench', plan: 'free', created_at: new Date().toISOString() });
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

/**
 * The bench's plan, with no rate and a quota no run reaches, and a key on it for the account `bench`
 * (made if need be), through the CLI as an operator would.
 */
export async function createKey(databaseUrl: string): Promise<string> {
  const env = { DATABASE_URL: databaseUrl };
  await runToEnd('bin/rowbase', ['plans', 'set', plan.name, '--quota', String(plan.quota), '--period', plan.period, '--no-rate'], env);
  const created = await runToEnd('bin/rowbase', ['keys', 'create', '--account', 'bench', '--plan', plan.name, '--json'], env);
  return JSON.parse(created).key;
}
