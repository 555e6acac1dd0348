// The data layer as the rest of the service sees it (Store): plain functions over plain values, bound to
// one database (opened by open-store.ts), with every driver error translated at this edge (errors.ts). Each operation is written
// once, in its area, and bound here to the dialect's Dialect. Every request's key is looked up through the cache of their
// principals (../accounts/principals.ts, PrincipalCache).

import type { Knex } from 'knex';
import { hashKey } from '../api-keys/hash.ts';
import { ApiError } from '../errors.ts';
import { type CompiledRules, CompiledRulesCache, NO_ACCESS } from '../rules/compile.ts';
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
} from './accounts/keys.ts';
import { accountPlan, listPlans, setPlan } from './accounts/plans.ts';
import { PrincipalCache } from './accounts/principals.ts';
import { addEndUserCounts, addUsage, pruneEndUserCounts, readUsage } from './accounts/usage.ts';
import { type AccountIssuers, deleteIssuer, getIssuer, listIssuers, putIssuer } from './auth/issuers.ts';
import { createCollection, getCollection, listCollectionContracts, listCollections } from './collections/collections.ts';
import { deleteCollection } from './collections/deletion.ts';
import { createIndex, deleteIndex, listIndexes } from './collections/indexes.ts';
import { deleteSchema, getSchema, putSchema } from './collections/schemas.ts';
import { applyDeclaration } from './declarations/apply.ts';
import { declaredRowImpacts } from './declarations/impacts.ts';
import { readAccountModel } from './declarations/live.ts';
import type { Backups } from './engine/dialect.ts';
import { DatabaseClosedError, type ErrorCodes, translateError } from './engine/errors.ts';
import { ReadCache } from './engine/read-cache.ts';
import type { PagedDialect } from './engine/read-port.ts';
import { type Waits, watchKnexPool } from './engine/waits.ts';
import type { WakeUps } from './engine/wake-ups.ts';
import { feedStart, latestSeq, readEvents } from './events/events.ts';
import { collectionsAfter, pruneEventBatch } from './events/retention.ts';
import { keepExpiryNow, readKeptExpiryNow } from './expiry/clock.ts';
import { expiringCollections, sweepExpiredBatch } from './expiry/sweep.ts';
import { deleteTtl, getTtl, putTtl } from './expiry/ttl.ts';
import { aggregateRows, getRow, listRows, sortBy, sortByIndex } from './reads/rows.ts';
import { bindRelations } from './relations/filters.ts';
import type { Relation } from './relations/links.ts';
import { deleteRelation, getRelation, listRelations, putRelation } from './relations/relations.ts';
import { writeBatch } from './rows/batch.ts';
import { exportCollection } from './rows/exports.ts';
import { findOnce, pruneOnceBatch } from './rows/idempotency.ts';
import { lastRowIdOf } from './rows/imports.ts';
import { importRows, insertRows } from './rows/inserts.ts';
import { updateRow, updateRowsWhere } from './rows/updates.ts';
import { upsertRows } from './rows/upserts.ts';
import { deleteRow, deleteRowsWhere } from './rows/writes.ts';
import { deleteRules, getRules, putRules } from './rules/rules.ts';
import { resumeSearchFills, searchFilter } from './search/indexes.ts';
import { listWebhookDeliveries, pruneWebhookDeliveries, retryWebhookDelivery } from './webhooks/deliveries.ts';
import {
  anyWebhook,
  createWebhook,
  deleteWebhook,
  getWebhook,
  listWebhooks,
  rotateWebhookSecret,
  updateWebhook,
  webhookState,
} from './webhooks/settings.ts';
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
} from './webhooks/streams.ts';

/** How often the key uses the principal cache noted are written, in ms. */
const KEY_USES_INTERVAL_MS = 1000;

// biome-ignore lint/suspicious/noExplicitAny: any argument list; the bound types below stay exact.
type SharedFunction = (db: PagedDialect, ...args: any[]) => Promise<unknown>;
type Bound<F> = F extends (db: never, ...args: infer A) => infer R ? (...args: A) => R : never;

/** The operations, each written once, taking the Dialect first. */
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
  resumeSearchFills,
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
  getTtl,
  putTtl,
  deleteTtl,
  expiringCollections,
  sweepExpiredBatch,
  keepExpiryNow,
  readKeptExpiryNow,
  listRelations,
  getRelation,
  putRelation,
  deleteRelation,
  bindRelations,
  readAccountModel,
  applyDeclaration,
  declaredRowImpacts,
  insertRows,
  upsertRows,
  writeBatch,
  getRow,
  listRows,
  aggregateRows,
  updateRow,
  deleteRow,
  updateRowsWhere,
  deleteRowsWhere,
  sortBy,
  sortByIndex,
  exportCollection,
  importRows,
  /** Answers when the database does. */
  ping: async ({ query }: PagedDialect) => {
    await query('select 1', []);
  },
} satisfies Record<string, SharedFunction>;

export type Store = { [K in keyof typeof shared]: Bound<(typeof shared)[K]> } & Backups & {
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
    /**
     * The collection's relations (listRelations), as reads through them resolve them (an expansion, a
     * filter or an order through a relation); 404 for no such collection. Kept for up to half a second
     * (ReadCache), and forgotten when this store changes relations or collections.
     */
    findRelations(accountId: number, collection: string): Promise<Relation[]>;
    /** Wake-ups after each committed change of a collection, this instance's and, on PostgreSQL, every other's. */
    changes: WakeUps;
    /** Each wait for a connection of the database, as it ends (waits.ts): what the metrics show of the pools. */
    waits: Waits;
    /** The database's Knex, for the CLI's and the tests' own look at it; the service goes through the operations. */
    knex: Knex;
    /** How long another process's writer that has waited `waitedMs` may take to see the database free (Dialect's). */
    writerWakeMs(waitedMs: number): number;
    /** The rows a sweep's batch deletes at most on this database (Dialect's). */
    sweepBatchRows: number;
    /** Writes the key uses noted, waits for the statements under way, then closes every connection; later calls answer 503. */
    close(): Promise<void>;
    /** Whether close() has not begun: the store still serves. */
    isOpen(): boolean;
  };

/**
 * The Store of a dialect: the operations bound to `db`, each with its errors translated by `codes`. Once `close` has begun, every error is the 503 of a closed database.
 */
export function assembleStore(db: PagedDialect, backups: Backups, codes: ErrorCodes, close: () => Promise<void>): Store {
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
  ]) as Omit<
    Store,
    | 'findPrincipal'
    | 'findIssuers'
    | 'findRules'
    | 'findRelations'
    | 'changes'
    | 'waits'
    | 'knex'
    | 'close'
    | 'isOpen'
    | 'backup'
    | 'sweepBatchRows'
  >;
  const compiled = new CompiledRulesCache();
  // By `<account id> <collection>`: a collection's name holds no space.
  const rules = new ReadCache(async (key: string) => {
    const space = key.indexOf(' ');
    const stored = await bound.getRules(Number(key.slice(0, space)), key.slice(space + 1));
    return stored ? compiled.get(stored.collectionId, stored.version, stored.rules) : NO_ACCESS;
  });
  // By `<account id> <collection>`, as the rules.
  const relations = new ReadCache(async (key: string) => {
    const space = key.indexOf(' ');
    return bound.listRelations(Number(key.slice(0, space)), key.slice(space + 1));
  });
  /** Forgets the rules and relations kept: after a change of either, or of the collections, in this process. */
  const forgetShapes = () => {
    rules.forget();
    relations.forget();
  };
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
    findRelations: (accountId, collection) => relations.find(`${accountId} ${collection}`),
    // In this process, a relation declared or removed takes effect at once.
    async putRelation(...args) {
      const put = await bound.putRelation(...args);
      relations.forget();
      return put;
    },
    async deleteRelation(...args) {
      await bound.deleteRelation(...args);
      relations.forget();
    },
    // In this process, changed rules, and a collection made or deleted, take effect at once.
    async putRules(accountId, collection, set, once) {
      const put = await bound.putRules(accountId, collection, set, once);
      forgetShapes();
      return put;
    },
    async deleteRules(accountId, collection, once) {
      await bound.deleteRules(accountId, collection, once);
      forgetShapes();
    },
    async createCollection(...args) {
      const created = await bound.createCollection(...args);
      forgetShapes();
      return created;
    },
    async deleteCollection(...args) {
      await bound.deleteCollection(...args);
      forgetShapes();
    },
    // A declaration changes collections, rules and issuers at once.
    async applyDeclaration(...args) {
      const steps = await bound.applyDeclaration(...args);
      forgetShapes();
      issuers.forget();
      return steps;
    },
    backup: backups.backup,
    changes: db.changes,
    waits: db.waits,
    knex: db.knex,
    writerWakeMs: db.writerWakeMs,
    sweepBatchRows: db.sweepBatchRows,
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
