// The data layer's one door: openStore() opens the database a URL names with the module of its dialect,
// sqlite/ or postgres/, giving it the parts of its reads and writes that are the areas' (AreaParts), and
// makes its Store of it (store.ts), every area's operations bound to it. Nothing else asks which dialect a
// database is.
import { advance } from './collections/collections.ts';
import { RowSchemas } from './collections/schemas.ts';
import { KnownIndexes } from './collections/sort-indexes.ts';
import { type OpenedDatabase, type StoreOptions, withDefaults } from './engine/connect.ts';
import type { AreaParts, WriteSteps } from './engine/dialect.ts';
import type { GroupedWrites } from './engine/grouping.ts';
import { appendEvents } from './events/events.ts';
import { readKeptExpiryNow } from './expiry/clock.ts';
import { openPostgres } from './postgres/index.ts';
import { putWords } from './search/indexes.ts';
import { openSqlite } from './sqlite/index.ts';
import type { SqliteReaders } from './sqlite/readers.ts';
import { assembleStore, type Store } from './store.ts';

export type { StoreOptions } from './engine/connect.ts';
export type { Store } from './store.ts';

/** A SQLite store, with what the tests look at: its read-only connections and its writer's queue. */
export type SqliteStore = Store & { readers: SqliteReaders; writes: GroupedWrites };

/**
 * Opens the database that `url` names and brings its schema up to date: `sqlite:<path>` (relative to
 * the working directory; the folder is created) or `postgres://…`.
 */
export async function openStore(url: string, options: StoreOptions = {}): Promise<Store> {
  if (url.startsWith('sqlite:')) {
    const { readers, writes, ...opened } = await openSqlite(url, withDefaults(options), areaParts());
    return Object.assign(await storeOf(opened), { readers, writes }) satisfies SqliteStore;
  }
  if (/^postgres(ql)?:\/\//.test(url)) return storeOf(await openPostgres(url, withDefaults(options), areaParts()));
  throw new Error(`DATABASE_URL must start with sqlite: or postgres://, not ${JSON.stringify(url.split(':')[0])}`);
}

/** The steps of a write of rows that a dialect's strategy takes inside its statements, each its area's. */
const steps: WriteSteps = { advance, appendEvents, putWords };

/** What the areas give a dialect as it opens: a store's own caches, and the steps of a write. */
export const areaParts = (): AreaParts => ({
  schemas: (existingIdsSql) => new RowSchemas(existingIdsSql),
  knownIndexes: new KnownIndexes(),
  steps,
});

/** The Store of an opened database, this process's expiry now raised to the one it keeps (expiry/clock.ts). */
async function storeOf({ db, backups, codes, close }: OpenedDatabase): Promise<Store> {
  await readKeptExpiryNow(db);
  return assembleStore(db, backups, codes, close);
}
