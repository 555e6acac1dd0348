// Collections in the database: made, listed, read, and their row counts and sequence numbers.
import type { components } from '../../../generated/openapi.ts';
import { collectionNotFound, conflict } from '../../errors.ts';
import { expiryNow } from '../../expiry/ttl.ts';
import type { Once } from '../../idempotency/answers.ts';
import type { Rules } from '../../rules/rules.ts';
import type { RowSchema } from '../../schema/check.ts';
import type { Dialect, UniqueIndexes, WriteTx } from '../engine/dialect.ts';
import {
  advanceSql,
  collectionIdSql,
  createCollectionSql,
  getCollectionSql,
  insertSchemaSql,
  listCollectionContractsSql,
  listCollectionsSql,
  lockAccountSql,
  setSchemaIdSql,
} from '../engine/sql/collections.ts';
import { searchIndexOf } from '../engine/sql/search.ts';
import { type RelationLinks, shownRelations } from '../relations/links.ts';
import { beginOnce, recordOnce } from '../rows/idempotency.ts';
import type { StoredRules } from '../rules/rules.ts';

export type Collection = components['schemas']['Collection'];

// `seq` is last_seq, read with row_count from the same row: the count is that of the events up to it,
// less the rows expired by now whose delete events the sweeper has still to write (docs/expiry.md).
type CollectionRow = { name: string; created_at: string; row_count: number | string; last_seq: number | string };
const toCollection = (row: CollectionRow): Collection => ({
  name: row.name,
  created_at: row.created_at,
  row_count: Number(row.row_count),
  seq: Number(row.last_seq),
});

/** The account's collections, by name in code point order (openapi.yaml, listCollections). */
export async function listCollections({ query, codePointOrder }: Dialect, accountId: number): Promise<Collection[]> {
  return (await query<CollectionRow>(listCollectionsSql(codePointOrder), [expiryNow(), accountId])).map(toCollection);
}

/**
 * Makes the account's collection `name`, made at `created_at` (default now; an import keeps the time
 * its collection was first made), with `schema` if given (checked already: checkRowSchema): 409 when
 * the account has one of that name, or holds `max` collections already (default: no bound). Exact
 * under concurrency: the transaction's first statement writes the account's row, which holds it until
 * commit, so that creations of one account count one after another.
 */
export async function createCollection(
  db: Dialect,
  accountId: number,
  name: string,
  max = Number.MAX_SAFE_INTEGER,
  created_at = new Date().toISOString(),
  once?: Once<Collection>,
  schema?: RowSchema,
): Promise<Collection> {
  let collection: Collection | undefined;
  try {
    await db.knex.transaction(async (trx) => {
      if (once) await beginOnce(db, trx, accountId, once);
      collection = await createCollectionIn(db, trx, accountId, name, max, created_at, schema);
      if (once) await recordOnce(db, trx, accountId, once, collection);
    });
  } catch (error) {
    if (db.isUniqueViolation(error)) throw conflict(`A collection named ${name} already exists.`);
    throw error;
  }
  return collection as Collection;
}

/** createCollection() inside the write `trx`, which then holds the account's row. */
export async function createCollectionIn(
  db: Dialect,
  trx: WriteTx,
  accountId: number,
  name: string,
  max: number,
  created_at = new Date().toISOString(),
  schema?: RowSchema,
): Promise<Collection> {
  const collection: Collection = { name, created_at, row_count: 0, seq: 0 };
  if (schema) collection.schema = schema;
  await db.run(trx, lockAccountSql, [accountId]);
  const [inserted] = await db.run<{ id: number | string }>(trx, createCollectionSql, [accountId, name, created_at, accountId, max]);
  if (!inserted) throw conflict(`The account holds ${max} collections, the most it may: delete one to make another.`);
  if (schema) {
    const [stored] = await db.run<{ id: number | string }>(trx, insertSchemaSql, [inserted.id, JSON.stringify(schema), null]);
    await db.run(trx, setSchemaIdSql, [stored.id, inserted.id]);
  }
  return collection;
}

/**
 * The account's collections, by name in code point order, each with what its contract documents are built
 * from (src/contract/): its schema, its relations and its rules (null for none), read afresh on every call, so that a
 * change made on any instance shows at once.
 */
export async function listCollectionContracts({ query, codePointOrder }: Dialect, accountId: number): Promise<CollectionContractData[]> {
  const rows = await query<{
    id: number | string;
    name: string;
    schema: string | null;
    relations: string | null;
    rules: string | null;
    rules_version: number | string;
    ttl_field: string | null;
  }>(listCollectionContractsSql(codePointOrder), [accountId]);
  return rows.map(({ id, name, schema, relations, rules, rules_version, ttl_field }) => ({
    name,
    schema: schema === null ? null : (JSON.parse(schema) as Record<string, unknown>),
    relations: shownRelations(relations === null ? null : (JSON.parse(relations) as RelationLinks)).map(
      ({ name: relation, kind, collection }) => ({ name: relation, kind, collection }),
    ),
    rules: rules === null ? null : { collectionId: Number(id), version: Number(rules_version), rules: JSON.parse(rules) as Rules },
    ttl: ttl_field,
  }));
}

/** A collection as listCollectionContracts() answers it. */
export interface CollectionContractData {
  name: string;
  schema: Record<string, unknown> | null;
  /** Its relations, both directions: each one's name, kind and the collection of its rows. */
  relations: { name: string; kind: 'to_one' | 'to_many'; collection: string }[];
  rules: StoredRules | null;
  /** The field of its time to live (docs/expiry.md), null for none. */
  ttl: string | null;
}

/** The collection, with its schema (null for none) and its relations, both directions. */
export async function getCollection({ query }: Dialect, accountId: number, name: string): Promise<Collection> {
  const [row] = await query<CollectionRow & { schema: string | null; relations: string | null; ttl_field: string | null }>(
    getCollectionSql,
    [expiryNow(), accountId, name],
  );
  if (!row) throw collectionNotFound(name);
  const relations = shownRelations(row.relations === null ? null : (JSON.parse(row.relations) as RelationLinks));
  const collection = { ...toCollection(row), schema: row.schema === null ? null : JSON.parse(row.schema), relations };
  return row.ttl_field === null ? collection : { ...collection, ttl: { field: row.ttl_field } };
}

/** The internal id of the account's collection `name`; 404 when the account has none of that name. */
export async function collectionId({ query }: Dialect, accountId: number, name: string): Promise<number> {
  const [row] = await query<{ id: number | string }>(collectionIdSql, [accountId, name]);
  if (!row) throw collectionNotFound(name);
  return Number(row.id);
}

/**
 * Moves the counters of the account's collection by one change: `events` events, `rowIds` new ids and
 * `rowDelta` rows added or removed. Returns the collection's id, the last row id and event seq, now
 * taken, the fields it has sort indexes for (sort-indexes.ts), its unique indexes (indexes.ts), its
 * schema id (schemas.ts, 0 for none) and its search index (search-indexes.ts), if it has one; 404 when
 * the account has no such collection.
 *
 * It is the first statement of every write transaction, and a write: the transaction takes the write
 * lock at once (waiting its turn, where a read first would fail on SQLite when another process wrote
 * in between), and it holds the collection's row until commit, so writers to one collection take their
 * seqs in commit order.
 */
export async function advance(db: Dialect, trx: WriteTx, accountId: number, collection: string, events: number, rowIds = 0, rowDelta = 0) {
  const [counters] = await db.run<{
    id: number | string;
    last_row_id: number | string;
    last_seq: number | string;
    sorted: string;
    uniques: string;
    schema_id: number | string;
    search: string | null;
    ttl_field: string | null;
  }>(trx, advanceSql, [rowIds, events, rowDelta, accountId, collection]);
  if (!counters) throw collectionNotFound(collection);
  const id = Number(counters.id);
  return {
    id,
    lastRowId: Number(counters.last_row_id),
    lastSeq: Number(counters.last_seq),
    sorted: JSON.parse(counters.sorted) as string[],
    uniques: JSON.parse(counters.uniques) as UniqueIndexes,
    schemaId: Number(counters.schema_id),
    search: searchIndexOf(id, counters.search),
    /** The field of the collection's time to live (docs/expiry.md), or null for none. */
    ttlField: counters.ttl_field,
  };
}
