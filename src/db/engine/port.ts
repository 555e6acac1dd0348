// What the operations on rows (../rows/, ../reads/rows.ts) need of a dialect beyond its statements
// (dialect.ts): how it writes and how its errors read. Each operation (validate, guard, Idempotency-Key,
// event, unique index, answer) is written once above this port; a dialect answers it with its own
// strategy: SQLite's one writer, whose queue merges inserts into one collection, and patches of as many
// fields, into one statement (grouping.ts, GroupedWrites); PostgreSQL's pool, whose inserts into one
// collection go as one statement that commits on its own, and whose writes hold their collections' rows.
import type { OnceRequest } from '../../idempotency/answers.ts';
import type { Patch } from '../../patches/index.ts';
import type { Filter } from '../../query/filter.ts';
import type { Json, Row } from '../../rows.ts';
import type { SortedEntry } from './sorted.ts';

/**
 * A write transaction, as the statements in it need it: the connection it holds and its outcome. A
 * Knex transaction is one; so is a group of SQLite's writer (grouping.ts, GroupedWrites), which holds Knex's
 * connection without Knex's transaction machinery.
 */
export interface WriteTx {
  /** `acquireConnection()` answers the connection the transaction holds. */
  client: { acquireConnection(): Promise<unknown> };
  /** Fulfilled once the transaction has committed, rejected once it has rolled back. */
  executionPromise: Promise<unknown>;
}

/** A row's fields but `id`, as JSON.parse reads its stored text. */
export type Fields = Record<string, unknown>;

/** The first of a request's inserted rows: its collection, its id and the seq of its event; the others follow it. */
export interface FirstInserted {
  collectionId: number;
  id: number;
  seq: number;
}

/** One collection's inserts of a batch, as RowPort.insertSeveral takes them. */
export interface CollectionInserts {
  collection: string;
  /** The schema id its rows were checked with (0 for none). */
  schemaId: number;
  /** Each insert's rows' texts, in the order of the inserts. */
  inserts: string[][];
}

/** A row's JSON text and its version (../rows/rows.ts, versionOf). */
export interface VersionedRow {
  json: Json<Row>;
  version: string;
}

/** A row a change matched: its id, its stored text as it was and its version then (the seq of its last event). */
export interface MatchedRow {
  id: number;
  data: string;
  version: number | string;
}

/** A row to import: its id, and its text (its fields but id, as JSON.stringify writes them). */
export interface ImportedRow {
  id: number;
  text: string;
}

/** What a dialect writes of an import in its own SQL, inside the import's transaction (../rows/imports.ts). */
export interface RowImporter {
  /**
   * Stores `rows` in the collection with the ids they give, the first with the version `firstSeq` and
   * each next one the next (the seqs of their insert events: ../rows/rows.ts, versionOf).
   */
  insertRows(trx: WriteTx, collectionId: number, rows: ImportedRow[], firstSeq: number): Promise<void>;
  /** Keys the collection's rows with ids from `from` to `to` for the sort index of `field` (a field or a pair) in `slot`. */
  keyRows(trx: WriteTx, collectionId: number, slot: number, field: SortedEntry, from: number, to: number): Promise<void>;
}

/** A row read by id (RowPort.readRow): its collection's id, and the row's text and version, null when there is no such row. */
export type ReadRow = { collection_id: number | string } & ({ data: string; version: number | string } | { data: null; version: null });

/**
 * A row read inside a write to be patched, held until the write ends: its collection's id, its
 * version, its text, and the schema id its collection has now.
 */
interface RowToPatch {
  collectionId: number;
  version: number | string;
  data: string;
  schemaId: number;
  /**
   * Stores the row's new text `text` (its fields `row`, made by `patch`, checked already) with its
   * update event and its words, and answers the row and its new version; announced to the feed on commit.
   */
  write(text: string, row: Fields, patch: Patch): Promise<VersionedRow>;
}

/** A row a change patches: as it was matched, and as patched (its fields and their JSON text). */
export interface PatchedRow extends MatchedRow {
  fields: Fields;
  text: string;
}

export interface RowPort {
  /**
   * Runs `work` in a write transaction: SQLite's writer, in its queue's turn; a transaction of PostgreSQL's
   * pool, shared with the writes of the same `collection` (the account's id and its name, joined by `/`)
   * queued beside it, if given, by the rule of a group's failure (grouping.ts).
   */
  write<T>(work: (trx: WriteTx) => Promise<T>, collection?: string): Promise<T>;
  /**
   * write() for a write that may hold several collections (a batch, a delete that follows relations, a
   * change by filter): on PostgreSQL run again from its start when aborted as a deadlock (deadlocks.ts).
   */
  writeSeveral<T>(work: (trx: WriteTx) => Promise<T>, collection?: string): Promise<T>;
  /**
   * Inserts one request's rows, `texts`, checked against the schema `schemaId` already, with the answer
   * to its Idempotency-Key `once`, grouped with the inserts into the collection that wait beside it:
   * answers its first row's id and seq (the others follow). StaleSchema when the collection's schema is
   * another, or there is no such collection: nothing written. OnceTaken when its key's answer was stored
   * first.
   */
  insert(accountId: number, collection: string, schemaId: number, texts: string[], once?: OnceRequest): Promise<FirstInserted>;
  /**
   * Inserts the rows of `inserts`, each an operation's rows' texts, inside `trx`, which holds the
   * collection with the schema `schemaId` (a batch's, an upsert's): the first id and seq of each.
   */
  insertIn(trx: WriteTx, accountId: number, collection: string, schemaId: number, inserts: string[][]): Promise<FirstInserted[]>;
  /**
   * Inserts the rows of several collections' inserts (a batch's, ../rows/batch.ts), checked already, as
   * one write that commits on its own, all or none: each collection's rows after its last row, each
   * insert's after those of the inserts before it. Answers, for each collection in the order given, each
   * of its inserts' first id and seq; undefined, with nothing written, where it cannot write them so: a
   * collection missing, or of another schema than its rows were checked with, or (PostgreSQL) with a
   * search index. Past `deadline` (ms since the epoch) it stops, nothing written: 503 query_timeout. A
   * unique key broken fails it, as it fails an insert.
   */
  insertSeveral(accountId: number, collections: CollectionInserts[], deadline: number): Promise<FirstInserted[][] | undefined>;
  /**
   * The row, read alone (on SQLite merged with the reads of rows beside it): one answer when its
   * collection exists, its `data` and `version` null when the row is missing or does not live at `now`
   * (ms since the epoch, expiryNow(): docs/expiry.md), or does not match `where` (a caller's read rule,
   * tested in the statement); none when the collection is missing. One statement tells the three apart.
   */
  readRow(accountId: number, collection: string, rowId: number, now: number, where?: Filter): Promise<ReadRow[]>;
  /**
   * The row `rowId` read inside `trx` and held until it ends, to be patched: 404 for a missing row or
   * collection, or a row that does not live at `now` (ms since the epoch). `schemaId`: the schema the
   * patch was sent with in mind (StaleSchema when a missing row's collection has another: the 404 is then
   * told apart again).
   */
  readToPatch(trx: WriteTx, accountId: number, collection: string, rowId: number, schemaId: number, now: number): Promise<RowToPatch>;
  /**
   * The patch, a top-level merge, of a row of a collection without a schema, written without reading
   * the row, merged with the patches beside it, where the dialect can (SQLite's json_set, in one
   * statement): undefined where it cannot, and then the row is read and patched in a transaction.
   * StaleSchema when the collection has a schema now; 404 as readToPatch's, the row living at `now`.
   */
  mergePatch?(accountId: number, collection: string, rowId: number, patch: Patch, now: number): Promise<VersionedRow> | undefined;
  /**
   * The rows `rows` of a collection without a schema patched inside `trx` by the top-level merge `patch`
   * without reading them, where the dialect can (as mergePatch): their JSON texts as now stored, in id
   * order; undefined where it cannot.
   */
  patchByPath?(
    trx: WriteTx,
    accountId: number,
    collection: string,
    rows: MatchedRow[],
    patch: Patch,
  ): Promise<{ json: string }[]> | undefined;
  /**
   * Stores `rows` of the collection `collectionId`, held by `trx` (each row once), with their new texts,
   * their update events in the order given and their words: the rows' JSON texts as now stored, and
   * their versions. `patched`: the top-level fields the patches set (patchedFields(); undefined for
   * any), whose keys may have moved.
   */
  writePatched(
    trx: WriteTx,
    accountId: number,
    collection: string,
    collectionId: number,
    schemaId: number,
    rows: PatchedRow[],
    patched: readonly string[] | undefined,
  ): Promise<VersionedRow[]>;
  /** An import's rows and their sort keys, in the dialect's SQL (../rows/imports.ts). */
  importer: RowImporter;
  /** Whether an insert sent with an Idempotency-Key was refused because its key's answer was stored first (SQLite: its trigger's check). */
  isKeyTaken(error: unknown): boolean;
  /** Whether a write was refused for a row made heavier than a row may be (SQLite: its trigger's bound). */
  isRowTooLarge(error: unknown): boolean;
  /** Whether a page was refused as longer than a string its connection makes (SQLite's bound). */
  isPageTooLarge(error: unknown): boolean;
  /** Whether a read was stopped past the query timeout. */
  isQueryCanceled(error: unknown): boolean;
}
