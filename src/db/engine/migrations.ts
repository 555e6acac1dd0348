// The schema, the same on both dialects but where a dialect says otherwise (DialectSchema): the type
// of a sort key's string, the steps that only PostgreSQL's keys needed (postgres/migrations.ts), and
// SQLite's answers of Idempotency-Keys kept without an index of their expiry and its unique strings kept
// by sort indexes (sqlite/migrations.ts).
import type { Knex } from 'knex';

type OwnStep =
  | '0004_postgres_sort_key_escape'
  | '0005_postgres_sort_key_surrogates'
  | '0006_postgres_cut_sort_keys'
  | '0007_postgres_page_knows_cut_keys'
  | '0012_postgres_once_taken'
  | '0023_postgres_relation_missing'
  | '0025_row_expiry_triggers'
  | '0026_row_expiry_in_writes'
  | '0029_postgres_keys_go_with_rows'
  | '0033_postgres_keys_carry_texts'
  | '0034_sqlite_keys_carry_texts'
  | '0035_sqlite_keys_order_uncovered'
  | '0036_postgres_words_go_with_rows'
  | '0030_sqlite_strings_kept_by_sort_indexes'
  | '0013_sqlite_answers_pruned_oldest_first';

/** What a dialect changes of the migrations. */
export interface DialectSchema {
  /** The column type of sort_keys.str: text that compares in code point order. */
  codePointText: string;
  /** Steps of this dialect's own, by migration; the migrations a dialect has none for change nothing on it. */
  own: Partial<Record<OwnStep, Knex.Migration>>;
  /** The statements that make the tables of search indexes' words, each dialect's own (0021_search_indexes), and drop them. */
  searchTables: { make: readonly string[]; drop: readonly string[] };
  /**
   * Unique indexes as keys (0027_unique_keys): `fill`, the dialect's UniqueKeySql.fill (dialect.ts), keys
   * a unique index's rows; `made`, the index of the database each unique index was before, which going
   * back makes again (the index `name` of the rows of collection `collectionId`, keyed by `fields`).
   */
  uniqueIndexes: { fill: string; made(name: string, collectionId: number, fields: readonly string[]): string };
}

// Timestamps are ISO 8601 text in UTC: they sort as they compare, on every backend.
const migrations = (schema: DialectSchema): Record<string, Knex.Migration> => ({
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
      // (strings, by code point), then the row id. See sort-indexes.ts.
      await knex.schema.createTable('sort_keys', (t) => {
        t.integer('collection_id').notNullable();
        t.integer('slot').notNullable();
        t.bigInteger('row_id').notNullable();
        t.integer('rank').notNullable();
        t.specificType('num', 'numeric');
        t.specificType('str', schema.codePointText);
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
  '0004_postgres_sort_key_escape': schema.own['0004_postgres_sort_key_escape'] ?? unchanged,
  '0005_postgres_sort_key_surrogates': schema.own['0005_postgres_sort_key_surrogates'] ?? unchanged,
  '0006_postgres_cut_sort_keys': schema.own['0006_postgres_cut_sort_keys'] ?? unchanged,
  '0007_postgres_page_knows_cut_keys': schema.own['0007_postgres_page_knows_cut_keys'] ?? unchanged,
  '0008_key_limits': {
    async up(knex) {
      // What a key may reach (openapi.yaml, Key). The defaults are what every key could do before:
      // keys made earlier are admin keys of every collection of their account, and never expire.
      await knex.schema.alterTable('api_keys', (t) => {
        t.string('scope', 8).notNullable().defaultTo('admin');
        // A JSON array of collection names, or null for every collection of the account.
        t.text('collections');
        t.string('expires_at', 32);
        t.string('name', 100);
        // The start of the latest minute the key was used in, noted about once a minute (../accounts/principals.ts, PrincipalCache).
        t.string('last_used_at', 32);
        // An account's keys, listed over HTTP (GET /v1/keys) and counted when one is made.
        t.index(['account_id'], 'api_keys_account');
      });
    },
    // Plain statements, which both dialects take (SQLite drops a column in place since 3.35), where
    // Knex's dropColumn would make SQLite's table again.
    async down(knex) {
      await knex.raw('drop index api_keys_account');
      for (const column of ['scope', 'collections', 'expires_at', 'name', 'last_used_at']) {
        await knex.raw(`alter table api_keys drop column ${column}`);
      }
    },
  },
  // The whole row, with its id, as it was before an update (asyncapi.yaml, UpdateMessage `previous`);
  // null for inserts and deletes, and for the updates stored before this step.
  '0009_event_previous': textColumn('events', 'previous'),
  '0010_row_versions': {
    async up(knex) {
      // The row's version (openapi.yaml, ETag): the collection's seq of the change that made it as it is,
      // so that every write of a row gives it a version it never had. Rows written before versions
      // existed take the seq of their latest event still retained, or, when none is, the collection's
      // latest seq, which no later write can take again.
      await knex.schema.alterTable('rows', (t) => {
        t.bigInteger('version').notNullable().defaultTo(0);
      });
      await knex.raw('update rows set version = (select last_seq from collections where collections.id = rows.collection_id)');
      await knex.raw(`update rows set version = e.seq
        from (select collection_id, row_id, max(seq) as seq from events group by collection_id, row_id) e
        where e.collection_id = rows.collection_id and e.row_id = rows.id`);
    },
    async down(knex) {
      await knex.raw('alter table rows drop column version');
    },
  },
  '0011_idempotency_keys': {
    async up(knex) {
      // The answers of the requests sent with an Idempotency-Key (openapi.yaml, IdempotencyKey), each
      // written in the transaction of the change it answers, kept until `expires_at` (then pruned, and
      // the key free again).
      await knex.schema.createTable('idempotency_keys', (t) => {
        t.integer('account_id').notNullable().references('accounts.id');
        t.string('key', 255).notNullable();
        // SHA-256 of the request's method, path, query and body, in hex: a retry must send the same.
        t.string('request_hash', 64).notNullable();
        t.integer('status').notNullable();
        // The answer's own headers (ETag, Location, …) as a JSON object, and its body, if any.
        t.text('headers').notNullable();
        t.text('body');
        t.string('created_at', 32).notNullable();
        t.string('expires_at', 32).notNullable();
        t.primary(['account_id', 'key']);
        t.index(['expires_at'], 'idempotency_keys_expiry');
      });
    },
    async down(knex) {
      await knex.schema.dropTable('idempotency_keys');
    },
  },
  '0012_postgres_once_taken': schema.own['0012_postgres_once_taken'] ?? unchanged,
  '0013_sqlite_answers_pruned_oldest_first': schema.own['0013_sqlite_answers_pruned_oldest_first'] ?? unchanged,
  '0014_collection_schemas': {
    async up(knex) {
      // A collection's schema (openapi.yaml, RowSchema), a row of its own: the collection's row, which
      // every write updates, stays small. Schema ids are never reused, by any collection, so that an id
      // names one schema for good: every write checks that the schema its rows were checked against is
      // still its collection's (`schema_id`, 0 for none) in the statement that writes them (schemas.ts).
      await knex.schema.createTable('collection_schemas', (t) => {
        t.increments('id');
        t.integer('collection_id').notNullable().index();
        t.text('schema').notNullable();
      });
      await knex.schema.alterTable('collections', (t) => {
        t.bigInteger('schema_id').notNullable().defaultTo(0);
      });
    },
    async down(knex) {
      await knex.raw('alter table collections drop column schema_id');
      await knex.schema.dropTable('collection_schemas');
    },
  },
  '0015_collection_indexes': {
    async up(knex) {
      // The indexes declared of a collection (openapi.yaml, createIndex; indexes.ts): its fields, a JSON
      // array of names. A unique one is also an index of the database, named after this row's id.
      await knex.schema.createTable('collection_indexes', (t) => {
        t.increments('id');
        t.integer('collection_id').notNullable().index();
        t.text('fields').notNullable();
        t.boolean('is_unique').notNullable();
      });
    },
    async down(knex) {
      await knex.schema.dropTable('collection_indexes');
    },
  },
  '0016_webhooks': {
    async up(knex) {
      // The account's webhooks (openapi.yaml, Webhook; docs/webhooks.md). `collections` is a JSON array
      // of names, or null for every collection of the account; `events` a JSON array of kinds; `filter`
      // the filter's JSON text, or null. `secret` signs every delivery (whsec_ and base64 of its bytes).
      await knex.schema.createTable('webhooks', (t) => {
        t.increments('id');
        t.integer('account_id').notNullable().references('accounts.id');
        t.text('url').notNullable();
        t.text('collections');
        t.text('events').notNullable();
        t.text('filter');
        t.text('description');
        t.string('secret', 64).notNullable();
        t.boolean('enabled').notNullable();
        // Why it was disabled, when the service disabled it (its deliveries failed past the schedule).
        t.text('disabled_reason');
        t.string('created_at', 32).notNullable();
        t.string('updated_at', 32).notNullable();
        t.index(['account_id'], 'webhooks_account');
      });
      // A webhook's progress through one collection's events (the event log is the outbox): the last seq
      // it acknowledged, the attempts made of the next, when the next attempt is due, and the lease of
      // the instance delivering it, so that one instance at a time does.
      await knex.schema.createTable('webhook_streams', (t) => {
        t.integer('webhook_id').notNullable();
        t.integer('collection_id').notNullable();
        t.bigInteger('acked_seq').notNullable();
        t.integer('attempt').notNullable().defaultTo(0);
        t.string('next_at', 32).notNullable();
        t.string('lease_owner', 64);
        t.string('lease_until', 32);
        t.string('failing_since', 32);
        // Events it owed that retention pruned past the backlog limit, never delivered.
        t.bigInteger('dropped').notNullable().defaultTo(0);
        t.primary(['webhook_id', 'collection_id']);
        t.index(['collection_id'], 'webhook_streams_collection');
      });
      // One row per attempt of a delivery (openapi.yaml, WebhookDelivery).
      await knex.schema.createTable('webhook_deliveries', (t) => {
        t.bigIncrements('id');
        t.integer('webhook_id').notNullable();
        t.string('collection', 63).notNullable();
        t.bigInteger('seq').notNullable();
        t.string('message_id', 64).notNullable();
        t.integer('attempt').notNullable();
        t.string('outcome', 16).notNullable();
        t.integer('status');
        t.integer('duration_ms').notNullable();
        t.text('error');
        t.string('next_attempt_at', 32);
        t.string('at', 32).notNullable();
        t.index(['webhook_id', 'id'], 'webhook_deliveries_webhook');
      });
    },
    async down(knex) {
      for (const table of ['webhook_deliveries', 'webhook_streams', 'webhooks']) await knex.schema.dropTable(table);
    },
  },
  '0017_publishable_keys': {
    async up(knex) {
      // A key's kind (openapi.yaml, Key; docs/access.md): every key made before is a secret key. A
      // publishable key lists the web origins that may use it (`origins`, a JSON array of serialized
      // origins; null for a secret key) and may set a rate per end user (requests per second, or null).
      await knex.schema.alterTable('api_keys', (t) => {
        t.string('kind', 16).notNullable().defaultTo('secret');
        t.text('origins');
        t.integer('end_user_rate');
      });
    },
    // Plain statements, as 0008_key_limits's.
    async down(knex) {
      for (const column of ['kind', 'origins', 'end_user_rate']) await knex.raw(`alter table api_keys drop column ${column}`);
    },
  },
  '0018_auth_issuers': {
    async up(knex) {
      // The account's issuers of end users' tokens (openapi.yaml, Issuer; docs/access.md, "Token issuers").
      // `audiences` is a JSON array of strings; exactly one of `jwks_uri`, `discovery_url` and `secret`
      // (an HS256 key, never answered back) is set.
      await knex.schema.createTable('auth_issuers', (t) => {
        t.increments('id');
        t.integer('account_id').notNullable().references('accounts.id');
        t.string('name', 63).notNullable();
        t.text('issuer').notNullable();
        t.text('audiences').notNullable();
        t.text('jwks_uri');
        t.text('discovery_url');
        t.text('secret');
        t.string('created_at', 32).notNullable();
        t.string('updated_at', 32).notNullable();
        t.unique(['account_id', 'name']);
      });
    },
    async down(knex) {
      await knex.schema.dropTable('auth_issuers');
    },
  },
  '0019_collection_rules': {
    async up(knex) {
      // A collection's rules (openapi.yaml, Rules; docs/access.md, "Rules"): their JSON text, null for none,
      // and their version, moved on by every change and never reused by the collection, which compiled
      // rules are kept by (src/rules/compile.ts). Columns of the collection, so they go with it.
      await knex.schema.alterTable('collections', (t) => {
        t.text('rules');
        t.integer('rules_version').notNullable().defaultTo(0);
      });
    },
    // Plain statements, as 0008_key_limits's.
    async down(knex) {
      for (const column of ['rules', 'rules_version']) await knex.raw(`alter table collections drop column ${column}`);
    },
  },
  '0020_end_user_counts': {
    async up(knex) {
      // The requests of each end user of a publishable key (docs/access.md, "A rate per end user"), added
      // to by every instance, as usage_counts is: `end_user` is a hash of who the end user is (the token's
      // issuer and subject, or the client's address), never the claim or the address itself. A row no
      // instance has written for a while is pruned (`updated_at`).
      await knex.schema.createTable('end_user_counts', (t) => {
        t.integer('key_id').notNullable().references('api_keys.id');
        t.string('end_user', 43).notNullable();
        t.bigInteger('count').notNullable();
        t.string('updated_at', 32).notNullable();
        t.primary(['key_id', 'end_user']);
        t.index(['updated_at'], 'end_user_counts_updated');
      });
    },
    async down(knex) {
      await knex.schema.dropTable('end_user_counts');
    },
  },
  '0021_search_indexes': {
    async up(knex) {
      // Search indexes (openapi.yaml, createIndex; docs/search.md): a collection has one at most, its
      // fields (a JSON array of names) in `search` of the collection's row, which every write reads, null
      // for none; its declaration a row of collection_indexes too, which lists it with the others. The
      // rows' words are in tables of each dialect's own.
      await knex.schema.alterTable('collections', (t) => {
        t.text('search');
      });
      await knex.schema.alterTable('collection_indexes', (t) => {
        t.boolean('is_search').notNullable().defaultTo(false);
      });
      for (const sql of schema.searchTables.make) await knex.raw(sql);
    },
    // Plain statements, as 0008_key_limits's.
    async down(knex) {
      for (const sql of schema.searchTables.drop) await knex.raw(sql);
      await knex.raw('alter table collection_indexes drop column is_search');
      await knex.raw('alter table collections drop column search');
    },
  },
  '0022_collection_relations': {
    async up(knex) {
      // Relations between collections (openapi.yaml, Relation; docs/relations.md): each declared of its
      // collection (`collection_id`), from its top-level `field`, holding ids of the rows of `target_id`.
      // What every write needs of them is also kept with the collection's schema (`relations` of its
      // current collection_schemas row, the JSON of both directions; `schema` '' when the collection has
      // relations and no schema), so that a write checked against a schema id is checked against its
      // relations too, and a change of relations gives both collections a schema id anew (schemas.ts).
      await knex.schema.createTable('collection_relations', (t) => {
        t.increments('id');
        t.integer('collection_id').notNullable();
        t.string('name', 63).notNullable();
        t.string('field', 63).notNullable();
        t.integer('target_id').notNullable();
        t.string('on_delete', 16).notNullable();
        t.string('reverse', 63);
        t.string('created_at', 32).notNullable();
        t.unique(['collection_id', 'name']);
        t.index(['target_id'], 'collection_relations_target');
      });
      await knex.schema.alterTable('collection_schemas', (t) => {
        t.text('relations');
      });
    },
    async down(knex) {
      await knex.raw('alter table collection_schemas drop column relations');
      await knex.schema.dropTable('collection_relations');
    },
  },
  '0023_postgres_relation_missing': schema.own['0023_postgres_relation_missing'] ?? unchanged,
  '0024_row_expiry': {
    async up(knex) {
      // Rows that expire (openapi.yaml, the `expiry` tag; docs/expiry.md): a collection's time to live
      // names its rows' field (`ttl_field`, null for none); each row's expiry, in ms since the epoch, is
      // `expires_at` (null: never), set from that field on every write (by each dialect's trigger in 0025, by the write's own statement since 0026),
      // and indexed where it is not null, for the reads' counts and the sweeper; the sweeper's delete
      // events say why (`reason`: 'expired', null for a request's).
      await knex.schema.alterTable('collections', (t) => {
        t.string('ttl_field', 63);
      });
      await knex.schema.alterTable('rows', (t) => {
        t.bigInteger('expires_at');
      });
      await knex.schema.alterTable('events', (t) => {
        t.string('reason', 16);
      });
      await knex.raw('create index rows_expiry on rows (collection_id, expires_at) where expires_at is not null');
    },
    // Plain statements, as 0008_key_limits's.
    async down(knex) {
      await knex.raw('drop index if exists rows_expiry');
      await knex.raw('alter table events drop column reason');
      await knex.raw('alter table rows drop column expires_at');
      await knex.raw('alter table collections drop column ttl_field');
    },
  },
  '0025_row_expiry_triggers': schema.own['0025_row_expiry_triggers'] ?? unchanged,
  '0026_row_expiry_in_writes': schema.own['0026_row_expiry_in_writes'] ?? unchanged,
  '0027_unique_keys': uniqueKeys(schema),
  '0028_expiry_clock': {
    async up(knex) {
      // The latest "now" by which rows expire that a process of this database has read (docs/expiry.md,
      // "A clock set back"), in ms since the epoch: one row, raised by each sweep and as a process stops,
      // read as one starts, so that expired rows do not come back after a restart on a clock set back.
      await knex.schema.createTable('expiry_clock', (t) => {
        t.integer('id').primary();
        t.bigInteger('now_ms').notNullable();
      });
      await knex('expiry_clock').insert({ id: 1, now_ms: 0 });
    },
    async down(knex) {
      await knex.schema.dropTable('expiry_clock');
    },
  },
  '0029_postgres_keys_go_with_rows': schema.own['0029_postgres_keys_go_with_rows'] ?? unchanged,
  '0030_sqlite_strings_kept_by_sort_indexes': schema.own['0030_sqlite_strings_kept_by_sort_indexes'] ?? unchanged,
  '0031_sort_key_pairs': sortKeyPairs(schema),
  // A search index's making over the rows already there, a batch a transaction (../search/indexes.ts,
  // fillSearchIndex): `{"after": id, "until": id}`, the rows whose words are yet to be written (ids past
  // `after`, up to `until`), null when none are. Read by each batch and by a process as it starts.
  '0032_search_fills': textColumn('collections', 'search_fill'),
  '0033_postgres_keys_carry_texts': schema.own['0033_postgres_keys_carry_texts'] ?? unchanged,
  '0034_sqlite_keys_carry_texts': schema.own['0034_sqlite_keys_carry_texts'] ?? unchanged,
  '0035_sqlite_keys_order_uncovered': schema.own['0035_sqlite_keys_order_uncovered'] ?? unchanged,
  '0036_postgres_words_go_with_rows': schema.own['0036_postgres_words_go_with_rows'] ?? unchanged,
});

/** A migration that adds the text column `column` (null in every row) to `table`, and drops it to undo. */
function textColumn(table: string, column: string): Knex.Migration {
  return {
    async up(knex) {
      await knex.schema.alterTable(table, (t) => {
        t.text(column);
      });
    },
    async down(knex) {
      await knex.raw(`alter table ${table} drop column ${column}`);
    },
  };
}

/**
 * Slots of a pair of fields (../engine/sorted.ts): an entry of `collections.sorted` may be a pair [F, G],
 * whose keys are G's, each within `prefix`, its row's value of F (sql/: a number's integer text, a
 * string's text, a boolean's 1 or 0, each after its rank; null where F is missing, null, an object or an
 * array). One-field slots' keys have no prefix, and their reads and writes are as they were: the pairs'
 * keys have an index of their own, partial (`prefix is not null`), which no other key is in. Going back
 * drops every slot from a collection's first pair on, and their keys: they are made again when asked for.
 */
function sortKeyPairs(schema: DialectSchema): Knex.Migration {
  return {
    async up(knex) {
      await knex.raw(`alter table sort_keys add column prefix ${schema.codePointText}`);
      await knex.raw(
        'create index sort_keys_pair on sort_keys (collection_id, slot, prefix, rank, num, str, row_id) where prefix is not null',
      );
    },
    async down(knex) {
      const paired = await knex('collections')
        .where('sorted', 'like', '%[[%')
        .orWhere('sorted', 'like', '%,[%')
        .select<{ id: number; sorted: string }[]>('id', 'sorted');
      for (const { id, sorted } of paired) {
        const entries = JSON.parse(sorted) as unknown[];
        const first = entries.findIndex((entry) => typeof entry !== 'string');
        if (first < 0) continue;
        await knex('sort_keys').where('collection_id', id).andWhere('slot', '>=', first).delete();
        await knex('collections')
          .where({ id })
          .update({ sorted: JSON.stringify(entries.slice(0, first)) });
      }
      await knex.raw('drop index sort_keys_pair');
      await knex.raw('alter table sort_keys drop column prefix');
    },
  };
}

/** The name of the database's index that a unique index was before 0027_unique_keys, by its id. */
const oldUniqueIndexName = (id: number) => `rows_unique_${id}`;

/**
 * Unique indexes as keys (../collections/indexes.ts): each unique index was an index of the database, a
 * partial index of the shared `rows` table, whose making read the whole table (every account's rows)
 * and held its writes meanwhile. Each row's key of each unique index of its collection is now a row of
 * `unique_keys`, which one index of the database, made here once, keeps unique per index (keys null,
 * a field missing or null, repeat); its key is the row's, which goes with it (a foreign key). The
 * collection's unique indexes are `uniques` of its row, `[index id, fields]` each, which every write
 * reads under the collection row's lock (advance()), as it reads `sorted`. The keys of every unique
 * index made before are written here, and its index of the database dropped.
 */
function uniqueKeys(schema: DialectSchema): Knex.Migration {
  const uniqueIndexesOf = (knex: Knex) =>
    knex('collection_indexes').where('is_unique', true).orderBy('id').select<{ id: number; collection_id: number; fields: string }[]>();
  return {
    async up(knex) {
      await knex.schema.alterTable('collections', (t) => {
        t.text('uniques').notNullable().defaultTo('[]');
      });
      await knex.raw(`create table unique_keys (collection_id integer not null, row_id bigint not null, index_id integer not null,
        key ${schema.codePointText}, primary key (collection_id, row_id, index_id),
        foreign key (collection_id, row_id) references rows (collection_id, id) on delete cascade)`);
      await knex.raw('create unique index unique_keys_key on unique_keys (index_id, key)');
      const uniques = new Map<number, [number, string[]][]>();
      for (const index of await uniqueIndexesOf(knex)) {
        const [id, collectionId] = [Number(index.id), Number(index.collection_id)];
        uniques.set(collectionId, [...(uniques.get(collectionId) ?? []), [id, JSON.parse(index.fields)]]);
        await knex.raw(schema.uniqueIndexes.fill, [id, index.fields, collectionId, 0, Number.MAX_SAFE_INTEGER]);
        await knex.raw(`drop index if exists ${oldUniqueIndexName(id)}`);
      }
      for (const [id, held] of uniques)
        await knex('collections')
          .where({ id })
          .update({ uniques: JSON.stringify(held) });
    },
    async down(knex) {
      for (const index of await uniqueIndexesOf(knex)) {
        const fields = JSON.parse(index.fields) as string[];
        await knex.raw(schema.uniqueIndexes.made(oldUniqueIndexName(Number(index.id)), Number(index.collection_id), fields));
      }
      await knex.raw('drop table unique_keys');
      await knex.raw('alter table collections drop column uniques');
    },
  };
}

/** A migration that changes nothing on a dialect. */
const unchanged: Knex.Migration = { async up() {}, async down() {} };

/** A dialect's migration that runs the statements `up`, one after another, and `down` to undo them. */
export function statements(up: readonly string[], down: readonly string[]): Knex.Migration {
  return {
    async up(knex) {
      for (const sql of up) await knex.raw(sql);
    },
    async down(knex) {
      for (const sql of down) await knex.raw(sql);
    },
  };
}

/** Migrations ship inside the code, so a bare `npm start` needs no migrations folder. */
export function migrationSource(schema: DialectSchema): Knex.MigrationSource<string> {
  const all = migrations(schema);
  return {
    getMigrations: async () => Object.keys(all),
    getMigrationName: (name) => name,
    getMigration: async (name) => all[name],
  };
}
