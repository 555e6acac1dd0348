// PostgreSQL's inserts (../engine/port.ts, RowPort.insert): a request's rows go as one statement that
// commits on its own (sql/, insertBatchSql), batched with the other inserts into the collection that wait
// their turn in this process; a batch that holds inserts sent with an Idempotency-Key is one statement
// too, which also stores their answers (sql/, insertBatchWithAnswersSql). Rows that name rows of other
// collections, or go into a collection with a search index, go in a transaction where they must.
import { queryTimeout } from '../../errors.ts';
import { expiryNow } from '../../expiry/ttl.ts';
import { type OnceRequest, OnceTaken, onceInProgress } from '../../idempotency/answers.ts';
import { rowWords } from '../../search/words.ts';
import type { Dialect, SqlValue, WriteSteps, WriteTx } from '../engine/dialect.ts';
import { StaleSchema } from '../engine/errors.ts';
import { Groups } from '../engine/grouping.ts';
import type { Fields, FirstInserted, RowPort } from '../engine/port.ts';
import { searchIndexOf } from '../engine/sql/search.ts';
import { announceOnCommit } from '../engine/wake-ups.ts';
import { isOnceTaken, isQueryCanceled, isRelationMissing } from './errors.ts';
import { CHANNEL } from './sql/engine.ts';
import {
  insertBatchSql,
  insertBatchWithAnswersSql,
  insertSeveralSql,
  namingInsertBatchSql,
  searchedInsertBatchSql,
  searchedInsertBatchWithAnswersSql,
  wordedInsertBatchSql,
} from './sql/rows.ts';
import { runAlone, runAloneTimed } from './statements.ts';

/** One request's rows, as an insert into its collection waits its turn, and its Idempotency-Key if it was sent with one. */
interface Insert {
  accountId: number;
  collection: string;
  texts: string[];
  /** The schema its rows were checked with (../schemas.ts; 0 for none). */
  schemaId: number;
  once?: OnceRequest;
}

/** Collections postgresInserts() remembers having a search index, at most. */
const MAX_SEARCHED = 10_000;

/**
 * What insertBatchSql answers: the collection's id, the first row's id and seq, and the collection's
 * search index fields (none: no such collection).
 */
type Written = { id: number; first_id: number | string; first_seq: number | string; search: string | null };
/** What insertSeveralSql answers of each collection: Written, and its place in the statement's collections (from 1). */
type WrittenOfSeveral = Omit<Written, 'search'> & { place: number | string };
/** What insertBatchWithAnswersSql answers: Written (a null id: nothing written), and its keys' fate. */
type WrittenWithAnswers = Written & { held: boolean };

/** The rows of one insert statement at most (a request's own rows are never split). */
const MAX_INSERT_ROWS = 5000;

/** Inserts into PostgreSQL (RowPort.insert, insertIn): a request's grouped with those into its collection that wait their turn. */
export function postgresInserts(db: Dialect, steps: WriteSteps): Pick<RowPort, 'insert' | 'insertIn' | 'insertSeveral'> {
  const { knex, changes } = db;
  /**
   * By the keys of inserts (`<account>/<collection>/<schema>`), the fields of the search index of the
   * collection they were last seen to go into (its `search`), the least recently seen forgotten first
   * past MAX_SEARCHED. Never wrong in a way that shows: an insert whose collection's index is over other
   * fields now, or none, writes nothing (wordedInsertBatchSql), and goes in a transaction.
   */
  const searched = new Map<string, string>();

  /**
   * An insert holds its collection's row from its statement's start to its commit, so the inserts of a
   * collection run one after another whatever the pool. Sent as they come, the waiting ones would wait
   * inside PostgreSQL, one backend each, and every turn would cost a statement, a commit and its WAL
   * flush. Instead at most three statements of a collection are under way: one holding its row, and two
   * queued behind it, so that one is ready the moment the one before commits even while this process is
   * still sending the next (BENCHMARKS.md, insert-batch on PostgreSQL); inserts that come meanwhile go
   * together in the statement after, each request's rows consecutive, in the order the requests came.
   */
  const inserts = new Groups<Insert, FirstInserted>({
    maxRunning: 3,
    maxWeight: MAX_INSERT_ROWS,
    async run(key, batch) {
      const { accountId, collection, schemaId } = batch[0];
      const rows = batch.flatMap(({ texts }) => texts);
      // JSON.stringify's output never holds a line feed (it escapes every control character), so the
      // lines of one string are the rows: one parameter, where an array would be escaped item by item.
      const params = [accountId, collection, rows.length, rows.join('\n'), CHANNEL, changes.instance];
      const keyed = batch.some(({ once }) => once);
      // Alone, a statement writes nothing into a collection with a search index (sql/, insertBatch) but
      // with the words of the fields it was last seen to have; else the rows go in a transaction with
      // their words, and the fields are remembered.
      const fields = searched.get(key);
      // Rows that may name rows of other collections go in one statement that holds those too
      // (namingAlone), else in a transaction that holds them first (below).
      const naming = db.schemas.names(schemaId);
      let [written]: (Written | undefined)[] = naming
        ? fields === undefined && !keyed
          ? await namingAlone(db, rows, params, schemaId)
          : []
        : fields !== undefined
          ? keyed
            ? []
            : await runAlone<Written>(knex, wordedInsertBatchSql, [...params, schemaId, wordLines(rows, fields), fields])
          : keyed
            ? await insertWithAnswers(db, batch, params, schemaId, (sql, values) => runAlone(knex, sql, values), insertBatchWithAnswersSql)
            : await runAlone<Written>(knex, insertBatchSql, [...params, schemaId]);
      if (!written) {
        written = await knex.transaction(async (trx): Promise<Written | undefined> => {
          const run = <T>(sql: string, values: SqlValue[]) => db.run<T>(trx, sql, values);
          if (naming && !(await holdNamed(db, steps, trx, accountId, collection, schemaId, rows))) return undefined;
          const [stored] = keyed
            ? await insertWithAnswers(db, batch, params, schemaId, run, searchedInsertBatchWithAnswersSql)
            : await run<Written>(searchedInsertBatchSql, [...params, schemaId]);
          if (stored) await putInsertedWords(db, steps, searched, trx, stored, rows, key);
          return stored;
        });
      }
      // No such collection, or its schema another: nothing written.
      if (!written) throw new StaleSchema();
      // Committed already: this process's listeners hear it now, the others through the NOTIFY.
      changes.emit('change', Number(written.id));
      return firstsOf(written, batch);
    },
  });

  return {
    // Batched with the inserts into the collection that wait their turn, sent with an Idempotency-Key or not.
    insert: (accountId, collection, schemaId, texts, once) =>
      inserts.add(`${accountId}/${collection}/${schemaId}`, { accountId, collection, texts, schemaId, once }, texts.length),
    async insertIn(trx, accountId, collection, schemaId, batch) {
      const texts = batch.flat();
      const params = [accountId, collection, texts.length, texts.join('\n'), CHANNEL, changes.instance, schemaId];
      const [written] = await db.run<Written>(trx, searchedInsertBatchSql, params);
      await putInsertedWords(db, steps, undefined, trx, written, texts);
      // The transaction holds the collection's row, and its schema is `schemaId`.
      announceOnCommit(changes, trx, Number(written.id));
      return firstsOf(
        written,
        batch.map((texts) => ({ texts })),
      );
    },
    /** One statement, run alone, bounded by what is left of `deadline` (sql/, insertSeveralSql). */
    async insertSeveral(accountId, collections, deadline) {
      const left = deadline - Date.now();
      if (left <= 0) throw queryTimeout(db.queryTimeoutMs);
      const params = [
        accountId,
        collections.map(({ collection }) => collection).join('\n'),
        collections.map(({ schemaId }) => schemaId).join(','),
        collections.map(({ inserts }) => inserts.reduce((rows, texts) => rows + texts.length, 0)).join(','),
        collections.flatMap(({ inserts }) => inserts.flat()).join('\n'),
        CHANNEL,
        changes.instance,
      ];
      let written: WrittenOfSeveral[];
      try {
        written = await runAloneTimed<WrittenOfSeveral>(knex, insertSeveralSql, params, left);
      } catch (error) {
        if (isQueryCanceled(error)) throw queryTimeout(db.queryTimeoutMs);
        throw error;
      }
      if (written.length < collections.length) return undefined;
      const firsts: FirstInserted[][] = [];
      for (const collection of written) {
        const place = Number(collection.place) - 1;
        // Committed already: this process's listeners hear it now, the others through the NOTIFY.
        changes.emit('change', Number(collection.id));
        firsts[place] = firstsOf(
          collection,
          collections[place].inserts.map((texts) => ({ texts })),
        );
      }
      return firsts;
    },
  };
}

/**
 * The rows `texts`, checked with the schema `schemaId`, whose relations name rows of other collections,
 * inserted alone by one statement that holds the rows they name (namingInsertBatchSql), or by
 * insertBatchSql when they name none: nothing when it found no collection of that schema without a
 * search index, or not every row named (RELATION_MISSING), or when a value is not a row id. The
 * transaction of holdNamed() then looks again, and says which.
 */
async function namingAlone(db: Dialect, texts: string[], params: SqlValue[], schemaId: number): Promise<Written[]> {
  const named = await db.schemas.namedRows(
    db.query,
    schemaId,
    texts.map((text) => JSON.parse(text) as Fields),
  );
  if (!named) return [];
  if (named.ids.length === 0) return runAlone<Written>(db.knex, insertBatchSql, [...params, schemaId]);
  try {
    return await runAlone<Written>(db.knex, namingInsertBatchSql, [
      ...params,
      schemaId,
      named.collections.join(','),
      named.ids.join(','),
      named.ids.length,
      expiryNow(),
    ]);
  } catch (error) {
    if (isRelationMissing(error)) return [];
    throw error;
  }
}

/**
 * Holds the collection's row, then checks that the rows `texts` name rows that exist in its relations
 * (as of `schemaId`), holding those (FOR KEY SHARE), in that order, as every write that names rows
 * does (../rows/writes.ts, holdFollowers). False for no such collection: nothing to write.
 */
async function holdNamed(
  db: Dialect,
  steps: WriteSteps,
  trx: WriteTx,
  accountId: number,
  collection: string,
  schemaId: number,
  texts: string[],
): Promise<boolean> {
  try {
    await steps.advance(db, trx, accountId, collection, 0);
  } catch (error) {
    if ((error as { code?: string }).code === 'not_found') return false;
    throw error;
  }
  const rows = texts.map((text) => JSON.parse(text) as Fields);
  await db.schemas.named((sql, params) => db.run(trx, sql, params), schemaId, collection, rows);
  return true;
}

/**
 * insertBatchWithAnswersSql, so that each key's answer is stored if and only if its rows are: 409
 * for a key another instance holds; OnceTaken (nothing written) for one answered first, before the
 * statement or while it ran, or before its collection was deleted. Either fails the batch, whose
 * inserts then run each alone (../engine/grouping.ts).
 */
async function insertWithAnswers(
  db: Dialect,
  batch: Insert[],
  params: SqlValue[],
  schemaId: number,
  run: <T>(sql: string, params: SqlValue[]) => Promise<T[]>,
  sql: string,
): Promise<Written[]> {
  const onces: unknown[] = [];
  // For each row, the place in `onces` of its request's key (-1 for none).
  const keyOfRow: number[] = [];
  for (const { texts, once } of batch) {
    if (once) onces.push([once.key, once.hash, once.at, once.expiresAt, keyOfRow.length, texts.length]);
    for (let row = 0; row < texts.length; row++) keyOfRow.push(once ? onces.length - 1 : -1);
  }
  let written: WrittenWithAnswers;
  try {
    [written] = await run<WrittenWithAnswers>(sql, [...params, JSON.stringify(onces), keyOfRow.join(','), schemaId]);
  } catch (error) {
    if (isOnceTaken(error)) throw new OnceTaken();
    throw error;
  }
  if (!written.held) throw onceInProgress();
  if (written.id !== null) return [written];
  // No such collection: a retry of an insert stored before its collection went is answered as it was.
  for (const { accountId, once } of batch) if (once && (await db.readOnce(accountId, once.key, once.at))) throw new OnceTaken();
  return [];
}

/**
 * Writes the words of the rows `texts`, inserted by the statement that answered `written` inside
 * `trx`, when their collection has a search index; remembers, by the inserts' `key`, whether it has.
 */
async function putInsertedWords(
  db: Dialect,
  steps: WriteSteps,
  searched: Map<string, string> | undefined,
  trx: WriteTx,
  written: Written,
  texts: string[],
  key?: string,
) {
  const search = searchIndexOf(Number(written.id), written.search);
  if (searched && key !== undefined) {
    searched.delete(key);
    if (written.search) searched.set(key, written.search);
    if (searched.size > MAX_SEARCHED) searched.delete(searched.keys().next().value as string);
  }
  if (!search) return;
  const first = Number(written.first_id);
  await steps.putWords(
    db,
    trx,
    search,
    texts.map((text, index) => ({ id: first + index, fields: JSON.parse(text) as Fields })),
  );
}

/** The words of the rows `texts` in the search index's `fields` (their JSON text), as wordedInsertBatchSql takes them. */
function wordLines(texts: readonly string[], fields: string): string {
  const names = JSON.parse(fields) as string[];
  return texts.map((text) => rowWords(JSON.parse(text) as Fields, names).join(' ')).join('\n');
}

/** Each insert's first id and seq: its rows follow those of the inserts before it in the batch. */
function firstsOf(written: Pick<Written, 'id' | 'first_id' | 'first_seq'>, batch: readonly { texts: string[] }[]): FirstInserted[] {
  const collectionId = Number(written.id);
  let id = Number(written.first_id);
  let seq = Number(written.first_seq);
  return batch.map(({ texts }) => {
    const first = { collectionId, id, seq };
    id += texts.length;
    seq += texts.length;
    return first;
  });
}
