// What opening a database takes on either dialect: Knex's log, what every Dialect holds alike, and one
// error that says which database could not be opened and why.
import type { Knex } from 'knex';
import { defaults, withoutPassword } from '../../config.ts';
import type { Logger } from '../../log.ts';
import type { SortIndexLimits } from '../collections/sort-indexes.ts';
import type { Backups, Dialect, SchemaCache } from './dialect.ts';
import type { ErrorCodes } from './errors.ts';
import type { PagedDialect } from './read-port.ts';
import { WakeUps } from './wake-ups.ts';

/**
 * The database could not be opened or migrated: one line that names it (without its password) and
 * says why, for an operator to act on.
 */
export class DatabaseOpenError extends Error {
  constructor(url: string, cause: unknown) {
    super(`cannot open the database ${withoutPassword(url)}: ${(cause as Error).message ?? cause}`, { cause });
  }
}

/**
 * Knex's own warnings (a connection that could not be made, with its stack) go to the service's log
 * at warn, or nowhere for the CLI, which reports the error it gets in one line.
 */
export function knexLog(log: Logger | undefined): Knex.Config['log'] {
  const warn = (message: unknown) => log?.warn({ knex: String(message) }, 'database driver warning');
  return { warn, error: warn, deprecate: warn, debug: () => {} };
}

/**
 * What a Dialect holds whatever its database: its Knex, the wake-ups after its commits, how long a page
 * that sorts or filters may run, and the collections' schemas (made by the areas: dialect.ts, AreaParts).
 */
export const dialectGround = (
  knex: Knex,
  queryTimeoutMs: number,
  schemas: SchemaCache,
): Pick<Dialect, 'knex' | 'changes' | 'queryTimeoutMs' | 'schemas'> => ({ knex, changes: new WakeUps(), queryTimeoutMs, schemas });

/** A database as its dialect opens it (sqlite/, postgres/): what ../open-store.ts makes its Store of (../store.ts, assembleStore). */
export interface OpenedDatabase {
  db: PagedDialect;
  backups: Backups;
  /** How the driver's errors read (errors.ts, translateError). */
  codes: ErrorCodes;
  /** Closes every connection, after the statements under way. */
  close(): Promise<void>;
}

/** How to open a store (../open-store.ts, openStore). */
export interface StoreOptions {
  /** When a page ordered by a field makes a sort index for it (sort-indexes.ts). Default: defaultSortIndexes. */
  sortIndexes?: SortIndexLimits;
  /** Receives the database driver's warnings. Default: none are shown. */
  log?: Logger;
  /**
   * Whether this process hears the changes other processes make to the database (PostgreSQL's
   * LISTEN; SQLite has one process's writes). The service does; the CLI need not. Default false.
   */
  followOthers?: boolean;
  /**
   * How long a page that sorts or filters may hold the database, in ms, before it is stopped and
   * answered 503 `query_timeout` (read-port.ts, ReadKind). Default: config.ts, queryTimeoutMs.
   */
  queryTimeoutMs?: number;
}

/** The service's own defaults (config.ts, sortIndexMinRows and sortIndexMax). */
const defaultSortIndexes: SortIndexLimits = { minRows: defaults.sortIndexMinRows, max: defaults.sortIndexMax };

/** StoreOptions with the service's defaults where none was given: what a dialect opens with (withDefaults()). */
export type OpenOptions = Required<Omit<StoreOptions, 'log'>> & Pick<StoreOptions, 'log'>;

/** `options` with the service's defaults where they give none. */
export const withDefaults = ({
  sortIndexes = defaultSortIndexes,
  log,
  followOthers = false,
  queryTimeoutMs = defaults.queryTimeoutMs,
}: StoreOptions): OpenOptions => ({ sortIndexes, log, followOthers, queryTimeoutMs });
