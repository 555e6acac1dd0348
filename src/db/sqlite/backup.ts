// SQLite: `rowbase backup` (docs/operations.md, "Backup"), with SQLite's online backup API
// (https://www.sqlite.org/backup.html) through the driver. The copy is made in one step, which reads the
// database in one read transaction: in WAL mode the service's writes go on beside it, and the copy
// holds exactly the transactions committed before that step began. It is written to a file of its own
// beside the target and renamed over it once whole, so that a backup cut short never leaves a file
// that looks like one.
import { existsSync, realpathSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import sqlite3 from 'sqlite3';
import { BackupRefusedError } from '../../errors.ts';

/** node-sqlite3's Backup (its type declarations leave it out). */
interface Backup {
  step(pages: number, done: (error: Error | null) => void): void;
  finish(done?: (error: Error | null) => void): void;
  readonly completed: boolean;
  readonly failed: boolean;
}

type BackupDatabase = sqlite3.Database & { backup(filename: string, done: (error: Error | null) => void): Backup };

/** Copies the database file `source` to `target`; an existing target only when `replace`, never the database itself. */
export async function backupSqlite(source: string, target: string, replace: boolean): Promise<void> {
  const to = resolve(target);
  if (existsSync(to)) {
    if (realpathSync(to) === realpathSync(source)) throw new BackupRefusedError(`${target} is the database itself`);
    if (!replace) throw new BackupRefusedError(`${target} exists already; give --force to replace it`);
  }
  if (!existsSync(dirname(to))) throw new BackupRefusedError(`there is no folder ${dirname(target)} to write ${basename(target)} in`);
  const partial = join(dirname(to), `.${basename(to)}.${process.pid}.partial`);
  const db = await open(source);
  try {
    await copy(db, partial);
    // A -wal or -shm file left beside an older file of the target's name would be read as part of the copy.
    await Promise.all(['-wal', '-shm', '-journal'].map((suffix) => rm(`${to}${suffix}`, { force: true })));
    await rename(partial, to);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  } finally {
    await new Promise<void>((done) => db.close(() => done()));
  }
}

function open(filename: string): Promise<BackupDatabase> {
  return new Promise((resolve, reject) => {
    const db = new sqlite3.Database(filename, sqlite3.OPEN_READONLY, (error) => (error ? reject(error) : resolve(db as BackupDatabase)));
    // As the service's readers: wait for a lock only during a recovery.
    db.configure('busyTimeout', 5000);
  });
}

/** Copies every page of `db` to `filename` in one step (-1: all of them), then closes the copy. */
async function copy(db: BackupDatabase, filename: string): Promise<void> {
  const backup = await new Promise<Backup>((resolve, reject) => {
    const made = db.backup(filename, (error) => (error ? reject(error) : resolve(made)));
  });
  try {
    await new Promise<void>((resolve, reject) => backup.step(-1, (error) => (error ? reject(error) : resolve())));
    if (!backup.completed) throw new Error('the backup stopped before it copied every page');
  } finally {
    await new Promise<void>((resolve) => backup.finish(() => resolve()));
  }
}
