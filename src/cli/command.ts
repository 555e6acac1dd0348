// What every `rowbase` command is made of (src/cli.ts lists them): its usage and options, the one error
// that means bad arguments (exit 2), and the database of DATABASE_URL.
import { configFromEnv, withoutPassword } from '../config.ts';
import type { Store } from '../db/open-store.ts';

/** Bad arguments, or arguments that name nothing: exit 2, with the message as the one line on stderr. */
export class UsageError extends Error {}

export type Values = Record<string, string | boolean | undefined>;

export interface Command {
  usage: string;
  summary: string;
  /** Each option; `multiple`: it may be given more than once, each value kept (`--claim a=1 --claim b=2`). */
  options: Record<string, { type: 'string' | 'boolean'; short?: string; description: string; multiple?: boolean }>;
  /** How many arguments follow the options: exactly this many (default 0), or from `min` to `max`. */
  positionals?: number | { min: number; max: number };
  /** The exit status of bad arguments: default 2, which `rowbase plan` gives another meaning (changes to make). */
  usageExit?: number;
  /** Does the command's work; answers its exit status, 0 when it answers none. */
  // biome-ignore lint/suspicious/noConfusingVoidType: most commands answer nothing (an async function's void).
  run(values: Values, positionals: string[]): Promise<void | number>;
}

/**
 * Does `work` on the database of DATABASE_URL, then says on stderr which database that was: a key made
 * in another database than the server's is refused by the server, and this line is the hint. (Only once
 * the work is done: a command that fails says why in one line.)
 */
export async function withStore<T>(work: (store: Store) => Promise<T>): Promise<T> {
  const { databaseUrl } = configFromEnv();
  // The data layer, its drivers and Knex are loaded by the commands that open a database, not by --help.
  const { openStore } = await import('../db/open-store.ts');
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

const unitMs: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `text`, the value of option `name`, as a length of time in ms: a whole number above 0 and s, m, h or d (30d). */
export function durationMs(text: string, name: string): number {
  const [, amount, unit] = /^(\d{1,9})([smhd])$/.exec(text) ?? [];
  if (amount === undefined || Number(amount) === 0) {
    throw new UsageError(`${name} must be a whole number above 0 and s, m, h or d (30d), not ${JSON.stringify(text)}`);
  }
  return Number(amount) * unitMs[unit];
}

export function required(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}
