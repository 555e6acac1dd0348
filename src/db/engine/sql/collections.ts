// The SQL of collections both dialects run: making, listing and deleting them, their counters, their
// schemas and unique indexes, and the sort keys of their sort indexes. A dialect's own SQL is in
// sqlite/sql/ and postgres/sql/; `npm run generate` writes every statement of each, whole, to generated/sql/.
import { liveRowCountSql } from './expiry.ts';

/**
 * The first statement of every write transaction (collections.ts, advance()): moves the collection's
 * counters by `?` new row ids, `?` events and `?` rows, found by account and name, and answers its id,
 * counters, sorted fields and unique indexes.
 */
export const advanceSql = `update collections set last_row_id = last_row_id + ?, last_seq = last_seq + ?, row_count = row_count + ?
  where account_id = ? and name = ? returning id, last_row_id, last_seq, sorted, uniques, schema_id, search, ttl_field`;

/**
 * The first statement of a collection's creation: writes the account's row, which holds it until
 * commit, so that creations of one account count their collections one after another.
 */
export const lockAccountSql = 'update accounts set id = id where id = ?';

/** Makes the account's collection, unless it holds `?` collections already: then no row is answered. */
export const createCollectionSql = `insert into collections (account_id, name, created_at, row_count)
  select ?, ?, ?, 0 where (select count(*) from collections where account_id = ?) < ? returning id`;

/** Lists one more field among the collection's sort indexes: `sorted` is the JSON array of them all. */
export const setSortedSql = 'update collections set sorted = ? where id = ?';

/**
 * After an INSERT … SELECT of sort keys, a row's key replaces the one it had (SQLite needs the WHERE to
 * read the upsert's ON CONFLICT as one).
 */
export const replaceKey =
  'where true on conflict (collection_id, row_id, slot) do update set rank = excluded.rank, num = excluded.num, str = excluded.str,\n    prefix = excluded.prefix';

/**
 * The bytes of a row's text its keys of a relation field carry at most (`sort_keys.carried`: migrations
 * 0033 to 0035): a to-many's rows are then read with their keys, without a lookup of each row by its id
 * (related.ts, keyRows): on PostgreSQL in the index they are ordered by, on SQLite in the keys' table, a
 * lookup a key. A btree key of PostgreSQL is at most 2,704 bytes: a text of at most CARRIED_TEXT_BYTES fits
 * beside the key's other columns; SQLite keeps the same bound, so that a longer row takes no more than its key.
 */
export const CARRIED_TEXT_BYTES = 2000;

/** Whether the collection `collectionId` (SQL) declares a relation from its field `field` (SQL of text). */
export const isRelatedField = (collectionId: string, field: string) =>
  `exists (select 1 from collection_relations where collection_id = ${collectionId} and field = ${field})`;

/** replaceKey before keys had a prefix (0031_sort_key_pairs), as migrations before it write keys. */
export const replaceUnprefixedKey =
  'where true on conflict (collection_id, row_id, slot) do update set rank = excluded.rank, num = excluded.num, str = excluded.str';

/** The order of sort keys (`k` their table's alias and a dot, or empty), and of rows with equal keys by id. */
export const keyOrder = (k: string, dir: 'asc' | 'desc') => `${k}rank ${dir}, ${k}num ${dir}, ${k}str ${dir}, ${k}row_id ${dir}`;

/** A collection's columns as listCollections and getCollection answer them: its row count of the rows that live by `?` (liveRowCountSql) first. */
const collectionColumns = `c.name, c.created_at, ${liveRowCountSql('c')} as row_count, c.last_seq`;
/** The account `?`'s collections, with their rows that live at `?` (ms since the epoch) counted, by name. */
export const listCollectionsSql = (collate: string) =>
  `select ${collectionColumns} from collections c where c.account_id = ? order by c.name${collate}`;
/**
 * The collections, each with its schema's text (null for none), its relations' (null for none), its id, its rules' text (null for none) and their version, and its time to live's field (null for none). A
 * schema row of a collection with relations and no schema holds the text '' (../relations/relations.ts).
 */
export const listCollectionContractsSql = (
  collate: string,
) => `select c.id, c.name, nullif(s.schema, '') as schema, s.relations, c.rules, c.rules_version, c.ttl_field from collections c
  left join collection_schemas s on s.id = c.schema_id where c.account_id = ? order by c.name${collate}`;
export const getCollectionSql = `select ${collectionColumns}, nullif(s.schema, '') as schema, s.relations, c.ttl_field from collections c left join collection_schemas s on s.id = c.schema_id
  where c.account_id = ? and c.name = ?`;
export const collectionIdSql = 'select id from collections where account_id = ? and name = ?';
/** A collection's deletion, after advance() holds its row: its rows, events, sort and unique keys, indexes and words, webhook streams, then itself. */
export const deleteCollectionSqls = [
  'delete from search_rows where collection_id = ?',
  'delete from unique_keys where collection_id = ?',
  'delete from rows where collection_id = ?',
  'delete from events where collection_id = ?',
  'delete from sort_keys where collection_id = ?',
  'delete from collection_schemas where collection_id = ?',
  'delete from collection_indexes where collection_id = ?',
  'delete from webhook_streams where collection_id = ?',
  'delete from collections where id = ?',
];

/** Sets the collection's unique indexes: `uniques`, a JSON array of `[index id, fields]` (indexes.ts). */
export const setUniquesSql = 'update collections set uniques = ? where id = ?';
/** The keys of the unique index `?` (indexes.ts), gone. */
export const dropUniqueKeysSql = 'delete from unique_keys where index_id = ?';
/**
 * The rows of the collection `?` whose key of the unique index `?` is `key` (SQL, its bindings after
 * the index's id), but the row `?` (0 for none): at most `?`, by id.
 */
export const keyHoldersSql = (key: string) => `select row_id as id from unique_keys
  where collection_id = ? and index_id = ? and key = ${key} and row_id <> ? order by row_id limit ?`;

// Schemas (schemas.ts; openapi.yaml, RowSchema).

/** The account's collection's schema id (0 for none), by name. */
export const schemaIdSql = 'select schema_id from collections where account_id = ? and name = ?';
/** A schema's text ('' for none) and the relations that its collection had with it (null for none), by its id. */
export const schemaTextSql = 'select schema, relations from collection_schemas where id = ?';
/** Stores a schema of the collection `?` ('' for none) with its relations (`?`, null for none), answering its new id. */
export const insertSchemaSql = 'insert into collection_schemas (collection_id, schema, relations) values (?, ?, ?) returning id';
/** Makes schema `?` the collection `?`'s (0: none). */
export const setSchemaIdSql = 'update collections set schema_id = ? where id = ?';
/** The collection `?`'s schemas but `?`, gone. */
export const dropOtherSchemasSql = 'delete from collection_schemas where collection_id = ? and id <> ?';
