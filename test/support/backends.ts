// The storage backends every HTTP suite runs on: SQLite always, PostgreSQL when a server answers at
// DATABASE_URL_TEST_PG (default postgres://postgres@127.0.0.1:5432/postgres). Each test server gets a
// database of its own, created here and dropped after. Without a reachable PostgreSQL server its suites
// report themselves skipped; with CI=true that is a failure.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';

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
export function postgresUnavailable(): Promise<string | undefined> {
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
 * or later built with ICU can make it, others refuse.
 */
export async function createDatabase(backend: BackendName, { icuLocale }: { icuLocale?: string } = {}): Promise<TestDatabase> {
  if (backend === 'sqlite') {
    const dir = await mkdtemp(join(tmpdir(), 'rowbase-test-'));
    return { url: `sqlite:${join(dir, 'rowbase.sqlite')}`, drop: () => rm(dir, { recursive: true, force: true }) };
  }
  const name = `rowbase_test_${process.pid}_${++databases}`;
  const locale = icuLocale === undefined ? '' : ` locale_provider icu icu_locale '${icuLocale.replaceAll("'", "''")}'`;
  await admin((client) => client.query(`create database ${name} encoding 'UTF8'${locale} template template0`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => admin((client) => client.query(`drop database if exists ${name} with (force)`)).then(() => undefined),
  };
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
