// What a declaration means (docs/declarations.md): its parts checked as the API checks each (a schema, rules,
// a filter, a URL), then as a whole against the live account (what it names exists, its relations hold),
// and made the model a plan compares (model.ts). Every refusal is a 400 whose errors name each place wrong
// by a JSON Pointer into the declaration.
import { setImmediate as yieldToRequests } from 'node:timers/promises';
import { cascadesTo } from '../db/relations/relations.ts';
import { ApiError, type FieldError, validationFailed } from '../errors.ts';
import { checkTtlField } from '../expiry/ttl.ts';
import { holdsRelated, holdsSearch, parseFilter, pointerToken } from '../query/filter.ts';
import { checkRules } from '../rules/rules.ts';
import { checkRowSchema, checkRowSchemaBeforeCompiling, compileToCheck, type RowSchema } from '../schema/check.ts';
import { urlProblem } from '../webhooks/address.ts';
import type { Declaration, DeclaredCollection, DeclaredIssuer, DeclaredWebhook, OnDelete, SecretRef } from './format.ts';
import { place } from './format.ts';
import {
  digestOf,
  EVENT_KINDS,
  type HeldSecret,
  type Model,
  type ModelCollection,
  type ModelIssuer,
  type ModelWebhook,
  same,
} from './model.ts';

/** Indexes a collection may have at most, its search index counted (openapi.yaml, createIndex). */
const MAX_INDEXES = 8;
/** Relations a collection takes part in at most, both directions counted (openapi.yaml, putRelation). */
const MAX_RELATIONS = 16;

/** How long the checks of a declaration's collections run before letting other requests' work go first (targetOf). */
const CHECKS_AT_ONCE_MS = 20;

/** Where a declaration's secrets are read: the value of an environment variable, or undefined when it is not set. */
export type Secrets = (env: string) => string | undefined;

export interface CheckOptions {
  /** Whether URLs may name private addresses (ROWBASE_WEBHOOKS_ALLOW_PRIVATE); default false. */
  allowPrivate?: boolean;
  /**
   * When given, a new schema is checked but for its compile (checkRowSchema's last step, most of the
   * checks' time), and listed here to be compiled later (compileSchemas). Default: none, each compiled at once.
   */
  toCompile?: SchemaToCompile[];
}

/** A declared schema the checks left to compile, and its place in the declaration. */
export interface SchemaToCompile {
  schema: RowSchema;
  /** The digest of its text (checkRowSchemaBeforeCompiling). */
  digest: string;
  at: string;
}

/**
 * The model `declaration` asks for, over the live account `current` (sections it leaves out are taken
 * from there): 400 naming each place for a part the API would refuse, a relation or webhook naming a
 * collection neither declared nor existing, two relations of one field, cascades that come back to where
 * they start, an index over a field the schema makes an object or array, a time to live over a field the
 * schema cannot hold a date-time in or over rows a relation restricts deletes of, a secret whose variable
 * is unset where nothing holds it yet.
 */
export async function targetOf(declaration: Declaration, current: Model, secrets: Secrets, options: CheckOptions = {}): Promise<Model> {
  let collections: Record<string, ModelCollection> | undefined;
  if (declaration.collections !== undefined) {
    const made: Record<string, ModelCollection> = {};
    // A new schema is compiled to be checked, milliseconds each: the requests of others go between.
    await yieldingBetween(Object.entries(declaration.collections), ([name, declared]) => {
      made[name] = collectionOf(name, declared, current.collections?.[name], options.toCompile);
    });
    collections = made;
  }
  const names = new Set(Object.keys(collections ?? current.collections ?? {}));
  if (collections) checkRelations(collections, names);
  const issuers =
    declaration.issuers === undefined
      ? undefined
      : Object.fromEntries(
          await Promise.all(
            Object.entries(declaration.issuers).map(async ([name, declared]) => [
              name,
              await issuerOf(name, declared, current.issuers?.[name], secrets, options),
            ]),
          ),
        );
  const webhooks =
    declaration.webhooks === undefined ? undefined : await webhooksOf(declaration.webhooks, names, current, secrets, options);
  return {
    ...(collections ? { collections } : {}),
    ...(issuers ? { issuers } : {}),
    ...(webhooks ? { webhooks } : {}),
  };
}

/** The errors of `error`, a 400 of the API about a part of the declaration, each placed under `under`. */
function within(error: unknown, under: string): never {
  if (!(error instanceof ApiError) || error.code !== 'validation_failed') throw error;
  const errors = (error.options.errors ?? []).map((held) =>
    'name' in held ? { ...held, in: 'body' as const, name: `${under}${held.name}` } : held,
  );
  throw validationFailed(error.detail, errors as FieldError[]);
}

/**
 * The collection `name` as declared, each part checked as the API checks it; a schema or rules the same
 * as the collection holds now (`held`) were checked when they were set, and are not again (compiling a
 * schema is most of a plan's time over many collections).
 */
function collectionOf(
  name: string,
  declared: DeclaredCollection,
  held: ModelCollection | undefined,
  toCompile: SchemaToCompile[] | undefined,
): ModelCollection {
  const at = `/collections/${pointerToken(name)}`;
  const kept = (part: 'schema' | 'rules') => held?.[part] != null && same(declared[part], held[part]);
  const schema =
    declared.schema === undefined ? null : kept('schema') ? (held?.schema ?? null) : newSchema(declared.schema, `${at}/schema`, toCompile);
  let rules: ModelCollection['rules'] = kept('rules') ? (held?.rules ?? null) : null;
  if (declared.rules !== undefined && rules === null) {
    try {
      rules = checkRules(declared.rules);
    } catch (error) {
      within(error, `${at}/rules`);
    }
  }
  const indexes: ModelCollection['indexes'] = {};
  for (const [position, { fields, unique }] of (declared.indexes ?? []).entries()) {
    const indexName = fields.join(',');
    if (indexes[indexName])
      throw validationFailed(`Collection ${name} declares two indexes of ${indexName}.`, [
        place(`${at}/indexes/${position}`, 'repeats an index'),
      ]);
    indexes[indexName] = { fields, unique: unique ?? false };
    refuseNonScalar(schema, fields, `${at}/indexes/${position}/fields`);
  }
  if (declared.search) refuseNonScalar(schema, declared.search.fields, `${at}/search/fields`, ['array']);
  const count = Object.keys(indexes).length + (declared.search ? 1 : 0);
  if (count > MAX_INDEXES)
    throw validationFailed(
      `Collection ${name} declares ${count} indexes, more than the ${MAX_INDEXES} it may have, its search index counted.`,
      [place(`${at}/indexes`, `holds ${count} indexes with the search index`)],
    );
  const relations: ModelCollection['relations'] = {};
  for (const [relation, { field, collection, on_delete, reverse }] of Object.entries(declared.relations ?? {})) {
    relations[relation] = { field, collection, on_delete: on_delete ?? 'restrict', reverse: reverse ?? null };
  }
  const ttl = declared.ttl ? { field: declared.ttl.field } : null;
  // As putCollectionTtl refuses it: a field the declared schema cannot hold a date-time in.
  if (ttl) {
    try {
      checkTtlField(ttl.field, schema ?? undefined);
    } catch (error) {
      within(error, `${at}/ttl`);
    }
  }
  return { schema, indexes, search: declared.search ? { fields: declared.search.fields } : null, relations, rules, ttl };
}

/** A new schema checked (checkRowSchema), or, with `toCompile`, checked but for its compile, which is listed there unless done before. */
function newSchema(declared: unknown, at: string, toCompile: SchemaToCompile[] | undefined): RowSchema {
  if (!toCompile) return checkRowSchema(declared, at);
  const { checked, digest } = checkRowSchemaBeforeCompiling(declared, at);
  if (digest !== undefined) toCompile.push({ schema: checked, digest, at });
  return checked;
}

/**
 * Compiles the schemas the checks left to compile (CheckOptions.toCompile), in order, letting other
 * requests' work go first every CHECKS_AT_ONCE_MS: 400 for the first that does not compile, as
 * checkRowSchema refuses it.
 */
export async function compileSchemas(toCompile: readonly SchemaToCompile[]): Promise<void> {
  await yieldingBetween(toCompile, ({ schema, digest, at }) => compileToCheck(schema, digest, at));
}

/** Runs `work` on each of `items` in order, letting other requests' work go first every CHECKS_AT_ONCE_MS. */
async function yieldingBetween<T>(items: Iterable<T>, work: (item: T) => void): Promise<void> {
  let since = performance.now();
  for (const item of items) {
    work(item);
    if (performance.now() - since > CHECKS_AT_ONCE_MS) {
      await yieldToRequests();
      since = performance.now();
    }
  }
}

/** 400 for an index over a field that `schema` types as an object or array only (a search index's words may be in an array). */
function refuseNonScalar(schema: RowSchema | null, fields: readonly string[], at: string, allowed: string[] = []): void {
  const properties = ((schema as { properties?: unknown } | null)?.properties ?? {}) as Record<string, { type?: string | string[] }>;
  for (const [position, field] of fields.entries()) {
    const type = properties[field]?.type;
    const types = type === undefined ? [] : Array.isArray(type) ? type : [type];
    const whole = types.filter((held) => held !== 'null' && !allowed.includes(held));
    if (types.length > 0 && whole.length > 0 && whole.every((held) => held === 'object' || held === 'array'))
      throw validationFailed(`An index is over scalar fields, and the schema makes ${field} ${whole.join(' or ')}.`, [
        place(`${at}/${position}`, `is ${whole.join(' or ')} by the schema: an index keys scalar values`),
      ]);
  }
}

/**
 * 400 for a relation to a collection that will not be there, two relations of one field, a relation
 * restricting deletes of rows that expire, or a circle of cascades.
 */
function checkRelations(collections: Record<string, ModelCollection>, names: ReadonlySet<string>): void {
  const declared: { onDelete: OnDelete; source: string; target: string; at: string }[] = [];
  for (const [name, { relations }] of Object.entries(collections)) {
    const holders = new Map<string, string>();
    for (const [relation, { field, collection, on_delete }] of Object.entries(relations)) {
      const at = `/collections/${pointerToken(name)}/relations/${pointerToken(relation)}`;
      if (!names.has(collection))
        throw validationFailed(`Relation ${relation} of ${name} names collection ${collection}, which is neither declared nor there.`, [
          place(`${at}/collection`, 'names no collection declared'),
        ]);
      const holder = holders.get(field);
      if (holder !== undefined)
        throw validationFailed(`Field ${field} of ${name} holds two relations, ${holder} and ${relation}.`, [
          place(`${at}/field`, `holds the relation ${holder} already`),
        ]);
      holders.set(field, relation);
      declared.push({ onDelete: on_delete, source: name, target: collection, at: `${at}/on_delete` });
    }
  }
  // As putRelation refuses them: a collection in more than MAX_RELATIONS, both directions counted.
  for (const name of Object.keys(collections)) {
    const count =
      declared.filter((relation) => relation.source === name).length + declared.filter((relation) => relation.target === name).length;
    if (count > MAX_RELATIONS)
      throw validationFailed(
        `Collection ${name} takes part in ${count} relations, more than the ${MAX_RELATIONS} it may, both directions counted.`,
        [place(`/collections/${pointerToken(name)}/relations`, `takes part in ${count} relations with those naming it`)],
      );
  }
  // As putRelation and putCollectionTtl refuse them: a relation that restricts deletes of rows that expire.
  const restricting = declared.find((relation) => relation.onDelete === 'restrict' && collections[relation.target]?.ttl);
  if (restricting)
    throw validationFailed(
      `Collection ${restricting.target}'s rows expire (its ttl): an expiry is a delete no one can refuse, so no relation may restrict it.`,
      [place(restricting.at, 'must be cascade or set_null: the related rows expire')],
    );
  // As putRelation refuses one: a cascade whose related rows' deletion comes back to its own collection.
  const cycle = declared.find((relation) => relation.onDelete === 'cascade' && cascadesTo(declared, relation.source, relation.target));
  if (cycle)
    throw validationFailed(
      `Deleting a row of ${cycle.target} would cascade back to ${cycle.target}: declare a relation of the circle with restrict or set_null.`,
      [place(cycle.at, 'makes a circle of cascades')],
    );
}

/** A declared secret as compared: its value's digest, or, its variable unset, the one held now (`held`); 400 when nothing holds one. */
function secretOf(ref: SecretRef, held: HeldSecret | null | undefined, secrets: Secrets, at: string, required: boolean): HeldSecret | null {
  const value = secrets(ref.env);
  if (value !== undefined) return { env: ref.env, digest: digestOf(value) };
  if (held) return { env: ref.env, digest: held.digest };
  if (!required) return null;
  throw validationFailed(`The environment variable ${ref.env} is not set, and nothing holds this secret yet.`, [
    place(`${at}/env`, `names ${ref.env}, which is not set`),
  ]);
}

async function checkUrl(url: string, at: string, options: CheckOptions): Promise<void> {
  const problem = await urlProblem(url, options.allowPrivate ?? false);
  if (problem) throw validationFailed(`The URL at ${at} ${problem}.`, [place(at, problem)]);
}

async function issuerOf(name: string, declared: DeclaredIssuer, held: ModelIssuer | undefined, secrets: Secrets, options: CheckOptions) {
  const at = `/issuers/${pointerToken(name)}`;
  for (const source of ['jwks_uri', 'discovery_url'] as const) {
    const url = declared[source];
    if (url !== undefined) await checkUrl(url, `${at}/${source}`, options);
  }
  const secret = declared.secret ? secretOf(declared.secret, held?.secret, secrets, `${at}/secret`, true) : null;
  if (secret && declared.secret) {
    const value = secrets(declared.secret.env);
    if (value !== undefined && [...value].length < 32)
      throw validationFailed(`The secret in ${declared.secret.env} is shorter than the 32 characters an HS256 key must have.`, [
        place(`${at}/secret/env`, 'names a secret shorter than 32 characters'),
      ]);
  }
  return {
    issuer: declared.issuer,
    audiences: [...declared.audiences].sort(),
    jwks_uri: declared.jwks_uri ?? null,
    discovery_url: declared.discovery_url ?? null,
    secret,
  } satisfies ModelIssuer;
}

/** Standard Webhooks' secret: `whsec_` and the base64 of its bytes (24 or more; src/webhooks/send.ts signs with them). */
const webhookSecret = /^whsec_(?:[A-Za-z0-9+/]{4}){8,}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** 400 for a webhook's secret, when its variable is set, that is no secret of Standard Webhooks. */
function checkWebhookSecret(value: string | undefined, env: string, at: string): void {
  if (value === undefined || webhookSecret.test(value)) return;
  throw validationFailed(`The secret in ${env} is no webhook secret: whsec_ and the base64 of 24 bytes or more.`, [
    place(at, 'names no secret of the form whsec_ and base64'),
  ]);
}

async function webhooksOf(
  declared: readonly DeclaredWebhook[],
  names: ReadonlySet<string>,
  current: Model,
  secrets: Secrets,
  options: CheckOptions,
) {
  const webhooks: Record<string, ModelWebhook> = {};
  for (const [index, webhook] of declared.entries()) {
    const at = `/webhooks/${index}`;
    if (webhooks[webhook.url])
      throw validationFailed(`Two webhooks have the url ${webhook.url}.`, [place(`${at}/url`, 'repeats the url of another webhook')]);
    await checkUrl(webhook.url, `${at}/url`, options);
    const unknown = (webhook.collections ?? []).findIndex((name) => !names.has(name));
    if (unknown >= 0)
      throw validationFailed(`A webhook names collection ${webhook.collections?.[unknown]}, which is neither declared nor there.`, [
        place(`${at}/collections/${unknown}`, 'names no collection declared'),
      ]);
    const filter = webhook.filter ?? null;
    if (filter !== null) {
      const parsed = parseFilter(filter, { in: 'body', name: `${at}/filter` });
      if (holdsRelated(parsed) || holdsSearch(parsed))
        throw validationFailed("A webhook's filter names fields of the row and their values: no $match, $some or $search.", [
          place(`${at}/filter`, 'reaches into related rows or searches'),
        ]);
    }
    if (webhook.secret) checkWebhookSecret(secrets(webhook.secret.env), webhook.secret.env, `${at}/secret/env`);
    webhooks[webhook.url] = {
      url: webhook.url,
      collections: webhook.collections ? [...webhook.collections].sort() : null,
      events: EVENT_KINDS.filter((kind) => (webhook.events ?? EVENT_KINDS).includes(kind)),
      filter,
      description: webhook.description ?? null,
      enabled: webhook.enabled ?? true,
      // A webhook that names no secret keeps the one it has (a new one is given one).
      secret: webhook.secret
        ? secretOf(webhook.secret, current.webhooks?.[webhook.url]?.secret, secrets, `${at}/secret`, false)
        : (current.webhooks?.[webhook.url]?.secret ?? null),
    };
  }
  return webhooks;
}
