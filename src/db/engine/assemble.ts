// The data layer as the rest of the service sees it (Store): plain functions over plain values, bound to
// one database, with every driver error translated at this edge (errors.ts). The operations both
// dialects share are bound here to the dialect's Dialect; the rows' own operations are each dialect's
// (sqlite/rows.ts, postgres/rows.ts). Every request's key is looked up through the cache of their
// principals (../accounts/principals.ts, PrincipalCache).
import type { Knex } from 'knex';
import { hashKey } from '../../api-keys/hash.ts';
import { ApiError, type FieldError } from '../../errors.ts';
import type { Once, OnceRequest } from '../../idempotency/answers.ts';
import type { Patch } from '../../patches/index.ts';
import type { AggregateQuery } from '../../query/aggregate.ts';
import type { Filter } from '../../query/filter.ts';
import { type CompiledRules, CompiledRulesCache, NO_ACCESS } from '../../rules/compile.ts';
import {
  accountIdOf,
  createAccountKey,
  createKey,
  listAccountKeys,
  listKeys,
  liveKeyHashes,
  MAX_KEY_LENGTH,
  noteKeyUses,
  type Principal,
  principalOf,
  revokeAccountKey,
  revokeKey,
} from '../accounts/keys.ts';
import { accountPlan, listPlans, setPlan } from '../accounts/plans.ts';
import { PrincipalCache } from '../accounts/principals.ts';
import { addEndUserCounts, addUsage, pruneEndUserCounts, readUsage } from '../accounts/usage.ts';
import { type AccountIssuers, deleteIssuer, getIssuer, listIssuers, putIssuer } from '../auth/issuers.ts';
import { createCollection, getCollection, listCollectionContracts, listCollections } from '../collections/collections.ts';
import { deleteCollection } from '../collections/deletion.ts';
import { createIndex, deleteIndex, listIndexes } from '../collections/indexes.ts';
import { deleteSchema, getSchema, putSchema } from '../collections/schemas.ts';
import { searchFilter } from '../collections/search-indexes.ts';
import { applyDeclaration } from '../declarations/apply.ts';
import { declaredRowImpacts } from '../declarations/impacts.ts';
import { readAccountModel } from '../declarations/live.ts';
import { feedStart, latestSeq, readEvents } from '../events/events.ts';
import { collectionsAfter, pruneEventBatch } from '../events/retention.ts';
import type { AggregateResult } from '../reads/aggregates.ts';
import type { Expansion } from '../reads/expand.ts';
import type { Page, RowsPage } from '../reads/pages.ts';
import { bindRelations } from '../relations/filters.ts';
import { deleteRelation, getRelation, listRelations, putRelation } from '../relations/relations.ts';
import type { BatchOperation, BatchOptions, BatchResult } from '../rows/batch.ts';
import type { CollectionReader } from '../rows/exports.ts';
import { findOnce, pruneOnceBatch } from '../rows/idempotency.ts';
import { type ImportedRow, lastRowIdOf } from '../rows/imports.ts';
import type { ChangedRows, Fields, InsertedRows, RowGuard, VersionedRow, WriteOptions } from '../rows/rows.ts';
import type { Upserted } from '../rows/upserts.ts';
import { deleteRules, getRules, putRules } from '../rules/rules.ts';
import { listWebhookDeliveries, pruneWebhookDeliveries, retryWebhookDelivery } from '../webhooks/deliveries.ts';
import {
  anyWebhook,
  createWebhook,
  deleteWebhook,
  getWebhook,
  listWebhooks,
  rotateWebhookSecret,
  updateWebhook,
  webhookState,
} from '../webhooks/settings.ts';
import {
  ackStream,
  claimStreams,
  failStream,
  releaseStream,
  skipDropped,
  startCollectionStreams,
  startMissingStreams,
  streamTarget,
  webhookBacklog,
} from '../webhooks/streams.ts';
import type { Changes } from './changes.ts';
import type { Dialect } from './dialect.ts';
import { DatabaseClosedError, type ErrorCodes, translateError } from './errors.ts';
import { ReadCache } from './read-cache.ts';
import { type Waits, watchKnexPool } from './waits.ts';

/** How often the key uses the principal cache noted are written, in ms. */
const KEY_USES_INTERVAL_MS = 1000;

/** The operations on rows, each dialect's own: the hot paths, in SQL of its own. */
export interface RowOperations {
  /**
   * Stores every row or none, each with the next id of the collection, and one insert event each;
   * answers the rows and their versions. Every write takes `options.once`, an Idempotency-Key whose
   * answer it stores in its own transaction (idempotency.ts). An insert's answer is made by the
   * statement that writes its rows, as openapi.yaml's insertRows has it (201, the rows, and the ETag of
   * a batch of one), so the key alone is handed here; every other write is handed how to answer too.
   */
  insertRows(accountId: number, collection: string, items: Fields[], options?: { once?: OnceRequest }): Promise<InsertedRows>;
  /**
   * Upserts (upserts.ts): each row whose values of the unique index of `onConflict` a stored row holds
   * patches it, every other is inserted, in order, all or none, one event each; answers the rows as
   * stored, in the order sent.
   */
  upsertRows(
    accountId: number,
    collection: string,
    items: Fields[],
    onConflict: string[],
    options?: { once?: Once<Upserted>; guard?: RowGuard },
  ): Promise<Upserted>;
  /**
   * Runs a batch's operations in order in one transaction (batch.ts): answers each one's result, or
   * throws the problem of the first that failed, naming it, with nothing written.
   */
  writeBatch(accountId: number, operations: readonly BatchOperation[], options?: BatchOptions): Promise<BatchResult[]>;
  /**
   * One page of rows (pages.ts); 404 when the collection does not exist. Its filter's conditions through
   * relations are bound to the related rows they find, and with `expansions` the rows related to its rows
   * are set into them, all read in one snapshot with the page (../reads/related.ts).
   */
  listRows(accountId: number, collection: string, page: Page, expansions?: readonly Expansion[]): Promise<RowsPage>;
  /**
   * The answer to an aggregate query (aggregates.ts), its filter's conditions through relations bound in
   * its snapshot (../reads/related.ts); 404 when the collection does not exist, 400 (whose
   * one error is `place`) when its rows fall into more than `maxGroupsRead` groups, 503 past the query timeout.
   */
  aggregateRows(
    accountId: number,
    collection: string,
    query: AggregateQuery,
    maxGroupsRead: number,
    place: FieldError,
  ): Promise<AggregateResult>;
  /** The row and its version; 404 for a missing row or collection. */
  getRow(accountId: number, collection: string, rowId: number): Promise<VersionedRow>;
  /**
   * Applies `patch` (../patches/: a top-level merge, a JSON Merge Patch or a JSON Patch) to the row read
   * in the write's own transaction. One update event; answers the row and its new version. 412 when the
   * row's version is none of `options.ifMatch`; 409 patch_conflict when the patch cannot apply to it.
   */
  updateRow(
    accountId: number,
    collection: string,
    rowId: number,
    patch: Patch,
    options?: WriteOptions<VersionedRow>,
  ): Promise<VersionedRow>;
  /** Deletes the row, with one delete event carrying the row as it was. 412 when its version is none of `options.ifMatch`. */
  deleteRow(accountId: number, collection: string, rowId: number, options?: WriteOptions<void>): Promise<void>;
  /**
   * Patches every row of the collection that `filter` matches as updateRow() does, all or none, each
   * with one update event, in id order, with consecutive seqs; 400 (nothing written) when more than
   * `max` match, 409 patch_conflict (nothing written) when the patch cannot apply to one of them.
   * Answers the rows as they now are.
   */
  updateRowsWhere(
    accountId: number,
    collection: string,
    filter: Filter,
    patch: Patch,
    max: number,
    options?: WriteOptions<ChangedRows>,
  ): Promise<ChangedRows>;
  /** Deletes every row of the collection that `filter` matches, as updateRowsWhere() patches them; answers them as they were. */
  deleteRowsWhere(
    accountId: number,
    collection: string,
    filter: Filter,
    max: number,
    options?: WriteOptions<ChangedRows>,
  ): Promise<ChangedRows>;
  /** Makes a sort index of `field` in the collection (sort-indexes.ts), unless it has one or as many as it may. */
  sortBy(accountId: number, collection: string, field: string): Promise<void>;
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
  listCollectionContracts,
  getSchema,
  putSchema,
  deleteSchema,
  listIndexes,
  createIndex,
  deleteIndex,
  searchFilter,
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
  addEndUserCounts,
  pruneEndUserCounts,
  feedStart,
  latestSeq,
  readEvents,
  lastRowIdOf,
  collectionsAfter,
  pruneEventBatch,
  findOnce,
  pruneOnceBatch,
  createWebhook,
  listWebhooks,
  getWebhook,
  webhookState,
  updateWebhook,
  rotateWebhookSecret,
  deleteWebhook,
  listWebhookDeliveries,
  retryWebhookDelivery,
  anyWebhook,
  webhookBacklog,
  pruneWebhookDeliveries,
  claimStreams,
  streamTarget,
  ackStream,
  failStream,
  skipDropped,
  releaseStream,
  startCollectionStreams,
  startMissingStreams,
  putIssuer,
  listIssuers,
  getIssuer,
  deleteIssuer,
  getRules,
  putRules,
  deleteRules,
  listRelations,
  getRelation,
  putRelation,
  deleteRelation,
  bindRelations,
  readAccountModel,
  applyDeclaration,
  declaredRowImpacts,
  /** Answers when the database does. */
  ping: async ({ query }: Dialect) => {
    await query('select 1', []);
  },
} satisfies Record<string, SharedFunction>;

export type Store = { [K in keyof typeof shared]: Bound<(typeof shared)[K]> } & RowOperations &
  Backups & {
    /**
     * The principal of a live key, or undefined for an unknown, revoked or expired one; answers are
     * kept for up to half a second (PrincipalCache, below), and forgotten when this store revokes a key. Each
     * answer notes the key's use, written about once a minute a key (`last_used_at`).
     */
    findPrincipal(key: string): Promise<Principal | undefined>;
    /**
     * The account's token issuers, as its end users' tokens are verified with them (src/tokens/verifier.ts):
     * answers are kept for up to half a second (ReadCache), and forgotten when this store changes an issuer.
     */
    findIssuers(accountId: number): Promise<AccountIssuers>;
    /**
     * The collection's rules compiled (src/rules/compile.ts), as requests with a publishable key are held
     * to them; a collection without rules has rules that deny everything; 404 for no such collection.
     * Kept for up to half a second (ReadCache), and forgotten when this store changes rules or collections.
     */
    findRules(accountId: number, collection: string): Promise<CompiledRules>;
    /** Wake-ups after each committed change of a collection, this instance's and, on PostgreSQL, every other's. */
    changes: Changes;
    /** Each wait for a connection of the database, as it ends (waits.ts): what the metrics show of the pools. */
    waits: Waits;
    /** The database's Knex, for the CLI's and the tests' own look at it; the service goes through the operations. */
    knex: Knex;
    /** How long another process's writer that has waited `waitedMs` may take to see the database free (Dialect's). */
    writerWakeMs(waitedMs: number): number;
    /** Writes the key uses noted, waits for the statements under way, then closes every connection; later calls answer 503. */
    close(): Promise<void>;
    /** Whether close() has not begun: the store still serves. */
    isOpen(): boolean;
  };

/**
 * The Store of a dialect: the shared operations bound to `db`, and the dialect's `rows`, each with its
 * errors translated by `codes`. Once `close` has begun, every error is the 503 of a closed database.
 */
export function assembleStore(db: Dialect, rows: RowOperations, backups: Backups, codes: ErrorCodes, close: () => Promise<void>): Store {
  let closed = false;
  let closing = false;
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
  ]) as Omit<Store, 'findPrincipal' | 'findIssuers' | 'findRules' | 'changes' | 'waits' | 'knex' | 'close' | 'isOpen' | 'backup'>;
  const compiled = new CompiledRulesCache();
  // By `<account id> <collection>`: a collection's name holds no space.
  const rules = new ReadCache(async (key: string) => {
    const space = key.indexOf(' ');
    const stored = await bound.getRules(Number(key.slice(0, space)), key.slice(space + 1));
    return stored ? compiled.get(stored.collectionId, stored.version, stored.rules) : NO_ACCESS;
  });
  const principals = new PrincipalCache((key) => bound.principalOf(hashKey(key)));
  const issuers = new ReadCache(
    async (accountId: number): Promise<AccountIssuers> => ({ accountId, issuers: await bound.listIssuers(accountId) }),
  );
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
    async revokeAccountKey(accountId, keyId, once) {
      const revoked = await bound.revokeAccountKey(accountId, keyId, once);
      principals.forget();
      return revoked;
    },
    findIssuers: (accountId) => issuers.find(accountId),
    // In this process, a changed or deleted issuer takes effect at once.
    async putIssuer(accountId, name, settings, max, once) {
      const put = await bound.putIssuer(accountId, name, settings, max, once);
      issuers.forget();
      return put;
    },
    async deleteIssuer(accountId, name, once) {
      const deleted = await bound.deleteIssuer(accountId, name, once);
      issuers.forget();
      return deleted;
    },
    findRules: (accountId, collection) => rules.find(`${accountId} ${collection}`),
    // In this process, changed rules, and a collection made or deleted, take effect at once.
    async putRules(accountId, collection, set, once) {
      const put = await bound.putRules(accountId, collection, set, once);
      rules.forget();
      return put;
    },
    async deleteRules(accountId, collection, once) {
      await bound.deleteRules(accountId, collection, once);
      rules.forget();
    },
    async createCollection(...args) {
      const created = await bound.createCollection(...args);
      rules.forget();
      return created;
    },
    async deleteCollection(...args) {
      await bound.deleteCollection(...args);
      rules.forget();
    },
    // A declaration changes collections, rules and issuers at once.
    async applyDeclaration(...args) {
      const steps = await bound.applyDeclaration(...args);
      rules.forget();
      issuers.forget();
      return steps;
    },
    backup: backups.backup,
    changes: db.changes,
    waits: db.waits,
    knex: db.knex,
    writerWakeMs: db.writerWakeMs,
    isOpen: () => !closing,
    close: async () => {
      closing = true;
      clearInterval(noteTimer);
      await noteUses();
      closed = true;
      return close();
    },
  };
}
