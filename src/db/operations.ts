// The data layer as the rest of the service sees it (Store): plain functions over plain values, bound to
// one database, with every driver error translated at this edge (errors.ts). The operations both
// dialects share are bound here to the dialect's Dialect; the rows' own operations are each dialect's
// (sqlite/rows.ts, postgres/rows.ts).
import type { Knex } from 'knex';
import { ApiError } from '../errors.ts';
import type { Changes } from './changes.ts';
import { createCollection, deleteCollection, getCollection, listCollections } from './collections.ts';
import type { Dialect } from './dialect.ts';
import { DatabaseClosedError, type ErrorCodes, translateError } from './errors.ts';
import { feedStart, latestSeq, readEvents } from './events.ts';
import type { CollectionReader } from './exports.ts';
import { type ImportedRow, lastRowIdOf } from './imports.ts';
import {
  accountIdOf,
  createAccountKey,
  createKey,
  hashKey,
  listAccountKeys,
  listKeys,
  liveKeyHashes,
  MAX_KEY_LENGTH,
  noteKeyUses,
  type Principal,
  principalOf,
  revokeAccountKey,
  revokeKey,
} from './keys.ts';
import type { Page, RowsPage } from './pages.ts';
import { accountPlan, listPlans, setPlan } from './plans.ts';
import { PrincipalCache } from './principals.ts';
import { collectionsAfter, pruneEventBatch } from './retention.ts';
import type { Fields, Json, Row } from './rows.ts';
import { addUsage, readUsage } from './usage.ts';
import { type Waits, watchKnexPool } from './waits.ts';

/** How often the key uses the principal cache noted are written, in ms. */
const KEY_USES_INTERVAL_MS = 1000;

/** The operations on rows, each dialect's own: the hot paths, in SQL of its own. */
export interface RowOperations {
  /** Stores every row or none, each with the next id of the collection, and one insert event each; answers the rows. */
  insertRows(accountId: number, collection: string, items: Fields[]): Promise<Json<Row[]>>;
  /** One page of rows (pages.ts); 404 when the collection does not exist. */
  listRows(accountId: number, collection: string, page: Page): Promise<RowsPage>;
  /** The row; 404 for a missing row or collection. */
  getRow(accountId: number, collection: string, rowId: number): Promise<Json<Row>>;
  /** Top-level merge: each given field replaces the old value whole. One update event; answers the row. */
  updateRow(accountId: number, collection: string, rowId: number, patch: Fields): Promise<Json<Row>>;
  /** Deletes the row, with one delete event carrying the row as it was. */
  deleteRow(accountId: number, collection: string, rowId: number): Promise<void>;
  /** Hands the collection and then its rows, by id, to `reader`, all read in one snapshot (exports.ts); 404 when it does not exist. */
  exportCollection(accountId: number, collection: string, reader: CollectionReader): Promise<void>;
  /**
   * Stores every row or none, each with the id it gives (above the collection's last), and one insert
   * event each; moves the collection's last row id up to `lastRowId` if that is past them (imports.ts).
   */
  importRows(accountId: number, collection: string, rows: ImportedRow[], lastRowId: number): Promise<void>;
}

/** How a dialect copies its database while it serves (`rowbase backup`; docs/operations.md, "Backup"). */
export interface Backups {
  /**
   * Copies the database to the file `target`, which must not exist unless `replace`; the copy holds
   * every transaction committed before it began. BackupRefusedError for a target that exists, and
   * on PostgreSQL, whose pg_dump does this.
   */
  backup(target: string, replace: boolean): Promise<void>;
}

/** A backup that cannot be made as asked; the message says why, in one line. */
export class BackupRefusedError extends Error {}

// biome-ignore lint/suspicious/noExplicitAny: any argument list; the bound types below stay exact.
type SharedFunction = (db: Dialect, ...args: any[]) => Promise<unknown>;
type Bound<F> = F extends (db: Dialect, ...args: infer A) => infer R ? (...args: A) => R : never;

/** The operations both dialects share, each taking the Dialect first. */
const shared = {
  accountIdOf,
  createCollection,
  deleteCollection,
  getCollection,
  listCollections,
  createKey,
  createAccountKey,
  listKeys,
  listAccountKeys,
  revokeKey,
  revokeAccountKey,
  liveKeyHashes,
  principalOf,
  noteKeyUses,
  listPlans,
  setPlan,
  accountPlan,
  readUsage,
  addUsage,
  feedStart,
  latestSeq,
  readEvents,
  lastRowIdOf,
  collectionsAfter,
  pruneEventBatch,
  /** Answers when the database does. */
  ping: async ({ query }: Dialect) => {
    await query('select 1', []);
  },
} satisfies Record<string, SharedFunction>;

export type Store = { [K in keyof typeof shared]: Bound<(typeof shared)[K]> } & RowOperations &
  Backups & {
    /**
     * The principal of a live key, or undefined for an unknown, revoked or expired one; answers are
     * kept for up to half a second (principals.ts), and forgotten when this store revokes a key. Each
     * answer notes the key's use, written about once a minute a key (`last_used_at`).
     */
    findPrincipal(key: string): Promise<Principal | undefined>;
    /** Wake-ups after each committed change of a collection, this instance's and, on PostgreSQL, every other's. */
    changes: Changes;
    /** Each wait for a connection of the database, as it ends (waits.ts): what the metrics show of the pools. */
    waits: Waits;
    /** The database's Knex, for the CLI's and the tests' own look at it; the service goes through the operations. */
    knex: Knex;
    /** Writes the key uses noted, waits for the statements under way, then closes every connection; later calls answer 503. */
    close(): Promise<void>;
  };

/**
 * The Store of a dialect: the shared operations bound to `db`, and the dialect's `rows`, each with its
 * errors translated by `codes`. Once `close` has begun, every error is the 503 of a closed database.
 */
export function assembleStore(db: Dialect, rows: RowOperations, backups: Backups, codes: ErrorCodes, close: () => Promise<void>): Store {
  let closed = false;
  const translated =
    // biome-ignore lint/suspicious/noExplicitAny: forwarded as received.
      (operation: (...args: any[]) => Promise<unknown>) =>
      async (...args: unknown[]) => {
        try {
          return await operation(...args);
        } catch (error) {
          throw translateError(closed && !(error instanceof ApiError) ? new DatabaseClosedError() : error, codes);
        }
      };
  const bound = Object.fromEntries([
    ...Object.entries(shared).map(([name, operation]) => [name, translated((...args) => (operation as SharedFunction)(db, ...args))]),
    ...Object.entries(rows).map(([name, operation]) => [name, translated(operation)]),
  ]) as Omit<Store, 'findPrincipal' | 'changes' | 'waits' | 'knex' | 'close' | 'backup'>;
  const principals = new PrincipalCache((key) => bound.principalOf(hashKey(key)));
  // The key uses the cache noted, written every second; those that fail are tried again with the next.
  let noting: Promise<void> = Promise.resolve();
  const noteUses = () => {
    noting = noting.then(async () => {
      const uses = principals.takeUses();
      if (uses.size > 0) await bound.noteKeyUses(uses).catch(() => principals.returnUses(uses));
    });
    return noting;
  };
  const noteTimer = setInterval(noteUses, KEY_USES_INTERVAL_MS);
  noteTimer.unref();
  watchKnexPool((db.knex.client as { pool?: Parameters<typeof watchKnexPool>[0] }).pool, db.waits);
  return {
    ...bound,
    // A longer key is none of ours: it is neither looked up nor kept.
    findPrincipal: (key) => (key.length > MAX_KEY_LENGTH ? Promise.resolve(undefined) : principals.find(key)),
    // In this process, a revoked key stops working at once.
    async revokeKey(keyOrPrefix) {
      const revoked = await bound.revokeKey(keyOrPrefix);
      principals.forget();
      return revoked;
    },
    async revokeAccountKey(accountId, keyId) {
      const revoked = await bound.revokeAccountKey(accountId, keyId);
      principals.forget();
      return revoked;
    },
    backup: backups.backup,
    changes: db.changes,
    waits: db.waits,
    knex: db.knex,
    close: async () => {
      clearInterval(noteTimer);
      await noteUses();
      closed = true;
      return close();
    },
  };
}
