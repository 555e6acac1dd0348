// `rowbase backup`: a copy of a SQLite database made while the service serves (docs/operations.md,
// "Backup"). PostgreSQL's is pg_dump's job: the command says so.
import { resolve } from 'node:path';
import { BackupRefusedError } from '../errors.ts';
import { type Command, UsageError, withStore } from './command.ts';

export const backupCommand: Command = {
  usage: 'rowbase backup [--force] <file>',
  summary:
    'Copy the SQLite database to a file while the service runs. The copy is a working database that holds every write committed before the backup began. For PostgreSQL, use pg_dump (docs/operations.md, "Backup").',
  options: { force: { type: 'boolean', description: 'replace the file if it exists' } },
  positionals: 1,
  async run(values, [file]) {
    const started = performance.now();
    await withStore((store) =>
      store.backup(file, values.force === true).catch((error) => {
        throw error instanceof BackupRefusedError ? new UsageError(error.message) : error;
      }),
    );
    process.stderr.write(`rowbase: backed up to ${resolve(file)} in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  },
};
