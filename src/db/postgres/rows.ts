// PostgreSQL: the operations on rows (../operations.ts, RowOperations). Each write is a transaction of
// its own, on a connection of the pool: writers to different collections run at once. A batch insert
// is one statement that commits on its own (sql.ts, insertBatchSql), batched with the other inserts
// into the collection that wait their turn in this process (inserts, below).

import { queryTimeout } from '../../errors.ts';
import { Batches } from '../batches.ts';
import { collectionId, collectionNotFound } from '../collections.ts';
import type { Dialect } from '../dialect.ts';
import { appendEvents, eventRow } from '../events.ts';
import { exportCollection } from '../exports.ts';
import { importRowsIn, type RowImporter } from '../imports.ts';
import type { RowOperations } from '../operations.ts';
import { type PageSource, readPage } from '../pages.ts';
import { deleteRowIn } from '../row-writes.ts';
import { assignable, noSuchRow, overRowBound, rowJson, rowNotFound, rowsJson, rowTooLarge } from '../rows.ts';
import { CHANNEL } from './changes.ts';
import { rekeyPatchedRow } from './sort-indexes.ts';
import { advanceReadingRowSql, getRowSql, importRowsSql, insertBatchSql, keysSql, updateRowSql } from './sql.ts';
import { runAlone } from './statements.ts';

/** One request's rows, as an insert into its collection waits its turn. */
interface Insert {
  accountId: number;
  collection: string;
  texts: string[];
}

/** The rows of one insert statement at most (a request's own rows are never split). */
const MAX_INSERT_ROWS = 5000;

/** `queryTimeoutMs`: how long a page that sorts or filters may run before it is cancelled (connect.ts, StoreOptions). */
export function postgresRows(db: Dialect, queryTimeoutMs: number, pages: PageSource): RowOperations {
  const { knex, changes } = db;

  /** An import's rows and their sort keys (../imports.ts), in PostgreSQL's SQL. */
  const importer: RowImporter = {
    async insertRows(trx, collectionId, rows) {
      const ids = rows.map(({ id }) => id).join(',');
      await db.run(trx, importRowsSql, [collectionId, ids, rows.map(({ text }) => text).join('\n')]);
    },
    async keyRows(trx, collectionId, slot, field, from, to) {
      const { sql, bindings } = keysSql(field);
      await db.run(trx, sql, [slot, ...bindings, collectionId, from, to]);
    },
  };

  /**
   * An insert holds its collection's row from its statement's start to its commit, so the inserts of a
   * collection run one after another whatever the pool. Sent as they come, the waiting ones would wait
   * inside PostgreSQL, one backend each, and every turn would cost a statement, a commit and its WAL
   * flush. Instead at most two statements of a collection are under way: one holding its row, and the
   * next queued behind it, ready the moment the first commits; inserts that come meanwhile go together
   * in the statement after, each request's rows consecutive, in the order the requests came.
   */
  const inserts = new Batches<Insert, number>({
    maxRunning: 2,
    maxWeight: MAX_INSERT_ROWS,
    async run(_key, batch) {
      const { accountId, collection } = batch[0];
      const rows = batch.flatMap(({ texts }) => texts);
      // JSON.stringify's output never holds a line feed (it escapes every control character), so the
      // lines of one string are the rows: one parameter, where an array would be escaped item by item.
      const params = [accountId, collection, rows.length, rows.join('\n'), CHANNEL, changes.instance];
      const [written] = await runAlone<{ id: number; first_id: number | string }>(knex, insertBatchSql, params);
      if (!written) throw collectionNotFound(collection);
      // Committed already: this process's listeners hear it now, the others through the NOTIFY.
      changes.emit('change', Number(written.id));
      // Each request's first id: its rows follow those of the requests before it.
      let next = Number(written.first_id);
      return batch.map(({ texts }) => {
        const first = next;
        next += texts.length;
        return first;
      });
    },
  });

  return {
    async insertRows(accountId, collection, items) {
      // Node's work comes first: the write holds the collection's row from its first statement to its commit.
      const texts = items.map((fields) => JSON.stringify(fields));
      if (texts.some(overRowBound)) throw rowTooLarge();
      const firstId = await inserts.add(`${accountId}/${collection}`, { accountId, collection, texts }, texts.length);
      return rowsJson(firstId, texts);
    },

    async listRows(accountId, collection, page) {
      try {
        return await readPage(pages, accountId, collection, page);
      } catch (error) {
        // query_canceled: cancelled by its statement_timeout (statements.ts, runTimed).
        if ((error as { code?: unknown }).code === '57014') throw queryTimeout(queryTimeoutMs);
        throw error;
      }
    },

    async getRow(accountId, collection, rowId) {
      if (!assignable(rowId)) return noSuchRow(db, accountId, collection, rowId);
      const [row] = await runAlone<{ data: string }>(knex, getRowSql, [accountId, collection, rowId]);
      if (row) return rowJson(rowId, row.data);
      await collectionId(db, accountId, collection);
      throw rowNotFound(collection, rowId);
    },

    async updateRow(accountId, collection, rowId, patch) {
      if (!assignable(rowId)) return noSuchRow(db, accountId, collection, rowId);
      return knex.transaction(async (trx) => {
        const [counters] = await db.run<{ id: number | string; last_seq: number | string; sorted: string; current: string | null }>(
          trx,
          advanceReadingRowSql,
          [0, 1, 0, accountId, collection, rowId],
        );
        if (!counters) throw collectionNotFound(collection);
        if (!counters.current) throw rowNotFound(collection, rowId);
        const id = Number(counters.id);
        const data = JSON.stringify({ ...JSON.parse(counters.current), ...patch });
        if (overRowBound(data)) throw rowTooLarge();
        // One after another: pg sends a client's queries one at a time whatever the caller does.
        await db.run(trx, updateRowSql, [data, id, rowId]);
        await rekeyPatchedRow(db, trx, id, JSON.parse(counters.sorted), rowId, patch, data);
        await appendEvents(db, trx, id, Number(counters.last_seq), 'update', [eventRow(rowId, data, counters.current)]);
        return rowJson(rowId, data);
      });
    },

    async deleteRow(accountId, collection, rowId) {
      if (!assignable(rowId)) return noSuchRow(db, accountId, collection, rowId);
      await knex.transaction((trx) => deleteRowIn(db, trx, accountId, collection, rowId));
    },

    exportCollection: (accountId, collection, reader) => exportCollection(pages.snapshot, accountId, collection, reader),

    async importRows(accountId, collection, rows, lastRowId) {
      await knex.transaction((trx) => importRowsIn(db, trx, importer, accountId, collection, rows, lastRowId));
    },
  };
}
