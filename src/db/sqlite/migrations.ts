// SQLite's own steps of the schema (../engine/migrations.ts).
import type { Knex } from 'knex';
import type { UniqueIndexes } from '../engine/dialect.ts';
import { type DialectSchema, statements } from '../engine/migrations.ts';
import { carryTextsSql, dropStringKeysSql, fillAllSql, keysCarryTextsSql, keysOrderSql } from './sql/collections.ts';
import { dropExpiryTriggersSql, expiryTriggersSql } from './sql/expiry.ts';
import { searchTables } from './sql/search.ts';

/**
 * The answers of Idempotency-Keys are pruned oldest first, in the order they were stored (sql/,
 * pruneOnceSql), so they need no index of their expiry: its entry was a tenth of a keyed insert's cost
 * on SQLite's one writer (docs/performance.md).
 */
const answersPrunedOldestFirst: Knex.Migration = {
  up: (knex) => knex.raw('drop index if exists idempotency_keys_expiry'),
  down: (knex) => knex.raw('create index idempotency_keys_expiry on idempotency_keys (expires_at)'),
};

/**
 * A string of a unique index over one field whose collection has a sort index of it is no key of
 * `unique_keys` (sql/collections.ts, stringSlot()): the sort index holds it, and every write checks it there.
 * Going back keys every row of those indexes again.
 */
const stringsKeptBySortIndexes: Knex.Migration = {
  async up(knex) {
    for (const { id, field } of await singleFieldIndexes(knex)) await knex.raw(dropStringKeysSql, [id, field]);
  },
  async down(knex) {
    for (const { id, field } of await singleFieldIndexes(knex)) {
      for (const [index, fields] of JSON.parse((await knex('collections').where({ id }).first('uniques')).uniques) as UniqueIndexes) {
        if (fields.length !== 1 || fields[0] !== field) continue;
        await knex('unique_keys').where({ index_id: index }).delete();
        await knex.raw(fillAllSql, [index, JSON.stringify(fields), id, 0, Number.MAX_SAFE_INTEGER]);
      }
    }
  },
};

/** Each collection's sorted fields that one of its unique indexes is over alone: the collection's id and the field. */
async function singleFieldIndexes(knex: Knex): Promise<{ id: number; field: string }[]> {
  const rows = await knex('collections')
    .whereNot({ uniques: '[]' })
    .orderBy('id')
    .select<{ id: number; sorted: string; uniques: string }[]>();
  return rows.flatMap(({ id, sorted, uniques }) => {
    const alone = new Set((JSON.parse(uniques) as UniqueIndexes).flatMap(([, fields]) => (fields.length === 1 ? fields : [])));
    return (JSON.parse(sorted) as string[]).filter((field) => alone.has(field)).map((field) => ({ id: Number(id), field }));
  });
}

/**
 * A relation field's sort keys carry their rows' texts (sql/collections.ts, carriedText()): the column,
 * filled for each relation there. It first made the order's index again with the column last, which 0035
 * undid: it now leaves the index as it is, so that a database from before both builds the index neither
 * time (over millions of keys, each build is seconds of a first start). Going back makes the index
 * without the column first where 0035's going back put it there.
 */
const keysCarryTexts: Knex.Migration = {
  async up(knex) {
    await knex.raw(keysCarryTextsSql.column);
    const relations = await knex('collection_relations')
      .orderBy('id')
      .select<{ collection_id: number; field: string }[]>('collection_id', 'field');
    for (const { collection_id, field } of relations) await knex.raw(carryTextsSql, [collection_id, field]);
  },
  async down(knex) {
    await orderIndexUncovered(knex);
    await knex.raw(keysCarryTextsSql.down);
  },
};

/**
 * The texts the keys carry read from the table, a lookup a key, where the index held them: each insert
 * wrote its row's text at a random leaf of the index too (docs/performance.md). Only a database whose
 * 0034 made the index with them has it made again.
 */
const keysOrderUncovered: Knex.Migration = {
  up: orderIndexUncovered,
  async down(knex) {
    for (const statement of keysOrderSql.covering) await knex.raw(statement);
  },
};

/** The order's index made without the texts the keys carry, where it holds them. */
async function orderIndexUncovered(knex: Knex): Promise<void> {
  const [index] = (await knex.raw(keysOrderSql.made)) as { sql: string }[];
  if (!index.sql.includes('carried')) return;
  for (const statement of keysOrderSql.plain) await knex.raw(statement);
}

export const sqliteSchema: DialectSchema = {
  codePointText: 'text',
  searchTables,
  uniqueIndexes: {
    fill: fillAllSql,
    // Each field's JSON text, null when missing or null.
    made: (name, collectionId, fields) =>
      `create unique index ${name} on rows (${fields.map((field) => `nullif(data -> '$.${field}', 'null')`).join(', ')}) where collection_id = ${collectionId}`,
  },
  own: {
    '0013_sqlite_answers_pruned_oldest_first': answersPrunedOldestFirst,
    // Each row's expiry set from its collection's field on every write of it (sql/expiry.ts).
    '0025_row_expiry_triggers': statements(expiryTriggersSql, dropExpiryTriggersSql),
    // Each write of a row's text sets its expiry in its own statement (sql/expiry.ts, rowExpiry): the
    // triggers cost every write, into a collection without a time to live too (docs/performance.md).
    '0026_row_expiry_in_writes': statements(dropExpiryTriggersSql, expiryTriggersSql),
    '0030_sqlite_strings_kept_by_sort_indexes': stringsKeptBySortIndexes,
    '0034_sqlite_keys_carry_texts': keysCarryTexts,
    '0035_sqlite_keys_order_uncovered': keysOrderUncovered,
  },
};
