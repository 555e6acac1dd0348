// A batch (openapi.yaml, writeBatch): several writes of rows, over any of the account's collections, in
// one transaction, in the order sent, each made by the same steps its own request takes (writes.ts,
// RowWrites; upserts.ts), so that a later operation sees the earlier ones' writes. The
// first that fails rolls the whole batch back, and its problem names it (`operation`). Each write
// announces its collection on commit, as alone, so the feed sends the batch's events once it committed.
import { ApiError, collectionNotFound, queryTimeout, rowNotFound } from '../../errors.ts';
import type { Once } from '../../idempotency/answers.ts';
import type { Patch } from '../../patches/index.ts';
import { assignable, overRowBound } from '../../rows.ts';
import { advance } from '../collections/collections.ts';
import { uniqueViolationAt, type WrittenRow } from '../collections/indexes.ts';
import type { Dialect, SqlValue, WriteTx } from '../engine/dialect.ts';
import { Groups } from '../engine/grouping.ts';
import type { CollectionInserts } from '../engine/port.ts';
import { holdingOrder } from '../relations/links.ts';
import { accountRelations } from '../relations/relations.ts';
import { beginOnce, recordOnce } from './idempotency.ts';
import { type Fields, type InsertedRows, insertedRows, type RowGuard, rowTooLarge, type VersionedRow } from './rows.ts';
import { UniqueTries } from './unique.ts';
import { type Upserted, upsertRowsIn, upsertWritesOf } from './upserts.ts';
import { deleteRowIn, rowWritesIn } from './writes.ts';

/** One write of a batch, as the handler reads it from the request. */
export type BatchOperation =
  | { op: 'insert'; collection: string; rows: Fields[] }
  | { op: 'update'; collection: string; id: number; patch: Patch; ifMatch?: readonly string[] }
  | { op: 'delete'; collection: string; id: number; ifMatch?: readonly string[] }
  | { op: 'upsert'; collection: string; rows: Fields[]; onConflict: string[] };

/** What each operation wrote, in the order of the operations. */
export type BatchResult =
  | { op: 'insert'; rows: InsertedRows }
  | { op: 'update'; row: VersionedRow }
  | { op: 'delete' }
  | { op: 'upsert'; rows: Upserted };

export interface BatchOptions {
  /** The batch's Idempotency-Key: its answer is stored in the batch's transaction (idempotency.ts). */
  once?: Once<BatchResult[]>;
  /** The collections the key is limited to: every other is not found, as outside a batch. Default: all. */
  collections?: ReadonlySet<string>;
  /** With a publishable key, the rules each collection holds the caller to (rows.ts, RowGuard). */
  guards?: (collection: string) => RowGuard;
}

/**
 * Runs `operations` in order in one transaction and answers each one's result, or throws the problem
 * of the first that failed, naming it, with nothing written (writeBatchAlone). A batch of inserts alone,
 * by a key that reaches every collection, with no Idempotency-Key and no rules, is written together
 * with the other such batches of the account that wait beside it (batchGroups).
 */
export function writeBatch(
  db: Dialect,
  accountId: number,
  operations: readonly BatchOperation[],
  options: BatchOptions = {},
): Promise<BatchResult[]> {
  if (options.once || options.collections || options.guards || !operations.every(isInsert)) {
    return writeBatchAlone(db, accountId, operations, options);
  }
  return batchGroups(db).add(String(accountId), operations, operations.length);
}

type BatchInsert = Extract<BatchOperation, { op: 'insert' }>;
const isInsert = (operation: BatchOperation): operation is BatchInsert => operation.op === 'insert';

/** The operations of the batches written together at most (a batch's own are never split). */
const MAX_JOINED_OPERATIONS = 1000;

/**
 * The batches of inserts of each database, by account, written in groups: those that come while a
 * group is written wait, and go together in the next, as one batch of their operations one after the
 * other (writeBatchOfInserts), so that the group is one write that commits once: on PostgreSQL one
 * statement over all its collections, on SQLite a statement a collection in one transaction
 * (insertTogether), or where that cannot be, a transaction of a statement a collection
 * (writeBatchAlone). Each batch's rows follow those of the batches before it, as if each had been
 * written alone in that order. A group that fails writes nothing, and runs each batch again alone
 * (../engine/grouping.ts), which fails or succeeds as it would have without the others, naming its own
 * operation.
 */
const joined = new WeakMap<Dialect, Groups<readonly BatchInsert[], BatchResult[]>>();

function batchGroups(db: Dialect): Groups<readonly BatchInsert[], BatchResult[]> {
  let groups = joined.get(db);
  if (!groups) {
    groups = new Groups({
      maxRunning: 2,
      maxWeight: MAX_JOINED_OPERATIONS,
      async run(key, batches) {
        const accountId = Number(key);
        if (batches.length === 1) return [await writeBatchOfInserts(db, accountId, batches[0], false)];
        const results = await writeBatchOfInserts(db, accountId, batches.flat(), true);
        let from = 0;
        return batches.map((operations) => {
          const own = results.slice(from, from + operations.length);
          from += operations.length;
          return own;
        });
      },
    });
    joined.set(db, groups);
  }
  return groups;
}

/**
 * A batch of inserts alone, or a group's batches one after the other (`grouped`), written by
 * insertTogether(), else by writeBatchAlone(). Past the query timeout it fails, naming its last
 * operation (all of them were reached). Any other failure of insertTogether() is thrown as it is for a
 * group, which then runs each batch again alone (../engine/grouping.ts); for a batch alone,
 * writeBatchAlone() decides it: it names the operation that failed (a unique key broken) or tries again
 * (a deadlock), as it does for every batch.
 */
async function writeBatchOfInserts(
  db: Dialect,
  accountId: number,
  operations: readonly BatchInsert[],
  grouped: boolean,
): Promise<BatchResult[]> {
  let results: BatchResult[] | undefined;
  try {
    results = await insertTogether(db, accountId, operations, Date.now() + db.queryTimeoutMs);
  } catch (error) {
    if (error instanceof ApiError && error.code === 'query_timeout') throw error.inOperation(operations.length - 1);
    if (grouped) throw error;
  }
  return results ?? writeBatchAlone(db, accountId, operations);
}

/**
 * Inserts alone as one write of the dialect's that commits on its own (RowPort.insertSeveral: on
 * PostgreSQL one statement over every collection, on SQLite a statement each in one transaction of its
 * writer), where writeBatchAlone() holds each collection from its transaction's first statement to its
 * commit. Each insert's rows are checked in Node first, in order, against the schema their collection
 * was last seen with, which the write makes sure is still its. Undefined, with nothing written, where the
 * batch must go through writeBatchAlone(), whose answer is then the batch's: a row too heavy or one its
 * schema (as last seen) refuses, which writeBatchAlone() names once it has the collection's schema for
 * sure; rows that may name rows of other collections, which must see the rows inserted before them
 * and hold those they name; a collection the write did not find as checked (missing, of another schema,
 * on PostgreSQL with a search index).
 */
async function insertTogether(
  db: Dialect,
  accountId: number,
  operations: readonly BatchInsert[],
  deadline: number,
): Promise<BatchResult[] | undefined> {
  /** By collection, in the order first named: its inserts, the operation of each, and all their rows. */
  const byCollection = new Map<string, CollectionInserts & { operations: number[]; rows: Fields[] }>();
  const texts: string[][] = [];
  for (const [index, { collection, rows }] of operations.entries()) {
    let own = byCollection.get(collection);
    if (!own) {
      own = { collection, schemaId: db.schemas.hint(accountId, collection), inserts: [], operations: [], rows: [] };
      byCollection.set(collection, own);
    }
    texts[index] = rows.map((fields) => JSON.stringify(fields));
    if (texts[index].some(overRowBound)) return undefined;
    own.inserts.push(texts[index]);
    own.operations.push(index);
    own.rows.push(...rows);
  }
  // A collection's rows checked at once: which operation a refused row is in, writeBatchAlone() says.
  for (const { collection, schemaId, rows } of byCollection.values()) {
    if (schemaId === 0) continue;
    try {
      await db.schemas.validate(db.query, schemaId, collection, rows);
    } catch {
      return undefined;
    }
    if (db.schemas.names(schemaId)) return undefined;
  }
  const collections = [...byCollection.values()];
  const firsts = await db.rows.insertSeveral(accountId, collections, deadline);
  if (!firsts) return undefined;
  const results: BatchResult[] = [];
  for (const [place, { operations: own }] of collections.entries()) {
    for (const [nth, index] of own.entries()) results[index] = { op: 'insert', rows: insertedRows(firsts[place][nth], texts[index]) };
  }
  return results;
}

/**
 * Runs `operations` in order in one transaction and answers each one's result, or throws the problem
 * of the first that failed, naming it, with nothing written. The collections named are held first, in
 * the order a delete holds them (each before those its rows cascade into or set null in: writes.ts,
 * holdFollowers), else in the order of their names, so that two batches over the same collections, or
 * a batch and a delete, never wait on each other in a circle (on PostgreSQL, a deadlock). Where they
 * still may (a delete in the batch cascading into a collection it does not name, relations declared
 * meanwhile), the one PostgreSQL aborts is run again from the start (RowPort.writeSeveral).
 *
 * An insert's rows are checked (its schema, its bound) at its turn, and written with the inserts into
 * its collection that follow, as one statement, once another operation is about to write that
 * collection, or at the end: no operation reads a collection between, so each sees what it would have
 * seen, and a batch of single-row inserts costs a statement per collection, not one per row. A unique
 * index those rows break fails the insert that sent the first of them.
 */
async function writeBatchAlone(
  db: Dialect,
  accountId: number,
  operations: readonly BatchOperation[],
  options: BatchOptions = {},
): Promise<BatchResult[]> {
  const visible = (collection: string) => options.collections?.has(collection) ?? true;
  /** The operation under way (or, while a collection's inserts are written, the first of them): a failure names it. */
  let at = -1;
  /** By collection, the rows its operations wrote so far, as a unique index sees them, and the operation of each. */
  const tried = new Map<string, { rows: WrittenRow[]; operations: number[] }>();
  const note = (collection: string, operation: number, rows: WrittenRow[]) => {
    const written = tried.get(collection) ?? { rows: [], operations: [] };
    for (const row of rows) {
      written.rows.push(row);
      written.operations.push(operation);
    }
    tried.set(collection, written);
  };
  const tries = new UniqueTries(db, accountId);
  for (;;) {
    try {
      return await db.rows.writeSeveral(async (trx) => {
        tried.clear();
        at = -1;
        const deadline = Date.now() + db.queryTimeoutMs;
        if (options.once) await beginOnce(db, trx, accountId, options.once);
        const named = [...new Set(operations.map((operation) => operation.collection))].filter(visible);
        const schemas = await holdCollections(db, trx, accountId, named);
        const writes = rowWritesIn(db, trx, accountId);
        const read = <T>(sql: string, params: SqlValue[]) => db.run<T>(trx, sql, params);
        /** The collection's schema id; 404 for one that is not there, or that the key may not see. */
        const schemaOf = (collection: string) => {
          const schemaId = schemas.get(collection);
          if (schemaId === undefined) throw collectionNotFound(collection);
          return schemaId;
        };
        const results: BatchResult[] = [];
        /** By collection, the inserts checked and not yet written: each one's operation and its rows' texts. */
        const pending = new Map<string, { operation: number; texts: string[] }[]>();
        /** Writes the collection's pending inserts, as one statement, and answers each. */
        const writePending = async (collection: string) => {
          const inserts = pending.get(collection);
          if (!inserts) return;
          pending.delete(collection);
          const before = at;
          at = inserts[0].operation;
          const firsts = await writes.insert(
            collection,
            schemaOf(collection),
            inserts.map(({ texts }) => texts),
          );
          for (const [index, { operation, texts }] of inserts.entries()) {
            results[operation] = { op: 'insert', rows: insertedRows(firsts[index], texts) };
          }
          at = before;
        };
        for (const [index, operation] of operations.entries()) {
          at = index;
          if (Date.now() > deadline) throw queryTimeout(db.queryTimeoutMs);
          const { collection } = operation;
          const schemaId = schemaOf(collection);
          // Rows that may name rows of other collections see the rows inserted before them.
          if (db.schemas.names(schemaId)) for (const other of [...pending.keys()]) if (other !== collection) await writePending(other);
          const guard = options.guards?.(collection);
          if (operation.op === 'insert') {
            if (guard) for (const fields of operation.rows) guard.creating(fields);
            const texts = operation.rows.map((fields) => JSON.stringify(fields));
            if (texts.some(overRowBound)) throw rowTooLarge();
            await db.schemas.check(read, schemaId, collection, operation.rows);
            note(
              collection,
              index,
              operation.rows.map((fields) => ({ fields })),
            );
            pending.set(collection, [...(pending.get(collection) ?? []), { operation: index, texts }]);
            continue;
          }
          await writePending(collection);
          switch (operation.op) {
            case 'update': {
              if (!assignable(operation.id)) throw rowNotFound(collection, operation.id);
              const seen = (fields: Fields, before: Fields) => {
                guard?.updating(operation.id, before, fields);
                note(collection, index, [{ id: operation.id, fields }]);
              };
              const row = await writes.patch(
                collection,
                schemaId,
                operation.id,
                operation.patch,
                { ifMatch: operation.ifMatch, guard },
                0,
                seen,
              );
              results[index] = { op: 'update', row };
              break;
            }
            case 'delete':
              if (!assignable(operation.id)) throw rowNotFound(collection, operation.id);
              await deleteRowIn(db, trx, writes, accountId, collection, operation.id, { ifMatch: operation.ifMatch, guard });
              results[index] = { op: 'delete' };
              break;
            case 'upsert': {
              if (operation.rows.some((fields) => overRowBound(JSON.stringify(fields)))) throw rowTooLarge();
              const upsertWrites = {
                ...upsertWritesOf(writes, collection, guard),
                tried: (rows: WrittenRow[]) => note(collection, index, rows.slice(-1)),
              };
              const place = { in: 'body' as const, name: `/operations/${index}/on_conflict` };
              results[index] = {
                op: 'upsert',
                rows: await upsertRowsIn(db, trx, accountId, collection, operation.rows, operation.onConflict, upsertWrites, place),
              };
              break;
            }
          }
        }
        for (const collection of pending.keys()) await writePending(collection);
        if (Date.now() > deadline) throw queryTimeout(db.queryTimeoutMs);
        at = -1;
        if (options.once) await recordOnce(db, trx, accountId, options.once, results);
        return results;
      });
    } catch (error) {
      if (at < 0) throw error;
      const collection = operations[at].collection;
      const { rows, operations: ofRows } = tried.get(collection) ?? { rows: [], operations: [] };
      if (db.isUniqueViolation(error)) {
        const violation = await uniqueViolationAt(db, accountId, collection, rows);
        // The row that held the values gone, or expired (unique.ts): the batch, which wrote nothing, tried again.
        if (await tries.again(collection, violation?.problem)) continue;
        if (violation) throw violation.problem.inOperation(ofRows[violation.place]);
        const meanwhile = tries.problem(collection, undefined);
        if (meanwhile) throw meanwhile.inOperation(at);
      }
      const problem = error instanceof ApiError ? error : db.rows.isRowTooLarge(error) ? rowTooLarge() : undefined;
      // A patch's errors name places in the patch (patch_conflict): here, in the operation's `patch`.
      throw problem?.inOperation(at, operations[at].op === 'update' ? `/operations/${at}/patch` : undefined) ?? error;
    }
  }
}

/**
 * Holds the account's `collections` for the rest of `trx`, each before those a delete of its rows may
 * change, else in the order of their names (../relations/links.ts, holdingOrder), and answers the
 * schema id of each that exists (a missing one fails its operation, when the batch comes to it).
 */
async function holdCollections(db: Dialect, trx: WriteTx, accountId: number, collections: string[]): Promise<Map<string, number>> {
  const schemas = new Map<string, number>();
  const order = collections.length > 1 ? holdingOrder(await accountRelations(db, trx, accountId), collections) : collections;
  for (const collection of order) {
    try {
      const { schemaId } = await advance(db, trx, accountId, collection, 0);
      schemas.set(collection, schemaId);
      // The schema a batch of inserts alone checks its rows with the next time (insertTogether).
      db.schemas.note(accountId, collection, schemaId);
    } catch (error) {
      if ((error as ApiError).code !== 'not_found') throw error;
    }
  }
  return schemas;
}
