// SQLite: a database file (`sqlite:<path>`) opened, as ../open-store.ts makes its Store. Knex's one connection is the writer (writer.ts,
// SqliteWriter): SQLite writes one transaction at a time, and every write goes through its queue
// (../engine/grouping.ts, GroupedWrites); read-only connections serve the reads beside it (readers.ts). The
// statements are in sql/.

import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { DatabaseOpenError, dialectGround, knexLog, type OpenedDatabase, type OpenOptions } from '../engine/connect.ts';
import type { AreaParts, Dialect, OnceRow } from '../engine/dialect.ts';
import { GroupedWrites } from '../engine/grouping.ts';
import { migrationSource } from '../engine/migrations.ts';
import type { PagedDialect } from '../engine/read-port.ts';
import { pairPrefix } from '../engine/sorted.ts';
import { scoresWith } from '../engine/sql/filter.ts';
import { announceOnCommit } from '../engine/wake-ups.ts';
import { backupSqlite } from './backup.ts';
import { isBusy, isDeadlock, isUnavailable, isUniqueViolation } from './errors.ts';
import { filterSql, keyBoundsSql } from './filter.ts';
import { sqliteSchema } from './migrations.ts';
import { SqliteReaders } from './readers.ts';
import { sqliteRowPort } from './rows.ts';
import { SortIndexMaker } from './sort-indexes.ts';
import { carryTextsSql, uniqueFillsProcedure, uniqueKeySql } from './sql/collections.ts';
import { knexTablesSql } from './sql/engine.ts';
import { insertEventsSql } from './sql/events.ts';
import { refreshExpiriesSql } from './sql/expiry.ts';
import { aggregateSql, filteredSortedPage, orderedPage, pageWithRelated, relatedRows, sortedPage, sortedPageAfter } from './sql/reads.ts';
import { existingIdsSql, keyRowIdsSql, namingRowsSql, rowIdsSql } from './sql/relations.ts';
import { onceAnswersSql, pruneOnceSql, rangeRowsSql, rangesRowsSql, sqliteProcedures } from './sql/rows.ts';
import { searchSql } from './sql/search.ts';
import { ackStreamsSql, claimStreamsSql, streamAcksProcedure } from './sql/webhooks.ts';
import { SqliteWriter } from './writer.ts';

/**
 * What the writer's connection runs when it opens. WAL lets readers run beside the writer;
 * synchronous=NORMAL in WAL mode keeps every committed transaction through a crash of the process
 * (kill -9), though not through a power cut. The writer leaves checkpoints to a connection of their own
 * (readers.ts), cuts the WAL file back to 64 MB when it starts it over, and has the views through which
 * a group of row writes, or of the webhooks' acknowledgements, or a unique index's keys, is one statement
 * (sql/). Its temporary B-trees (a statement's RETURNING, the rows of an INSERT … SELECT) stay in its
 * page cache and spill to a file past it (`temp_store = FILE`): kept all in memory, they grew the process's
 * heap by some 10 MB as a collection of a million rows was seeded (docs/performance.md, "Memory").
 */
export const writerSetup = `PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;
  PRAGMA wal_autocheckpoint = 0; PRAGMA temp_store = FILE; PRAGMA journal_size_limit = 67108864; ${sqliteProcedures}${uniqueFillsProcedure}${streamAcksProcedure}`;

/** Opens the database file that `url` names (relative to the working directory; its folder is made) and brings its schema up to date. */
export async function openSqlite(url: string, { sortIndexes, log, queryTimeoutMs }: OpenOptions, areas: AreaParts): Promise<OpenedSqlite> {
  const filename = resolve(url.slice('sqlite:'.length));
  let knex: Knex;
  try {
    makeDirectory(dirname(filename));
    knex = knexFactory({ ...knexConfig(filename), log: knexLog(log) });
  } catch (error) {
    throw new DatabaseOpenError(url, error); // the folder of the file could not be made
  }
  try {
    await migrate(knex);
  } catch (error) {
    await knex.destroy();
    throw new DatabaseOpenError(url, error);
  }
  const writer = new SqliteWriter();
  // `immediate`: the write lock at once, waiting its turn (busy_timeout) behind another process.
  const writes = new GroupedWrites(knex, (trx, step) => writer.inTransaction(trx, step === 'begin' ? 'begin immediate' : step, []));
  const readers = new SqliteReaders(filename, undefined, (task) => writes.aside(task));
  const ground = dialectGround(knex, queryTimeoutMs, areas.schemas(existingIdsSql));
  const { changes } = ground;
  // The statements first; the pages and the rows, which read and write with them, then.
  const statements: Omit<Dialect, 'rows'> = {
    ...ground,
    waits: readers.waits,
    uniqueKeySql,
    carryTextsSql,
    searchSql,
    run: (trx, sql, params, once) => writer.inTransaction(trx, sql, params, once),
    async announce(trx, collectionId) {
      announceOnCommit(changes, trx, collectionId);
    },
    // Knex's one connection, after the writes queued before: a read sees them.
    query: async (sql, params) => (await knex.raw(sql, params)) as never,
    // The same connection, when Knex's pool lends it, with the writer's statements (writer.ts).
    queryKept: (sql, params) => writer.alone(knex, sql, params),
    // On the read-only connection of point reads: never behind a write transaction.
    readCommitted: (sql, params) => readers.read(sql, params, 'point'),
    // On the read-only connection of point reads, which sees every write committed before it begins.
    readOnce: async (accountId, key, now) => (await readers.readMerged<OnceRow>(onceAnswersSql, [accountId, key, now]))[0],
    pruneOnceSql,
    refreshExpiriesSql,
    claimStreamsSql,
    ackStreamsSql,
    writerWakeMs,
    sweepBatchRows: 200,
    // Text compares as UTF-8 bytes (the BINARY collation), which is code point order.
    codePointOrder: '',
    filterSql,
    keyBoundsSql,
    rowIdsSql,
    keyRowIdsSql,
    namingRowsSql,
    rangeRowsSql,
    rangesRowsSql,
    insertEventsSql,
    isUniqueViolation,
    isDeadlock,
    // One writer at a time: a request of another process with the same key waits for this one's commit,
    // then finds its answer stored (recordOnce()), and rolls its own change back.
    holdOnce: async () => true,
  };
  const db = statements as PagedDialect;
  const indexes = new SortIndexMaker(db, writes);
  db.pages = {
    // A page that sorts or filters is timed, on connections of their own; one made for one request
    // (a filter's) is prepared there too, and its statement dropped in turn.
    read: (sql, params, kind = 'scan') =>
      kind === 'sort' || kind === 'once' ? readers.timedRead(sql, params, queryTimeoutMs) : readers.read(sql, params, kind),
    snapshot: (work) => readers.snapshot(work),
    orderedPage,
    pageWithRelated,
    aggregateSql,
    jsonOf: (text) => JSON.parse(text),
    keyHoldsWhole: () => true,
    filterSql,
    keyBoundsSql,
    rangeRowsSql,
    scoresSql: scoresWith(searchSql),
    filteredSortedPage,
    relatedRows,
    wholeStringKeys: true,
    // A key holds a string as SQLite's JSON reader reads it: as bound, but for a lone surrogate or a U+0000.
    pairPrefix: (operand) => pairPrefix(operand, (text) => (text.isWellFormed() && !text.includes('\0') ? text : undefined)),
    sortedPage,
    sortedPageAfter,
    makeSortIndex: (accountId, name, field, max) => indexes.make(accountId, name, field, max),
    sortIndexes,
    knownIndexes: areas.knownIndexes,
  };
  db.rows = sqliteRowPort({ db, writer, readMerged: readers.readMerged.bind(readers), writes, steps: areas.steps });
  const close = async () => {
    try {
      await writer.close();
      await readers.close();
    } finally {
      await knex.destroy();
    }
  };
  const backups = { backup: (target: string, replace: boolean) => backupSqlite(filename, target, replace) };
  return { db, backups, codes: { isUniqueViolation, isUnavailable }, close, readers, writes };
}

/** A SQLite database opened, with what the tests look at: its read-only connections and its writer's queue. */
export type OpenedSqlite = OpenedDatabase & { readers: SqliteReaders; writes: GroupedWrites };

/**
 * The sleeps, in ms, of a connection waiting for a lock (busy_timeout): SQLite's busy handler, built with
 * usleep, looks at the lock after each, then every 100 ms (sqliteDefaultBusyCallback).
 */
const BUSY_SLEEPS_MS = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];

/** The sleep a writer of another process is in after waiting `waitedMs` for the write lock: it looks again after it. */
function writerWakeMs(waitedMs: number): number {
  let slept = 0;
  for (const sleep of BUSY_SLEEPS_MS) {
    slept += sleep;
    if (slept > waitedMs) return sleep;
  }
  return BUSY_SLEEPS_MS[BUSY_SLEEPS_MS.length - 1];
}

function knexConfig(filename: string): Knex.Config {
  return {
    client: 'sqlite3',
    connection: { filename },
    useNullAsDefault: true,
    // One connection: SQLite allows one writer at a time anyway, and transactions queue for it. The
    // reads have read-only connections of their own (readers.ts).
    pool: {
      min: 1,
      max: 1,
      afterCreate: (
        connection: { exec(sql: string, done: (error: Error | null) => void): void },
        done: (error: Error | null, connection: unknown) => void,
      ) => connection.exec(writerSetup, (error) => done(error, connection)),
    },
  };
}

/**
 * `mkdirSync(directory, { recursive: true })`, which Node 20 never returns from when mkdir answers ENOENT
 * for a directory whose parent exists, as /proc does: each missing directory is made on its own, and
 * the first that cannot be throws.
 */
function makeDirectory(directory: string): void {
  if (existsSync(directory)) return;
  const parent = dirname(directory);
  if (parent !== directory) makeDirectory(parent);
  try {
    mkdirSync(directory);
  } catch (error) {
    // Made meanwhile by another process: what was asked for is there.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/**
 * Several processes may start at once on one file. Knex makes its own tables when it finds them missing,
 * so two processes that both found them missing would race to make them: they are made here first, each
 * statement atomic (knexTablesSql). Then the file's write lock serialises the migrations: a process
 * that finds the lock taken (Knex's MigrationLocked) or the database busy past busy_timeout
 * (isBusy) tries again for up to MIGRATION_WAIT_MS. A lock left by a process killed while it
 * migrated is still reported then.
 */
const MIGRATION_WAIT_MS = 30_000;

async function migrate(knex: Knex): Promise<void> {
  const deadline = Date.now() + MIGRATION_WAIT_MS;
  for (;;) {
    try {
      for (const sql of knexTablesSql) await knex.raw(sql);
      await knex.migrate.latest({ migrationSource: migrationSource(sqliteSchema) });
      return;
    } catch (error) {
      const raced = (error as Error).name === 'MigrationLocked' || isBusy(error);
      if (!raced || Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 250));
    }
  }
}
