// The data layer's one door: openStore() opens the database a URL names with the module of its dialect,
// sqlite/ or postgres/, each of which implements Store (assemble.ts). Nothing else asks which dialect
// a database is.

import { openPostgresStore } from '../postgres/index.ts';
import { openSqliteStore } from '../sqlite/index.ts';
import type { Store } from './assemble.ts';
import type { StoreOptions } from './connect.ts';

export type { Store } from './assemble.ts';
export type { StoreOptions } from './connect.ts';

/**
 * Opens the database that `url` names and brings its schema up to date: `sqlite:<path>` (relative to
 * the working directory; the folder is created) or `postgres://…`.
 */
export async function openStore(url: string, options: StoreOptions = {}): Promise<Store> {
  if (url.startsWith('sqlite:')) return openSqliteStore(url, options);
  if (/^postgres(ql)?:\/\//.test(url)) return openPostgresStore(url, options);
  throw new Error(`DATABASE_URL must start with sqlite: or postgres://, not ${JSON.stringify(url.split(':')[0])}`);
}
