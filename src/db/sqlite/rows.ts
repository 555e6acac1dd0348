// SQLite: the operations on rows (../engine/assemble.ts, RowOperations), and the writer they write with.
// Writes go through the writer's queue (../engine/grouping.ts, GroupedWrites): inserts into one collection, and
// patches of one collection that set as many fields, queued side by side become one statement (sql/),
// run on the writer's connection (SqliteWriter, below) and announced to the feed once committed
// (announceOnCommit). Reads go to the read-only connections (readers.ts): row reads by id merged, pages
// on a connection of their own.
//
// Every connection, the writer's and the readers', prepares each hot statement once and reuses it
// (StatementCache, below): Knex has node-sqlite3 prepare and finalize a new statement for every query,
// which costs more than running it.
import type sqlite3 from 'sqlite3';
import { type ApiError, collectionNotFound, queryTimeout, rowNotFound } from '../../errors.ts';
import { type OnceRequest, OnceTaken } from '../../idempotency/answers.ts';
import { applyPatch, type Patch } from '../../patches/index.ts';
import { assignable, overRowBound, rowJson } from '../../rows.ts';
import { advance } from '../collections/collections.ts';
import { keepingUnique, uniqueViolation, type WrittenRow } from '../collections/indexes.ts';
import { StaleSchema } from '../collections/schemas.ts';
import { bindSearch, putWords, searchIndexOf } from '../collections/search-indexes.ts';
import type { RowOperations } from '../engine/assemble.ts';
import type { Changes } from '../engine/changes.ts';
import type { Dialect, SqlValue, WriteTx } from '../engine/dialect.ts';
import { DatabaseClosedError } from '../engine/errors.ts';
import type { GroupedWrites } from '../engine/grouping.ts';
import type { AggregateSource } from '../reads/aggregates.ts';
import type { Sql } from '../reads/filter.ts';
import { readRelatedAggregates, readRelatedPage } from '../reads/related.ts';
import { upsertWritesOf, writeBatch } from '../rows/batch.ts';
import { exportCollection } from '../rows/exports.ts';
import { beginOnce, recordOnce } from '../rows/idempotency.ts';
import { importRowsIn, type RowImporter } from '../rows/imports.ts';
import {
  type ChangedRows,
  type Fields,
  type FirstInserted,
  insertedRows,
  noSuchRow,
  pageTooLarge,
  preconditionFailed,
  type RowGuard,
  rowTooLarge,
  type VersionedRow,
  versionMatches,
  versionOf,
} from '../rows/rows.ts';
import { upsertRows } from '../rows/upserts.ts';
import { changedRows, deleteRowIn, deleteRowsIn, type MatchedRow, matchedRows, type RowWrites } from '../rows/writes.ts';
import { collectionSql } from '../sql/reads.ts';
import { isConstraintViolation, isQueryCanceled, isTooBig } from './errors.ts';
import { keysSql } from './sql/collections.ts';
import { fieldName, pathSafe, rowsSql } from './sql/reads.ts';
import { importRowsSql, insertSql, MAX_FIELDS_BY_PATH, patchedRowSql, patchSql } from './sql/rows.ts';

/** An insert as it waits in the writer's queue: its rows' texts, and its Idempotency-Key if it was sent with one. */
type Insert = { texts: string[]; once?: OnceRequest };

/** A patch of row `rowId` as row_patches takes it (sql/): its fields as `[JSON path, JSON text]`. */
type FieldPatch = { rowId: number; fields: string[][] };
/** What patchSql answers of each patch (sql/). */
type PatchWritten = { id: number | null; i: number; data: string | null; version: number | null; search: string | null };
/** A row as patchedRowSql reads it. */
type StoredRow = { data: string; collection_id: number; version: number; schema_id: number };

/** What the operations read on the read-only connections (readers.ts, SqliteReaders). */
interface RowReads {
  /** The rows `sql` answers, on the connection of single rows. */
  read<T>(sql: string, params: SqlValue[]): Promise<T[]>;
  /** The rows of one read among many alike, read together with those asked for beside it (readers.ts). */
  readMerged<T>(sql: string, params: SqlValue[]): Promise<T[]>;
}

/** What SQLite's rows are read and written with. */
export interface SqliteRowsParts {
  db: Dialect;
  /** How long a page that sorts or filters may run before it is interrupted (connect.ts, StoreOptions). */
  queryTimeoutMs: number;
  writer: SqliteWriter;
  /** The reads of single rows, on the read-only connections (readers.ts). */
  reads: RowReads;
  writes: GroupedWrites;
  /** Pages of rows, through the read-only connections (sort indexes made with the writer). */
  pages: AggregateSource;
}

/**
 * Tells this process's listeners of the change to the collection once the write `trx` has committed
 * (and nothing if it rolls back): one process writes, so its listeners are all there is to wake.
 */
export function announceOnCommit(changes: Changes, trx: WriteTx, collectionId: number): void {
  trx.executionPromise.then(
    () => changes.emit('change', collectionId),
    () => {},
  );
}

export function sqliteRows({ db, queryTimeoutMs, writer, reads, writes, pages }: SqliteRowsParts): RowOperations {
  /** A point read on a read-only connection (a change by filter's look at the collection's search index). */
  const readPoint = <T>(sql: string, params: SqlValue[]) => pages.read<T>(sql, params, 'point');
  /** Reads inside the write `trx`, on the writer's connection, which it holds. */
  const readIn =
    (trx: WriteTx) =>
    <T>(sql: string, params: SqlValue[]) =>
      writer.inTransaction<T>(trx, sql, params);

  /** An import's rows and their sort keys (../imports.ts), in SQLite's SQL. */
  const importer: RowImporter = {
    async insertRows(trx, collectionId, rows, firstSeq) {
      await writer.inTransaction(trx, importRowsSql, [collectionId, firstSeq, JSON.stringify(rows.map(({ id, text }) => [id, text]))]);
    },
    async keyRows(trx, collectionId, slot, field, from, to) {
      const { sql, binding } = fieldName(field);
      await writer.inTransaction(trx, keysSql(sql, 'r.id between ? and ?'), [collectionId, slot, binding, collectionId, from, to]);
    },
  };

  /**
   * Patches, each of one row and all of as many fields, in one statement, in the order they came, each
   * row as patched checked against the schema `schemaId` already: each answers its row as it left it,
   * or the 404 it met (the others are stored all the same), or StaleSchema when the collection's schema
   * is another (or there is no such collection), and then nothing is written.
   */
  async function writePatches(trx: WriteTx, accountId: number, collection: string, schemaId: number, patches: FieldPatch[]) {
    const patchesJson = JSON.stringify(patches.map(({ rowId, fields }) => [rowId, fields]));
    const params = [accountId, collection, patchesJson, new Date().toISOString(), schemaId];
    const sql = patchSql(patches[0].fields.length, patches.length);
    const written = await writer.inTransaction<PatchWritten>(trx, sql, params);
    const byIndex = new Map(written.map((row) => [Number(row.i), row]));
    // The rows' words, when the collection has a search index: each row as its last patch left it.
    const [first] = written;
    const search = first && first.id !== null ? searchIndexOf(first.id, first.search) : undefined;
    if (search) {
      const rows = new Map(patches.map(({ rowId }, index) => [rowId, byIndex.get(index)?.data ?? null]));
      const patched = [...rows].flatMap(([id, data]) => (data === null ? [] : [{ id, fields: JSON.parse(data) as Fields }]));
      await putWords(db, trx, search, patched);
    }
    let changed: number | undefined;
    const answers = patches.map(({ rowId }, index): VersionedRow | Error => {
      const { id = null, data = null, version = null } = byIndex.get(index) ?? {};
      if (id === null) return new StaleSchema();
      if (data === null) return rowNotFound(collection, rowId);
      changed = id;
      return { json: rowJson(rowId, data), version: versionOf(id, version as number) };
    });
    if (changed !== undefined) announceOnCommit(db.changes, trx, changed);
    return answers;
  }

  /**
   * Inserts, in one statement (insertSql), with the answers of those sent with an Idempotency-Key, their
   * rows checked against the schema `schemaId` already: answers each request's first id and seq, its
   * rows following those of the requests before it. A key whose answer another request stored first
   * aborts the statement, which wrote nothing (OnceTaken); the inserts merged with it then run again
   * each alone (../engine/grouping.ts). StaleSchema when the collection's schema is another (or there is no
   * such collection): nothing written.
   */
  async function writeInserts(
    trx: WriteTx,
    accountId: number,
    collection: string,
    schemaId: number,
    inserts: Insert[],
  ): Promise<FirstInserted[]> {
    const all = inserts.length === 1 ? inserts[0].texts : inserts.flatMap(({ texts }) => texts);
    // The rows they name, looked up on the writer, which no other write comes between this and the statement.
    if (db.schemas.names(schemaId))
      await db.schemas.named(
        readIn(trx),
        schemaId,
        collection,
        all.map((text) => JSON.parse(text) as Fields),
      );
    // As row_inserts takes them (sql/); the hashes and the times are hex digits and ISO 8601, with nothing to escape.
    let onces = '';
    let place = 0;
    for (const { texts, once } of inserts) {
      if (once) {
        onces += `${onces ? ',' : ''}[${JSON.stringify(once.key)},"${once.hash}","${once.at}","${once.expiresAt}",${place},${texts.length}]`;
      }
      place += texts.length;
    }
    const params = [accountId, collection, all.length, JSON.stringify(all), new Date().toISOString(), `[${onces}]`, schemaId];
    // A constraint it breaks (its trigger's check of the keys, sql/, row_inserts, or a unique index)
    // is told apart once the statement has rolled back (insertRows).
    const [written] = await writer.inTransaction<{ id: number | null; last_row_id: number; last_seq: number; search: string | null }>(
      trx,
      insertSql,
      params,
    );
    if (written.id === null) throw new StaleSchema();
    const firstId = written.last_row_id - all.length + 1;
    const search = searchIndexOf(written.id, written.search);
    if (search)
      await putWords(
        db,
        trx,
        search,
        all.map((text, index) => ({ id: firstId + index, fields: JSON.parse(text) as Fields })),
      );
    announceOnCommit(db.changes, trx, written.id);
    const firsts: FirstInserted[] = [];
    let id = firstId;
    let seq = written.last_seq - all.length + 1;
    for (const { texts } of inserts) {
      firsts.push({ collectionId: written.id, id, seq });
      id += texts.length;
      seq += texts.length;
    }
    return firsts;
  }

  /**
   * A patch of the row `rowId` made in Node inside `trx`: the row read (nothing changes it between the
   * read and the write, on the writer's connection), checked against If-Match, patched (409
   * patch_conflict when the patch cannot apply to it), checked against the collection's schema (its
   * errors naming the row `place`), and its whole text set by writePatches(). `schemaId`: the schema the
   * patch was sent with in mind, which a missing row's 404 is told apart with. `seen` is told the row as
   * patched, and as it was, before it is written.
   */
  async function patchRowIn(
    trx: WriteTx,
    accountId: number,
    collection: string,
    rowId: number,
    patch: Patch,
    schemaId: number,
    options?: { ifMatch?: readonly string[]; guard?: RowGuard },
    place = 0,
    seen?: (row: Fields, before: Fields) => void,
  ): Promise<VersionedRow> {
    const [stored] = await writer.inTransaction<StoredRow>(trx, patchedRowSql, [accountId, collection, rowId]);
    const before = stored && JSON.parse(stored.data);
    if (stored) options?.guard?.reading(rowId, before);
    if (stored && !versionMatches(options, versionOf(stored.collection_id, stored.version))) throw preconditionFailed(collection, rowId);
    // No row: no field to set, and writePatches() answers the 404, of the row or its collection.
    let fields: string[][] = [];
    const schema = stored ? Number(stored.schema_id) : schemaId;
    if (stored) {
      const row = applyPatch(patch, before, rowId);
      seen?.(row, before);
      await db.schemas.check(readIn(trx), schema, collection, [row], () => place);
      fields = [['$', JSON.stringify(row)]];
    }
    // A 404 stores no answer: the transaction rolls back (it wrote nothing).
    return orThrow((await writePatches(trx, accountId, collection, schema, [{ rowId, fields }]))[0]);
  }

  /**
   * Patches the rows of the collection that `where` matches, read in the writer's transaction, by one
   * statement of row_patches (sql/), as a single patch is: by path where it can be, else each row's whole
   * text made in Node and checked against the schema (a patch that cannot apply to one of them is its
   * 409, and nothing is stored). `matched` is told the rows matched, as they were.
   */
  async function patchRowsIn(
    trx: WriteTx,
    accountId: number,
    collection: string,
    where: Sql,
    patch: Patch,
    max: number,
    guard?: RowGuard,
    matched?: (rows: MatchedRow[]) => void,
  ): Promise<ChangedRows> {
    const names = patch.format === 'merge' ? Object.keys(patch.fields) : [];
    const byPath = patch.format === 'merge' && names.length <= MAX_FIELDS_BY_PATH && names.every(settableByPath);
    const { id, schemaId } = await advance(db, trx, accountId, collection, 0);
    const rows = await matchedRows(db, trx, id, where, max);
    matched?.(rows);
    let patches: FieldPatch[];
    if (schemaId === 0 && byPath && !guard) {
      const fields = fieldsOf((patch as { fields: Fields }).fields);
      patches = rows.map((row) => ({ rowId: row.id, fields }));
    } else {
      const patched = rows.map((row) => applyPatch(patch, JSON.parse(row.data), row.id));
      for (const [index, row] of rows.entries()) guard?.updating(row.id, JSON.parse(row.data), patched[index]);
      // Each row that fails is named by its id (openapi.yaml, RowError).
      await db.schemas.check(readIn(trx), schemaId, collection, patched, (index) => rows[index].id);
      patches = rows.map((row, index) => ({ rowId: row.id, fields: [['$', JSON.stringify(patched[index])]] }));
    }
    return changedRows(patches.length > 0 ? ((await writePatches(trx, accountId, collection, schemaId, patches)) as VersionedRow[]) : []);
  }

  /** The writes of a batch, an upsert or a delete's followers inside `trx` (../rows/writes.ts). */
  const rowWritesIn = (trx: WriteTx, accountId: number): RowWrites => ({
    patchWhere: (collection, where, patch, max) => patchRowsIn(trx, accountId, collection, where, patch, max),
    insert: (collection, schemaId, inserts) =>
      writeInserts(
        trx,
        accountId,
        collection,
        schemaId,
        inserts.map((texts) => ({ texts })),
      ),
    patch: (collection, schemaId, rowId, patch, options, place, seen) =>
      patchRowIn(trx, accountId, collection, rowId, patch, schemaId, options, place, seen),
  });

  return {
    async insertRows(accountId, collection, items, options) {
      // Node's work comes first: the write holds the writer from its first statement to its end.
      const texts = items.map((fields) => JSON.stringify(fields));
      if (texts.some(overRowBound)) throw rowTooLarge();
      const insert: Insert = { texts, once: options?.once };
      const rows = () => items.map((fields) => ({ fields }));
      // Checked against the collection's schema as last seen, which the statement makes sure is still its;
      // the rows they name, on the writer (writeInserts).
      const first = await db.schemas.retry(db.query, accountId, collection, async (schemaId) => {
        await db.schemas.validate(db.query, schemaId, collection, items);
        // Merged with the inserts into the collection queued beside it, sent with an Idempotency-Key or not.
        const merged = () =>
          writes.merge(`insert/${accountId}/${collection}/${schemaId}`, texts.length, insert, (trx, inserts: Insert[]) =>
            writeInserts(trx, accountId, collection, schemaId, inserts),
          );
        try {
          return await keepingUnique(db, accountId, collection, rows, merged);
        } catch (error) {
          // No unique index broken: the only other constraint is the trigger's check of the keys.
          if (options?.once && isConstraintViolation(error)) throw new OnceTaken();
          throw error;
        }
      });
      return insertedRows(first, texts);
    },

    async upsertRows(accountId, collection, items, onConflict, options) {
      try {
        return await upsertRows(
          db,
          (work) => writes.run(work),
          accountId,
          collection,
          items,
          onConflict,
          options,
          (trx) => upsertWritesOf(rowWritesIn(trx, accountId), collection, options?.guard),
        );
      } catch (error) {
        throw tooLargeRow(error) ?? error;
      }
    },

    writeBatch: (accountId, operations, options) =>
      writeBatch(
        db,
        { inTransaction: (work) => writes.run(work), writesIn: rowWritesIn, refusal: tooLargeRow, timeoutMs: queryTimeoutMs },
        accountId,
        operations,
        options,
      ),

    async listRows(accountId, collection, page, expansions) {
      try {
        return await readRelatedPage(pages, accountId, collection, page, expansions);
      } catch (error) {
        // The page connections make no string longer than a page may be (readers.ts).
        if (isTooBig(error)) throw pageTooLarge();
        // Interrupted once it had run for the query timeout (readers.ts, timedRead).
        if (isQueryCanceled(error)) throw queryTimeout(queryTimeoutMs);
        throw error;
      }
    },

    async aggregateRows(accountId, collection, query, maxGroupsRead, place) {
      try {
        return await readRelatedAggregates(pages, accountId, collection, query, maxGroupsRead, place);
      } catch (error) {
        // Interrupted once it had run for the query timeout (readers.ts, timedRead).
        if (isQueryCanceled(error)) throw queryTimeout(queryTimeoutMs);
        throw error;
      }
    },

    async getRow(accountId, collection, rowId) {
      if (!assignable(rowId)) return noSuchRow(db, accountId, collection, rowId);
      const [row] = await reads.readMerged<{ data: string; collection_id: number; version: number }>(rowsSql, [
        accountId,
        collection,
        rowId,
      ]);
      if (row) return { json: rowJson(rowId, row.data), version: versionOf(row.collection_id, row.version) };
      const [found] = await reads.read(collectionSql, [accountId, collection]);
      throw found ? rowNotFound(collection, rowId) : collectionNotFound(collection);
    },

    /**
     * A top-level merge, merged with the other patches of the collection queued beside it into one
     * statement: json_set sets each field in the stored text, which keeps the text
     * JSON.stringify({ ...row, ...fields }) gives. Not for a field name that a JSON path cannot spell
     * (settableByPath()), nor for more than MAX_FIELDS_BY_PATH fields, nor for a row of a collection
     * with a schema, which is checked as patched, nor for a patch of another format (a JSON Merge Patch,
     * a JSON Patch): then the row is read and the patch made in Node, in a transaction (nothing changes
     * the row between the two, so concurrent increments all count), and the whole text set at `$` by the
     * same statement. A patch under If-Match reads the row's version likewise, in the transaction that
     * writes it.
     */
    async updateRow(accountId, collection, rowId, patch, options) {
      if (!assignable(rowId)) return noSuchRow(db, accountId, collection, rowId);
      const names = patch.format === 'merge' ? Object.keys(patch.fields) : [];
      const byPath = patch.format === 'merge' && names.length <= MAX_FIELDS_BY_PATH && names.every(settableByPath);
      // Merged with the patches that set as many fields: a statement sets a number of them (patchSql).
      const key = `patch/${accountId}/${collection}/${names.length}`;
      const patchInNode = (schemaId: number) =>
        writes.run(async (trx) => {
          if (options?.once) await beginOnce(db, trx, accountId, options.once);
          const { guard } = options ?? {};
          const seen = guard && ((row: Fields, before: Fields) => guard.updating(rowId, before, row));
          const patched = await patchRowIn(trx, accountId, collection, rowId, patch, schemaId, options, 0, seen);
          if (options?.once) await recordOnce(db, trx, accountId, options.once, patched);
          return patched;
        });
      // The row as patched, as a unique index would see it: read again once the patch was refused.
      const rows = async (): Promise<WrittenRow[]> => {
        const [stored] = await db.query<{ data: string }>(patchedRowSql, [accountId, collection, rowId]);
        return stored ? [{ id: rowId, fields: applyPatch(patch, JSON.parse(stored.data), rowId) }] : [];
      };
      try {
        return await db.schemas.retry(db.query, accountId, collection, async (schemaId) =>
          byPath && schemaId === 0 && options?.ifMatch === undefined && options?.once === undefined && options?.guard === undefined
            ? orThrow(
                await writes.merge(key, 1, { rowId, fields: fieldsOf(patch.fields) }, (trx, patches: FieldPatch[]) =>
                  writePatches(trx, accountId, collection, 0, patches),
                ),
              )
            : patchInNode(schemaId),
        );
      } catch (error) {
        if (!isConstraintViolation(error)) throw error;
        const violation = await uniqueViolation(db, accountId, collection, await rows());
        if (violation) throw violation;
        // The only other constraint a patch's statement can break is its trigger's bound on the row's
        // weight (sql/, row_patches): it stored nothing of the patch.
        throw rowTooLarge();
      }
    },

    /**
     * The matching rows read in the writer's transaction, then patched by one statement of row_patches
     * (sql/): patchRowsIn(). A row made too large aborts the statement, and the transaction rolls back:
     * nothing is stored.
     */
    async updateRowsWhere(accountId, collection, filter, patch, max, options) {
      const where = pages.filterSql(await bindSearch(readPoint, accountId, collection, filter));
      // The rows as patched, as a unique index would see them.
      let seen: MatchedRow[] = [];
      const attempted = () => seen.map((row) => ({ id: row.id, fields: applyPatch(patch, JSON.parse(row.data), row.id) }));
      try {
        return await keepingUnique(db, accountId, collection, attempted, () =>
          writes.run(async (trx) => {
            if (options?.once) await beginOnce(db, trx, accountId, options.once);
            const changed = await patchRowsIn(trx, accountId, collection, where, patch, max, options?.guard, (matched) => {
              seen = matched;
            });
            if (options?.once) await recordOnce(db, trx, accountId, options.once, changed);
            return changed;
          }),
        );
      } catch (error) {
        throw tooLargeRow(error) ?? error;
      }
    },

    async deleteRow(accountId, collection, rowId, options) {
      if (!assignable(rowId)) return noSuchRow(db, accountId, collection, rowId);
      await writes.run((trx) => deleteRowIn(db, trx, rowWritesIn(trx, accountId), accountId, collection, rowId, options));
    },

    async deleteRowsWhere(accountId, collection, filter, max, options) {
      const where = pages.filterSql(await bindSearch(readPoint, accountId, collection, filter));
      return writes.run((trx) => deleteRowsIn(db, trx, rowWritesIn(trx, accountId), accountId, collection, where, max, options));
    },

    exportCollection: (accountId, collection, reader) => exportCollection(pages.snapshot, accountId, collection, reader),

    async sortBy(accountId, collection, field) {
      await pages.makeSortIndex(accountId, collection, field, pages.sortIndexes.max);
    },

    async importRows(accountId, collection, rows, lastRowId) {
      const written = () => rows.map(({ id, text }) => ({ id, fields: JSON.parse(text) }));
      await keepingUnique(db, accountId, collection, written, () =>
        writes.run((trx) => importRowsIn(db, trx, importer, accountId, collection, rows, lastRowId)),
      );
    },
  };
}

/**
 * The 413 of a write that the database refused other than for a unique index (keepingUnique): the
 * only other constraint it can break is the patch trigger's bound on a row's weight (sql/, row_patches).
 */
function tooLargeRow(error: unknown): ApiError | undefined {
  return isConstraintViolation(error) ? rowTooLarge() : undefined;
}

/** The answer of one patch, or the error it met, thrown. */
function orThrow(answer: VersionedRow | Error): VersionedRow {
  if (answer instanceof Error) throw answer;
  return answer;
}

/** A name that JavaScript orders as an array index: before every other name of an object, in numeric order. */
const arrayIndex = /^(0|[1-9][0-9]*)$/;

/**
 * Whether json_set can set the field `name` at the path `$."name"` and keep the text JSON.stringify
 * gives. Not a name a path cannot spell (pathSafe); not an array index, which JavaScript puts before
 * the other names where json_set adds it last; and not a name that is not well-formed UTF-16 (a lone
 * surrogate): the path spells the name decoded, and SQLite would write its surrogate's bytes into the
 * text (invalid UTF-8), where JSON.stringify writes the escape `\udbff`, so the name would neither read
 * back as sent nor match the same name inserted or patched before.
 */
const settableByPath = (name: string) => pathSafe.test(name) && !arrayIndex.test(name) && name.isWellFormed();

const fieldsOf = (patch: Fields) => Object.entries(patch).map(([name, value]) => [`$."${name}"`, JSON.stringify(value)]);

/**
 * The writer: Knex's one connection, which every write runs on while the writer's queue holds it
 * (../engine/grouping.ts, GroupedWrites), with its statements prepared once (StatementCache).
 */
export class SqliteWriter {
  /** By connection: the one Knex's pool holds, and any it opens again after losing one. */
  private readonly caches = new Map<unknown, StatementCache>();
  private closed = false;

  /**
   * Runs `sql` inside `trx`, on the connection the transaction holds, and answers its rows. `once`: a
   * statement made for one request, which the driver prepares and finalizes for this run, so that it
   * takes no place among the connection's kept statements.
   */
  async inTransaction<T>(trx: WriteTx, sql: string, params: SqlValue[], once = false): Promise<T[]> {
    if (this.closed) throw new DatabaseClosedError();
    // A transaction's client answers the connection it holds (Knex's makeTxClient).
    const connection = (await trx.client.acquireConnection()) as sqlite3.Database;
    if (once)
      return new Promise((resolve, reject) => connection.all(sql, params, (error, rows) => (error ? reject(error) : resolve(rows as T[]))));
    let cache = this.caches.get(connection);
    if (!cache) {
      cache = new StatementCache(connection);
      this.caches.set(connection, cache);
    }
    return cache.all<T>(sql, params);
  }

  /** Finalizes the writer's statements, after the runs under way; Knex closes its connection after this. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.caches.values()].map((cache) => cache.finalize()));
    this.caches.clear();
  }
}

/** SQL texts kept per connection at most; the least recently used is finalized first. */
const MAX_STATEMENTS = 64;

/** One prepared statement, and how many runs of it are under way. */
interface Copy {
  statement: Promise<sqlite3.Statement>;
  /** The statement, once prepared: run at once, without waiting a turn for `statement`. */
  prepared?: sqlite3.Statement;
  running: number;
}

/** One connection's prepared statements, by SQL text. */
export class StatementCache {
  private readonly statements = new Map<string, Copy[]>();

  /** `copies`: statements prepared per SQL text at most, for runs that overlap. Default 1. */
  constructor(
    private readonly db: sqlite3.Database,
    private readonly copies = 1,
  ) {}

  /**
   * Every row that `sql` answers for `params` (none for a write without RETURNING). `all` steps the
   * statement to its end, which finishes it: a statement left on a row would hold a read snapshot,
   * or keep COMMIT waiting, until its next use.
   */
  all<T>(sql: string, params: SqlValue[]): Promise<T[]> {
    const copy = this.copy(sql);
    copy.running++;
    // Not an async function, and no turn waited for a statement already prepared: the reads and writes
    // of every request come through here.
    if (copy.prepared) return run<T>(copy, copy.prepared, params);
    return copy.statement.then(
      (statement) => run<T>(copy, statement, params),
      (error) => {
        copy.running--;
        throw error;
      },
    );
  }

  /** Finalizes every statement, after the runs under way: SQLite closes no connection that has some. */
  async finalize(): Promise<void> {
    const copies = [...this.statements.values()].flat();
    this.statements.clear();
    await Promise.all(copies.map(({ statement }) => statement.then(finalize, () => {})));
  }

  /** An idle statement of `sql`; else a new one, while there may be more; else the least busy. */
  private copy(sql: string): Copy {
    let copies = this.statements.get(sql);
    if (copies) {
      this.statements.delete(sql); // moved last: the map is in order of use
    } else {
      copies = [];
      if (this.statements.size >= MAX_STATEMENTS) {
        const [oldest, evicted] = this.statements.entries().next().value as [string, Copy[]];
        this.statements.delete(oldest);
        // node-sqlite3 queues the finalize behind the runs of the statement under way.
        for (const { statement } of evicted) statement.then(finalize, () => {});
      }
    }
    this.statements.set(sql, copies);
    let least: Copy | undefined;
    for (const copy of copies) if (!least || copy.running < least.running) least = copy;
    if (least && (least.running === 0 || copies.length >= this.copies)) return least;
    const fresh: Copy = { statement: this.prepare(sql), running: 0 };
    copies.push(fresh);
    fresh.statement.then(
      (statement) => {
        fresh.prepared = statement;
      },
      // A statement that failed to prepare is not kept: the next run tries again.
      () => {
        const kept = this.statements.get(sql);
        if (kept?.includes(fresh)) kept.splice(kept.indexOf(fresh), 1);
      },
    );
    return fresh;
  }

  private prepare(sql: string): Promise<sqlite3.Statement> {
    return new Promise<sqlite3.Statement>((resolve, reject) => {
      const prepared = this.db.prepare(sql, (error) => (error ? reject(error) : resolve(prepared)));
    });
  }
}

/** Runs `statement` of `copy` (counted as running) to its end. */
function run<T>(copy: Copy, statement: sqlite3.Statement, params: SqlValue[]): Promise<T[]> {
  return new Promise((resolve, reject) => {
    try {
      statement.all(params, (error: Error | null, rows: T[]) => {
        copy.running--;
        if (error) reject(error);
        else resolve(rows);
      });
    } catch (error) {
      copy.running--;
      reject(error);
    }
  });
}

const finalize = (statement: sqlite3.Statement) => new Promise<void>((resolve) => statement.finalize(() => resolve()));
