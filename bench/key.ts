// The bench's key, made with the CLI as an operator would, on the run's SQLite file and on its PostgreSQL
// database; and keys of other accounts (declaration-100's, each onto an account of its own).
import { runToEnd } from './processes.ts';
import { plan } from './seed.ts';

/**
 * The bench's plan, with no rate and a quota no run reaches, and a key on it for the account `bench`
 * (made if need be), through the CLI as an operator would.
 */
export async function createKey(databaseUrl: string): Promise<string> {
  const env = { DATABASE_URL: databaseUrl };
  await runToEnd('bin/rowbase', ['plans', 'set', plan.name, '--quota', String(plan.quota), '--period', plan.period, '--no-rate'], env);
  return accountKey(databaseUrl, 'bench');
}

/** A key of the account `account` (made if need be) on the bench's plan, which createKey() made, through the CLI. */
export async function accountKey(databaseUrl: string, account: string): Promise<string> {
  const created = await runToEnd('bin/rowbase', ['keys', 'create', '--account', account, '--plan', plan.name, '--json'], {
    DATABASE_URL: databaseUrl,
  });
  return JSON.parse(created).key;
}
