// A declaration planned, applied and pulled (docs/declarations.md), above the Store: `rowbase plan`,
// `apply` and `pull`, and POST /v1/declaration/plan and /apply (openapi.yaml, the `declaration` tag), all
// through here. A plan says what would change and what it was made against (a digest of each object
// of the live account); applying it refuses (409) a live account that has drifted from that.
import { createHash } from 'node:crypto';
import type { Config } from '../config.ts';
import { type Step, sortedFieldsOf } from '../db/declarations/apply.ts';
import type { RowCheck } from '../db/declarations/impacts.ts';
import type { LiveAccount } from '../db/declarations/live.ts';
import type { Store } from '../db/open-store.ts';
import { ApiError, conflict } from '../errors.ts';
import { expiryNow } from '../expiry/ttl.ts';
import { pointerToken } from '../query/filter.ts';
import type { RowSchema } from '../schema/check.ts';
import { type Change, planChanges } from './changes.ts';
import { type CheckOptions, compileSchemas, type SchemaToCompile, type Secrets, targetOf } from './checks.ts';
import { type ContractDiff, contractDiffAside } from './contract.ts';
import { type Declaration, place, readDeclaration } from './format.ts';
import { canonical, declarationOfLive, type Model, modelOfLive } from './model.ts';

/** What `rowbase plan -o` writes and `rowbase apply` reads (openapi.yaml, DeclarationPlan). */
export interface Plan {
  format: 'rowbase-plan';
  version: 1;
  /** What was declared, its secrets as the variables that hold them. */
  declaration: Declaration;
  /** A digest of each object of the live account the plan was made against, by its place in a declaration. */
  live: Record<string, string>;
  /** What applying it would change, in the order it would. */
  changes: Change[];
  /** What it would change of the account's documents, when the documents were given (PlanOptions.documents). */
  contract?: ContractDiff;
}

/** Bounds and options of a plan and its apply. */
export interface PlanOptions extends CheckOptions {
  /** The most collections an account holds (ROWBASE_MAX_COLLECTIONS_PER_ACCOUNT). */
  maxCollections: number;
  /** The most webhooks an account holds (ROWBASE_MAX_WEBHOOKS_PER_ACCOUNT). */
  maxWebhooks: number;
  /** The texts of openapi.yaml and asyncapi.yaml, to plan the change of the account's documents; none by default. */
  documents?: { openapi: string; asyncapi: string };
}

/** The bounds and options of a plan as the service's configuration sets them. */
export function planOptionsOf(config: Pick<Config, 'maxCollectionsPerAccount' | 'maxWebhooksPerAccount' | 'webhooksAllowPrivate'>) {
  return {
    maxCollections: config.maxCollectionsPerAccount,
    maxWebhooks: config.maxWebhooksPerAccount,
    allowPrivate: config.webhooksAllowPrivate,
  } satisfies PlanOptions;
}

/** A plan made earlier (its shape checked: openapi.yaml, DeclarationPlan), its declaration read again as a declaration's file is. */
export async function storedPlan<P extends Plan>(plan: P): Promise<P> {
  return { ...plan, declaration: await readDeclaration(plan.declaration) };
}

/** The most token issuers an account holds (openapi.yaml, putIssuer). */
const MAX_ISSUERS = 20;

const digest = (value: unknown) => createHash('sha256').update(canonical(value)).digest('hex').slice(0, 32);

/** A digest of each object of `model`, by its place in a declaration. */
function digestsOf(model: Model): Record<string, string> {
  const digests: Record<string, string> = {};
  for (const [name, collection] of Object.entries(model.collections ?? {}))
    digests[`/collections/${pointerToken(name)}`] = digest(collection);
  for (const [name, issuer] of Object.entries(model.issuers ?? {})) digests[`/issuers/${pointerToken(name)}`] = digest(issuer);
  for (const [url, webhook] of Object.entries(model.webhooks ?? {})) digests[`/webhooks/${pointerToken(url)}`] = digest(webhook);
  return digests;
}

/** The places of the objects whose digests differ between `planned` and `now`, those gone or come included. */
function drifted(planned: Record<string, string>, now: Record<string, string>): string[] {
  return [...new Set([...Object.keys(planned), ...Object.keys(now)])].filter((place) => planned[place] !== now[place]).sort();
}

/** The reads of stored rows the changes need: of collections that are there, a unique index made, a schema set, a relation declared, a time to live set. */
function rowChecks(changes: readonly Change[], current: Model): RowCheck[] {
  const checks: RowCheck[] = [];
  for (const { kind, object, after } of changes) {
    const collection = /^\/collections\/([^/]+)/.exec(object)?.[1]?.replaceAll('~1', '/').replaceAll('~0', '~');
    if (after === null || collection === undefined || !current.collections?.[collection]) continue;
    if (kind === 'index' && (after as { unique: boolean }).unique)
      checks.push({ object, collection, unique: (after as { fields: string[] }).fields });
    if (kind === 'schema') checks.push({ object, collection, schema: after as RowSchema });
    if (kind === 'relation') checks.push({ object, collection, relation: after as { field: string; collection: string } });
    if (kind === 'ttl') checks.push({ object, collection, ttl: (after as { field: string }).field });
  }
  return checks;
}

/**
 * The plan of `declaration` (read already: parseDeclaration) for the account, as it is now. The new
 * schemas are compiled (the last of their checks, most of the checks' time) while the contract's diff
 * runs in its worker; when one does not compile, the declaration is checked again in order, so that the
 * refusal is the one of its first place wrong, as when each schema is compiled as it is checked.
 */
export async function makePlan(store: Store, accountId: number, declaration: Declaration, secrets: Secrets, options: PlanOptions) {
  const live = await store.readAccountModel(accountId);
  const current = modelOfLive(live);
  const toCompile: SchemaToCompile[] = [];
  const target = await targetOf(declaration, current, secrets, { ...options, toCompile });
  const contract = options.documents ? contractDiffAside(current, target, options.documents) : undefined;
  // Its failure is the plan's once the schemas have compiled, not before: awaited below.
  contract?.catch(() => {});
  try {
    await compileSchemas(toCompile);
  } catch (error) {
    await targetOf(declaration, current, secrets, options);
    throw error;
  }
  const { changes } = planChanges(target, current, live, secrets);
  const impacts = await store.declaredRowImpacts(accountId, rowChecks(changes, current), expiryNow());
  for (const { object, ...rows } of impacts) {
    const change = changes.find((each) => each.object === object);
    if (!change) continue;
    change.rows = rows;
    // A time to live over rows already past their time deletes them: data the apply destroys.
    if (change.kind === 'ttl') change.destroys_data = true;
  }
  const plan: Plan = { format: 'rowbase-plan', version: 1, declaration, live: digestsOf(current), changes };
  if (contract) plan.contract = await contract;
  return plan;
}

/**
 * Applies `plan` in one transaction, all or nothing: 409 when it destroys data and `allowDestructive` is
 * not set, when the account has drifted from what it was made against (naming what drifted), or when it
 * would now change other than it said (a secret's variable set to another value meanwhile). Answers the
 * changes made, and makes the sort indexes of the fields the new indexes and relations are over.
 */
export async function applyPlan(
  store: Store,
  accountId: number,
  plan: Plan,
  secrets: Secrets,
  options: PlanOptions & { allowDestructive?: boolean },
): Promise<Change[]> {
  const destroying = plan.changes.filter((change) => change.destroys_data);
  if (destroying.length > 0 && !options.allowDestructive)
    throw conflict(
      `The plan destroys data (${destroying.map((change) => change.object).join(', ')}): apply it with --allow-destructive (allow_destructive=true) to go on.`,
    );
  // The declaration's model, made against the account as it is before the transaction; checked again in it.
  const target = await targetOf(plan.declaration, modelOfLive(await store.readAccountModel(accountId)), secrets, options);
  const decide = (live: LiveAccount): Step[] => {
    const current = modelOfLive(live);
    const moved = drifted(plan.live, digestsOf(current));
    if (moved.length > 0)
      throw new ApiError('conflict', `The account has changed since the plan was made: ${moved.join(', ')}. Make the plan again.`, {
        errors: moved.map((object) => place(object, 'has changed since the plan was made')),
      });
    const { changes, steps } = planChanges(target, current, live, secrets);
    if (canonical(changes) !== canonical(plan.changes.map(ofTheModel)))
      throw conflict('The declaration would now change other than the plan says (a secret set to another value?): make the plan again.');
    return steps;
  };
  const steps = await store.applyDeclaration(accountId, decide, {
    maxCollections: options.maxCollections,
    maxIssuers: MAX_ISSUERS,
    maxWebhooks: options.maxWebhooks,
  });
  await makeSortIndexes(store, accountId, steps);
  return plan.changes;
}

/** A change of a plan without what its stored rows made of it (its `rows`, and a time to live's `destroys_data`): as planChanges() makes it. */
const ofTheModel = ({ rows, ...change }: Change): Change => (change.kind === 'ttl' ? { ...change, destroys_data: false } : change);

/** Sort indexes made at once, of different collections (each its own transaction, which holds only its collection's writes). */
const SORT_INDEXES_AT_ONCE = 4;

/**
 * Makes the sort indexes of the fields the new indexes and relations of `steps` are over, as the API's
 * own operations make them (sortedFieldsOf), in the collections the apply did not make (those it made
 * have theirs listed in its transaction: they hold no row to key): each collection's one after another,
 * SORT_INDEXES_AT_ONCE collections at once. One at a time, a hundred collections' took most of their
 * apply on PostgreSQL, each a transaction of a few round trips that waited for the one before.
 */
async function makeSortIndexes(store: Store, accountId: number, steps: readonly Step[]): Promise<void> {
  const made = new Set(steps.flatMap((step) => (step.do === 'createCollection' ? [step.collection] : [])));
  const waiting = [...sortedFieldsOf(steps)].filter(([collection]) => !made.has(collection));
  const worker = async () => {
    for (let next = waiting.shift(); next !== undefined; next = waiting.shift()) {
      for (const field of next[1]) await store.sortBy(accountId, next[0], field);
    }
  };
  await Promise.all(Array.from({ length: SORT_INDEXES_AT_ONCE }, worker));
}

/** The account as a declaration (`rowbase pull`): planned against it, it changes nothing. */
export async function pullDeclaration(store: Store, accountId: number): Promise<Declaration> {
  return declarationOfLive(await store.readAccountModel(accountId));
}
