// A declaration applied (docs/declarations.md): its steps run in one transaction, all or none, each by the
// operation its area runs for one request of the API (createCollection, putSchema, createIndex, putRelation,
// putRules, putCollectionTtl, putIssuer, createWebhook, …: each area's `…In`, which works inside a transaction it is handed),
// never a second copy of it. The account's row is held from the start, so two applies to one account, on
// any instances, run one after the other; every other client sees the account before or after, never
// between. What each step leaves for after the commit (a schema noted, the
// webhooks' worker woken) runs once it has committed.
import { ApiError } from '../../errors.ts';
import type { Ttl } from '../../expiry/ttl.ts';
import type { Rules } from '../../rules/rules.ts';
import { deleteIssuerIn, type IssuerSettings, putIssuerIn } from '../auth/issuers.ts';
import { createCollectionIn } from '../collections/collections.ts';
import { deleteCollectionIn } from '../collections/deletion.ts';
import { createIndexIn, deleteIndexIn } from '../collections/indexes.ts';
import { deleteSchemaIn, putSchemaIn, type RowSchema } from '../collections/schemas.ts';
import { type AfterCommit, afterCommit } from '../engine/after-commit.ts';
import { retryDeadlocks } from '../engine/deadlocks.ts';
import type { WriteTx } from '../engine/dialect.ts';
import type { PagedDialect } from '../engine/read-port.ts';
import { type SortedEntry, slotOf, slotsOfIndex } from '../engine/sorted.ts';
import { lockAccountSql } from '../engine/sql/collections.ts';
import { setSortedOfNameSql } from '../engine/sql/declarations.ts';
import { deleteTtlIn, putTtlIn } from '../expiry/ttl.ts';
import { deleteRelationIn, putRelationIn, type RelationBatch, type RelationDeclaration, relinkBatch } from '../relations/relations.ts';
import { deleteRulesIn, putRulesIn } from '../rules/rules.ts';
import { createWebhookIn, deleteWebhookIn, updateWebhookIn, type WebhookSettings } from '../webhooks/settings.ts';
import { type LiveAccount, readLive } from './live.ts';

/** One step of a declaration's apply, as the operation of its area takes it, and the place in the declaration of what it makes. */
export type Step = { object?: string } & (
  | { do: 'deleteWebhook'; id: number }
  | { do: 'deleteRelation'; collection: string; name: string }
  | { do: 'deleteIndex'; collection: string; name: string }
  | { do: 'deleteRules'; collection: string }
  | { do: 'deleteTtl'; collection: string }
  | { do: 'deleteSchema'; collection: string }
  | { do: 'deleteCollection'; collection: string }
  | { do: 'deleteIssuer'; name: string }
  | { do: 'createCollection'; collection: string; schema?: RowSchema }
  | { do: 'putSchema'; collection: string; schema: RowSchema }
  | { do: 'createIndex'; collection: string; fields: string[]; unique: boolean; search: boolean }
  | { do: 'putRelation'; collection: string; name: string; declaration: RelationDeclaration }
  | { do: 'putRules'; collection: string; rules: Rules }
  | { do: 'putTtl'; collection: string; ttl: Ttl }
  | { do: 'putIssuer'; name: string; settings: IssuerSettings }
  | { do: 'createWebhook'; settings: WebhookSettings; enabled: boolean; secret?: string }
  | { do: 'updateWebhook'; id: number; settings: WebhookSettings; enabled: boolean; secret?: string }
);

/** Bounds the steps are held to: those the API holds one request to. */
export interface ApplyLimits {
  maxCollections: number;
  maxIssuers: number;
  maxWebhooks: number;
}

/**
 * Runs in one transaction the steps `decide` makes of the account as it is once its row is held (read
 * inside the transaction): `decide` refuses (throws) when that is not the account it planned against.
 * Answers the steps run. Tried again from the start when PostgreSQL aborts it as a deadlock.
 */
export async function applyDeclaration(
  db: PagedDialect,
  accountId: number,
  decide: (live: LiveAccount) => Step[] | Promise<Step[]>,
  limits: ApplyLimits,
): Promise<Step[]> {
  let after: AfterCommit = [];
  const steps = await retryDeadlocks(db, () =>
    db.knex.transaction(async (trx) => {
      after = [];
      await db.run(trx, lockAccountSql, [accountId]);
      // Read once held: what another apply committed meanwhile is what this one is checked against.
      const live = await readLive((sql, params) => db.run(trx, sql, params), db.codePointOrder, accountId);
      const steps = await decide(live);
      const batch: RelationBatch = { made: madeBy(steps), relinked: new Set() };
      for (const step of steps)
        await runStep(db, trx, after, accountId, step, limits, batch).catch((error) => Promise.reject(placed(error, step)));
      await relinkBatch(db, trx, after, accountId, batch);
      await sortNewCollections(db, trx, accountId, steps);
      return steps;
    }),
  );
  await afterCommit(after);
  return steps;
}

/**
 * The fields of the sort indexes the steps' new indexes and relations need (fields, and pairs:
 * slotsOfIndex), by collection, in the order the steps name them: those the API's own createIndex and putRelation make (pages ordered or filtered
 * by an index's fields, and rows found through a relation's field, read them).
 */
export function sortedFieldsOf(steps: readonly Step[]): Map<string, SortedEntry[]> {
  const fields = new Map<string, SortedEntry[]>();
  const add = (collection: string, entry: SortedEntry) => {
    const listed = fields.get(collection) ?? [];
    if (slotOf(listed, entry) < 0) listed.push(entry);
    fields.set(collection, listed);
  };
  for (const step of steps) {
    if (step.do === 'createIndex' && !step.search) for (const entry of slotsOfIndex(step.fields)) add(step.collection, entry);
    if (step.do === 'putRelation') add(step.collection, step.declaration.field);
  }
  return fields;
}

/**
 * Lists at once, in the apply's transaction, the sort indexes of each collection the apply makes: it
 * holds no row yet, so there is nothing to key, and the list is all a sort index of it is. (Made after
 * the commit one at a time, each a transaction of its own, as the indexes of collections that hold rows
 * still are, they were most of an apply of a hundred new collections on PostgreSQL.)
 */
async function sortNewCollections(db: PagedDialect, trx: WriteTx, accountId: number, steps: readonly Step[]): Promise<void> {
  const made = madeBy(steps);
  for (const [collection, fields] of sortedFieldsOf(steps)) {
    if (!made.has(collection)) continue;
    const sorted = [...fields].slice(0, db.pages.sortIndexes.max);
    await db.run(trx, setSortedOfNameSql, [JSON.stringify(sorted), accountId, collection]);
  }
}

/** The collections the steps make. */
const madeBy = (steps: readonly Step[]) => new Set(steps.flatMap((step) => (step.do === 'createCollection' ? [step.collection] : [])));

/**
 * The refusal of an area's operation as the refusal of the declaration: its detail led by the place of what
 * the step makes, and the places it names (of a request's body or path) under that place.
 */
function placed(error: unknown, { object }: Step): unknown {
  if (!(error instanceof ApiError) || object === undefined) return error;
  const errors = error.options.errors?.map((held) =>
    'name' in held && (held.in === 'body' || held.in === 'path')
      ? { in: 'body' as const, name: held.in === 'body' ? `${object}${held.name}` : object, message: held.message }
      : held,
  );
  return new ApiError(error.code, `${object}: ${error.detail}`, { ...error.options, ...(errors ? { errors } : {}) });
}

async function runStep(
  db: PagedDialect,
  trx: WriteTx,
  after: AfterCommit,
  accountId: number,
  step: Step,
  limits: ApplyLimits,
  batch: RelationBatch,
): Promise<void> {
  switch (step.do) {
    case 'deleteWebhook':
      return void (await deleteWebhookIn(db, trx, accountId, step.id));
    case 'deleteRelation':
      return deleteRelationIn(db, trx, after, accountId, step.collection, step.name);
    case 'deleteIndex':
      return deleteIndexIn(db, trx, accountId, step.collection, step.name);
    case 'deleteRules':
      return deleteRulesIn(db, trx, accountId, step.collection);
    case 'deleteTtl':
      return deleteTtlIn(db, trx, accountId, step.collection);
    case 'deleteSchema':
      return deleteSchemaIn(db, trx, after, accountId, step.collection);
    case 'deleteCollection':
      return deleteCollectionIn(db, trx, accountId, step.collection);
    case 'deleteIssuer':
      return void (await deleteIssuerIn(db, trx, accountId, step.name));
    case 'createCollection':
      return void (await createCollectionIn(db, trx, accountId, step.collection, limits.maxCollections, undefined, step.schema));
    case 'putSchema':
      return putSchemaIn(db, trx, after, accountId, step.collection, step.schema);
    case 'createIndex':
      return void (await createIndexIn(db, trx, after, accountId, step.collection, step.fields, step.unique, step.search));
    case 'putRelation':
      return void (await putRelationIn(db, trx, after, accountId, step.collection, step.name, step.declaration, batch));
    case 'putRules':
      return putRulesIn(db, trx, accountId, step.collection, step.rules);
    case 'putTtl':
      return putTtlIn(db, trx, accountId, step.collection, step.ttl);
    case 'putIssuer':
      return void (await putIssuerIn(db, trx, accountId, step.name, step.settings, limits.maxIssuers));
    case 'createWebhook':
      return void (await createWebhookIn(db, trx, after, accountId, step.settings, limits.maxWebhooks, step.enabled, step.secret));
    case 'updateWebhook':
      return void (await updateWebhookIn(
        db,
        trx,
        after,
        accountId,
        step.id,
        () => ({ ...step.settings, enabled: step.enabled }),
        step.secret,
      ));
  }
}
