// Collections' rules (openapi.yaml, the `rules` tag; docs/access.md, "Rules"), stored as their JSON text
// with a version: checked before they get here (src/rules/rules.ts), compiled outside the data layer
// (src/rules/compile.ts), once per version.
import { collectionNotFound, rulesNotFound } from '../../errors.ts';
import type { Once } from '../../idempotency/answers.ts';
import type { Rules } from '../../rules/rules.ts';
import type { Dialect, WriteTx } from '../engine/dialect.ts';
import { collectionRulesSql, dropCollectionRulesSql, setCollectionRulesSql } from '../engine/sql/rules.ts';
import { beginOnce, recordOnce } from '../rows/idempotency.ts';

/** A collection's rules as stored, with the collection's id and the rules' version, which compiled rules are kept by. */
export interface StoredRules {
  collectionId: number;
  version: number;
  rules: Rules;
}

/** The collection's rules, null when it has none; 404 when there is no such collection. */
export async function getRules({ query }: Dialect, accountId: number, collection: string): Promise<StoredRules | null> {
  const [row] = await query<{ id: number | string; rules: string | null; rules_version: number | string }>(collectionRulesSql, [
    accountId,
    collection,
  ]);
  if (!row) throw collectionNotFound(collection);
  if (row.rules === null) return null;
  return { collectionId: Number(row.id), version: Number(row.rules_version), rules: JSON.parse(row.rules) as Rules };
}

/** Makes `rules` (checked already: checkRules) the collection's, replacing any it had; 404 when there is no such collection. */
export async function putRules(db: Dialect, accountId: number, collection: string, rules: Rules, once?: Once<Rules>): Promise<Rules> {
  await db.knex.transaction(async (trx) => {
    if (once) await beginOnce(db, trx, accountId, once);
    await putRulesIn(db, trx, accountId, collection, rules);
    if (once) await recordOnce(db, trx, accountId, once, rules);
  });
  return rules;
}

/** putRules() inside the write `trx`. */
export async function putRulesIn(db: Dialect, trx: WriteTx, accountId: number, collection: string, rules: Rules): Promise<void> {
  const [set] = await db.run(trx, setCollectionRulesSql, [JSON.stringify(rules), accountId, collection]);
  if (!set) throw collectionNotFound(collection);
}

/** The collection has no rules any more; 404 when it had none, or there is no such collection. */
export async function deleteRules(db: Dialect, accountId: number, collection: string, once?: Once<void>): Promise<void> {
  await db.knex.transaction(async (trx) => {
    if (once) await beginOnce(db, trx, accountId, once);
    await deleteRulesIn(db, trx, accountId, collection);
    if (once) await recordOnce(db, trx, accountId, once, undefined);
  });
}

/** deleteRules() inside the write `trx`. */
export async function deleteRulesIn(db: Dialect, trx: WriteTx, accountId: number, collection: string): Promise<void> {
  const [dropped] = await db.run(trx, dropCollectionRulesSql, [accountId, collection]);
  if (!dropped) {
    const [found] = await db.run(trx, collectionRulesSql, [accountId, collection]);
    throw found ? rulesNotFound(collection) : collectionNotFound(collection);
  }
}
