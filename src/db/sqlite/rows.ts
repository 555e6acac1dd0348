// SQLite: the operations on rows (../operations.ts, RowOperations). Writes go through the writer's
// queue (../batches.ts, GroupedWrites): inserts into one collection, and patches of one collection
// that set as many fields, queued side by side become one statement (sql.ts), run on the writer's
// connection (statements.ts, inTransaction) and announced to the feed once committed
// (announceOnCommit). Reads go to the read-only connections (statements.ts): row reads by id merged,
// pages on a connection of their own.
import { ApiError, queryTimeout } from '../../errors.ts';
import type { GroupedWrites } from '../batches.ts';
import type { Changes } from '../changes.ts';
import { advance, collectionNotFound } from '../collections.ts';
import type { Dialect, WriteTx } from '../dialect.ts';
import { exportCollection } from '../exports.ts';
import { beginOnce, type OnceRequest, OnceTaken, recordOnce } from '../idempotency.ts';
import { importRowsIn, type RowImporter } from '../imports.ts';
import type { RowOperations } from '../operations.ts';
import { type PageSource, readPage } from '../pages.ts';
import { changedRows, deleteRowIn, deleteRowsIn, matchedRows } from '../row-writes.ts';
import {
  assignable,
  type Fields,
  type FirstInserted,
  insertedRows,
  noSuchRow,
  overRowBound,
  pageTooLarge,
  preconditionFailed,
  rowJson,
  rowNotFound,
  rowTooLarge,
  type VersionedRow,
  versionMatches,
  versionOf,
} from '../rows.ts';
import { collectionSql } from '../sql.ts';
import { fieldName, importRowsSql, insertSql, keysSql, MAX_FIELDS_BY_PATH, patchedRowSql, patchSql, pathSafe, rowsSql } from './sql.ts';
import type { SqliteStatements } from './statements.ts';

/** An insert as it waits in the writer's queue: its rows' texts, and its Idempotency-Key if it was sent with one. */
type Insert = { texts: string[]; once?: OnceRequest };

/** A patch of row `rowId` as row_patches takes it (sql.ts): its fields as `[JSON path, JSON text]`. */
type FieldPatch = { rowId: number; fields: string[][] };
/** What patchSql answers of each patch (sql.ts). */
type PatchWritten = { id: number | null; i: number; data: string | null; version: number | null };
/** A row as patchedRowSql reads it. */
type StoredRow = { data: string; collection_id: number; version: number };

/** What SQLite's rows are read and written with. */
export interface SqliteRowsParts {
  db: Dialect;
  /** How long a page that sorts or filters may run before it is interrupted (connect.ts, StoreOptions). */
  queryTimeoutMs: number;
  statements: SqliteStatements;
  writes: GroupedWrites;
  /** Pages of rows, through the read-only connections (sort indexes made with the writer). */
  pages: PageSource;
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

export function sqliteRows({ db, queryTimeoutMs, statements, writes, pages }: SqliteRowsParts): RowOperations {
  /** An import's rows and their sort keys (../imports.ts), in SQLite's SQL. */
  const importer: RowImporter = {
    async insertRows(trx, collectionId, rows, firstSeq) {
      await statements.inTransaction(trx, importRowsSql, [collectionId, firstSeq, JSON.stringify(rows.map(({ id, text }) => [id, text]))]);
    },
    async keyRows(trx, collectionId, slot, field, from, to) {
      const { sql, binding } = fieldName(field);
      await statements.inTransaction(trx, keysSql(sql, 'r.id between ? and ?'), [collectionId, slot, binding, collectionId, from, to]);
    },
  };

  /**
   * Patches, each of one row and all of as many fields, in one statement, in the order they came:
   * each answers its row as it left it, or the 404 it met (the others are stored all the same).
   */
  async function writePatches(trx: WriteTx, accountId: number, collection: string, patches: FieldPatch[]) {
    const params = [accountId, collection, JSON.stringify(patches.map(({ rowId, fields }) => [rowId, fields])), new Date().toISOString()];
    const sql = patchSql(patches[0].fields.length, patches.length);
    const written = await statements.inTransaction<PatchWritten>(trx, sql, params);
    const byIndex = new Map(written.map((row) => [Number(row.i), row]));
    let changed: number | undefined;
    const answers = patches.map(({ rowId }, index): VersionedRow | ApiError => {
      const { id = null, data = null, version = null } = byIndex.get(index) ?? {};
      if (id === null) return collectionNotFound(collection);
      if (data === null) return rowNotFound(collection, rowId);
      changed = id;
      return { json: rowJson(rowId, data), version: versionOf(id, version as number) };
    });
    if (changed !== undefined) announceOnCommit(db.changes, trx, changed);
    return answers;
  }

  /**
   * Inserts, in one statement (insertSql), with the answers of those sent with an Idempotency-Key:
   * answers each request's first id and seq, its rows following those of the requests before it. A
   * key whose answer another request stored first aborts the statement, which wrote nothing
   * (OnceTaken); the inserts merged with it then run again each alone (../batches.ts).
   */
  async function writeInserts(trx: WriteTx, accountId: number, collection: string, inserts: Insert[]): Promise<FirstInserted[]> {
    const all = inserts.length === 1 ? inserts[0].texts : inserts.flatMap(({ texts }) => texts);
    // As row_inserts takes them (sql.ts); the hashes and the times are hex digits and ISO 8601, with nothing to escape.
    let onces = '';
    let place = 0;
    for (const { texts, once } of inserts) {
      if (once) {
        onces += `${onces ? ',' : ''}[${JSON.stringify(once.key)},"${once.hash}","${once.at}","${once.expiresAt}",${place},${texts.length}]`;
      }
      place += texts.length;
    }
    const params = [accountId, collection, all.length, JSON.stringify(all), new Date().toISOString(), `[${onces}]`];
    let written: { id: number | null; last_row_id: number; last_seq: number };
    try {
      [written] = await statements.inTransaction(trx, insertSql, params);
    } catch (error) {
      // The only constraint an insert's statement can break is its trigger's check of the keys (sql.ts, row_inserts).
      if (onces && (error as { code?: unknown }).code === 'SQLITE_CONSTRAINT') throw new OnceTaken();
      throw error;
    }
    if (written.id === null) throw collectionNotFound(collection);
    announceOnCommit(db.changes, trx, written.id);
    const firsts: FirstInserted[] = [];
    let id = written.last_row_id - all.length + 1;
    let seq = written.last_seq - all.length + 1;
    for (const { texts } of inserts) {
      firsts.push({ collectionId: written.id, id, seq });
      id += texts.length;
      seq += texts.length;
    }
    return firsts;
  }

  return {
    async insertRows(accountId, collection, items, options) {
      // Node's work comes first: the write holds the writer from its first statement to its end.
      const texts = items.map((fields) => JSON.stringify(fields));
      if (texts.some(overRowBound)) throw rowTooLarge();
      const insert: Insert = { texts, once: options?.once };
      // Merged with the inserts into the collection queued beside it, sent with an Idempotency-Key or not.
      const first = await writes.merge(`insert/${accountId}/${collection}`, texts.length, insert, (trx, inserts: Insert[]) =>
        writeInserts(trx, accountId, collection, inserts),
      );
      return insertedRows(first, texts);
    },

    async listRows(accountId, collection, page) {
      try {
        return await readPage(pages, accountId, collection, page);
      } catch (error) {
        // The page connections make no string longer than a page may be (statements.ts).
        if ((error as { code?: unknown }).code === 'SQLITE_TOOBIG') throw pageTooLarge();
        // Interrupted once it had run for the query timeout (statements.ts, timedRead).
        if ((error as { code?: unknown }).code === 'SQLITE_INTERRUPT') throw queryTimeout(queryTimeoutMs);
        throw error;
      }
    },

    async getRow(accountId, collection, rowId) {
      if (!assignable(rowId)) return noSuchRow(db, accountId, collection, rowId);
      const [row] = await statements.readMerged<{ data: string; collection_id: number; version: number }>(rowsSql, [
        accountId,
        collection,
        rowId,
      ]);
      if (row) return { json: rowJson(rowId, row.data), version: versionOf(row.collection_id, row.version) };
      const [found] = await statements.read(collectionSql, [accountId, collection]);
      throw found ? rowNotFound(collection, rowId) : collectionNotFound(collection);
    },

    /**
     * The patch, merged with the other patches of the collection queued beside it into one statement:
     * json_set sets each field in the stored text, which keeps the text JSON.stringify({ ...row, ...patch })
     * gives. Not for a field name that a JSON path cannot spell (settableByPath()), nor for more than
     * MAX_FIELDS_BY_PATH fields: then the row is read and the patch made in Node, in a transaction
     * (nothing changes the row between the two), and the whole text set at `$` by the same statement.
     * A patch under If-Match reads the row's version likewise, in the transaction that writes it.
     */
    async updateRow(accountId, collection, rowId, patch, options) {
      if (!assignable(rowId)) return noSuchRow(db, accountId, collection, rowId);
      const names = Object.keys(patch);
      const byPath = names.length <= MAX_FIELDS_BY_PATH && names.every(settableByPath);
      // Merged with the patches that set as many fields: a statement sets a number of them (patchSql).
      const key = `patch/${accountId}/${collection}/${names.length}`;
      let answer: VersionedRow | ApiError;
      try {
        answer =
          byPath && options?.ifMatch === undefined && options?.once === undefined
            ? await writes.merge(key, 1, { rowId, fields: fieldsOf(patch) }, (trx, patches: FieldPatch[]) =>
                writePatches(trx, accountId, collection, patches),
              )
            : await writes.run(async (trx) => {
                if (options?.once) await beginOnce(db, trx, accountId, options.once);
                const [stored] = await statements.inTransaction<StoredRow>(trx, patchedRowSql, [accountId, collection, rowId]);
                if (stored && !versionMatches(options, versionOf(stored.collection_id, stored.version))) {
                  throw preconditionFailed(collection, rowId);
                }
                // No row: no field to set, and writePatches() answers the 404, of the row or its collection.
                let fields: string[][] = [];
                if (stored) fields = byPath ? fieldsOf(patch) : [['$', JSON.stringify({ ...JSON.parse(stored.data), ...patch })]];
                const [patched] = await writePatches(trx, accountId, collection, [{ rowId, fields }]);
                // A 404 stores no answer: the transaction rolls back (it wrote nothing).
                if (patched instanceof ApiError) throw patched;
                if (options?.once) await recordOnce(db, trx, accountId, options.once, patched);
                return patched;
              });
      } catch (error) {
        // The only constraint a patch's statement can break is its trigger's bound on the row's weight
        // (sql.ts, row_patches): it stored nothing of the patch.
        if ((error as { code?: unknown }).code === 'SQLITE_CONSTRAINT') throw rowTooLarge();
        throw error;
      }
      if (answer instanceof ApiError) throw answer;
      return answer;
    },

    async deleteRow(accountId, collection, rowId, options) {
      if (!assignable(rowId)) return noSuchRow(db, accountId, collection, rowId);
      await writes.run((trx) => deleteRowIn(db, trx, accountId, collection, rowId, options));
    },

    /**
     * The matching rows read in the writer's transaction, then patched by one statement of row_patches
     * (sql.ts), as a single patch is: by path where it can be, else each row's whole text made in Node.
     * A row made too large aborts the statement, and the transaction rolls back: nothing is stored.
     */
    async updateRowsWhere(accountId, collection, filter, patch, max, options) {
      const where = pages.filterSql(filter);
      const names = Object.keys(patch);
      const byPath = names.length <= MAX_FIELDS_BY_PATH && names.every(settableByPath);
      const fields = byPath ? fieldsOf(patch) : [];
      try {
        return await writes.run(async (trx) => {
          if (options?.once) await beginOnce(db, trx, accountId, options.once);
          const { id } = await advance(db, trx, accountId, collection, 0);
          const matched = await matchedRows(db, trx, id, where, max);
          const patches = matched.map((row) => ({
            rowId: row.id,
            fields: byPath ? fields : [['$', JSON.stringify({ ...JSON.parse(row.data), ...patch })]],
          }));
          const changed = changedRows(
            patches.length > 0 ? ((await writePatches(trx, accountId, collection, patches)) as VersionedRow[]) : [],
          );
          if (options?.once) await recordOnce(db, trx, accountId, options.once, changed);
          return changed;
        });
      } catch (error) {
        if ((error as { code?: unknown }).code === 'SQLITE_CONSTRAINT') throw rowTooLarge();
        throw error;
      }
    },

    async deleteRowsWhere(accountId, collection, filter, max, options) {
      const where = pages.filterSql(filter);
      return writes.run((trx) => deleteRowsIn(db, trx, accountId, collection, where, max, options));
    },

    exportCollection: (accountId, collection, reader) => exportCollection(pages.snapshot, accountId, collection, reader),

    async importRows(accountId, collection, rows, lastRowId) {
      await writes.run((trx) => importRowsIn(db, trx, importer, accountId, collection, rows, lastRowId));
    },
  };
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
