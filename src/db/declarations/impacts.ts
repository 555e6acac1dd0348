// What a plan's changes would do to stored rows (docs/declarations.md, "What it does to stored rows"),
// read as the operations that make them would check them: a unique index's duplicates (createIndex), the
// rows a schema breaks (putSchema), the rows naming rows that do not exist (putRelation), the rows a time
// to live finds expired already, which the sweeper then deletes (putCollectionTtl). Read in a
// transaction that writes nothing and is rolled back; on SQLite through the writer, as those operations read them.
import type { components } from '../../../generated/openapi.ts';
import type { SchemaViolation } from '../../errors.ts';
import { duplicatesOf } from '../collections/indexes.ts';
import { type RowSchema, schemaViolations } from '../collections/schemas.ts';
import type { Dialect, WriteTx } from '../engine/dialect.ts';
import { collectionIdSql } from '../engine/sql/collections.ts';
import { expiredByTtlIn } from '../expiry/ttl.ts';
import { missingRows } from '../relations/relations.ts';

type Duplicate = components['schemas']['Duplicate'];

/** A change whose rows are to be read: the place of its object, and what it makes of its collection. */
export type RowCheck = { object: string; collection: string } & (
  | { unique: string[] }
  | { schema: RowSchema }
  | { relation: { field: string; collection: string } }
  | { ttl: string }
);

/** What a change does to stored rows: the sets of rows sharing a unique index's values, or the rows it would refuse and how many. */
export interface RowImpact {
  object: string;
  duplicates?: Duplicate[];
  total?: number;
  violations?: SchemaViolation[];
}

/**
 * The rows each of `checks` would refuse (or, of a time to live, delete as expired at `now`, ms since the
 * epoch), for those that would refuse some; checks of collections not there yet read nothing.
 */
export async function declaredRowImpacts(db: Dialect, accountId: number, checks: readonly RowCheck[], now: number): Promise<RowImpact[]> {
  if (checks.length === 0) return [];
  const impacts: RowImpact[] = [];
  const read = async (trx: WriteTx) => {
    const idOf = async (name: string) => {
      const [found] = await db.run<{ id: number | string }>(trx, collectionIdSql, [accountId, name]);
      return found === undefined ? undefined : Number(found.id);
    };
    for (const check of checks) {
      const id = await idOf(check.collection);
      if (id === undefined) continue;
      if ('unique' in check) {
        const duplicates = await duplicatesOf(db, trx, id, check.unique);
        if (duplicates.length > 0) impacts.push({ object: check.object, duplicates });
      } else if ('ttl' in check) {
        const { total, ids } = await expiredByTtlIn(db, trx, id, check.ttl, now);
        const pointer = `/${check.ttl.replaceAll('~', '~0').replaceAll('/', '~1')}`;
        const violations = ids.map((row) => ({
          id: row,
          pointer,
          message: 'is past: the row expires, deleted once the time to live is set',
        }));
        if (total > 0) impacts.push({ object: check.object, total, violations });
      } else if ('schema' in check) {
        const { total, violations } = await schemaViolations(db, trx, id, check.schema);
        if (total > 0) impacts.push({ object: check.object, total, violations });
      } else {
        const target = await idOf(check.relation.collection);
        if (target === undefined) continue;
        const { field, collection: targetName } = check.relation;
        const relation = {
          name: '',
          source: id,
          sourceName: check.collection,
          field,
          target,
          targetName,
          onDelete: 'restrict' as const,
          reverse: null,
        };
        const { total, violations } = await missingRows(db, trx, relation);
        if (total > 0) impacts.push({ object: check.object, total, violations });
      }
    }
  };
  await db.knex
    .transaction(async (trx) => {
      await read(trx);
      throw rolledBack;
    })
    .catch((error: unknown) => {
      if (error !== rolledBack) throw error;
    });
  return impacts;
}

const rolledBack = new Error('read only');
