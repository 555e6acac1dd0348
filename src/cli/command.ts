// What every `rowbase` command is made of (src/cli.ts lists them): its usage and options, the one error
// that means bad arguments (exit 2), and the database of DATABASE_URL.
import { configFromEnv, withoutPassword } from '../config.ts';
import { openStore, type Store } from '../db/open-store.ts';

/** Bad arguments, or arguments that name nothing: exit 2, with the message as the one line on stderr. */
export class UsageError extends Error {}

export type Values = Record<string, string | boolean | undefined>;

export interface Command {
  usage: string;
  summary: string;
  options: Record<string, { type: 'string' | 'boolean'; description: string }>;
  positionals?: number;
  run(values: Values, positionals: string[]): Promise<void>;
}

/**
 * Does `work` on the database of DATABASE_URL, then says on stderr which database that was: a key made
 * in another database than the server's is refused by the server, and this line is the hint. (Only once
 * the work is done: a command that fails says why in one line.)
 */
export async function withStore<T>(work: (store: Store) => Promise<T>): Promise<T> {
  const { databaseUrl } = configFromEnv();
  const store = await openStore(databaseUrl);
  try {
    const done = await work(store);
    process.stderr.write(`rowbase: database ${withoutPassword(databaseUrl)}\n`);
    return done;
  } finally {
    await store.close();
  }
}

export const print = (text: string) => process.stdout.write(`${text}\n`);

export function required(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}
