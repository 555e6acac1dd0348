// The storage backends every HTTP suite runs on: SQLite always, PostgreSQL when a server answers at
// DATABASE_URL_TEST_PG (default postgres://postgres@127.0.0.1:5432/postgres). Each test server gets a
// database of its own, created here and dropped after. Without a reachable PostgreSQL server its suites
// report themselves skipped; with CI=true that is a failure.
import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { openStore } from '../../src/db/open-store.ts';
import { Workspace } from './process.ts';

export type BackendName = 'sqlite' | 'postgres';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

const adminUrl = process.env.DATABASE_URL_TEST_PG || 'postgres://postgres@127.0.0.1:5432/postgres';
let databases = 0;

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
  const name = `rowbase_test_${process.pid}_${++databases}`;
  if (migrated && icuLocale === undefined) {
    const template = await migratedTemplate();
    await admin((client) => client.query(`create database ${name} template ${template}`));
    return postgresDatabase(name);
  }
  const locale = icuLocale === undefined ? '' : ` locale_provider icu icu_locale '${icuLocale.replaceAll("'", "''")}'`;
  await admin((client) => client.query(`create database ${name} encoding 'UTF8'${locale} template template0`));
  return postgresDatabase(name);
}

/** The test database `name` of the PostgreSQL server: its URL, and how to drop it. */
function postgresDatabase(name: string): TestDatabase {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => admin((client) => client.query(`drop database if exists ${name} with (force)`)).then(() => undefined),
  };
}

const TEMPLATE_PREFIX = 'rowbase_template_';
let template: Promise<string> | undefined;

/**
 * The name of a database of this process with the migrations run (openStore), made on first use, which
 * migrated databases are copied from: a copy takes a fraction of the second that running every migration
 * on each test server's new database took. Dropped after the run (a root `after` hook); templates left by
 * test processes no longer running (one killed) are dropped when the next is made.
 */
function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    const name = `${TEMPLATE_PREFIX}${process.pid}`;
    await admin(async (client) => {
      const { rows } = await client.query<{ datname: string }>('select datname from pg_database where datname like $1', [
        `${TEMPLATE_PREFIX}%`,
      ]);
      for (const { datname } of rows) {
        if (!running(Number(datname.slice(TEMPLATE_PREFIX.length)))) await client.query(`drop database if exists ${datname} with (force)`);
      }
      await client.query(`create database ${name} encoding 'UTF8' template template0`);
    });
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

// Mocha's root hook, registered once, when a test file first imports this module.
if (typeof after === 'function') {
  after(async () => {
    const sqlite = await sqliteTemplate?.catch(() => undefined);
    if (sqlite) await rm(sqlite.dir, { recursive: true, force: true });
    if (template === undefined) return;
    const name = await template.catch(() => undefined);
    if (name) await admin((client) => client.query(`drop database if exists ${name} with (force)`));
  });
}

/**
 * Declares the suite `title` once for each backend: `body` gets the backend to start servers on.
 * PostgreSQL's copy skips itself (or, under CI, fails) when no server answers.
 */
export function describeEachBackend(title: string, body: (backend: BackendName) => void): void {
  for (const backend of ['sqlite', 'postgres'] as const) {
    describe(`${title} (${backend})`, () => {
      if (backend === 'postgres') {
        before(async function () {
          await skipWithoutPostgres(this);
        });
      }
      body(backend);
    });
  }
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
