// `rowbase export` and `rowbase import`: a collection as NDJSON, moved between databases with its ids
// (docs/operations.md, "Export and import"). The file's first line describes the collection; every
// other line is one row, with its id, in id order. Both stream: an export holds one page of rows at a
// time, an import one batch.
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { open, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Writable } from 'node:stream';
import document from '../../generated/openapi.json' with { type: 'json' };
import type { ExportedCollection } from '../db/exports.ts';
import type { ImportedRow } from '../db/imports.ts';
import { instantOf } from '../db/keys.ts';
import { assignable, MAX_ROW_BYTES, overRowBound, rowJson } from '../db/rows.ts';
import type { Store } from '../db/store.ts';
import { ApiError } from '../errors.ts';
import { type Command, required, UsageError, type Values, withStore } from './command.ts';
import { Progress } from './progress.ts';

/** What the first line of an export says it is, and the version of its format this rowbase writes and reads. */
const FORMAT = 'rowbase-export';
const VERSION = 1;

/** The first line of an export. */
interface Header extends ExportedCollection {
  format: typeof FORMAT;
  version: typeof VERSION;
  exported_at: string;
}

/**
 * The rows of one batch of an import at most, and the characters of their texts: each batch is one
 * transaction, which holds SQLite's only writer while it runs, and is all an import holds at once.
 */
const BATCH_ROWS = 1000;
const BATCH_CHARS = 8 * 1024 * 1024;

const collectionName = new RegExp(document.components.schemas.CollectionName.pattern);

/** The account and collection a command names: --account and --collection, checked as the HTTP API checks a name. */
function accountAndCollection(values: Values): { account: string; collection: string } {
  const account = required(values, 'account');
  const collection = required(values, 'collection');
  if (!collectionName.test(collection))
    throw new UsageError(`--collection must be a collection name (openapi.yaml, CollectionName), not ${JSON.stringify(collection)}`);
  return { account, collection };
}

async function accountId(store: Store, account: string): Promise<number> {
  const id = await store.accountIdOf(account);
  if (id === undefined) throw new UsageError(`there is no account named ${account}; make it with rowbase keys create --account ${account}`);
  return id;
}

/** Writes `text`, and waits for the stream to take more when it asks to. */
async function write(stream: Writable, text: string): Promise<void> {
  if (!stream.write(text)) await once(stream, 'drain');
}

/** A file written whole or not at all: into a file of its own beside `target`, renamed over it once complete. */
async function writeWhole(target: string, replace: boolean, work: (stream: Writable) => Promise<void>): Promise<void> {
  const to = resolve(target);
  if (!replace && (await exists(to))) throw new UsageError(`${target} exists already; give --force to replace it`);
  const partial = join(dirname(to), `.${basename(to)}.${process.pid}.partial`);
  const stream = createWriteStream(partial, { flags: 'wx' });
  try {
    await once(stream, 'open');
    await work(stream);
    stream.end();
    await once(stream, 'close');
    await rename(partial, to);
  } catch (error) {
    stream.destroy();
    await rm(partial, { force: true });
    throw error;
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

const exportCommand: Command = {
  usage: 'rowbase export --account <name> --collection <name> [--out <file> [--force]]',
  summary:
    'Write a collection as NDJSON: a first line that describes it (its seq, last row id and row count), then each row with its id, all as of one moment, while the service runs. To stdout without --out. The format: docs/operations.md, "Export and import".',
  options: {
    account: { type: 'string', description: 'the account the collection belongs to' },
    collection: { type: 'string', description: 'the collection to export' },
    out: { type: 'string', description: 'the file to write (written whole or not at all); stdout without it' },
    force: { type: 'boolean', description: 'replace the --out file if it exists' },
  },
  async run(values) {
    const { account, collection } = accountAndCollection(values);
    const out = values.out as string | undefined;
    if (values.force && out === undefined) throw new UsageError('--force replaces the --out file; give --out');
    await withStore(async (store) => {
      const id = await accountId(store, account);
      const exportTo = (stream: Writable) => exportRows(store, id, collection, stream);
      await (out === undefined ? exportTo(process.stdout) : writeWhole(out, values.force === true, exportTo)).catch((error) => {
        if (error instanceof ApiError && error.code === 'not_found')
          throw new UsageError(`account ${account} has no collection named ${collection}`);
        // Read by a command that stopped reading, such as `head`: the rest had nowhere to go.
        if ((error as NodeJS.ErrnoException).code === 'EPIPE') throw new Error('the output was closed before the export was complete');
        throw error;
      });
    });
  },
};

/** Writes the collection's first line and rows to `stream`, showing how far it has come on stderr. */
async function exportRows(store: Store, accountId: number, collection: string, stream: Writable): Promise<void> {
  let progress: Progress | undefined;
  try {
    await store.exportCollection(accountId, collection, {
      async collection(described) {
        const header: Header = { format: FORMAT, version: VERSION, ...described, exported_at: new Date().toISOString() };
        await write(stream, `${JSON.stringify(header)}\n`);
        progress = await Progress.start('exported', described.row_count);
      },
      async rows(rows) {
        let lines = '';
        for (const { id, data } of rows) lines += `${rowJson(id, data)}\n`;
        await write(stream, lines);
        progress?.add(rows.length);
      },
    });
  } catch (error) {
    progress?.stop();
    throw error;
  }
  progress?.done(`of collection ${collection}`);
}

const importCommand: Command = {
  usage: 'rowbase import --account <name> --collection <name> [--resume] <file>',
  summary:
    'Make a collection from a file that rowbase export wrote, with the same rows, ids and next id, in batches that are each written whole or not at all. With --resume, go on into the collection an import left unfinished, after its last id (docs/operations.md, "Export and import").',
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
  return header as unknown as Header;
}

/**
 * Imports the file's rows into the account's collection, a batch at a time. A malformed line stops it
 * before the batch it is in is written; the batches before stay, and --resume goes on after them.
 */
async function importRows(store: Store, accountId: number, collection: string, file: string, resume: boolean): Promise<void> {
  const handle = await open(file);
  const lines = createInterface({ input: handle.createReadStream(), crlfDelay: Number.POSITIVE_INFINITY });
  let progress: Progress | undefined;
  let line = 0;
  /** The line of the first row of the batch not written yet. */
  let batchLine = 2;
  try {
    let header: Header | undefined;
    /** Rows with ids up to this are in the collection already (--resume), and skipped. */
    let skipUpTo: number | undefined;
    let lastId = 0;
    let rows = 0;
    let skipped = 0;
    let batch: ImportedRow[] = [];
    let chars = 0;
    const flush = async (lastRowId: number) => {
      // Made with its first batch, at the time the export says it was made: an import that stops before
      // leaves nothing behind.
      if (skipUpTo === undefined) {
        await store.createCollection(accountId, collection, undefined, header?.created_at);
        skipUpTo = 0;
      }
      await store.importRows(accountId, collection, batch, lastRowId).catch((error) => {
        throw error instanceof ApiError && error.code === 'conflict'
          ? new MalformedFileError(`${error.detail} Was the collection written to during the import?`)
          : error;
      });
      progress?.add(batch.length);
      batch = [];
      chars = 0;
      batchLine = line + 1;
    };
    for await (const text of lines) {
      line++;
      if (header === undefined) {
        header = parseHeader(text);
        skipUpTo = await startImport(store, accountId, collection, resume);
        progress = await Progress.start('imported', header.row_count);
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
      if (skipUpTo !== undefined && lastId <= skipUpTo) {
        skipped++;
        progress?.add(1);
        continue;
      }
      const fieldsText = JSON.stringify(fields);
      if (overRowBound(fieldsText)) throw new MalformedFileError(`line ${line}: the row weighs more than ${MAX_ROW_BYTES} bytes`);
      batch.push({ id: lastId, text: fieldsText });
      chars += fieldsText.length;
      if (batch.length >= BATCH_ROWS || chars >= BATCH_CHARS) await flush(lastId);
    }
    if (header === undefined) throw new MalformedFileError('the file is empty, where its first line describes the collection');
    if (rows !== header.row_count) {
      throw new MalformedFileError(`the file ends after ${rows} rows, where line 1 counts ${header.row_count}: it is cut short`);
    }
    // The last batch moves the collection's last row id to the export's, past rows deleted before it.
    await flush(header.last_row_id);
    progress?.done(`into collection ${collection}${skipped > 0 ? `, ${skipped} of them there already (--resume)` : ''}`);
  } catch (error) {
    progress?.stop();
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

export const dataCommands: Record<string, Command> = { export: exportCommand, import: importCommand };
