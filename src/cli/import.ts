// `rowbase import`: a collection made from a file `rowbase export` wrote (collection-file.ts), with its
// ids, a batch at a time, each batch written whole or not at all; --resume goes on after the last one.
import { open, stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import bounds from '../../generated/bounds.json' with { type: 'json' };
import { instantOf } from '../date-time.ts';
import type { RowSchema } from '../db/collections/schemas.ts';
import type { Store } from '../db/open-store.ts';
import type { ExportedRelation } from '../db/rows/exports.ts';
import type { ImportedRow } from '../db/rows/imports.ts';
import { ApiError } from '../errors.ts';
import { checkTtlField, type Ttl } from '../expiry/ttl.ts';
import { assignable, MAX_ROW_BYTES, overRowBound } from '../rows.ts';
import { checkRules } from '../rules/rules.ts';
import { checkRowSchema } from '../schema/check.ts';
import { compileRowSchema, type RowValidator } from '../schema/compile.ts';
import { accountAndCollection, accountId, collectionName, FORMAT, type Header, VERSION } from './collection-file.ts';
import { type Command, UsageError, withStore } from './command.ts';
import { Progress } from './progress.ts';

/**
 * The rows of one batch of an import at most, and the characters of their texts: each batch is one
 * transaction, which holds SQLite's only writer while it runs.
 */
const BATCH_ROWS = 1000;
const BATCH_CHARS = 8 * 1024 * 1024;
/** How long, in ms, an import writes batches back to back before it leaves the database free (importRows). */
const TURN_MS = 100;
/** The batches read ahead at most, waiting for the next turn: all an import holds at once. */
const AHEAD_BATCHES = 8;

export const importCommand: Command = {
  usage: 'rowbase import --account <name> --collection <name> [--resume] <file>',
  summary:
    'Make a collection from a file that rowbase export wrote. It gets the same rows, ids and next id, in batches that are each written whole or not at all. With --resume, go on into the collection an import left unfinished, after its last id (docs/operations.md, "Export and import").',
  options: {
    account: { type: 'string', description: 'the account to import into (it must exist)' },
    collection: { type: 'string', description: 'the collection to make; it must not exist, unless --resume' },
    resume: { type: 'boolean', description: 'import into the existing collection the rows with ids above its last one' },
  },
  positionals: 1,
  async run(values, [file]) {
    const { account, collection } = accountAndCollection(values);
    const found = await stat(file).catch(() => undefined);
    if (!found?.isFile()) throw new UsageError(`there is no file ${file} to import`);
    await withStore(async (store) => {
      const id = await accountId(store, account);
      await importRows(store, id, collection, file, values.resume === true);
    });
  },
};

/** Thrown for a line of the file that is no row of an export: exit 1, with where and why. */
class MalformedFileError extends Error {}

/** A line of the file, parsed: `line N: …` where it is not what an export writes. */
function parseLine(text: string, line: number): Record<string, unknown> {
  if (text === '') throw new MalformedFileError(`line ${line} is empty`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new MalformedFileError(`line ${line} is not JSON: ${(error as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new MalformedFileError(`line ${line} is not a JSON object`);
  return parsed as Record<string, unknown>;
}

const count = (value: unknown, min: number) => Number.isSafeInteger(value) && (value as number) >= min;

/** The first line of the file, checked: what the rest of it must be. */
function parseHeader(text: string): Header {
  const header = parseLine(text, 1);
  if (header.format !== FORMAT)
    throw new MalformedFileError(`line 1 does not say "format":"${FORMAT}": this is no file rowbase export wrote`);
  if (header.version !== VERSION)
    throw new MalformedFileError(`line 1 gives format version ${JSON.stringify(header.version)}; this rowbase reads version ${VERSION}`);
  for (const name of ['last_row_id', 'row_count', 'seq']) {
    if (!count(header[name], 0)) throw new MalformedFileError(`line 1: "${name}" must be a whole number from 0`);
  }
  if (typeof header.created_at !== 'string' || instantOf(header.created_at) === undefined) {
    throw new MalformedFileError('line 1: "created_at" must be an RFC 3339 time');
  }
  if (header.schema !== undefined) checked('"schema" is no schema', () => checkRowSchema(header.schema, '/schema'));
  if (header.indexes !== undefined && !validIndexes(header.indexes)) {
    throw new MalformedFileError(
      'line 1: "indexes" must be a list of {"fields": [1 to 4 plain names], "unique": true or false}, a search index with "type": "search" and "unique": false',
    );
  }
  // Stored as a PUT of them stores them: the members left out made false.
  if (header.rules !== undefined) header.rules = checked('"rules" are no rules', () => checkRules(header.rules), '/rules');
  if (header.relations !== undefined && !validRelations(header.relations)) {
    throw new MalformedFileError(
      'line 1: "relations" must be a list of {"name", "field": plain names, "collection": a collection name, "on_delete": "restrict", "cascade" or "set_null", "reverse": a plain name or null}',
    );
  }
  if (header.ttl !== undefined && !validTtl(header.ttl)) {
    throw new MalformedFileError('line 1: "ttl" must be {"field": a plain top-level name, not id}');
  }
  // As a PUT of it is refused when the schema cannot hold a date-time in the field.
  if (header.ttl !== undefined)
    checked('"ttl" is no time to live', () => checkTtlField((header.ttl as Ttl).field, header.schema as RowSchema | undefined), '/ttl');
  return header as unknown as Header;
}

/** Whether `ttl` is a time to live as openapi.yaml's Ttl says: one plain top-level field, never `id`. */
function validTtl(ttl: unknown): boolean {
  if (ttl === null || typeof ttl !== 'object' || Array.isArray(ttl)) return false;
  const { field, ...others } = ttl as Record<string, unknown>;
  return Object.keys(others).length === 0 && typeof field === 'string' && ttlField.test(field);
}

/**
 * What `check` answers, or, for the 400 it throws, a MalformedFileError saying that a member of line 1
 * (`what`) is no such thing as rowbase takes, with each place named in it, under `at` in line 1.
 */
function checked<T>(what: string, check: () => T, at = ''): T {
  try {
    return check();
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    const where = (error.options.errors ?? []).map((place) => ('name' in place ? `${at}${place.name}: ${place.message}` : place.message));
    throw new MalformedFileError(`line 1: ${what} rowbase takes: ${[error.detail, ...where].join(' ')}`);
  }
}

const indexField = new RegExp(bounds.IndexField.pattern);
const relationName = new RegExp(bounds.RelationName.pattern);
const ttlField = new RegExp(bounds.TtlField.pattern);

/** Whether `relations` is a list of relations as openapi.yaml's RelationDeclaration describes them, each with its name. */
function validRelations(relations: unknown): boolean {
  const plain = (name: unknown) => typeof name === 'string' && relationName.test(name);
  return (
    Array.isArray(relations) &&
    relations.every(
      (relation) =>
        relation !== null &&
        typeof relation === 'object' &&
        plain(relation.name) &&
        plain(relation.field) &&
        typeof relation.collection === 'string' &&
        collectionName.test(relation.collection) &&
        ['restrict', 'cascade', 'set_null'].includes(relation.on_delete) &&
        (relation.reverse === null || plain(relation.reverse)),
    )
  );
}

/** Whether `indexes` is a list of indexes as openapi.yaml's NewIndex describes them. */
function validIndexes(indexes: unknown): boolean {
  return (
    Array.isArray(indexes) &&
    indexes.every(
      (index) =>
        index !== null &&
        typeof index === 'object' &&
        typeof index.unique === 'boolean' &&
        (index.type === undefined || (index.type === 'search' && !index.unique)) &&
        Array.isArray(index.fields) &&
        index.fields.length >= 1 &&
        index.fields.length <= 4 &&
        new Set(index.fields).size === index.fields.length &&
        index.fields.every((field: unknown) => typeof field === 'string' && indexField.test(field)),
    )
  );
}

/** A batch read from the file, to be written in one transaction. */
interface Batch {
  rows: ImportedRow[];
  /** The last row id the collection takes with it: its last row's, or the file's with the last batch. */
  lastRowId: number;
  /** The line after its last row. */
  nextLine: number;
}

/** Where an import is in the file, shared by its reading and its writing. */
interface Reading {
  header?: Header;
  /** Rows with ids up to this are in the collection already (--resume), and skipped; undefined until it is made. */
  skipUpTo?: number;
  skipped: number;
  progress?: Progress;
}

/**
 * Imports the file's rows into the account's collection, a batch at a time. A malformed line stops it
 * before the batch it is in is written; the batches before stay, and --resume goes on after them.
 *
 * It writes in turns (docs/operations.md, "Export and import"): the batches read so far, back to back,
 * for TURN_MS; then it reads the next ones, leaving the database free for at least 1.5 times the store's
 * writerWakeMs after a wait as long as the turn. On SQLite, where the server's writes wait for the one
 * write lock (looking at it again after sleeps that grow to 100 ms), a write that began waiting during a
 * turn is done before the next one; the reading an import does anyway mostly fills the time.
 */
async function importRows(store: Store, accountId: number, collection: string, file: string, resume: boolean): Promise<void> {
  const handle = await open(file);
  const lines = createInterface({ input: handle.createReadStream(), crlfDelay: Number.POSITIVE_INFINITY });
  const reading: Reading = { skipped: 0 };
  /** The line of the first row of the batch not written yet. */
  let batchLine = 2;
  const ahead: Batch[] = [];
  let freeSince = performance.now();
  /** How long the database is left free after the last turn. */
  let freeMs = 0;
  const write = async ({ rows, lastRowId, nextLine }: Batch) => {
    if (reading.skipUpTo === undefined) {
      await createCollection(store, accountId, collection, reading.header as Header);
      reading.skipUpTo = 0;
    }
    await store.importRows(accountId, collection, rows, lastRowId).catch((error) => {
      throw error instanceof ApiError && error.code === 'conflict'
        ? new MalformedFileError(`${error.detail} Was the collection written to during the import?`)
        : error;
    });
    reading.progress?.add(rows.length);
    batchLine = nextLine;
  };
  /** Writes the batches read, for one turn, once the database was left free long enough since the last. */
  const writeTurn = async () => {
    const free = performance.now() - freeSince;
    if (free < freeMs) await sleep(freeMs - free);
    const started = performance.now();
    while (ahead.length > 0 && performance.now() - started < TURN_MS) await write(ahead.shift() as Batch);
    freeSince = performance.now();
    freeMs = 1.5 * store.writerWakeMs(freeSince - started);
  };
  try {
    const batches = readBatches(store, accountId, collection, file, resume, lines, reading);
    /** What stopped the reading: a malformed line, say. */
    let stopped: unknown;
    for (;;) {
      const next = await batches.next().catch((error: unknown) => {
        stopped = error;
        return { done: true } as const;
      });
      if (next.done) break;
      ahead.push(next.value);
      if (ahead.length >= AHEAD_BATCHES || performance.now() - freeSince >= freeMs) await writeTurn();
    }
    // The batches read before a malformed line are whole: written, as they would have been without reading ahead.
    while (ahead.length > 0) await writeTurn();
    if (stopped !== undefined) throw stopped;
    await declareRelations(store, accountId, collection, reading.header?.relations ?? []);
    const skipped = reading.skipped;
    reading.progress?.done(`into collection ${collection}${skipped > 0 ? `, ${skipped} of them there already (--resume)` : ''}`);
  } catch (error) {
    reading.progress?.stop();
    if (error instanceof MalformedFileError) {
      const kept =
        batchLine > 2 ? `the rows before line ${batchLine} are imported; mend the file and run again with --resume` : 'nothing is imported';
      throw new Error(`${file}: ${error.message}; ${kept}`);
    }
    throw error;
  } finally {
    lines.close();
    await handle.close();
  }
}

/**
 * The file's batches, each checked whole as it is read (the first line first, and the rows against the
 * collection's schema before any batch); the last moves the collection's last row id to the file's.
 */
async function* readBatches(
  store: Store,
  accountId: number,
  collection: string,
  file: string,
  resume: boolean,
  lines: AsyncIterable<string>,
  reading: Reading,
): AsyncGenerator<Batch> {
  let header: Header | undefined;
  let line = 0;
  let lastId = 0;
  let rows = 0;
  let batch: ImportedRow[] = [];
  let chars = 0;
  for await (const text of lines) {
    line++;
    if (header === undefined) {
      header = parseHeader(text);
      reading.header = header;
      reading.skipUpTo = await startImport(store, accountId, collection, resume);
      // The rows the collection's schema would refuse stop the import before anything is written.
      const schema = reading.skipUpTo === undefined ? header.schema : (await store.getCollection(accountId, collection)).schema;
      if (schema) await checkRows(file, compileRowSchema(schema as RowSchema), reading.skipUpTo ?? 0);
      reading.progress = await Progress.start('imported', header.row_count);
      continue;
    }
    const row = parseLine(text, line);
    const { id, ...fields } = row;
    if (!assignable(id as number)) throw new MalformedFileError(`line ${line}: "id" must be a whole number from 1`);
    if ((id as number) <= lastId)
      throw new MalformedFileError(`line ${line}: id ${id} follows id ${lastId}; rows come in increasing id order`);
    if ((id as number) > header.last_row_id) {
      throw new MalformedFileError(`line ${line}: id ${id} is past the last row id of line 1, ${header.last_row_id}`);
    }
    lastId = id as number;
    rows++;
    if (rows > header.row_count) throw new MalformedFileError(`line ${line} is one row more than the ${header.row_count} line 1 counts`);
    if (reading.skipUpTo !== undefined && lastId <= reading.skipUpTo) {
      reading.skipped++;
      reading.progress?.add(1);
      continue;
    }
    const fieldsText = JSON.stringify(fields);
    if (overRowBound(fieldsText)) throw new MalformedFileError(`line ${line}: the row weighs more than ${MAX_ROW_BYTES} bytes`);
    batch.push({ id: lastId, text: fieldsText });
    chars += fieldsText.length;
    if (batch.length >= BATCH_ROWS || chars >= BATCH_CHARS) {
      yield { rows: batch, lastRowId: lastId, nextLine: line + 1 };
      batch = [];
      chars = 0;
    }
  }
  if (header === undefined) throw new MalformedFileError('the file is empty, where its first line describes the collection');
  if (rows !== header.row_count) {
    throw new MalformedFileError(`the file ends after ${rows} rows, where line 1 counts ${header.row_count}: it is cut short`);
  }
  // The last batch moves the collection's last row id to the export's, past rows deleted before it.
  yield { rows: batch, lastRowId: header.last_row_id, nextLine: line + 1 };
}

/**
 * Makes the imported collection as the file's first line describes it, with the time the export says
 * it was made: made with the first batch, so that an import that stops before leaves nothing behind.
 */
async function createCollection(store: Store, accountId: number, collection: string, header: Header): Promise<void> {
  await store.createCollection(accountId, collection, undefined, header.created_at, undefined, header.schema);
  for (const { fields, unique, type } of header.indexes ?? []) {
    // A search index, made over no row yet, holds the words of each row imported (importRows).
    await store.createIndex(accountId, collection, fields, unique, undefined, type === 'search');
    if (type !== 'search') await store.sortByIndex(accountId, collection, fields);
  }
  if (header.rules) await store.putRules(accountId, collection, header.rules);
  // Before the rows, whose expiry each write of them then sets: a row expired already is gone at once.
  if (header.ttl) await store.putTtl(accountId, collection, header.ttl);
}

/**
 * Declares the relations of the imported collection, once its rows are in, each checked over them as a
 * PUT of it is (a row naming a missing row stops the import: the rows stay). One naming a collection
 * that is not there yet is left out, said on stderr: import that collection, then import this one again
 * with --resume (or PUT the relation).
 */
async function declareRelations(store: Store, accountId: number, collection: string, relations: ExportedRelation[]): Promise<void> {
  for (const { name, ...declaration } of relations) {
    try {
      await store.putRelation(accountId, collection, name, declaration);
      await store.sortBy(accountId, collection, declaration.field);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      const missing =
        error.code === 'validation_failed' && error.options.errors?.some((place) => 'name' in place && place.name === '/collection');
      if (!missing) throw new MalformedFileError(`line 1: relation ${name}: ${error.detail}`);
      process.stderr.write(
        `relation ${name} of ${collection} names collection ${declaration.collection}, which is not there yet: import it, then this file again with --resume\n`,
      );
    }
  }
}

/**
 * Reads the file's rows with ids above `after` and checks each against `validate`: the first that fails
 * is a MalformedFileError naming its line and where it fails. Lines that are no rows are left to the
 * import, which names them as it comes to them.
 */
async function checkRows(file: string, validate: RowValidator, after: number): Promise<void> {
  const handle = await open(file);
  const lines = createInterface({ input: handle.createReadStream(), crlfDelay: Number.POSITIVE_INFINITY });
  try {
    let line = 0;
    for await (const text of lines) {
      if (++line === 1) continue;
      let row: unknown;
      try {
        row = JSON.parse(text);
      } catch {
        continue;
      }
      if (row === null || typeof row !== 'object' || Array.isArray(row)) continue;
      const { id, ...fields } = row as Record<string, unknown>;
      if (typeof id === 'number' && id <= after) continue;
      const [issue] = validate(fields);
      if (issue) throw new MalformedFileError(`line ${line} breaks the collection's schema at "${issue.pointer}": ${issue.message}`);
    }
  } finally {
    lines.close();
    await handle.close();
  }
}

/**
 * Where an import into the account's collection starts: the last row id it holds already (rows up to it
 * are skipped), or undefined when it is not there, to be made with the first batch. An existing one
 * only with --resume.
 */
async function startImport(store: Store, accountId: number, collection: string, resume: boolean): Promise<number | undefined> {
  const lastRowId = await store.lastRowIdOf(accountId, collection);
  if (lastRowId !== undefined && !resume) {
    throw new UsageError(
      `collection ${collection} exists already; give --resume to go on with an import into it, or import into a new name`,
    );
  }
  return lastRowId;
}
