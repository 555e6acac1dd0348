// SQLite: the operations on rows (../operations.ts, RowOperations). Writes go through the writer's
// queue (writes.ts): inserts into one collection, and patches of one collection that set as many
// fields, queued side by side become one statement (sql.ts). Reads go to the read-only connections
// (statements.ts): row reads by id merged, pages on a connection of their own.
import { ApiError, queryTimeout } from '../../errors.ts';
import { collectionNotFound } from '../collections.ts';
import type { Dialect, WriteTx } from '../dialect.ts';
import { exportCollection } from '../exports.ts';
import { importRowsIn, type RowImporter } from '../imports.ts';
import type { RowOperations } from '../operations.ts';
import { type PageSource, readPage } from '../pages.ts';
import { deleteRowIn } from '../row-writes.ts';
import {
  assignable,
  type Fields,
  type Json,
  noSuchRow,
  overRowBound,
  pageTooLarge,
  type Row,
  rowJson,
  rowNotFound,
  rowsJson,
  rowTooLarge,
} from '../rows.ts';
import { collectionSql } from '../sql.ts';
import { fieldName, importRowsSql, insertSql, keysSql, MAX_FIELDS_BY_PATH, patchedRowSql, patchSql, pathSafe, rowsSql } from './sql.ts';
import type { SqliteStatements } from './statements.ts';
import type { GroupedWrites } from './writes.ts';

/** A patch of row `rowId` as row_patches takes it (sql.ts): its fields as `[JSON path, JSON text]`. */
type FieldPatch = { rowId: number; fields: string[][] };

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

export function sqliteRows({ db, queryTimeoutMs, statements, writes, pages }: SqliteRowsParts): RowOperations {
  /** An import's rows and their sort keys (../imports.ts), in SQLite's SQL. */
  const importer: RowImporter = {
    async insertRows(trx, collectionId, rows) {
      await db.run(trx, importRowsSql, [collectionId, JSON.stringify(rows.map(({ id, text }) => [id, text]))]);
    },
    async keyRows(trx, collectionId, slot, field, from, to) {
      const { sql, binding } = fieldName(field);
      await db.run(trx, keysSql(sql, 'r.id between ? and ?'), [collectionId, slot, binding, collectionId, from, to]);
    },
  };

  /**
   * Patches, each of one row and all of as many fields, in one statement, in the order they came:
   * each answers its row as it left it, or the 404 it met (the others are stored all the same).
   */
  async function writePatches(trx: WriteTx, accountId: number, collection: string, patches: FieldPatch[]) {
    const params = [accountId, collection, JSON.stringify(patches.map(({ rowId, fields }) => [rowId, fields])), new Date().toISOString()];
    const sql = patchSql(patches[0].fields.length, patches.length);
    const written = await db.run<{ id: number | null; i: number; data: string | null }>(trx, sql, params);
    const byIndex = new Map(written.map((row) => [Number(row.i), row]));
    let changed: number | undefined;
    const answers = patches.map(({ rowId }, index): Json<Row> | ApiError => {
      const { id = null, data = null } = byIndex.get(index) ?? {};
      if (id === null) return collectionNotFound(collection);
      if (data === null) return rowNotFound(collection, rowId);
      changed = id;
      return rowJson(rowId, data);
    });
    if (changed !== undefined) await db.announce(trx, changed);
    return answers;
  }

  return {
    async insertRows(accountId, collection, items) {
      // Node's work comes first: the write holds the writer from its first statement to its end.
      const texts = items.map((fields) => JSON.stringify(fields));
      if (texts.some(overRowBound)) throw rowTooLarge();
      const firstId = await writes.merge(`insert/${accountId}/${collection}`, texts.length, texts, async (trx, batches: string[][]) => {
        const all = batches.flat();
        const params = [accountId, collection, all.length, JSON.stringify(all), new Date().toISOString()];
        const [written] = await db.run<{ id: number | null; last_row_id: number }>(trx, insertSql, params);
        if (written.id === null) throw collectionNotFound(collection);
        await db.announce(trx, written.id);
        // Each request's first id: its rows follow those of the requests before it.
        const firsts: number[] = [];
        let next = written.last_row_id - all.length + 1;
        for (const batch of batches) {
          firsts.push(next);
          next += batch.length;
        }
        return firsts;
      });
      return rowsJson(firstId, texts);
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
      const [row] = await statements.readMerged<{ data: string }>(rowsSql, [accountId, collection, rowId]);
      if (row) return rowJson(rowId, row.data);
      const [found] = await statements.read(collectionSql, [accountId, collection]);
      throw found ? rowNotFound(collection, rowId) : collectionNotFound(collection);
    },

    /**
     * The patch, merged with the other patches of the collection queued beside it into one statement:
     * json_set sets each field in the stored text, which keeps the text JSON.stringify({ ...row, ...patch })
     * gives. Not for a field name that a JSON path cannot spell (settableByPath()), nor for more than
     * MAX_FIELDS_BY_PATH fields: then the row is read and the patch made in Node, in a transaction
     * (nothing changes the row between the two), and the whole text set at `$` by the same statement.
     */
    async updateRow(accountId, collection, rowId, patch) {
      if (!assignable(rowId)) return noSuchRow(db, accountId, collection, rowId);
      const names = Object.keys(patch);
      const byPath = names.length <= MAX_FIELDS_BY_PATH && names.every(settableByPath);
      // Merged with the patches that set as many fields: a statement sets a number of them (patchSql).
      const key = `patch/${accountId}/${collection}/${names.length}`;
      let answer: Json<Row> | ApiError;
      try {
        answer = byPath
          ? await writes.merge(key, 1, { rowId, fields: fieldsOf(patch) }, (trx, patches: FieldPatch[]) =>
              writePatches(trx, accountId, collection, patches),
            )
          : await writes.run(async (trx) => {
              const [stored] = await db.run<{ data: string }>(trx, patchedRowSql, [accountId, collection, rowId]);
              // No row: no field to set, and writePatches() answers the 404, of the row or its collection.
              const fields = stored ? [['$', JSON.stringify({ ...JSON.parse(stored.data), ...patch })]] : [];
              return (await writePatches(trx, accountId, collection, [{ rowId, fields }]))[0];
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

    async deleteRow(accountId, collection, rowId) {
      if (!assignable(rowId)) return noSuchRow(db, accountId, collection, rowId);
      await writes.run((trx) => deleteRowIn(db, trx, accountId, collection, rowId));
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
