// PostgreSQL's own steps of the schema (../migrations.ts), and the type of a sort key's string: text in
// the "C" collation, which compares by code point.
import type { Knex } from 'knex';
import { type DialectSchema, statements } from '../engine/migrations.ts';
import { replaceUnprefixedKey } from '../engine/sql/collections.ts';
import { jsonbOf } from './jsonb.ts';
import { keyColumns, keysCarryTextsSql, keysGoWithRowsSql, uniqueKeySql, wordsGoWithRowsSql } from './sql/collections.ts';
import { dropExpiryFunctionSql, dropExpiryTriggersSql, expiryFunctionSql, expiryTriggersSql } from './sql/expiry.ts';
import { ONCE_TAKEN, RELATION_MISSING } from './sql/rows.ts';
import { searchTables } from './sql/search.ts';

export const postgresSchema: DialectSchema = {
  codePointText: 'text collate "C"',
  searchTables,
  uniqueIndexes: {
    fill: uniqueKeySql.fill,
    // The MD5 of each field's text as jsonb, null when missing or null.
    made: (name, collectionId, fields) =>
      `create unique index ${name} on rows (${fields.map((field) => `(md5(nullif((${jsonbOf('data')} -> '${field}')::text, 'null')))`).join(', ')}) where collection_id = ${collectionId}`,
  },
  own: {
    '0004_postgres_sort_key_escape': {
      // PostgreSQL's sort keys were made with U+0000 read as U+0001 (in strings and in field names), so
      // that "a\u0000b" sorted after "a\u0001", and a field named with U+0000 was read from the one named
      // with U+0001. They are made now with the order-preserving escape of jsonb.ts (jsonbOf); every
      // key it could change is one of a row whose text holds `\u0000` or `\u0001` (the escapes
      // JSON.stringify writes), and those are made again, each as sort-indexes.ts makes it. A row whose text
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
      // PostgreSQL's sort keys are made now with jsonb.ts's escape extended to lone surrogates, which
      // its jsonb refuses, and to U+D7FF, which the escape of a lone surrogate begins with: a U+D7FF now
      // reads as U+D7FF U+0002. Every key this changes is one of a row whose text holds U+D7FF, or a lone
      // surrogate (the escape `\udXYZ` JSON.stringify writes; the test also takes the text of a backslash
      // followed by "ud8", which only makes a key again as it was), or of a field whose name holds either;
      // those are made again, each as sort-indexes.ts makes it. No key of a lone surrogate was ever made (the
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
      // PostgreSQL: a string key holds a string's first 400 characters (sql/, POSTGRES_KEY_CHARS),
      // so that no string is too long for the index (its keys are at most 2,704 bytes; a longer string
      // made the write fail). Keys made longer before are cut likewise; the partial index finds, at once,
      // the slots holding a key that may have been cut, whose pages then sort the collection whole.
      // SQLite keys whole strings.
      async up(knex) {
        await knex.raw('update sort_keys set str = left(str, 400) where length(str) > 400');
        await knex.raw('create index sort_keys_long on sort_keys (collection_id, slot) where length(str) >= 400');
      },
      async down(knex) {
        await knex.raw('drop index sort_keys_long');
      },
    },
    '0007_postgres_page_knows_cut_keys': {
      // A page tells a cut key among its own keys (sql/, sortedPage), where it probed the partial index
      // of 0006 for the whole slot: the planner, which guesses a third of the keys long, scanned the
      // slot instead. The index has no reader left.
      async up(knex) {
        await knex.raw('drop index if exists sort_keys_long');
      },
      async down(knex) {
        await knex.raw('create index sort_keys_long on sort_keys (collection_id, slot) where length(str) >= 400');
      },
    },
    '0012_postgres_once_taken': {
      // Inserts sent with an Idempotency-Key are one statement with their answers (sql/,
      // insertBatchWithAnswersSql), run alone: one that finds another request's answer to one of its keys
      // stored while it ran stops itself with this error, so that nothing of it is written.
      async up(knex) {
        await knex.raw(`create or replace function rowbase_once_taken() returns boolean language plpgsql as $$
          begin raise exception 'an Idempotency-Key was answered meanwhile' using errcode = '${ONCE_TAKEN}'; end $$`);
      },
      async down(knex) {
        await knex.raw('drop function if exists rowbase_once_taken()');
      },
    },
    '0023_postgres_relation_missing': {
      // An insert of rows that name rows of other collections is one statement, run alone, that holds the
      // rows named (sql/, namingInsertBatchSql): one that does not find them all stops itself with this
      // error, so that nothing of it is written, and the insert looks again in a transaction.
      async up(knex) {
        await knex.raw(`create or replace function rowbase_relation_missing() returns boolean language plpgsql as $$
          begin raise exception 'a row the inserted rows name was not found' using errcode = '${RELATION_MISSING}'; end $$`);
      },
      async down(knex) {
        await knex.raw('drop function if exists rowbase_relation_missing()');
      },
    },
    // Each row's expiry set from its collection's field before every write of it (sql/expiry.ts).
    '0025_row_expiry_triggers': statements(expiryTriggersSql, dropExpiryTriggersSql),
    '0026_row_expiry_in_writes': {
      // Each write of a row's text sets its expiry in its own statement, by the function (sql/expiry.ts,
      // rowExpiry): the trigger cost every write, into a collection without a time to live too
      // (docs/performance.md).
      async up(knex) {
        await knex.raw(expiryFunctionSql);
        for (const sql of dropExpiryTriggersSql) await knex.raw(sql);
      },
      async down(knex) {
        for (const sql of expiryTriggersSql) await knex.raw(sql);
        await knex.raw(dropExpiryFunctionSql);
      },
    },
    // A row's unique keys deleted with it by a statement trigger of `rows`, where a foreign key checked
    // each key's row as it was written (sql/collections.ts, keysGoWithRowsSql; docs/performance.md).
    '0029_postgres_keys_go_with_rows': statements(keysGoWithRowsSql.up, keysGoWithRowsSql.down),
    // The sort keys of a relation's field carry their rows' texts, which a to-many then reads beside its
    // keys (sql/collections.ts, keysCarryTextsSql; docs/performance.md).
    '0033_postgres_keys_carry_texts': statements(keysCarryTextsSql.up, keysCarryTextsSql.down),
    // A row's words deleted with it by the same trigger, where a foreign key checked each row's words as
    // they were written and each row deleted (sql/collections.ts, wordsGoWithRowsSql; docs/performance.md).
    '0036_postgres_words_go_with_rows': statements(wordsGoWithRowsSql.up, wordsGoWithRowsSql.down),
  },
};

/**
 * Makes again, as sort-indexes.ts makes them, the sort keys of the rows that `rows`
 * picks (an SQL condition on `data`, the row's text, and `f.field`, the indexed field's name), each
 * with jsonb.ts's escape as it is now. A row PostgreSQL cannot read as jsonb at all is left as it
 * is, rather than stop the migration, and with it the service.
 */
async function remakePostgresKeys(knex: Knex, rows: string): Promise<void> {
  await knex.raw(`create function pg_temp.rowbase_jsonb(document text) returns jsonb language plpgsql as $$
    begin return ${jsonbOf('document')}; exception when others then return null; end $$`);
  await knex.raw(`insert into sort_keys (collection_id, slot, row_id, rank, num, str)
    select collection_id, slot, id, ${keyColumns('j')}
      from (select c.id as collection_id, f.slot - 1 as slot, d.id, d.document -> f.field as j
        from collections c,
          jsonb_array_elements_text(pg_temp.rowbase_jsonb(c.sorted)) with ordinality as f(field, slot),
          lateral (select id, pg_temp.rowbase_jsonb(data) as document from rows where collection_id = c.id and (${rows})) d
        where d.document is not null) k
    ${replaceUnprefixedKey}`);
  await knex.raw('drop function pg_temp.rowbase_jsonb(text)');
}
