// The file `rowbase export` writes and `rowbase import` reads (docs/operations.md, "Export and import"):
// NDJSON, its first line describing the collection, every other line one row with its id, in id order;
// and the account and collection both commands name.
import bounds from '../../generated/bounds.json' with { type: 'json' };
import type { Store } from '../db/open-store.ts';
import type { ExportedCollection } from '../db/rows/exports.ts';
import { required, UsageError, type Values } from './command.ts';

/** What the first line of an export says it is, and the version of its format this rowbase writes and reads. */
export const FORMAT = 'rowbase-export';
export const VERSION = 1;

/** The first line of an export. */
export interface Header extends ExportedCollection {
  format: typeof FORMAT;
  version: typeof VERSION;
  exported_at: string;
}

export const collectionName = new RegExp(bounds.CollectionName.pattern);

/** The account and collection a command names: --account and --collection, checked as the HTTP API checks a name. */
export function accountAndCollection(values: Values): { account: string; collection: string } {
  const account = required(values, 'account');
  const collection = required(values, 'collection');
  if (!collectionName.test(collection))
    throw new UsageError(`--collection must be a collection name (openapi.yaml, CollectionName), not ${JSON.stringify(collection)}`);
  return { account, collection };
}

export async function accountId(store: Store, account: string): Promise<number> {
  const id = await store.accountIdOf(account);
  if (id === undefined) throw new UsageError(`there is no account named ${account}; make it with rowbase keys create --account ${account}`);
  return id;
}
