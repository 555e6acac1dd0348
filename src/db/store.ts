// The data layer as the rest of the service sees it: plain functions over plain values, bound to one
// database, with every driver error translated at this edge (see errors.ts).
import type { Knex } from 'knex';
import type { Logger } from '../log.ts';
import type { SortIndexLimits } from './changes.ts';
import { createCollection, deleteCollection, getCollection, listCollections } from './collections.ts';
import { type Database, openDatabase } from './connect.ts';
import { translateDatabaseError } from './errors.ts';
import { feedStart, latestSeq, readEvents } from './events.ts';
import { createKey, hashKey, listKeys, liveKeyHashes, MAX_KEY_LENGTH, type Principal, principalOf, revokeKey } from './keys.ts';
import { accountPlan, listPlans, setPlan } from './plans.ts';
import { PrincipalCache } from './principals.ts';
import { collectionsAfter, pruneEventBatch } from './retention.ts';
import { deleteRow, getRow, insertRows, listRows, updateRow } from './rows.ts';
import { addUsage, readUsage } from './usage.ts';

// biome-ignore lint/suspicious/noExplicitAny: any argument list; the bound types below stay exact.
type DataFunction = (knex: Knex, ...args: any[]) => Promise<unknown>;
type Bound<F> = F extends (knex: Knex, ...args: infer A) => infer R ? (...args: A) => R : never;

const operations = {
  createCollection,
  deleteCollection,
  getCollection,
  listCollections,
  insertRows,
  listRows,
  getRow,
  updateRow,
  deleteRow,
  createKey,
  listKeys,
  revokeKey,
  liveKeyHashes,
  principalOf,
  listPlans,
  setPlan,
  accountPlan,
  readUsage,
  addUsage,
  feedStart,
  latestSeq,
  readEvents,
  collectionsAfter,
  pruneEventBatch,
  /** Answers when the database does. */
  ping: async (knex: Knex) => {
    await knex.raw('select 1');
  },
} satisfies Record<string, DataFunction>;

export type Store = { [K in keyof typeof operations]: Bound<(typeof operations)[K]> } & {
  /**
   * The account of a live key, or undefined for an unknown or revoked one; answers are kept for up to
   * half a second (see principals.ts), and forgotten when this store revokes a key.
   */
  findPrincipal(key: string): Promise<Principal | undefined>;
  db: Database;
  close(): Promise<void>;
};

export function createStore(db: Database): Store {
  const bound = Object.fromEntries(
    Object.entries(operations).map(([name, operation]) => [
      name,
      // biome-ignore lint/suspicious/noExplicitAny: forwarded as received.
      async (...args: any[]) => {
        try {
          return await (operation as DataFunction)(db.knex, ...args);
        } catch (error) {
          throw translateDatabaseError(error);
        }
      },
    ]),
  );
  const operationsOf = bound as Omit<Store, 'findPrincipal' | 'db' | 'close'>;
  const principals = new PrincipalCache((key) => operationsOf.principalOf(hashKey(key)));
  return {
    ...operationsOf,
    // A longer key is none of ours: it is neither looked up nor kept.
    findPrincipal: (key) => (key.length > MAX_KEY_LENGTH ? Promise.resolve(undefined) : principals.find(key)),
    async revokeKey(keyOrPrefix) {
      const revoked = await operationsOf.revokeKey(keyOrPrefix);
      principals.forget(); // in this process, a revoked key stops working at once
      return revoked;
    },
    db,
    close: () => db.close(),
  };
}

/** `log` receives the database driver's warnings (default: none are shown). */
export async function openStore(databaseUrl: string, sortIndexes?: SortIndexLimits, log?: Logger): Promise<Store> {
  return createStore(await openDatabase(databaseUrl, sortIndexes, log));
}
