// An account's data model as the database holds it (docs/declarations.md): its collections with their
// schemas, indexes, relations and rules, its token issuers and its webhooks, read in a statement a kind
// of object, alone or inside the write of a declaration (apply.ts), which compares it with what it planned.
import type { Rules } from '../../rules/rules.ts';
import { type Issuer, type IssuerRow, issuerOf } from '../auth/issuers.ts';
import { type Index, type IndexRow, toIndex } from '../collections/indexes.ts';
import type { Dialect, Read } from '../engine/dialect.ts';
import { listIssuersSql } from '../engine/sql/auth.ts';
import { listCollectionContractsSql } from '../engine/sql/collections.ts';
import { accountIndexesSql, webhookSecretsSql } from '../engine/sql/declarations.ts';
import { accountRelationsSql } from '../engine/sql/relations.ts';
import { listWebhooksSql } from '../engine/sql/webhooks.ts';
import type { OnDelete } from '../relations/links.ts';
import { type RelationRow, storedOf } from '../relations/relations.ts';
import { type Webhook, type WebhookRow, webhookOf } from '../webhooks/settings.ts';

/** A relation declared of a collection, as a declaration writes it. */
interface LiveRelation {
  name: string;
  field: string;
  collection: string;
  on_delete: OnDelete;
  reverse: string | null;
}

interface LiveCollection {
  name: string;
  schema: Record<string, unknown> | null;
  /** Its indexes, search index included, in the order they were made. */
  indexes: Index[];
  /** The relations declared of it (to-one), in the order they were declared. */
  relations: LiveRelation[];
  rules: Rules | null;
  /** Its time to live (docs/expiry.md), null for none. */
  ttl: { field: string } | null;
}

/** The account's model, secrets included: what a plan compares a declaration with; never shown as it is. */
export interface LiveAccount {
  /** By name, in code point order. */
  collections: LiveCollection[];
  /** By name, in code point order, each with its secret (null for none). */
  issuers: Issuer[];
  /** By id, each with its signing secret. */
  webhooks: (Webhook & { secret: string })[];
}

/** The account's model, read with `read` (alone, or inside a write) in the dialect's code point order. */
export async function readLive(read: Read, codePointOrder: string, accountId: number): Promise<LiveAccount> {
  const collections = await read<{ name: string; schema: string | null; rules: string | null; ttl_field: string | null }>(
    listCollectionContractsSql(codePointOrder),
    [accountId],
  );
  const indexes = await read<IndexRow & { collection: string }>(accountIndexesSql, [accountId]);
  const relations = (await read<RelationRow>(accountRelationsSql, [accountId])).map(storedOf);
  const issuers = (await read<IssuerRow>(listIssuersSql(codePointOrder), [accountId])).map(issuerOf);
  const secrets = new Map(
    (await read<{ id: number | string; secret: string }>(webhookSecretsSql, [accountId])).map((row) => [Number(row.id), row.secret]),
  );
  const webhooks = (await read<WebhookRow>(listWebhooksSql, [accountId])).map(webhookOf);
  return {
    collections: collections.map(({ name, schema, rules, ttl_field }) => ({
      name,
      schema: schema === null ? null : (JSON.parse(schema) as Record<string, unknown>),
      indexes: indexes.filter((index) => index.collection === name).map(toIndex),
      relations: relations
        .filter((relation) => relation.sourceName === name)
        .map(({ name: relation, field, targetName, onDelete, reverse }) => ({
          name: relation,
          field,
          collection: targetName,
          on_delete: onDelete,
          reverse,
        })),
      rules: rules === null ? null : (JSON.parse(rules) as Rules),
      ttl: ttl_field === null ? null : { field: ttl_field },
    })),
    issuers,
    webhooks: webhooks.map((webhook) => ({ ...webhook, secret: secrets.get(webhook.id) as string })),
  };
}

/** The account's model as it is now (readLive): the Store's `readAccountModel`. */
export const readAccountModel = (db: Dialect, accountId: number) => readLive(db.query, db.codePointOrder, accountId);
