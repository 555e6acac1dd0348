import type { Knex } from 'knex';
import { postgresJsonb } from './ordering.ts';
import { postgresKeyColumns, replaceKey } from './sort-keys.ts';

// Timestamps are ISO 8601 text in UTC: they sort as they compare, on every backend.
const migrations: Record<string, Knex.Migration> = {
  '0001_initial': {
    async up(knex) {
      await knex.schema.createTable('plans', (t) => {
        t.string('name', 64).primary();
        t.bigInteger('quota').notNullable();
        t.string('period', 8).notNullable();
        t.integer('rate');
      });
      await knex('plans').insert([
        { name: 'free', quota: 10_000, period: 'month', rate: 10 },
        { name: 'pro', quota: 1_000_000, period: 'month', rate: 100 },
      ]);
      await knex.schema.createTable('accounts', (t) => {
        t.increments('id');
        t.string('name', 255).notNullable().unique();
        t.string('plan', 64).notNullable().references('plans.name');
        t.string('created_at', 32).notNullable();
      });
      await knex.schema.createTable('api_keys', (t) => {
        t.increments('id');
        t.integer('account_id').notNullable().references('accounts.id');
        t.string('prefix', 16).notNullable().index();
        t.string('hash', 64).notNullable().unique();
        t.string('created_at', 32).notNullable();
        t.string('revoked_at', 32);
      });
      await knex.schema.createTable('collections', (t) => {
        t.increments('id');
        t.integer('account_id').notNullable().references('accounts.id');
        t.string('name', 63).notNullable();
        t.string('created_at', 32).notNullable();
        t.bigInteger('row_count').notNullable().defaultTo(0);
        // The last row id and event seq handed out: ids and seqs are never reused.
        t.bigInteger('last_row_id').notNullable().defaultTo(0);
        t.bigInteger('last_seq').notNullable().defaultTo(0);
        t.unique(['account_id', 'name']);
      });
      await knex.schema.createTable('rows', (t) => {
        t.integer('collection_id').notNullable();
        t.bigInteger('id').notNullable();
        // The row's fields but `id`, as JSON text.
        t.text('data').notNullable();
        t.primary(['collection_id', 'id']);
      });
      await knex.schema.createTable('events', (t) => {
        t.integer('collection_id').notNullable();
        t.bigInteger('seq').notNullable();
        t.string('type', 16).notNullable();
        t.bigInteger('row_id').notNullable();
        // The whole row, with its id: after the change for insert and update, as it was for delete.
        t.text('row').notNullable();
        t.string('at', 32).notNullable();
        t.primary(['collection_id', 'seq']);
      });
    },
    async down(knex) {
      for (const table of ['events', 'rows', 'collections', 'api_keys', 'accounts', 'plans']) {
        await knex.schema.dropTable(table);
      }
    },
  },
  '0002_usage': {
    async up(knex) {
      // One row per account and period: the requests counted in it, added to by every instance.
      await knex.schema.createTable('usage_counts', (t) => {
        t.integer('account_id').notNullable().references('accounts.id');
        t.string('period_start', 32).notNullable();
        t.bigInteger('count').notNullable();
        t.primary(['account_id', 'period_start']);
      });
    },
    async down(knex) {
      await knex.schema.dropTable('usage_counts');
    },
  },
  '0003_sort_keys': {
    async up(knex) {
      // The fields the collection has a sort index for, as a JSON array of names: a name's position is
      // its slot in sort_keys. Read and written under the collection row's lock (advance()).
      await knex.schema.alterTable('collections', (t) => {
        t.text('sorted').notNullable().defaultTo('[]');
      });
      // For each row and sort index, where the row's value of the field falls in the order of
      // listRows (openapi.yaml): `rank` is the JSON type's place (1 numbers, 2 strings, 3 booleans,
      // 4 objects and arrays, 5 missing or null), then `num` (numbers; false 0, true 1) or `str`
      // (strings, by code point), then the row id. See sort-keys.ts.
      const postgres = knex.client.dialect === 'postgresql';
      await knex.schema.createTable('sort_keys', (t) => {
        t.integer('collection_id').notNullable();
        t.integer('slot').notNullable();
        t.bigInteger('row_id').notNullable();
        t.integer('rank').notNullable();
        t.specificType('num', 'numeric');
        t.specificType('str', postgres ? 'text collate "C"' : 'text');
        t.primary(['collection_id', 'row_id', 'slot']);
        t.index(['collection_id', 'slot', 'rank', 'num', 'str', 'row_id'], 'sort_keys_order');
      });
    },
    async down(knex) {
      await knex.schema.dropTable('sort_keys');
      await knex.schema.alterTable('collections', (t) => {
        t.dropColumn('sorted');
      });
    },
  },
  '0004_postgres_sort_key_escape': {
    // PostgreSQL's sort keys were made with U+0000 read as U+0001 (in strings and in field names), so
    // that "a\u0000b" sorted after "a\u0001", and a field named with U+0000 was read from the one named
    // with U+0001. They are made now with ordering.ts's order-preserving escape (postgresJsonb); every
    // key it could change is one of a row whose text holds `\u0000` or `\u0001` (the escapes
    // JSON.stringify writes), and those are made again, each as sort-keys.ts makes it. A row whose text
    // PostgreSQL cannot read as jsonb at all (a lone surrogate, which a patch of a field not indexed can
    // add; none since 0005's escape, which this now reads with) is left as it is, rather than stop the
    // migration, and with it the service. SQLite's keys never changed.
    async up(knex) {
      await remakePostgresKeys(knex, "strpos(data, '\\u0000') > 0 or strpos(data, '\\u0001') > 0");
    },
    // The old keys were wrong: there is nothing to go back to.
    async down() {},
  },
  '0005_postgres_sort_key_surrogates': {
    // PostgreSQL's sort keys are made now with ordering.ts's escape extended to lone surrogates, which
    // its jsonb refuses, and to U+D7FF, which the escape of a lone surrogate begins with: a U+D7FF now
    // reads as U+D7FF U+0002. Every key this changes is one of a row whose text holds U+D7FF, or a lone
    // surrogate (the escape `\udXYZ` JSON.stringify writes; the test also takes the text of a backslash
    // followed by "ud8", which only makes a key again as it was), or of a field whose name holds either;
    // those are made again, each as sort-keys.ts makes it. No key of a lone surrogate was ever made (the
    // statement failed), but a key of U+D7FF was, and would sort after the new keys of lone surrogates
    // where it must sort before them. A row PostgreSQL still cannot read as jsonb (none should remain)
    // is left as it is, as in 0004. SQLite's keys never changed.
    async up(knex) {
      await remakePostgresKeys(knex, "strpos(f.field, chr(55295)) > 0 or strpos(data, chr(55295)) > 0 or data ~* '\\\\ud[89a-f]'");
    },
    // The old keys were wrong: there is nothing to go back to.
    async down() {},
  },
  '0006_postgres_cut_sort_keys': {
    // PostgreSQL: a string key holds a string's first 400 characters (sort-keys.ts, POSTGRES_KEY_CHARS),
    // so that no string is too long for the index (its keys are at most 2,704 bytes; a longer string
    // made the write fail). Keys made longer before are cut likewise; the partial index finds, at once,
    // the slots holding a key that may have been cut, whose pages then sort the collection whole.
    // SQLite keys whole strings.
    async up(knex) {
      if (knex.client.dialect !== 'postgresql') return;
      await knex.raw('update sort_keys set str = left(str, 400) where length(str) > 400');
      await knex.raw('create index sort_keys_long on sort_keys (collection_id, slot) where length(str) >= 400');
    },
    async down(knex) {
      if (knex.client.dialect !== 'postgresql') return;
      await knex.raw('drop index sort_keys_long');
    },
  },
};

/**
 * PostgreSQL only: makes again, as sort-keys.ts makes them, the sort keys of the rows that `rows`
 * picks (an SQL condition on `data`, the row's text, and `f.field`, the indexed field's name), each
 * with ordering.ts's escape as it is now. A row PostgreSQL cannot read as jsonb at all is left as it
 * is, rather than stop the migration, and with it the service.
 */
async function remakePostgresKeys(knex: Knex, rows: string): Promise<void> {
  if (knex.client.dialect !== 'postgresql') return;
  await knex.raw(`create function pg_temp.rowbase_jsonb(document text) returns jsonb language plpgsql as $$
    begin return ${postgresJsonb('document')}; exception when others then return null; end $$`);
  await knex.raw(`insert into sort_keys (collection_id, slot, row_id, rank, num, str)
    select collection_id, slot, id, ${postgresKeyColumns('j')}
      from (select c.id as collection_id, f.slot - 1 as slot, d.id, d.document -> f.field as j
        from collections c,
          jsonb_array_elements_text(pg_temp.rowbase_jsonb(c.sorted)) with ordinality as f(field, slot),
          lateral (select id, pg_temp.rowbase_jsonb(data) as document from rows where collection_id = c.id and (${rows})) d
        where d.document is not null) k
    ${replaceKey}`);
  await knex.raw('drop function pg_temp.rowbase_jsonb(text)');
}

/** Migrations ship inside the code, so a bare `npm start` needs no migrations folder. */
export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name],
};
