// The storage backends every HTTP suite runs on: SQLite always, PostgreSQL when a server answers at
// DATABASE_URL_TEST_PG (default postgres://postgres@127.0.0.1:5432/postgres). Each test server gets a
// database of its own, created here and dropped after. Without a reachable PostgreSQL server its suites
// report themselves skipped; with CI=true that is a failure.

import { randomBytes } from 'node:crypto';
import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { openStore, type Store } from '../../src/db/open-store.ts';
import { Workspace } from './process.ts';

export type BackendName = 'sqlite' | 'postgres';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

const adminUrl = process.env.DATABASE_URL_TEST_PG || 'postgres://postgres@127.0.0.1:5432/postgres';
let databases = 0;
/**
 * Named in this module's databases beside the process's pid: mocha loads a test file through require()
 * unless it must be imported (a top-level await), so this module may run twice in one process, each
 * copy with its own count.
 */
const copy = randomBytes(3).toString('hex');

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

let reachable: Promise<string | undefined> | undefined;
/** Why PostgreSQL cannot be used, or undefined when it can. Asked once per run. */
function postgresUnavailable(): Promise<string | undefined> {
  reachable ??= admin((client) => client.query('select 1')).then(
    () => undefined,
    (error: Error) => `no PostgreSQL server at ${adminUrl.replace(/\/\/[^@]*@/, '//')}: ${error.message}`,
  );
  return reachable;
}

/** In a `before`: skips the suite when no PostgreSQL server answers, or fails it under CI, which needs one. */
export async function skipWithoutPostgres(context: Mocha.Context): Promise<void> {
  const why = await postgresUnavailable();
  if (why === undefined) return;
  if (process.env.CI === 'true') throw new Error(`${why} (CI=true needs it)`);
  context.skip();
}

/**
 * A new database of its own on `backend`. On PostgreSQL its default collation is the server's, or with
 * `icuLocale` that ICU locale's (e.g. `en-US`, where text does not sort by code point): PostgreSQL 15
 * or later built with ICU can make it, others refuse. `migrated` (default false): a copy of a database
 * the migrations were run on (migratedTemplate, migratedSqliteTemplate), for a server that would run
 * them first thing; without it the database is empty, as a first start finds it.
 */
export async function createDatabase(
  backend: BackendName,
  { icuLocale, migrated = false }: { icuLocale?: string; migrated?: boolean } = {},
): Promise<TestDatabase> {
  if (backend === 'sqlite') {
    const dir = await mkdtemp(join(tmpdir(), 'rowbase-test-'));
    const file = join(dir, 'rowbase.sqlite');
    if (migrated) await copyFile(await migratedSqliteTemplate(), file);
    return { url: `sqlite:${file}`, drop: () => rm(dir, { recursive: true, force: true }) };
  }
  if (migrated && icuLocale === undefined) {
    // The spare made while the last test ran, and the next one begun now.
    const made = spare ?? copyOfTemplate();
    spare = copyOfTemplate();
    spare.catch(() => {}); // its failure is the next createDatabase()'s
    return postgresDatabase(await made);
  }
  await leftoversDropped();
  const name = `${TEST_PREFIX}${process.pid}_${copy}_${++databases}`;
  const locale = icuLocale === undefined ? '' : ` locale_provider icu icu_locale '${icuLocale.replaceAll("'", "''")}'`;
  await admin((client) => client.query(`create database ${name} encoding 'UTF8'${locale} template template0`));
  return postgresDatabase(name);
}

/**
 * A migrated database (a copy of migratedTemplate) made ahead, while a test runs: the next migrated
 * database's, so that making one (most of a second of PostgreSQL's, which writes the whole copy to its
 * log) is not waited for. Dropped after the run if no test took it.
 */
let spare: Promise<string> | undefined;

/** A new database copied from migratedTemplate: its name. */
async function copyOfTemplate(): Promise<string> {
  const name = `${TEST_PREFIX}${process.pid}_${copy}_${++databases}`;
  const copied = async () => admin(async (client) => client.query(`create database ${name} template ${await migratedTemplate()}`));
  try {
    await copied();
  } catch (error) {
    // The template dropped by another process (a test process of an older checkout, which read this
    // one's name as no pid of a running process): made again, once.
    if ((error as { code?: string }).code !== '3D000') throw error;
    template = undefined;
    await copied();
  }
  return name;
}

/**
 * The databases dropped, one after the other, behind the tests: a drop (a checkpoint of PostgreSQL's)
 * takes a second or more, which a test's `after` no longer waits for. The run's end waits for them all.
 */
let dropping: Promise<void> = Promise.resolve();
/** The first drop that failed: the run's end throws it. */
let dropFailure: unknown;

/** Drops the database `name` after those dropped before it. */
function dropLater(name: string): void {
  dropping = dropping
    .then(() => admin((client) => client.query(`drop database if exists ${name} with (force)`)))
    .then(
      () => undefined,
      (error) => {
        dropFailure ??= error;
      },
    );
}

/**
 * The test database `name` of the PostgreSQL server: its URL, and how to drop it (its connections closed
 * by then: a drop ends any left with `force`).
 */
function postgresDatabase(name: string): TestDatabase {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => dropLater(name),
  };
}

const TEST_PREFIX = 'rowbase_test_';
const TEMPLATE_PREFIX = 'rowbase_template_';
let leftovers: Promise<void> | undefined;

/**
 * Drops, before this module makes its first database, the test databases and templates that test
 * processes no longer running left (one killed before its run's end dropped them).
 */
function leftoversDropped(): Promise<void> {
  leftovers ??= admin(async (client) => {
    const { rows } = await client.query<{ datname: string }>('select datname from pg_database where datname like $1 or datname like $2', [
      `${TEST_PREFIX}%`,
      `${TEMPLATE_PREFIX}%`,
    ]);
    for (const { datname } of rows) {
      const pid = Number(datname.replace(TEST_PREFIX, '').replace(TEMPLATE_PREFIX, '').split('_')[0]);
      if (!running(pid)) await client.query(`drop database if exists ${datname} with (force)`);
    }
  });
  return leftovers;
}

let template: Promise<string> | undefined;

/**
 * The name of a database of this process with the migrations run (openStore), made on first use, which
 * migrated databases are copied from: a copy takes a fraction of the second that running every migration
 * on each test server's new database took. Dropped after the run (a root `after` hook).
 */
function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    const name = `${TEMPLATE_PREFIX}${process.pid}_${copy}`;
    await leftoversDropped();
    await admin((client) => client.query(`create database ${name} encoding 'UTF8' template template0`));
    const store = await openStore(postgresDatabase(name).url);
    await store.close();
    // A database is copied only while no one is connected to it: the store's sessions end after it closes.
    await admin(async (client) => {
      const connected = async () =>
        (await client.query('select count(*)::int as n from pg_stat_activity where datname = $1', [name])).rows[0].n > 0;
      while (await connected()) await new Promise((resolve) => setImmediate(resolve));
    });
    return name;
  })();
  return template;
}

let sqliteTemplate: Promise<{ dir: string; file: string }> | undefined;

/**
 * The path of a SQLite file of this process with the migrations run (openStore), made on first use, which
 * migrated SQLite databases are copies of: a copy takes a millisecond, running every migration on each
 * test server's new file a quarter of a second of CPU. Closed before it is copied, its write-ahead log
 * checkpointed into it and gone (it fails if one is left). Removed after the run (the root `after` hook).
 */
async function migratedSqliteTemplate(): Promise<string> {
  sqliteTemplate ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rowbase-template-'));
    const file = join(dir, 'rowbase.sqlite');
    const store = await openStore(`sqlite:${file}`);
    await store.close();
    const left = await readdir(dir);
    if (left.length !== 1) throw new Error(`the SQLite template left ${left.join(', ')} beside its file`);
    return { dir, file };
  })();
  return (await sqliteTemplate).file;
}

/** Whether a process `pid` runs on this host (one of another user's counts as running). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

// Mocha's root hook, registered by each copy of this module (`copy`) when a test file first imports it.
if (typeof after === 'function') {
  after(async () => {
    const sqlite = await sqliteTemplate?.catch(() => undefined);
    if (sqlite) await rm(sqlite.dir, { recursive: true, force: true });
    const unused = await spare?.catch(() => undefined);
    if (unused) dropLater(unused);
    await dropping;
    if (dropFailure !== undefined) throw dropFailure;
    if (template === undefined) return;
    const name = await template.catch(() => undefined);
    if (name) await admin((client) => client.query(`drop database if exists ${name} with (force)`));
  });
}

/**
 * Declares the suite `title` once for each backend: `body` gets the backend to start servers on, and the
 * suite as `this` (a `function` may set its timeout).
 * PostgreSQL's copy skips itself (or, under CI, fails) when no server answers.
 */
export function describeEachBackend(title: string, body: (this: Mocha.Suite, backend: BackendName) => void): void {
  for (const backend of ['sqlite', 'postgres'] as const) {
    describe(`${title} (${backend})`, function () {
      if (backend === 'postgres') {
        before(async function () {
          await skipWithoutPostgres(this);
        });
      }
      body.call(this, backend);
    });
  }
}

/**
 * For a test of the store itself: a new database of `backend` (createDatabase()), a store opened on it and
 * the account `account` made with its first key, and that account's id. The test closes the store and drops
 * the database.
 */
export async function storeWithAccount(
  backend: BackendName,
  account: string,
): Promise<{ database: TestDatabase; store: Store; accountId: number }> {
  const database = await createDatabase(backend);
  const store = await openStore(database.url);
  await store.createKey(account);
  const accountId = await store.accountIdOf(account);
  if (accountId === undefined) throw new Error(`no account ${account} after its key was made`);
  return { database, store, accountId };
}

/** A Knex of its own on the database at `url` of `backend`, for a test's look at what a server stored. */
export function knexOf(backend: BackendName, url: string): Knex {
  return knexFactory(
    backend === 'postgres'
      ? { client: 'pg', connection: url }
      : { client: 'sqlite3', connection: { filename: url.slice('sqlite:'.length) }, useNullAsDefault: true },
  );
}

/**
 * For a mocha `describe` of `rowbase` processes (process.ts) on `backend`: before each test a workspace,
 * its database (the workspace's SQLite file, or a PostgreSQL database of its own) and a Knex on it, all
 * gone after it.
 */
export function workspaceOn(backend: BackendName) {
  const suite = {} as { workspace: Workspace; database: TestDatabase; knex: Knex };
  beforeEach(async () => {
    const workspace = await Workspace.create();
    const database = backend === 'sqlite' ? { url: workspace.databaseUrl, drop: async () => {} } : await createDatabase(backend);
    Object.assign(suite, { workspace, database, knex: knexOf(backend, database.url) });
  });
  afterEach(async () => {
    await suite.knex.destroy();
    await suite.workspace.cleanUp();
    await suite.database.drop();
  });
  return suite;
}
