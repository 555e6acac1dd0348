// PostgreSQL: a database (`postgres://…`) opened, as ../open-store.ts makes its Store, which several instances of the service may
// share. Every change is announced to all of them (rows.ts, listenForChanges). The statements are in sql/.

import knexFactory from 'knex';
import pg from 'pg';
import { postgresPoolMax } from '../../config.ts';
import { BackupRefusedError } from '../../errors.ts';
import { DatabaseOpenError, dialectGround, knexLog, type OpenedDatabase, type OpenOptions } from '../engine/connect.ts';
import type { AreaParts, Backups, Dialect, OnceRow } from '../engine/dialect.ts';
import { migrationSource } from '../engine/migrations.ts';
import type { PagedDialect } from '../engine/read-port.ts';
import { pairPrefix } from '../engine/sorted.ts';
import { scoresWith } from '../engine/sql/filter.ts';
import { onceAnswerSql } from '../engine/sql/rows.ts';
import { Waits } from '../engine/waits.ts';
import { isDeadlock, isUnavailable, isUniqueViolation } from './errors.ts';
import { filterSql, keyBoundsSql } from './filter.ts';
import { escapeString, unescapedJson } from './jsonb.ts';
import { postgresSchema } from './migrations.ts';
import { listenForChanges, postgresRowPort } from './rows.ts';
import { makeSortIndex } from './sort-indexes.ts';
import { carryTextsSql, POSTGRES_KEY_CHARS, uniqueKeySql } from './sql/collections.ts';
import { CHANNEL, notifySql } from './sql/engine.ts';
import { insertEventsSql } from './sql/events.ts';
import { holdSweptSql, refreshExpiriesSql, sweepBatchSql } from './sql/expiry.ts';
import { aggregateSql, filteredSortedPage, orderedPage, pageWithRelated, relatedRows, sortedPage, sortedPageAfter } from './sql/reads.ts';
import { existingIdsSql, keyRowIdsSql, namingRowsSql, rowIdsSql } from './sql/relations.ts';
import { holdOnceSql, pruneOnceSql, rangeRowsSql, rangesRowsSql } from './sql/rows.ts';
import { searchSql } from './sql/search.ts';
import { ackStreamsSql, claimStreamsSql } from './sql/webhooks.ts';
import { runAlone, runInTransaction, runSnapshot, runTimed, runWrite } from './statements.ts';

/** Opens the database that `url` names and brings its schema up to date. */
export async function openPostgres(
  url: string,
  { sortIndexes, log, followOthers, queryTimeoutMs }: OpenOptions,
  areas: AreaParts,
): Promise<OpenedDatabase> {
  // pg returns bigint columns as strings; the data layer converts the ones it reads.
  const knex = knexFactory({
    client: 'pg',
    connection: url,
    pool: { min: 0, max: postgresPoolMax(url), afterCreate: withoutJit },
    log: knexLog(log),
  });
  try {
    await migrate(url, () => knex.migrate.latest({ migrationSource: migrationSource(postgresSchema) }));
  } catch (error) {
    await knex.destroy();
    throw new DatabaseOpenError(url, error);
  }
  const ground = dialectGround(knex, queryTimeoutMs, areas.schemas(existingIdsSql));
  const { changes } = ground;
  const query: Dialect['query'] = async (sql, params) => (await knex.raw(sql, params)).rows;
  // The statements first; the pages and the rows, which read and write with them, then.
  const statements: Omit<Dialect, 'rows'> = {
    ...ground,
    // Every connection comes from Knex's pool, which the store watches.
    waits: new Waits(),
    uniqueKeySql,
    searchSql,
    run: runInTransaction,
    // A NOTIFY inside the transaction, which PostgreSQL delivers to every instance on commit, never on
    // rollback; this process hears its own in-process (listenForChanges() leaves them out).
    async announce(trx, collectionId) {
      await runInTransaction(trx, notifySql, [CHANNEL, `${changes.instance} ${collectionId}`]);
      trx.executionPromise.then(
        () => changes.emit('change', collectionId),
        () => {},
      );
    },
    query,
    // query(): a connection of the pool, which a write holds only while it runs.
    readCommitted: query,
    // A named statement (statements.ts), on a connection of Knex's pool.
    queryKept: (sql, params) => runAlone(knex, sql, params),
    // Planned for each read: a plan made once, while the table was empty (a new database), reads the
    // whole table for a key from then on.
    readOnce: async (accountId, key, now) => (await runAlone<OnceRow>(knex, onceAnswerSql, [accountId, key, now], false))[0],
    pruneOnceSql,
    refreshExpiriesSql,
    claimStreamsSql,
    ackStreamsSql,
    // A transaction waiting for a lock is woken when it is released.
    writerWakeMs: () => 0,
    sweepBatchRows: 250,
    carryTextsSql,
    async sweepAlone(collectionId, now, rows) {
      const payload = `${changes.instance} ${collectionId}`;
      const deleted = await runWrite(knex, async (run) => {
        const [held] = await run<{ sorted: boolean; related: boolean }>(holdSweptSql, [collectionId]);
        if (!held) return 0; // the collection is gone: nothing to sweep
        if (held.related) return undefined;
        const [swept] = await run<{ n: number | string }>(sweepBatchSql, [collectionId, now, rows, held.sorted ? 1 : 0, CHANNEL, payload]);
        return Number(swept.n);
      });
      // This process hears its own NOTIFYs in-process (listenForChanges() leaves them out), as announce()'s.
      if (deleted) changes.emit('change', collectionId);
      return deleted;
    },
    // The database's collation may not be code point order (en-US puts `a` before `B`); "C" is.
    codePointOrder: ' collate "C"',
    isUniqueViolation,
    isDeadlock,
    filterSql,
    keyBoundsSql,
    rowIdsSql,
    keyRowIdsSql,
    namingRowsSql,
    rangeRowsSql,
    rangesRowsSql,
    insertEventsSql,
    // An advisory lock held until the transaction ends, commit or rollback (a crash included), by account
    // and the key's hash: two keys of one hash wait for each other, which only costs a 409 to a retry.
    async holdOnce(trx, accountId, key) {
      const [held] = await runInTransaction<{ held: boolean }>(trx, holdOnceSql, [accountId, key]);
      return held.held;
    },
  };
  const db = statements as PagedDialect;
  db.pages = {
    // Named statements, each parsed and planned once per connection, as the writes' are; a page that
    // sorts or filters in a read-only transaction of its own with a statement_timeout.
    read: (sql, params, kind) =>
      kind === 'sort' || kind === 'once' ? runTimed(knex, sql, params, queryTimeoutMs, kind === 'sort') : runAlone(knex, sql, params),
    snapshot: (work) => runSnapshot(knex, work),
    orderedPage,
    pageWithRelated,
    aggregateSql,
    jsonOf: unescapedJson,
    // A key holds a string's first POSTGRES_KEY_CHARS characters (sql/): a shorter one whole, and
    // then equal keys are equal strings. UTF-16 units count a character once or twice: never fewer.
    keyHoldsWhole: (text) => escapeString(text).length < POSTGRES_KEY_CHARS,
    filterSql,
    keyBoundsSql,
    rangeRowsSql,
    scoresSql: scoresWith(searchSql),
    filteredSortedPage,
    relatedRows,
    wholeStringKeys: false,
    // Escaped as a key's string is, and whole (as keyHoldsWhole).
    pairPrefix: (operand) =>
      pairPrefix(operand, (text) => {
        const key = escapeString(text);
        return key.length < POSTGRES_KEY_CHARS ? key : undefined;
      }),
    sortedPage,
    sortedPageAfter,
    makeSortIndex: (accountId, name, field, max) => makeSortIndex(db, areas.steps, accountId, name, field, max),
    sortIndexes,
    knownIndexes: areas.knownIndexes,
  };
  db.rows = postgresRowPort(db, areas.steps);
  const stopListening = followOthers ? listenForChanges(url, changes, log) : async () => {};
  const close = async () => {
    try {
      await stopListening();
    } finally {
      await knex.destroy();
    }
  };
  return { db, backups, codes: { isUniqueViolation, isUnavailable }, close };
}

/**
 * Each connection of the pool set not to compile statements to machine code (JIT) on its first use:
 * rowbase's statements are pages and writes of milliseconds, for which the compiling costs more than it
 * saves, and a plan's estimate above jit_above_cost (a collection just filled, its statistics not yet
 * taken) had a search page spend a third of its time compiling (docs/performance.md, "Search").
 */
function withoutJit(connection: pg.Client, done: (error: Error | null, connection: pg.Client) => void): void {
  connection.query('set jit = off').then(
    () => done(null, connection),
    (error: Error) => done(error, connection),
  );
}

/** PostgreSQL's own tools copy a database while it serves: pg_dump (docs/operations.md, "Backup"). */
const backups: Backups = {
  async backup() {
    throw new BackupRefusedError(
      'backup copies a SQLite database; for PostgreSQL use pg_dump: pg_dump --format=custom --file=rowbase.dump "$DATABASE_URL" (docs/operations.md, "Backup")',
    );
  },
};

/**
 * Brings the schema up to date, safely when several processes start at once on one database: they
 * queue on an advisory lock held for the whole migration (Knex's own lock table is itself created
 * without one).
 */
async function migrate(url: string, latest: () => Promise<unknown>): Promise<void> {
  const lock = new pg.Client({ connectionString: url });
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock(hashtext($1))', ['rowbase migrations']);
    await latest();
  } finally {
    await lock.end(); // ends the session, and with it the lock
  }
}
