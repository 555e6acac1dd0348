// `rowbase export`: a collection as NDJSON (collection-file.ts), read in one snapshot, a page at a time,
// to stdout or to a file written whole or not at all.
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { Writable } from 'node:stream';
import type { Store } from '../db/open-store.ts';
import { ApiError } from '../errors.ts';
import { rowJson } from '../rows.ts';
import { accountAndCollection, accountId, FORMAT, type Header, VERSION } from './collection-file.ts';
import { type Command, UsageError, withStore } from './command.ts';
import { Progress } from './progress.ts';

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

export const exportCommand: Command = {
  usage: 'rowbase export --account <name> --collection <name> [--out <file> [--force]]',
  summary:
    'Write a collection as NDJSON, as of one moment, while the service runs. A first line describes it (its seq, last row id and row count, and its schema, indexes, rules and time to live if it has them), then each row with its id. To stdout without --out. The format: docs/operations.md, "Export and import".',
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
