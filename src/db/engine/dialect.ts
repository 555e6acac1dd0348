// What the operations (of every area of db/: rows, reads, collections, events, accounts, …) need of the
// database they run on: its statements, and how it writes (port.ts). Each dialect module (sqlite/, postgres/) makes one
// when it opens its database, and hands it to them: they never ask which dialect it is.
import type { Knex } from 'knex';
import type { Filter } from '../../query/filter.ts';
import type { EventRow } from '../../rows.ts';
import type { KnownIndexes } from '../collections/sort-indexes.ts';
import type { RelationLinks } from '../relations/links.ts';
import type { Fields, RowPort, WriteTx } from './port.ts';
import type { SortedEntry } from './sorted.ts';
import type { SearchIndex } from './sql/search.ts';
import type { WakeUps } from './wake-ups.ts';

export type { WriteTx } from './port.ts';

import type { Waits } from './waits.ts';

export type SqlValue = string | number | null;

/** A stored answer to an Idempotency-Key, as its table holds it (idempotency.ts). */
export interface OnceRow {
  request_hash: string;
  status: number | string;
  headers: string;
  body: string | null;
}

export interface Dialect {
  /** The database's Knex: its pool and its transactions. */
  knex: Knex;
  /** How rows are written and read, and how the errors of those writes and reads read (port.ts). */
  rows: RowPort;
  /** How long a page that sorts or filters, or a batch, may run, in ms (connect.ts, StoreOptions). */
  queryTimeoutMs: number;
  /** Wake-ups after each committed change of a collection (changes.ts). */
  changes: WakeUps;
  /** The collections' schemas as last seen, and their validators, each compiled once (schemas.ts, RowSchemas). */
  schemas: SchemaCache;
  /** How a row's key of a unique index is made, in the dialect's SQL (../collections/indexes.ts). */
  uniqueKeySql: UniqueKeySql;
  /** How the words of a search index are written and searched, in the dialect's SQL (../search/indexes.ts). */
  searchSql: SearchSql;
  /** Waits for a connection: Knex's pool is watched by the store, the dialect tells of its own queues (waits.ts). */
  waits: Waits;
  /**
   * Runs one statement inside `trx` and answers its rows (none for a write without RETURNING): `sql`
   * has `?` placeholders, and is prepared once per connection; `once`: made for one request (a filter's),
   * so prepared for this run only, where kept it would take the place of a statement run again and again.
   */
  run<T>(trx: WriteTx, sql: string, params: SqlValue[], once?: boolean): Promise<T[]>;
  /**
   * The stored answer to the account's Idempotency-Key `key` that has not expired by `now`, as
   * onceAnswerSql (../sql/rows.ts) reads it: a read on every keyed write's path, made on a connection for reads
   * where the dialect has them (on SQLite, merged with those asked for beside it, as row reads are).
   */
  readOnce(accountId: number, key: string, now: string): Promise<OnceRow | undefined>;
  /**
   * Deletes up to `?` (the second) answers that expired by `?` (the first), answering a row for each:
   * the keys are free again. None once it finds no more; SQLite looks among the oldest answers only.
   */
  pruneOnceSql: string;
  /** Sets every row's expiry of the collection `?` by its time to live's field as it is now, in the dialect's SQL (../expiry/ttl.ts). */
  refreshExpiriesSql: string;
  /**
   * Leases the webhooks' streams due for delivery (webhooks.ts, claimStreams): bound to when due by,
   * when a lease has expired by, how many, the instance, the lease's end; answers each stream claimed.
   */
  claimStreamsSql: string;
  /**
   * Acknowledges a group of the webhooks' streams in one statement run on its own (webhooks.ts,
   * ackStream): bound to a JSON array of `[webhook id, collection id, owner, seq, lease until, attempt]`,
   * `attempt` the delivery log's columns after webhook_id, or null; answers `i` (each one's place, from 0)
   * and `held` (whether its owner held its stream) for each (SQLite) or each held (PostgreSQL).
   */
  ackStreamsSql: string;
  /** Runs one statement on its own (`sql` with `?` placeholders), and answers its rows. */
  query<T>(sql: string, params: SqlValue[]): Promise<T[]>;
  /**
   * query(), for a statement of the service's own text that runs again and again (the webhooks'
   * acknowledgements): prepared once per connection and kept, where query() has the database parse and
   * plan it anew each time.
   */
  queryKept<T>(sql: string, params: SqlValue[]): Promise<T[]>;
  /**
   * Runs a read of what has committed, outside any transaction, on a connection no write holds: for the
   * reads on every request's path (its key's principal, its account's plan and usage), which must not
   * wait for another account's write. On SQLite, the read-only connection of point reads, which reads
   * beside a write transaction (WAL), where query() waits for Knex's one connection, held by a write
   * for as long as it runs (a declaration's apply, all of it); on PostgreSQL, query().
   */
  readCommitted<T>(sql: string, params: SqlValue[]): Promise<T[]>;
  /** Announces from inside `trx` that the collection changed: listeners hear it after the commit, never after a rollback. */
  announce(trx: WriteTx, collectionId: number): Promise<void>;
  /**
   * Holds the account's Idempotency-Key `key` for the rest of `trx`, unless a transaction under way
   * (of any instance) holds it: then false, and the request is still running elsewhere (409).
   */
  holdOnce(trx: WriteTx, accountId: number, key: string): Promise<boolean>;
  /**
   * How long a writer of another process that has waited `waitedMs` for the database may take, at most,
   * to see it free once it is: a writer that holds the database for long (an import) leaves it free at
   * least this long after such a turn, or the other may never see it free.
   */
  writerWakeMs(waitedMs: number): number;
  /**
   * The rows a sweep's batch deletes at most (../expiry/sweep.ts, src/sweeper.ts): on SQLite a turn of the
   * one writer, which the requests' writes wait behind, so a few ms; on PostgreSQL a transaction that holds
   * only its collection's row, where a batch's round trips are paid the fewer times the more rows it holds.
   */
  sweepBatchRows: number;
  /**
   * A sweep's batch of the collection `collectionId` as a transaction of few round trips, where the
   * dialect has one (PostgreSQL: its row held, then one statement): the rows expired by `now` (ms since
   * the epoch), `rows` at most, deleted as sweepExpiredBatch() deletes them, each with its event, and the
   * change announced; answers how many went, or undefined, writing nothing, for a collection whose
   * deletes follow relations (the transaction's path, ../expiry/sweep.ts).
   */
  sweepAlone?(collectionId: number, now: number, rows: number): Promise<number | undefined>;
  /**
   * The statement that has the sort keys of the collection `?`'s field `?` carry their rows' texts (each
   * dialect's sql/collections.ts, carriedText), run as a relation from it is declared: a sort index made
   * before carries none.
   */
  carryTextsSql: string;
  /** What follows a text column in ORDER BY for code point order (openapi.yaml: names are listed so). */
  codePointOrder: string;
  /** Whether the driver's error is a unique constraint the statement broke, told by its code. */
  isUniqueViolation(error: unknown): boolean;
  /** Whether the driver's error aborted the transaction as one of several waiting for each other (nothing of it written). */
  isDeadlock(error: unknown): boolean;
  /** A filter as the condition of a change by filter (../sql/filter.ts), in the dialect's SQL: a relation's rows are found so. */
  filterSql(filter: Filter): { sql: string; params: SqlValue[] };
  /** The keys of a sort index within `bounds`, as a condition on the columns of `sort_keys` (the dialect's filter.ts). */
  keyBoundsSql(bounds: KeyBounds): { sql: string; params: SqlValue[] };
  /**
   * The rows of the collection whose id is one of `ids`, as a condition on `rows` that needs no other,
   * each found through the primary key (the dialect's sql/relations.ts).
   */
  rowIdsSql(collectionId: number, ids: readonly number[]): { sql: string; params: SqlValue[] };
  /** rowIdsSql of the rows' sort keys, as a condition on `sort_keys` that needs no other, through its primary key. */
  keyRowIdsSql(collectionId: number, ids: readonly number[]): { sql: string; params: SqlValue[] };
  /**
   * The rows of the collection whose field of the sort index in `slot` holds one of `ids` as a number (the
   * rows a relation's field has name those rows), as a condition on `rows` that needs no other: each id's
   * keys read from the index, then each key's row through the primary key (the dialect's sql/relations.ts).
   */
  namingRowsSql(collectionId: number, slot: number, ids: readonly number[]): { sql: string; params: SqlValue[] };
  /**
   * The rows of the collection whose keys in the sort index in `slot` are within `bounds` (keyBoundsSql), as a
   * condition on `rows` that needs no other: the keys read from the index, then each key's row through the
   * primary key (the dialect's sql/rows.ts). The rows a change by filter tests.
   */
  rangeRowsSql(collectionId: number, slot: number, bounds: { sql: string; params: SqlValue[] }): { sql: string; params: SqlValue[] };
  /**
   * The keys of each of `ranges` and their rows, in one statement: a row a range's place `n`, its key's
   * row's `id`, `data` and `version`, those null where the row does not meet `where` (a condition on
   * `rows`); at most a range's `limit` keys each. The rows of the changes by filter written together
   * (../rows/together.ts), each tested by its filter there (the dialect's sql/rows.ts).
   */
  rangesRowsSql(
    collectionId: number,
    ranges: readonly KeyRange[],
    where: { sql: string; params: SqlValue[] },
  ): { sql: string; params: SqlValue[] };
  /** The statement that writes the events of one change (../events/events.ts, appendEvents): the dialect's sql/events.ts. */
  insertEventsSql(events: EventsWrite): { sql: string; params: SqlValue[] };
}

/**
 * The events of one change as one statement writes them: of the collection `collectionId`, one of each
 * of `rows` in their order, numbered from `first`, each of `type` (EventType), at `at`, with `reason`
 * (EventReason) when given.
 */
export interface EventsWrite {
  collectionId: number;
  first: number;
  type: string;
  at: string;
  rows: readonly EventRow[];
  reason?: string;
}

/**
 * What the areas give a dialect as it opens (../open-store.ts): the parts of its reads and writes that are
 * theirs, which its strategy takes inside its own statements, so that each is written once, in its area,
 * and no dialect imports an area.
 */
export interface AreaParts {
  /** The collections' schemas as last seen (../collections/schemas.ts, RowSchemas), reading which rows exist with `existingIdsSql`. */
  schemas(existingIdsSql: string): SchemaCache;
  /** The sort indexes this process has seen collections have (../collections/sort-indexes.ts). */
  knownIndexes: KnownIndexes;
  steps: WriteSteps;
}

/** A collection's row as a write holds it (../collections/collections.ts, advance()): its counters moved on, and what every write reads. */
interface HeldCollection {
  id: number;
  lastRowId: number;
  lastSeq: number;
  /** The fields of its sort indexes, by slot. */
  sorted: SortedEntry[];
  /** Its unique indexes, each its id and fields (../collections/indexes.ts, `collections.uniques`). */
  uniques: UniqueIndexes;
  schemaId: number;
  search: SearchIndex | undefined;
}

/** A collection's unique indexes as `collections.uniques` holds them: each `[index id, fields]`. */
export type UniqueIndexes = [number, string[]][];

/** The steps of a write of rows that are an area's, taken by a dialect's strategy inside its own statements. */
export interface WriteSteps {
  /**
   * Holds the collection's row inside `trx` and moves its counters on: `events` seqs, `rowIds` ids and
   * `rowDelta` rows (../collections/collections.ts); 404 for no such collection.
   */
  advance(
    db: Dialect,
    trx: WriteTx,
    accountId: number,
    collection: string,
    events: number,
    rowIds?: number,
    rowDelta?: number,
  ): Promise<HeldCollection>;
  /** Writes a change's events inside `trx`, numbered to end at `lastSeq` (../events/events.ts). */
  appendEvents(db: Dialect, trx: WriteTx, collectionId: number, lastSeq: number, type: 'update', rows: EventRow[]): Promise<void>;
  /** Sets the words of `rows` in the collection's search index, inside `trx` (../search/indexes.ts). */
  putWords(db: Dialect, trx: WriteTx, index: SearchIndex, rows: readonly { id: number; fields: Fields }[]): Promise<void>;
}

/** The operators of a condition an index range can find the rows of. */
type IndexedOperator = '$eq' | '$gt' | '$gte' | '$lt' | '$lte' | '$prefix';

/** A value a sort index keys. */
export type KeyValue = number | string | boolean;

/**
 * A condition on an indexed field's value: only values of the operand's JSON type meet it (`$in`: of its
 * values', all of one type; `$ids`: of the row ids a subquery reads, SQL with its bindings, of rank 1,
 * with `one` known to read one at most).
 */
type KeyCondition = ValueCondition | { op: '$ids'; operand: { sql: string; params: SqlValue[] }; one: boolean };

/** A KeyCondition on values a filter names. */
export type ValueCondition = { op: IndexedOperator; operand: KeyValue } | { op: '$in'; operand: KeyValue[] };

/**
 * A range of a sort index (../reads/filter-indexes.ts): the keys of one rank (1 numbers, 2 strings, 3 booleans) that meet every one
 * of `conditions`, each on the value (a boolean's value is its number, false 0, true 1).
 */
export interface KeyBounds {
  rank: 1 | 2 | 3;
  conditions: KeyCondition[];
}

/** A sort index's range (the slot of its field, the bounds of its keys), read up to `limit` keys (Dialect.rangesRowsSql). */
export interface KeyRange {
  slot: number;
  bounds: KeyBounds;
  limit: number;
}

/** Runs one statement and answers its rows: alone, or inside the write that needs it. */
export type Read = <T>(sql: string, params: SqlValue[]) => Promise<T[]>;

/** What the writes of rows ask of the collections' schemas (schemas.ts, RowSchemas, which has the details). */
export interface SchemaCache {
  /** Runs `write` with the collection's schema id as last seen, again with the stored one when it is stale; 404 for no collection. */
  retry<T>(read: Read, accountId: number, collection: string, write: (schemaId: number) => Promise<T>): Promise<T>;
  /** The schema id the collection was last seen with (0: none, or never seen with one): a guess, which the write that names it checks. */
  hint(accountId: number, collection: string): number;
  /** Remembers the collection's schema id (0: none). */
  note(accountId: number, collection: string, schemaId: number): void;
  /** Answers which of the ids `?` (joined by commas) are rows of the collection `?`, held on PostgreSQL (../relations/links.ts). */
  readonly existingSql: string;
  /** The relations of and to the collection whose schema id is `schemaId` (none for 0). */
  links(read: Read, schemaId: number): Promise<RelationLinks | undefined>;
  /** Whether rows checked against `schemaId` may name rows of other collections (true while that is not known). */
  names(schemaId: number): boolean;
  /**
   * The rows that `rows`, checked against `schemaId`, name in its relations, each once, in order of
   * collection and id (../relations/links.ts, namedRows): undefined when a field of a relation holds
   * anything but null or a row id.
   */
  namedRows(
    read: Read,
    schemaId: number,
    rows: readonly Record<string, unknown>[],
  ): Promise<{ collections: number[]; ids: number[] } | undefined>;
  /** 422 row_invalid when any of `rows` names a row that does not exist in a relation of the schema `schemaId`. */
  named(read: Read, schemaId: number, collection: string, rows: readonly Record<string, unknown>[]): Promise<void>;
  /**
   * 422 row_invalid when any of `rows` breaks the schema `schemaId` (none for 0), or names a row that does
   * not exist in one of its relations, each named by `rowOf(index)`.
   */
  check(
    read: Read,
    schemaId: number,
    collection: string,
    rows: readonly Record<string, unknown>[],
    rowOf?: (index: number) => number,
  ): Promise<void>;
  /** check() but the rows named, which the write's own transaction looks up (named()): an insert's. */
  validate(read: Read, schemaId: number, collection: string, rows: readonly Record<string, unknown>[]): Promise<void>;
}

/**
 * What a dialect writes of unique indexes in its own SQL (../collections/indexes.ts): a row's key of a
 * unique index is one text made of its fields' JSON values, null when one of them is missing or null
 * (which the index lets repeat), kept in `unique_keys`, whose one index of the database makes keys of an
 * index unique.
 */
export interface UniqueKeySql {
  /** The SQL of the key of the row whose text is `data` (SQL) for the fields `fields` (SQL of a JSON array of names). */
  key(data: string, fields: string): string;
  /**
   * Keys the rows of a collection for one of its unique indexes: `?` the index's id, `?` its fields (a
   * JSON array of names), `?` the collection's id, then `?` and `?` the first and last ids of the rows.
   */
  fill: string;
  /**
   * The ids of up to `?` (the sixth) rows of the collection `?` whose key of the unique index `?` is that of
   * the row text `?` for the fields `?` (a JSON array of names), but the row `?` (0 for none), by id: where
   * the dialect keeps the key.
   */
  holders: string;
}

/**
 * What a dialect writes of search indexes in its own SQL (../search/indexes.ts): a row's
 * words are its terms, joined by spaces, each a word of the row with its collection's id before it
 * (searchTerms()). A row's words are deleted with it (a foreign key of the words' table).
 */
export interface SearchSql {
  /** Sets the words of rows of collection `?`: `?` is a JSON array of `[row id, terms]`, each row's terms as words() writes them. */
  put: string;
  /** A row's terms, in order, as put takes them. */
  words(terms: readonly string[]): string;
  /**
   * A table of `collection_id`, `row_id` and `score`: the rows holding every one of the terms `words`, and
   * a term starting with `prefix` (as query() takes them), each with its relevance to them, the higher
   * the more relevant (docs/search.md, "Ranking"); its bindings.
   */
  scores(words: readonly string[], prefix?: string): { sql: string; params: string[] };
  /** Removes the words of every row of collection `?`. */
  removeAll: string;
  /** A condition on the row `row` (a table's alias): it holds the terms of the search `?`, as query() writes it. */
  match(row: string): string;
  /** The search of rows holding every one of the terms `words`, and a term starting with `prefix`, as match() takes it. */
  query(words: readonly string[], prefix?: string): string;
}

/** How a dialect copies its database while it serves (`rowbase backup`; docs/operations.md, "Backup"). */
export interface Backups {
  /**
   * Copies the database to the file `target`, which must not exist unless `replace`; the copy holds
   * every transaction committed before it began. BackupRefusedError for a target that exists, and
   * on PostgreSQL, whose pg_dump does this.
   */
  backup(target: string, replace: boolean): Promise<void>;
}
