// PostgreSQL: how rows are written and read (../engine/port.ts, RowPort), and the changes they announce to
// every instance on the database. Each write is a transaction of its own, on a connection of the pool:
// writers to different collections run at once. Inserts are grouped by collection (inserts.ts). A patch of one
// row alone reads and holds the row, then writes it with its event and the NOTIFY in one statement (sql/,
// advanceReadingRowSql, updateRowSql), and re-keys the fields it sets that have a sort index, all in
// one transaction; patches sent side by side are written together as a change by filter's rows are
// (../rows/updates.ts, patchGroups; writePatched).
//
// Each change is a `pg_notify` inside its transaction (PostgreSQL delivers it on commit, never on
// rollback), which every instance LISTENs for on a connection of its own (listenForChanges); this
// process hears its own changes in-process already (../changes.ts).

import pg from 'pg';
import { collectionNotFound, rowNotFound } from '../../errors.ts';
import type { Logger } from '../../log.ts';
import { patchedFields } from '../../patches/index.ts';
import { eventRow, rowJson, versionOf } from '../../rows.ts';
import { retryDeadlocks } from '../engine/deadlocks.ts';
import type { Dialect, UniqueIndexes, WriteSteps, WriteTx } from '../engine/dialect.ts';
import { Groups } from '../engine/grouping.ts';
import type { ReadRow, RowImporter, RowPort } from '../engine/port.ts';
import { fieldsOf, type SortedEntry } from '../engine/sorted.ts';
import { onceByFilter } from '../engine/sql/filter.ts';
import { searchIndexOf } from '../engine/sql/search.ts';
import type { Sql } from '../engine/sql/template.ts';
import { announceOnCommit, type WakeUps } from '../engine/wake-ups.ts';
import { isQueryCanceled } from './errors.ts';
import { filterSql } from './filter.ts';
import { postgresInserts } from './inserts.ts';
import { idList, keysSql, rekeyUniqueSql } from './sql/collections.ts';
import { CHANNEL } from './sql/engine.ts';
import { getRowSql, getRowWhereSql } from './sql/reads.ts';
import { advanceReadingRowSql, importRowsSql, updateRowSql, updateRowsSql } from './sql/rows.ts';
import { runAlone } from './statements.ts';

/** getRowWhereSql() of a read rule, and its bindings. */
const rowWhere = onceByFilter((where): Sql => {
  const condition = filterSql(where, 'r');
  return { sql: getRowWhereSql(condition.sql), params: condition.params };
});

/** The writes of one transaction shared by a collection's writes at most: a bound on how long the first waits for its answer. */
const MAX_SHARED_WRITES = 200;

export function postgresRowPort(db: Dialect, steps: WriteSteps): RowPort {
  const { knex, changes } = db;
  /** An import's rows and their sort keys (../imports.ts), in PostgreSQL's SQL. */
  const importer: RowImporter = {
    async insertRows(trx, collectionId, rows, firstSeq) {
      const ids = rows.map(({ id }) => id).join(',');
      await db.run(trx, importRowsSql, [collectionId, firstSeq, ids, rows.map(({ text }) => text).join('\n')]);
    },
    async keyRows(trx, collectionId, slot, field, from, to) {
      const { sql, bindings } = keysSql(field, collectionId);
      await db.run(trx, sql, [slot, ...bindings, collectionId, from, to]);
    },
  };

  /**
   * A write transaction that may hold several collections (a batch, a delete that cascades or sets null, a
   * change by filter): tried again from the start when PostgreSQL aborts it as a deadlock (../engine/deadlocks.ts).
   */
  const severalHeld = <T>(work: (trx: WriteTx) => Promise<T>) => retryDeadlocks(db, () => knex.transaction(work));
  /**
   * The writes of one collection queued side by side, one transaction, tried again whole when aborted as a
   * deadlock (each may hold several collections): each holds the collection's row from its first statement
   * to its commit, so alone they commit one after another, each waiting for the WAL's flush of the one
   * before (docs/performance.md, "Patches of a collection in one transaction").
   */
  const together = new Groups<(trx: WriteTx) => Promise<unknown>, unknown>({
    maxWeight: MAX_SHARED_WRITES,
    run: (_collection, works) =>
      severalHeld(async (trx) => {
        const answers: unknown[] = [];
        for (const work of works) answers.push(await work(trx));
        return answers;
      }),
  });
  const shared = <T>(work: (trx: WriteTx) => Promise<T>, collection: string) => together.add(collection, work) as Promise<T>;

  return {
    write: (work, collection) => (collection === undefined ? knex.transaction(work) : shared(work, collection)),
    writeSeveral: (work, collection) => (collection === undefined ? severalHeld(work) : shared(work, collection)),
    ...postgresInserts(db, steps),
    readRow(accountId, collection, rowId, now, where) {
      if (!where) return runAlone<ReadRow>(knex, getRowSql, [rowId, now, accountId, collection]);
      const { sql, params } = rowWhere(where);
      return runAlone<ReadRow>(knex, sql, [rowId, now, ...params, accountId, collection]);
    },
    /**
     * The collection's row held, then the row read locked (no other write of it comes between, so
     * concurrent increments all count); written with its event and NOTIFY, re-keyed, and its words set.
     */
    async readToPatch(trx, accountId, collection, rowId, _schemaId, now) {
      const [counters] = await db.run<{
        id: number | string;
        last_seq: number | string;
        sorted: string;
        uniques: string;
        current: string | null;
        version: number | string | null;
        schema_id: number | string;
        search: string | null;
        ttl_field: string | null;
      }>(trx, advanceReadingRowSql, [0, 1, 0, accountId, collection, rowId, now]);
      if (!counters) throw collectionNotFound(collection);
      const { current } = counters;
      if (!current) throw rowNotFound(collection, rowId);
      const id = Number(counters.id);
      return {
        collectionId: id,
        version: counters.version as number | string,
        data: current,
        // The schema the row commits under: the collection's row is held.
        schemaId: Number(counters.schema_id),
        async write(text, row, patch) {
          const seq = Number(counters.last_seq);
          const json = rowJson(rowId, text);
          // The event's rows as eventRow() makes them; its time Node's, as appendEvents() takes it.
          const event = [json, rowJson(rowId, current), new Date().toISOString()];
          // One after another: pg sends a client's queries one at a time whatever the caller does.
          const payload = `${changes.instance} ${id}`;
          await db.run(trx, updateRowSql, [text, seq, id, rowId, ...event, CHANNEL, payload, counters.ttl_field]);
          const indexes = { sorted: JSON.parse(counters.sorted), uniques: JSON.parse(counters.uniques) };
          await rekeyPatchedRows(db, trx, id, indexes, patchedFields(patch), [rowId]);
          const search = searchIndexOf(id, counters.search);
          if (search) await steps.putWords(db, trx, search, [{ id: rowId, fields: row }]);
          announceOnCommit(changes, trx, id);
          return { json, version: versionOf(id, seq) };
        },
      };
    },
    /** The rows' events numbered after the collection's last seq, taken now; the rows set by one statement, and re-keyed. */
    async writePatched(trx, accountId, collection, collectionId, _schemaId, rows, patched) {
      const { lastSeq, sorted, uniques, search } = await steps.advance(db, trx, accountId, collection, rows.length);
      const first = lastSeq - rows.length;
      const texts = JSON.stringify(rows.map((row) => [row.id, row.text]));
      await db.run(trx, updateRowsSql, [texts, collectionId, first, collectionId]);
      await rekeyPatchedRows(
        db,
        trx,
        collectionId,
        { sorted, uniques },
        patched,
        rows.map((row) => row.id),
      );
      if (search) await steps.putWords(db, trx, search, rows);
      const events = rows.map((row) => eventRow(row.id, row.text, row.data));
      await steps.appendEvents(db, trx, collectionId, lastSeq, 'update', events);
      // Each row's version is its event's seq (updateRowsSql).
      return events.map((event, index) => ({ json: event.json, version: versionOf(collectionId, first + index + 1) }));
    },
    importer,
    // A key answered first: insertWithAnswers() throws OnceTaken itself.
    isKeyTaken: () => false,
    // A row's weight is checked in Node, before its statement.
    isRowTooLarge: () => false,
    isPageTooLarge: () => false,
    // query_canceled: cancelled by its statement_timeout (statements.ts, runTimed).
    isQueryCanceled,
  };
}

/**
 * Re-keys the rows `ids` once their new texts are stored, one statement for each indexed field the
 * patch may have changed, `patched` (../../patches/, patchedFields: undefined for every field), and
 * one for the unique indexes over any of them; the others cannot have moved.
 */
async function rekeyPatchedRows(
  db: Dialect,
  trx: WriteTx,
  collectionId: number,
  { sorted, uniques }: { sorted: SortedEntry[]; uniques: UniqueIndexes },
  patched: readonly string[] | undefined,
  ids: number[],
) {
  for (const [slot, field] of sorted.entries()) {
    if (patched && !fieldsOf(field).some((each) => patched.includes(each))) continue;
    const { sql, bindings } = keysSql(field, collectionId, idList, true);
    await db.run(trx, sql, [slot, ...bindings, collectionId, ids.join(',')]);
  }
  const moved = uniques.filter(([, fields]) => !patched || fields.some((field) => patched.includes(field)));
  if (moved.length > 0) await db.run(trx, rekeyUniqueSql, [JSON.stringify(moved), collectionId, ids.join(',')]);
}

/**
 * Listens for other instances' changes on a connection of its own (LISTEN does not mix with a pool),
 * and comes back after losing it: then everything is announced as changed, so readers catch up from the
 * events table. Returns a function that stops listening.
 */
export function listenForChanges(url: string, changes: WakeUps, log?: Logger): () => Promise<void> {
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let attempt = 0;

  const connect = async () => {
    const connection = new pg.Client({ connectionString: url });
    client = connection;
    connection.on('notification', ({ payload = '' }) => {
      const [instance, collectionId] = payload.split(' ');
      if (instance !== changes.instance) changes.emit('change', Number(collectionId));
    });
    connection.on('error', (error) => log?.warn({ err: error }, 'change listener lost its connection'));
    connection.on('end', () => {
      if (client === connection && !stopped) reconnect();
    });
    try {
      await connection.connect();
      await connection.query(`listen ${CHANNEL}`);
      attempt = 0;
      changes.emit('all');
    } catch (error) {
      log?.warn({ err: error }, 'change listener could not connect');
      await connection.end().catch(() => {});
      if (client === connection && !stopped) reconnect();
    }
  };
  const reconnect = () => {
    client = undefined;
    clearTimeout(retry);
    retry = setTimeout(connect, Math.min(5000, 100 * 2 ** attempt++));
    retry.unref();
  };

  void connect();
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await client?.end().catch(() => {});
  };
}
