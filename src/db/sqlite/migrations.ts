// SQLite's own steps of the schema (../engine/migrations.ts).
import type { Knex } from 'knex';
import { type DialectSchema, statements } from '../engine/migrations.ts';
import { uniqueKeySql } from './sql/collections.ts';
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

export const sqliteSchema: DialectSchema = {
  codePointText: 'text',
  searchTables,
  uniqueIndexes: {
    fill: uniqueKeySql.fill,
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
  },
};
