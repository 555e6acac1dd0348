import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { defaults, postgresPoolMax } from '../config.ts';
import type { Logger } from '../log.ts';
import { Changes, type DatabaseParams, type SortIndexLimits } from './changes.ts';
import { migrationSource } from './migrations.ts';
import { KnownIndexes } from './sort-keys.ts';
import { sqliteProcedures } from './sqlite-procedures.ts';
import { SqliteStatements } from './sqlite-statements.ts';
import { GroupedWrites } from './writes.ts';

export type Dialect = 'sqlite' | 'postgres';

export interface Database {
  knex: Knex;
  dialect: Dialect;
  /** Wake-ups after each committed change of a collection's rows (see changes.ts). */
  changes: Changes;
  /** Waits for queries under way, then closes every connection. */
  close(): Promise<void>;
}

/**
 * Opens the database that `url` names and brings its schema up to date.
 * `sqlite:<path>` (relative to the working directory; the folder is created) or `postgres://…`.
 */
export async function openDatabase(
  url: string,
  sortIndexes: SortIndexLimits = { minRows: defaults.sortIndexMinRows, max: defaults.sortIndexMax },
  log?: Logger,
): Promise<Database> {
  const changes = new Changes();
  let knex: Knex;
  try {
    knex = knexFactory({ ...knexConfig(url), log: knexLog(log) });
  } catch (error) {
    throw new DatabaseOpenError(url, error); // the folder of a SQLite file could not be made
  }
  const dialect = url.startsWith('sqlite:') ? 'sqlite' : 'postgres';
  // SQLite: the hot statements prepared once, and read-only connections for the hot reads.
  const sqlite = dialect === 'sqlite' ? new SqliteStatements(sqliteFilename(url)) : undefined;
  // Knex hands its userParams on to every transaction: that is how announceChange() finds `changes`,
  // the hot reads and writes find `sqlite`, row writes their group (`writes`), and listRows() finds
  // `sortIndexes`.
  const writes = sqlite ? new GroupedWrites(knex) : undefined;
  knex.userParams = { changes, sqlite, writes, sortIndexes, knownIndexes: new KnownIndexes() } satisfies DatabaseParams;
  const close = async () => {
    try {
      await sqlite?.close();
    } finally {
      await knex.destroy();
    }
  };
  const db: Database = { knex, dialect, changes, close };
  try {
    await migrate(knex, url);
  } catch (error) {
    await close();
    throw new DatabaseOpenError(url, error);
  }
  return db;
}

/**
 * The database could not be opened or migrated: one line that names it (without its password) and
 * says why, for an operator to act on.
 */
export class DatabaseOpenError extends Error {
  constructor(url: string, cause: unknown) {
    super(`cannot open the database ${withoutPassword(url)}: ${(cause as Error).message ?? cause}`, { cause });
  }
}

function withoutPassword(url: string): string {
  if (url.startsWith('sqlite:')) return url;
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.href;
  } catch {
    return 'postgres://…';
  }
}

/**
 * Knex's own warnings (a connection that could not be made, with its stack) go to the service's log
 * at warn, or nowhere for the CLI, which reports the error it gets in one line.
 */
function knexLog(log: Logger | undefined): Knex.Config['log'] {
  const warn = (message: unknown) => log?.warn({ knex: String(message) }, 'database driver warning');
  return { warn, error: warn, deprecate: warn, debug: () => {} };
}

/**
 * Brings the schema up to date, safely when several processes start at once on one database. On
 * PostgreSQL they queue on an advisory lock held for the whole migration (Knex's own lock table is
 * itself created without one). On SQLite the file's write lock serialises them; a process that loses a
 * race to create Knex's tables, or finds its lock taken, tries again.
 */
async function migrate(knex: Knex, url: string): Promise<void> {
  if (knex.client.dialect !== 'postgresql') return retryRaces(() => knex.migrate.latest({ migrationSource }));
  const lock = new pg.Client({ connectionString: url });
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock(hashtext($1))', ['rowbase migrations']);
    await knex.migrate.latest({ migrationSource });
  } finally {
    await lock.end(); // ends the session, and with it the lock
  }
}

const racy = /already exists|duplicate key|SQLITE_BUSY|locked/i;

/**
 * How long a start waits for the others' migrations, in ms: long enough for several processes started
 * at once on a fresh file, on a loaded machine, to wait while one migrates. A lock left by a process
 * killed while it migrated is still reported, once this is up.
 */
const MIGRATION_WAIT_MS = 30_000;

async function retryRaces(work: () => Promise<unknown>): Promise<void> {
  const deadline = Date.now() + MIGRATION_WAIT_MS;
  for (;;) {
    try {
      await work();
      return;
    } catch (error) {
      const raced = (error as Error).name === 'MigrationLocked' || racy.test((error as Error).message);
      if (!raced || Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 250));
    }
  }
}

const sqliteFilename = (url: string) => resolve(url.slice('sqlite:'.length));

/** What SQLite's writer connection runs when it opens (see knexConfig). */
export const sqliteWriterSetup = `PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;
  PRAGMA wal_autocheckpoint = 0; PRAGMA temp_store = MEMORY; PRAGMA journal_size_limit = 67108864; ${sqliteProcedures}`;

/**
 * `mkdirSync(directory, { recursive: true })`, which Node 20 never returns from when mkdir answers ENOENT
 * for a directory whose parent exists, as /proc does (`DATABASE_URL=sqlite:/proc/x/rowbase.sqlite` hung
 * the start): each missing directory is made on its own, and the first that cannot be throws.
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

function knexConfig(url: string): Knex.Config {
  if (url.startsWith('sqlite:')) {
    const filename = sqliteFilename(url);
    makeDirectory(dirname(filename));
    return {
      client: 'sqlite3',
      connection: { filename },
      useNullAsDefault: true,
      // One connection: SQLite allows one writer at a time anyway, and transactions queue for it. The
      // hot reads have a read-only connection of their own (sqlite-statements.ts).
      pool: {
        min: 1,
        max: 1,
        // WAL lets readers run beside the writer; synchronous=NORMAL in WAL mode keeps every committed
        // transaction through a crash of the process (kill -9), though not through a power cut. The
        // writer leaves checkpoints to a connection of their own (sqlite-statements.ts, CHECKPOINT_MS),
        // cuts the WAL file back to 64 MB when it starts it over (after a burst of writes),
        // and has the views through which a group of row writes is one statement (sqlite-procedures.ts).
        // Its temporary tables (two a statement of several patches: the rows of the INSERT's SELECT,
        // and those of its RETURNING; a patch alone has only the second) are kept in memory, not in
        // files: every patch makes them, and they are small; the large sorts are the read connections'.
        afterCreate: (
          connection: { exec(sql: string, done: (error: Error | null) => void): void },
          done: (error: Error | null, connection: unknown) => void,
        ) => connection.exec(sqliteWriterSetup, (error) => done(error, connection)),
      },
    };
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    return {
      client: 'pg',
      connection: url,
      // pg returns bigint columns as strings; the data layer converts the ones it reads.
      pool: { min: 0, max: postgresPoolMax(url) },
    };
  }
  throw new Error(`DATABASE_URL must start with sqlite: or postgres://, not ${JSON.stringify(url.split(':')[0])}`);
}
