// What a declaration would change (docs/declarations.md): the live account's model and the declared one
// compared, object by object, into changes in the order they are applied (dependency order: what goes
// is removed before what comes is made, a collection made before its indexes and relations, a relation
// declared before the rules and webhooks that may name it), and each change into the steps of its area's
// operations (../db/declarations/apply.ts), with the values they take.
import type { Step } from '../db/declarations/apply.ts';
import type { RowImpact } from '../db/declarations/impacts.ts';
import type { LiveAccount } from '../db/declarations/live.ts';
import { pointerToken } from '../query/filter.ts';
import type { Secrets } from './checks.ts';
import { type HeldSecret, type Model, type ModelCollection, type ModelIssuer, type ModelWebhook, same } from './model.ts';

type ChangeKind = 'collection' | 'schema' | 'index' | 'search_index' | 'relation' | 'rules' | 'ttl' | 'issuer' | 'webhook';

/** One change of a plan (openapi.yaml, DeclarationChange). */
export interface Change {
  action: 'create' | 'update' | 'delete';
  kind: ChangeKind;
  /** Where the object is in a declaration, as a JSON Pointer (an index by its name, a webhook by its url). */
  object: string;
  /** The object as it is (null: none) and as it would be (null: gone); a secret as the variable that holds it. */
  before: unknown;
  after: unknown;
  /** Whether the change deletes stored data: a collection's rows, a webhook's delivery log. */
  destroys_data: boolean;
  /** What it does to stored rows, when it would refuse some: a unique index's duplicates, or the rows a schema or relation refuses. */
  rows?: Omit<RowImpact, 'object'>;
}

/**
 * The phases of an apply, in order: each change's steps go into the phases of what they do, so that
 * what is removed (a relation replaced, an index remade) is gone before what is made needs its place.
 * A time to live is removed before relations are declared (a relation may restrict deletes of rows that
 * no longer expire), and set after (once a relation that restricted them is replaced), its schema set.
 */
const PHASES = [
  'deleteWebhook',
  'deleteTtl',
  'deleteRelation',
  'deleteIndex',
  'deleteRules',
  'deleteSchema',
  'deleteCollection',
  'deleteIssuer',
  'createCollection',
  'putSchema',
  'createIndex',
  'putRelation',
  'putTtl',
  'putRules',
  'putIssuer',
  'createWebhook',
  'updateWebhook',
] as const satisfies readonly Step['do'][];

interface Planned {
  change: Change;
  steps: Step[];
}

/** The changes that make the account `live` (whose model is `current`) the model `target`, and the steps that make them. */
export function planChanges(target: Model, current: Model, live: LiveAccount, secrets: Secrets): { changes: Change[]; steps: Step[] } {
  const planned: Planned[] = [];
  if (target.collections) planCollections(planned, target.collections, current.collections ?? {});
  if (target.issuers) planIssuers(planned, target.issuers, current.issuers ?? {}, live, secrets);
  if (target.webhooks) planWebhooks(planned, target.webhooks, current.webhooks ?? {}, live, secrets);
  const phaseOf = (step: Step) => PHASES.indexOf(step.do);
  // A change is listed in the phase of its last step: a replaced relation where it is declared anew.
  const listed = planned.map((each, order) => ({ each, order, phase: Math.max(...each.steps.map(phaseOf)) }));
  listed.sort((a, b) => a.phase - b.phase || a.order - b.order);
  const steps = planned
    .flatMap((each) => each.steps.map((step): Step => ({ ...step, object: each.change.object })))
    .map((step, order) => ({ step, order }));
  steps.sort((a, b) => phaseOf(a.step) - phaseOf(b.step) || a.order - b.order);
  return { changes: listed.map(({ each }) => each.change), steps: steps.map(({ step }) => step) };
}

function change(kind: ChangeKind, object: string, before: unknown, after: unknown, destroys = false): Change {
  const action = before === null ? 'create' : after === null ? 'delete' : 'update';
  return { action, kind, object, before, after, destroys_data: destroys };
}

function planCollections(planned: Planned[], target: Record<string, ModelCollection>, current: Record<string, ModelCollection>): void {
  for (const name of Object.keys(current)) {
    if (target[name]) continue;
    planned.push({
      change: change('collection', `/collections/${pointerToken(name)}`, { name }, null, true),
      steps: [{ do: 'deleteCollection', collection: name }],
    });
  }
  for (const [name, wanted] of Object.entries(target)) {
    const now = current[name];
    const at = `/collections/${pointerToken(name)}`;
    if (!now) {
      const schema = wanted.schema ?? undefined;
      planned.push({
        change: change('collection', at, null, { name, ...(schema ? { schema } : {}) }),
        steps: [{ do: 'createCollection', collection: name, ...(schema ? { schema } : {}) }],
      });
    } else if (!same(now.schema, wanted.schema)) {
      planned.push({
        change: change('schema', `${at}/schema`, now.schema, wanted.schema),
        steps: [wanted.schema ? { do: 'putSchema', collection: name, schema: wanted.schema } : { do: 'deleteSchema', collection: name }],
      });
    }
    planParts(planned, name, wanted, now ?? { schema: null, indexes: {}, search: null, relations: {}, rules: null, ttl: null });
  }
}

/** The changes of a collection's indexes, search index, relations, rules and time to live. */
function planParts(planned: Planned[], name: string, wanted: ModelCollection, now: ModelCollection): void {
  const at = `/collections/${pointerToken(name)}`;
  planMembers(planned, 'index', `${at}/indexes`, now.indexes, wanted.indexes, (index, before, after) => [
    ...(before ? [{ do: 'deleteIndex', collection: name, name: index } as const] : []),
    ...(after ? [{ do: 'createIndex', collection: name, fields: after.fields, unique: after.unique, search: false } as const] : []),
  ]);
  if (!same(now.search, wanted.search)) {
    const steps: Step[] = [];
    if (now.search) steps.push({ do: 'deleteIndex', collection: name, name: `search:${now.search.fields.join(',')}` });
    if (wanted.search) steps.push({ do: 'createIndex', collection: name, fields: wanted.search.fields, unique: false, search: true });
    planned.push({ change: change('search_index', `${at}/search`, now.search, wanted.search), steps });
  }
  planMembers(planned, 'relation', `${at}/relations`, now.relations, wanted.relations, (relation, before, after) => [
    ...(before ? [{ do: 'deleteRelation', collection: name, name: relation } as const] : []),
    ...(after ? [{ do: 'putRelation', collection: name, name: relation, declaration: after } as const] : []),
  ]);
  if (!same(now.rules, wanted.rules)) {
    planned.push({
      change: change('rules', `${at}/rules`, now.rules, wanted.rules),
      steps: [wanted.rules ? { do: 'putRules', collection: name, rules: wanted.rules } : { do: 'deleteRules', collection: name }],
    });
  }
  if (!same(now.ttl, wanted.ttl)) {
    planned.push({
      change: change('ttl', `${at}/ttl`, now.ttl, wanted.ttl),
      steps: [wanted.ttl ? { do: 'putTtl', collection: name, ttl: wanted.ttl } : { do: 'deleteTtl', collection: name }],
    });
  }
}

/** The changes of the members of a collection's part known by name (its indexes, its relations), each made by `steps`. */
function planMembers<T>(
  planned: Planned[],
  kind: ChangeKind,
  at: string,
  now: Record<string, T>,
  wanted: Record<string, T>,
  steps: (name: string, before: T | null, after: T | null) => Step[],
): void {
  for (const name of new Set([...Object.keys(now), ...Object.keys(wanted)])) {
    const before = now[name] ?? null;
    const after = wanted[name] ?? null;
    if (!same(before, after))
      planned.push({ change: change(kind, `${at}/${pointerToken(name)}`, before, after), steps: steps(name, before, after) });
  }
}

/** A secret as a plan shows it: the variable it is read from, or that one is held. */
const shownSecret = (secret: HeldSecret | null) => (secret === null ? null : secret.env ? { env: secret.env } : '(held)');
/** Two secrets are the same when their values are, wherever they are read from. */
const sameSecret = (a: HeldSecret | null, b: HeldSecret | null) => (a?.digest ?? null) === (b?.digest ?? null);

function shownIssuer({ issuer, audiences, jwks_uri, discovery_url, secret }: ModelIssuer) {
  return {
    issuer,
    audiences,
    ...(jwks_uri ? { jwks_uri } : {}),
    ...(discovery_url ? { discovery_url } : {}),
    ...(secret ? { secret: shownSecret(secret) } : {}),
  };
}

function planIssuers(
  planned: Planned[],
  target: Record<string, ModelIssuer>,
  current: Record<string, ModelIssuer>,
  live: LiveAccount,
  secrets: Secrets,
) {
  for (const name of Object.keys(current)) {
    if (target[name]) continue;
    planned.push({
      change: change('issuer', `/issuers/${pointerToken(name)}`, shownIssuer(current[name]), null),
      steps: [{ do: 'deleteIssuer', name }],
    });
  }
  for (const [name, wanted] of Object.entries(target)) {
    const now = current[name];
    if (now && same({ ...now, secret: null }, { ...wanted, secret: null }) && sameSecret(now.secret, wanted.secret)) continue;
    // The secret's value: read from its variable, or the one the issuer holds when that is unset.
    const held = live.issuers.find((issuer) => issuer.name === name)?.secret ?? null;
    const secret = wanted.secret ? ((wanted.secret.env ? secrets(wanted.secret.env) : undefined) ?? held) : null;
    const { issuer, audiences, jwks_uri, discovery_url } = wanted;
    planned.push({
      change: change('issuer', `/issuers/${pointerToken(name)}`, now ? shownIssuer(now) : null, shownIssuer(wanted)),
      steps: [{ do: 'putIssuer', name, settings: { issuer, audiences, jwks_uri, discovery_url, secret } }],
    });
  }
}

function shownWebhook({ secret, ...webhook }: ModelWebhook) {
  return { ...webhook, ...(secret?.env ? { secret: shownSecret(secret) } : {}) };
}

function planWebhooks(
  planned: Planned[],
  target: Record<string, ModelWebhook>,
  current: Record<string, ModelWebhook>,
  live: LiveAccount,
  secrets: Secrets,
) {
  const standing = new Map<string, number>();
  for (const webhook of live.webhooks) {
    // The first webhook of each url stands for it; another of the same url is none the declaration can name.
    if (target[webhook.url] && !standing.has(webhook.url)) {
      standing.set(webhook.url, webhook.id);
      continue;
    }
    planned.push({
      change: change('webhook', `/webhooks/${pointerToken(webhook.url)}`, { url: webhook.url, id: webhook.id }, null, true),
      steps: [{ do: 'deleteWebhook', id: webhook.id }],
    });
  }
  for (const [url, wanted] of Object.entries(target)) {
    const id = standing.get(url);
    const held = live.webhooks.find((webhook) => webhook.id === id);
    const secret = wanted.secret?.env ? secrets(wanted.secret.env) : undefined;
    const { collections, events, filter, description, enabled } = wanted;
    const settings = { url, collections, events, filter, description };
    if (id === undefined || !held) {
      planned.push({
        change: change('webhook', `/webhooks/${pointerToken(url)}`, null, shownWebhook(wanted)),
        steps: [{ do: 'createWebhook', settings, enabled, ...(secret === undefined ? {} : { secret }) }],
      });
      continue;
    }
    const now = { ...current[url], secret: wanted.secret };
    const secretChanged = secret !== undefined && secret !== held.secret;
    if (same(now, wanted) && !secretChanged) continue;
    planned.push({
      change: change('webhook', `/webhooks/${pointerToken(url)}`, shownWebhook({ ...now, secret: null }), shownWebhook(wanted)),
      steps: [{ do: 'updateWebhook', id, settings, enabled, ...(secretChanged ? { secret } : {}) }],
    });
  }
}
