// An account's model in the one form a plan compares (docs/declarations.md): every default filled in,
// every set in one order, each secret a digest of its value. Made of the live account (here) and of a
// declaration (checks.ts); the live account is also written back as a declaration (`rowbase pull`).
import { createHash } from 'node:crypto';
import type { LiveAccount } from '../db/declarations/live.ts';
import type { Rules } from '../rules/rules.ts';
import type { RowSchema } from '../schema/check.ts';
import type { Declaration, DeclaredCollection, OnDelete, SecretRef } from './format.ts';

export type EventKind = 'insert' | 'update' | 'delete';
/** Every kind of change, in the order a webhook's are kept. */
export const EVENT_KINDS: readonly EventKind[] = ['insert', 'update', 'delete'];

/** A secret as a plan compares it: the digest of its value, and the variable it is read from, if one is named. */
export interface HeldSecret {
  env?: string;
  digest: string;
}

interface ModelRelation {
  field: string;
  collection: string;
  on_delete: OnDelete;
  reverse: string | null;
}

export interface ModelCollection {
  schema: RowSchema | null;
  /** Indexes of values, by name (their fields joined by commas). */
  indexes: Record<string, { fields: string[]; unique: boolean }>;
  search: { fields: string[] } | null;
  relations: Record<string, ModelRelation>;
  rules: Rules | null;
  /** Its time to live: the field that says when each row expires; null for none. */
  ttl: { field: string } | null;
}

export interface ModelIssuer {
  issuer: string;
  audiences: string[];
  jwks_uri: string | null;
  discovery_url: string | null;
  secret: HeldSecret | null;
}

export interface ModelWebhook {
  url: string;
  collections: string[] | null;
  events: EventKind[];
  filter: Record<string, unknown> | null;
  description: string | null;
  enabled: boolean;
  secret: HeldSecret | null;
}

/** A model; a section absent is one a declaration leaves as it is. Webhooks are by url. */
export interface Model {
  collections?: Record<string, ModelCollection>;
  issuers?: Record<string, ModelIssuer>;
  webhooks?: Record<string, ModelWebhook>;
}

export const digestOf = (secret: string) => createHash('sha256').update(secret).digest('hex');

/** JSON text with every object's members in code point order: two values are the same when their texts are. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, held) =>
    held !== null && typeof held === 'object' && !Array.isArray(held)
      ? Object.fromEntries(Object.entries(held).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : held,
  );
}

export const same = (a: unknown, b: unknown) => canonical(a) === canonical(b);

const sorted = (values: readonly string[]) => [...values].sort();

/** The live account as a model: every section present. Several webhooks of one url: the first made stands for them. */
export function modelOfLive(live: LiveAccount): Model {
  const collections: Record<string, ModelCollection> = {};
  for (const collection of live.collections) {
    const indexes: ModelCollection['indexes'] = {};
    let search: ModelCollection['search'] = null;
    for (const index of collection.indexes) {
      if (index.type === 'search') search = { fields: index.fields };
      else indexes[index.name] = { fields: index.fields, unique: index.unique };
    }
    const relations: ModelCollection['relations'] = {};
    for (const { name, ...relation } of collection.relations) relations[name] = relation;
    // A stored schema was checked when it was set.
    collections[collection.name] = {
      schema: collection.schema as RowSchema | null,
      indexes,
      search,
      relations,
      rules: collection.rules,
      ttl: collection.ttl,
    };
  }
  const issuers: Record<string, ModelIssuer> = {};
  for (const { name, issuer, audiences, jwks_uri, discovery_url, secret } of live.issuers) {
    issuers[name] = {
      issuer,
      audiences: sorted(audiences),
      jwks_uri,
      discovery_url,
      secret: secret === null ? null : { digest: digestOf(secret) },
    };
  }
  const webhooks: Record<string, ModelWebhook> = {};
  for (const webhook of live.webhooks) {
    webhooks[webhook.url] ??= {
      url: webhook.url,
      collections: webhook.collections === null ? null : sorted(webhook.collections),
      events: EVENT_KINDS.filter((kind) => webhook.events.includes(kind)),
      filter: webhook.filter as Record<string, unknown> | null,
      description: webhook.description,
      enabled: webhook.enabled,
      secret: { digest: digestOf(webhook.secret) },
    };
  }
  return { collections, issuers, webhooks };
}

/** The environment variable `rowbase pull` names for the secret of the issuer `name`. */
const issuerSecretEnv = (name: string) => `ROWBASE_ISSUER_${name.toUpperCase().replaceAll('-', '_')}_SECRET`;

/**
 * The live account as a declaration (`rowbase pull`), defaults left out: planned against the account it
 * was read of, it changes nothing. An issuer's secret is named by the variable issuerSecretEnv() names,
 * which, unset where it is planned, keeps the secret the issuer has; a webhook's is left out (kept).
 */
export function declarationOfLive(live: LiveAccount): Declaration {
  const model = modelOfLive(live);
  const collections: Record<string, DeclaredCollection> = {};
  for (const [name, collection] of Object.entries(model.collections ?? {})) {
    const declared: DeclaredCollection = {};
    if (collection.schema) declared.schema = collection.schema;
    const indexes = Object.values(collection.indexes).map(({ fields, unique }) => (unique ? { fields, unique } : { fields }));
    if (indexes.length > 0) declared.indexes = indexes;
    if (collection.search) declared.search = collection.search;
    const relations = Object.entries(collection.relations);
    if (relations.length > 0) {
      declared.relations = Object.fromEntries(
        relations.map(([relation, { field, collection: related, on_delete, reverse }]) => [
          relation,
          { field, collection: related, ...(on_delete === 'restrict' ? {} : { on_delete }), ...(reverse === null ? {} : { reverse }) },
        ]),
      );
    }
    if (collection.rules) declared.rules = collection.rules as unknown as Record<string, unknown>;
    if (collection.ttl) declared.ttl = collection.ttl;
    collections[name] = declared;
  }
  const issuers = Object.fromEntries(
    Object.entries(model.issuers ?? {}).map(([name, { issuer, audiences, jwks_uri, discovery_url }]) => {
      const key: { jwks_uri: string } | { discovery_url: string } | { secret: SecretRef } =
        jwks_uri !== null ? { jwks_uri } : discovery_url !== null ? { discovery_url } : { secret: { env: issuerSecretEnv(name) } };
      return [name, { issuer, audiences, ...key }];
    }),
  );
  const webhooks = Object.values(model.webhooks ?? {}).map(({ url, collections: named, events, filter, description, enabled }) => ({
    url,
    ...(named === null ? {} : { collections: named }),
    ...(events.length === EVENT_KINDS.length ? {} : { events }),
    ...(filter === null ? {} : { filter }),
    ...(description === null ? {} : { description }),
    ...(enabled ? {} : { enabled }),
  }));
  return { version: 1, collections, issuers, webhooks };
}
