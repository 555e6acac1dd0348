// SQLite's own steps of the schema (../migrations.ts).
import type { DialectSchema } from '../engine/migrations.ts';
import { dropExpiryTriggersSql, expiryTriggersSql } from './sql/expiry.ts';
import { dropSearchTablesSql, searchTablesSql } from './sql/search.ts';

export const sqliteSchema: DialectSchema = {
  codePointText: 'text',
  searchTables: { make: searchTablesSql, drop: dropSearchTablesSql },
  own: {
    '0025_row_expiry_triggers': {
      // Each row's expiry set from its collection's field on every write of it (sql/expiry.ts).
      async up(knex) {
        for (const sql of expiryTriggersSql) await knex.raw(sql);
      },
      async down(knex) {
        for (const sql of dropExpiryTriggersSql) await knex.raw(sql);
      },
    },
    '0013_sqlite_answers_pruned_oldest_first': {
      // The answers of Idempotency-Keys are pruned oldest first, in the order they were stored (sql/,
      // pruneOnceSql), so they need no index of their expiry: its entry was a tenth of a keyed insert's
      // cost on SQLite's one writer (docs/performance.md).
      async up(knex) {
        await knex.raw('drop index if exists idempotency_keys_expiry');
      },
      async down(knex) {
        await knex.raw('create index idempotency_keys_expiry on idempotency_keys (expires_at)');
      },
    },
  },
};
