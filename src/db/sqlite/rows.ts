// SQLite: how rows are written and read (../engine/port.ts, RowPort). Writes go through the writer's
// queue (../engine/grouping.ts, GroupedWrites): inserts into one collection, and patches of one
// collection that set as many fields, queued side by side become one statement (sql/), run on the
// writer's connection (writer.ts, SqliteWriter) and announced to the feed once committed
// (announceOnCommit). Reads of rows by id go to the read-only connections, merged (readers.ts).
import { queryTimeout, rowNotFound } from '../../errors.ts';
import { expiryNow } from '../../expiry/ttl.ts';
import type { OnceRequest } from '../../idempotency/answers.ts';
import type { Patch } from '../../patches/index.ts';
import { rowJson, versionOf } from '../../rows.ts';
import type { Dialect, Read, SqlValue, WriteSteps, WriteTx } from '../engine/dialect.ts';
import { StaleSchema } from '../engine/errors.ts';
import type { GroupedWrites } from '../engine/grouping.ts';
import type { Fields, FirstInserted, ReadRow, RowImporter, RowPort, VersionedRow } from '../engine/port.ts';
import { onceByFilter } from '../engine/sql/filter.ts';
import { searchIndexOf } from '../engine/sql/search.ts';
import type { Sql } from '../engine/sql/template.ts';
import { announceOnCommit } from '../engine/wake-ups.ts';
import { isConstraintViolation, isKeyTaken, isQueryCanceled, isRowTooLarge, isTooBig } from './errors.ts';
import { filterSql } from './filter.ts';
import { keysSql } from './sql/collections.ts';
import { pathSafe, rowsSql, rowsWhereSql } from './sql/reads.ts';
import { importRowsSql, insertSql, MAX_FIELDS_BY_PATH, patchedRowSql, patchSql } from './sql/rows.ts';
import type { SqliteWriter } from './writer.ts';

/** An insert as it waits in the writer's queue: its rows' texts, and its Idempotency-Key if it was sent with one. */
type Insert = { texts: string[]; once?: OnceRequest };

/**
 * A patch of row `rowId` as row_patches takes it (sql/): its fields as `[JSON path, JSON text]`, and the
 * expiry now the row must live at (ms since the epoch: docs/expiry.md), HELD for a row read live already.
 */
type FieldPatch = { rowId: number; fields: string[][]; now: number };

/** The `now` of a patch of a row read or matched live in its write already, which no write comes between: it is patched as it is. */
const HELD = Number.MIN_SAFE_INTEGER;
/** What patchSql answers of each patch (sql/). */
type PatchWritten = { id: number | null; i: number; data: string | null; version: number | null; search: string | null };
/** A row as patchedRowSql reads it. */
type HeldRow = { data: string; collection_id: number; version: number; schema_id: number };

/** rowsWhereSql() of a read rule, and its bindings. */
const rowsWhere = onceByFilter((where): Sql => {
  const condition = filterSql(where, 'r');
  return { sql: rowsWhereSql(condition.sql), params: condition.params };
});

/** What SQLite's rows are read and written with. */
export interface SqliteRowParts {
  db: Dialect;
  writer: SqliteWriter;
  /** The reads of rows by id, merged with those asked for beside them, on a read-only connection (readers.ts). */
  readMerged<T>(sql: string, params: SqlValue[]): Promise<T[]>;
  writes: GroupedWrites;
  /** The steps of a write that are the areas' (../engine/dialect.ts, WriteSteps). */
  steps: WriteSteps;
}

export function sqliteRowPort(parts: SqliteRowParts): RowPort {
  const { writer, readMerged, writes } = parts;
  /** An import's rows and their sort keys (../rows/imports.ts), in SQLite's SQL. */
  const importer: RowImporter = {
    async insertRows(trx, collectionId, rows, firstSeq) {
      await writer.inTransaction(trx, importRowsSql, [collectionId, firstSeq, JSON.stringify(rows.map(({ id, text }) => [id, text]))]);
    },
    async keyRows(trx, collectionId, slot, field, from, to) {
      const { sql, bindings } = keysSql(field, 'r.id between ? and ?', collectionId);
      await writer.inTransaction(trx, sql, [collectionId, slot, ...bindings, collectionId, from, to]);
    },
  };

  return {
    write: (work) => writes.run(work),
    // One writer: no two writes wait for each other in a circle.
    writeSeveral: (work) => writes.run(work),
    // Merged with the inserts into the collection queued beside it, sent with an Idempotency-Key or not.
    insert: (accountId, collection, schemaId, texts, once) =>
      writes.merge(`insert/${accountId}/${collection}/${schemaId}`, texts.length, { texts, once }, (trx, inserts: Insert[]) =>
        writeInserts(parts, trx, accountId, collection, schemaId, inserts),
      ),
    insertIn: (trx, accountId, collection, schemaId, inserts) =>
      writeInserts(
        parts,
        trx,
        accountId,
        collection,
        schemaId,
        inserts.map((texts) => ({ texts })),
      ),
    /** The collections' inserts one after another, each one statement, in one transaction of the writer's. */
    async insertSeveral(accountId, collections, deadline) {
      try {
        return await writes.run(async (trx) => {
          const firsts: FirstInserted[][] = [];
          for (const { collection, schemaId, inserts } of collections) {
            const each = inserts.map((texts) => ({ texts }));
            firsts.push(await writeInserts(parts, trx, accountId, collection, schemaId, each));
          }
          // Rolled back, as a batch's transaction is past it (../rows/batch.ts).
          if (Date.now() > deadline) throw queryTimeout(parts.db.queryTimeoutMs);
          return firsts;
        });
      } catch (error) {
        if (error instanceof StaleSchema) return undefined;
        throw error;
      }
    },
    // No async step of its own: every get-row comes through here.
    readRow(accountId, collection, rowId, now, where) {
      if (!where) return readMerged<ReadRow>(rowsSql, [accountId, collection, rowId, now]);
      const { sql, params } = rowsWhere(where);
      return readMerged<ReadRow>(sql, [accountId, collection, rowId, now, ...params]);
    },
    // Read on the writer, which no other write comes between the read and the patch.
    async readToPatch(trx, accountId, collection, rowId, schemaId, now) {
      const [stored] = await writer.inTransaction<HeldRow>(trx, patchedRowSql, [accountId, collection, rowId, now]);
      if (!stored) {
        // No row: writePatches() answers the 404, of the row or its collection (a transaction that wrote nothing).
        const [missing] = await writePatches(parts, trx, accountId, collection, schemaId, [{ rowId, fields: [], now }]);
        throw missing instanceof Error ? missing : rowNotFound(collection, rowId);
      }
      const schema = Number(stored.schema_id);
      return {
        collectionId: Number(stored.collection_id),
        version: stored.version,
        data: stored.data,
        schemaId: schema,
        // The whole text, set at `$`.
        write: async (text) =>
          orThrow((await writePatches(parts, trx, accountId, collection, schema, [{ rowId, fields: [['$', text]], now: HELD }]))[0]),
      };
    },
    /**
     * A top-level merge, merged with the other patches of the collection queued beside it into one
     * statement: json_set sets each field in the stored text, which keeps the text
     * JSON.stringify({ ...row, ...fields }) gives. Not for a field name that a JSON path cannot spell
     * (settableByPath()), nor for more than MAX_FIELDS_BY_PATH fields, nor for a patch of another
     * format (a JSON Merge Patch, a JSON Patch).
     */
    mergePatch(accountId, collection, rowId, patch, now) {
      const fields = byPath(patch);
      if (!fields) return undefined;
      // Merged with the patches that set as many fields: a statement sets a number of them (patchSql).
      const key = `patch/${accountId}/${collection}/${fields.length}`;
      return writes
        .merge(key, 1, { rowId, fields, now }, (trx, patches: FieldPatch[]) => writePatches(parts, trx, accountId, collection, 0, patches))
        .then(orThrow);
    },
    patchByPath(trx, accountId, collection, rows, patch) {
      const fields = byPath(patch);
      if (!fields) return undefined;
      return writePatches(
        parts,
        trx,
        accountId,
        collection,
        0,
        rows.map((row) => ({ rowId: row.id, fields, now: HELD })),
      ) as Promise<VersionedRow[]>;
    },
    writePatched: (trx, accountId, collection, _collectionId, schemaId, rows) =>
      writePatches(
        parts,
        trx,
        accountId,
        collection,
        schemaId,
        rows.map((row) => ({ rowId: row.id, fields: [['$', row.text]], now: HELD })),
      ) as Promise<VersionedRow[]>,
    importer,
    // Its trigger's check of the keys (sql/, row_inserts), told apart by its message (errors.ts).
    isKeyTaken,
    // Its trigger's bound on the row's weight (sql/, row_patches), told apart by its message (errors.ts).
    isRowTooLarge,
    // The page connections make no string longer than a page may be (readers.ts).
    isPageTooLarge: isTooBig,
    // Interrupted once it had run for the query timeout (readers.ts, timedRead).
    isQueryCanceled,
  };
}

/**
 * Patches, each of one row and all of as many fields, in one statement, in the order they came, each
 * row as patched checked against the schema `schemaId` already: each answers its row as it left it,
 * or the 404 it met (the others are stored all the same), or StaleSchema when the collection's schema
 * is another (or there is no such collection), and then nothing is written.
 */
async function writePatches(
  { db, steps }: SqliteRowParts,
  trx: WriteTx,
  accountId: number,
  collection: string,
  schemaId: number,
  patches: FieldPatch[],
) {
  const patchesJson = JSON.stringify(patches.map(({ rowId, fields, now }) => [rowId, fields, now]));
  const params = [accountId, collection, patchesJson, new Date().toISOString(), schemaId];
  const sql = patchSql(patches[0].fields.length, patches.length);
  const written = await db.run<PatchWritten>(trx, sql, params);
  const byIndex = new Map(written.map((row) => [Number(row.i), row]));
  // The rows' words, when the collection has a search index: each row as its last patch left it.
  const [first] = written;
  const search = first && first.id !== null ? searchIndexOf(first.id, first.search) : undefined;
  if (search) {
    const rows = new Map(patches.map(({ rowId }, index) => [rowId, byIndex.get(index)?.data ?? null]));
    const patched = [...rows].flatMap(([id, data]) => (data === null ? [] : [{ id, fields: JSON.parse(data) as Fields }]));
    await steps.putWords(db, trx, search, patched);
  }
  let changed: number | undefined;
  const answers = patches.map(({ rowId }, index): VersionedRow | Error => {
    const { id = null, data = null, version = null } = byIndex.get(index) ?? {};
    if (id === null) return new StaleSchema();
    if (data === null) return rowNotFound(collection, rowId);
    changed = id;
    return { json: rowJson(rowId, data), version: versionOf(id, version as number) };
  });
  if (changed !== undefined) announceOnCommit(db.changes, trx, changed);
  return answers;
}

/**
 * Inserts, in one statement (insertSql), with the answers of those sent with an Idempotency-Key, their
 * rows checked against the schema `schemaId` already: answers each request's first id and seq, its
 * rows following those of the requests before it. A key whose answer another request stored first
 * aborts the statement, which wrote nothing (OnceTaken); the inserts merged with it then run again
 * each alone (../engine/grouping.ts). StaleSchema when the collection's schema is another (or there is no
 * such collection): nothing written.
 */
async function writeInserts(
  parts: SqliteRowParts,
  trx: WriteTx,
  accountId: number,
  collection: string,
  schemaId: number,
  inserts: Insert[],
): Promise<FirstInserted[]> {
  const { db, steps } = parts;
  const all = inserts.length === 1 ? inserts[0].texts : inserts.flatMap(({ texts }) => texts);
  // As row_inserts takes them (sql/); the hashes and the times are hex digits and ISO 8601, with nothing to escape.
  let onces = '';
  let place = 0;
  for (const { texts, once } of inserts) {
    if (once) {
      onces += `${onces ? ',' : ''}[${JSON.stringify(once.key)},"${once.hash}","${once.at}","${once.expiresAt}",${place},${texts.length}]`;
    }
    place += texts.length;
  }
  const params = [accountId, collection, all.length, JSON.stringify(all), new Date().toISOString(), `[${onces}]`, schemaId];
  // A constraint it breaks (its trigger's check of the keys, sql/, row_inserts, or a unique index)
  // is told apart once the statement has rolled back (insertRows).
  const insert = (named: string) => db.run<InsertWritten>(trx, insertSql, [...params, named, expiryNow()]);
  const [written] = db.schemas.names(schemaId) ? await insertNaming(parts, trx, collection, schemaId, all, insert) : await insert('[]');
  if (written.id === null) throw new StaleSchema();
  const firstId = written.last_row_id - all.length + 1;
  const search = searchIndexOf(written.id, written.search);
  if (search)
    await steps.putWords(
      db,
      trx,
      search,
      all.map((text, index) => ({ id: firstId + index, fields: JSON.parse(text) as Fields })),
    );
  announceOnCommit(db.changes, trx, written.id);
  const firsts: FirstInserted[] = [];
  let id = firstId;
  let seq = written.last_seq - all.length + 1;
  for (const { texts } of inserts) {
    firsts.push({ collectionId: written.id, id, seq });
    id += texts.length;
    seq += texts.length;
  }
  return firsts;
}

/** What insertSql answers. */
type InsertWritten = { id: number | null; last_row_id: number; last_seq: number; search: string | null };

/**
 * The inserts of rows `texts` that may name rows of other collections (the schema `schemaId`'s relations),
 * by `insert` with the rows they name as row_inserts takes them (sql/): one statement, which aborts when
 * one is missing. Then, and for a value that is no row id, they are looked up on their own, on the writer,
 * which no other write comes between the look-up and the statement: the 422 says which; when none is
 * missing (the abort was another constraint's), the statement runs again, naming none.
 */
async function insertNaming(
  { db }: SqliteRowParts,
  trx: WriteTx,
  collection: string,
  schemaId: number,
  texts: string[],
  insert: (named: string) => Promise<InsertWritten[]>,
): Promise<InsertWritten[]> {
  const read: Read = (sql, params) => db.run(trx, sql, params);
  const rows = texts.map((text) => JSON.parse(text) as Fields);
  const named = await db.schemas.namedRows(read, schemaId, rows);
  if (named) {
    const pairs = named.ids.map((id, index) => `[${named.collections[index]},${id}]`).join(',');
    try {
      return await insert(`[${pairs}]`);
    } catch (error) {
      if (!isConstraintViolation(error) || named.ids.length === 0) throw error;
    }
  }
  await db.schemas.named(read, schemaId, collection, rows);
  return insert('[]');
}

/** The answer of one patch, or the error it met, thrown. */
function orThrow(answer: VersionedRow | Error): VersionedRow {
  if (answer instanceof Error) throw answer;
  return answer;
}

/** A name that JavaScript orders as an array index: before every other name of an object, in numeric order. */
const arrayIndex = /^(0|[1-9][0-9]*)$/;

/**
 * Whether json_set can set the field `name` at the path `$."name"` and keep the text JSON.stringify
 * gives. Not a name a path cannot spell (pathSafe); not an array index, which JavaScript puts before
 * the other names where json_set adds it last; and not a name that is not well-formed UTF-16 (a lone
 * surrogate): the path spells the name decoded, and SQLite would write its surrogate's bytes into the
 * text (invalid UTF-8), where JSON.stringify writes the escape `\udbff`, so the name would neither read
 * back as sent nor match the same name inserted or patched before.
 */
const settableByPath = (name: string) => pathSafe.test(name) && !arrayIndex.test(name) && name.isWellFormed();

/** The fields a top-level merge sets as `[JSON path, JSON text]`, when json_set can set each (settableByPath); else undefined. */
function byPath(patch: Patch): string[][] | undefined {
  if (patch.format !== 'merge') return undefined;
  const names = Object.keys(patch.fields);
  if (names.length > MAX_FIELDS_BY_PATH || !names.every(settableByPath)) return undefined;
  return Object.entries(patch.fields).map(([name, value]) => [`$."${name}"`, JSON.stringify(value)]);
}
