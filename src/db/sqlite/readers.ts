// SQLite's read-only connections, and the checkpoints of the WAL. Knex's one connection is the writer
// (writer.ts, SqliteWriter); read-only connections serve the hot reads, one for single rows, some for
// pages and one for the rows related to pages (an expansion's), each statement prepared once per
// connection and reused (writer.ts, StatementCache). In WAL mode they run beside the writer, so a read
// never waits behind a write transaction, nor a write behind a slow page; a read sees every transaction
// committed before it began, so a client reads its own acknowledged writes. Errors leave as the driver's
// and are translated at the store's edge (../errors.ts).

import sqlite3 from 'sqlite3';
import { MAX_PAGE_BYTES } from '../../rows.ts';
import type { SqlValue } from '../engine/dialect.ts';
import { DatabaseClosedError } from '../engine/errors.ts';
import { Groups } from '../engine/grouping.ts';
import type { SnapshotRead } from '../engine/read-port.ts';
import { Waits } from '../engine/waits.ts';
import { StatementCache } from './writer.ts';

/**
 * How many statements of one SQL text the point reads' connection prepares at most. node-sqlite3 runs
 * one call of a statement at a time and starts the next only once the main thread has taken the
 * previous one's rows: with one statement, concurrent reads wait for a busy event loop between any two
 * of them. Copies let the driver's threads (libuv's pool, four by default) run them back to back: one
 * at a time on the connection, each stepped to its end holding the connection's mutex, so that none
 * holds a snapshot open for the next. (Row reads by id no longer need them: they go out merged, one
 * run at a time; see readMerged.) Pages have two: a page read through a sort index is as quick as a
 * row read, and a second copy lets the next page start while the main thread takes the rows of the
 * one before; more would let slow pages, which sort a whole collection, hold more of the pool's
 * threads, each waiting for the connection's mutex. The rows related to pages have two, as pages do.
 */
const ROW_READ_COPIES = 4;
const PAGE_READ_COPIES = 2;

/**
 * How often the WAL is checkpointed (its pages copied into the database file), on a connection of its
 * own. Knex's writer connection never does it (`wal_autocheckpoint = 0`, index.ts): done there, as
 * SQLite does by default every 1,000 pages, the copy and its fsync would fall on whichever write
 * committed then, while every other write waited.
 * A passive checkpoint waits for nothing: it copies what no reader still needs, and the next writer
 * starts the WAL over once all of it is copied.
 */
const CHECKPOINT_MS = 200;

/**
 * The WAL's frames past which a checkpoint also restarts it. A writer starts the WAL over only when, as
 * it begins, a checkpoint has copied all of it and no reader still reads from it, which under writes
 * back to back beside steady reads never happens: the WAL would then grow without end. A RESTART
 * checkpoint holds the writer's lock while it copies the frames left and syncs the file, and while it
 * waits for the readers under way to end (new ones read the database file); then the next writer starts
 * at the WAL's beginning: the WAL stays near this size. 4,096 frames are 16 MB of 4 KB pages.
 */
const RESTART_FRAMES = 4096;

/**
 * How long a restarting checkpoint waits for the readers under way, in ms: writers wait as long. A
 * page that sorts a whole collection may read for longer; the checkpoint then gives up, and the next
 * one tries again.
 */
const RESTART_WAIT_MS = 25;

/**
 * Before a RESTART, the frames the writer added while a passive checkpoint copied are copied by another,
 * while it still writes, until it added at most CATCH_UP_FRAMES during the last or CATCH_UP_PASSES more
 * have run: the RESTART then holds the writes only for the last frames' copy and their sync, not for all
 * that was written while the first copied (docs/performance.md, "A RESTART's stall").
 */
const CATCH_UP_FRAMES = 256;
const CATCH_UP_PASSES = 3;

/** What `pragma wal_checkpoint` answers (among others): the WAL's frames as the checkpoint began. */
interface Checkpointed {
  log: number;
}

/**
 * Read-only connections of snapshots (a page with its expanded rows, a page that needs two reads): each
 * snapshot has one to itself until it ends, so snapshots run as many at a time, and the others queue.
 * One made every page with expanded rows wait for the one before, its reads and the main thread's work
 * between them end to end (docs/performance.md, "Related rows"); four are as many as the driver's threads.
 */
export const SNAPSHOT_CONNECTIONS = 4;

/**
 * Timed reads (timedRead) at a time, each on a `query` connection of its own: a search, a filter or a sort
 * of a large collection runs for milliseconds on the driver's thread, and with one connection the reads
 * behind it waited that long each, one after another (docs/performance.md, "Timed reads two at a time").
 */
const TIMED_CONNECTIONS = 2;

/**
 * The connections of the rows related to pages (`related`), each read taking the next in turn: one
 * statement steps at a time on a connection, and a page with its to-many's rows (hundreds) takes about a
 * millisecond and a half of a core; with one connection they ran one after another, on one core.
 */
const RELATED_CONNECTIONS = 2;

/**
 * Which read-only connection a read takes: `point` for the reads of one row, `scan` for pages of rows
 * read through an index, `related` for the rows related to a page (an expansion's statement: hundreds of
 * rows, through an index), `query<n>` for pages that sort or filter, which may read a whole collection: a
 * slow page then holds up neither a row read, nor an indexed page, nor a write. `related<n>` is a
 * `related` read's connection (RELATED_CONNECTIONS).
 */
export type ReadKind = 'point' | 'scan' | `query${number}` | 'related' | `related${number}` | `snapshot${number}`;

interface Reader {
  db: sqlite3.Database;
  cache: StatementCache;
}

/** Reads sent in one run of a merged statement at most: a bound on the size of its JSON array and its answer. */
const MAX_MERGED_READS = 100;

/** SQLite's read-only connections, each opened on its first read, and the WAL's checkpoints. */
export class SqliteReaders {
  private readonly readers = new Map<ReadKind, Promise<Reader>>();
  /** The timed reads' connections (timedRead). */
  private readonly timed = new Turns(TIMED_CONNECTIONS);
  /** The snapshots' connections; a snapshot asked for while none is free waits its turn, which `waits` is told of. */
  private readonly snapshots = new Turns(SNAPSHOT_CONNECTIONS);
  /** The snapshots' waits for their connection (../waits.ts). */
  readonly waits = new Waits();
  /** Reads by the SQL text that reads them together (readMerged): one run of each text at a time. */
  private readonly merged = new Groups<SqlValue[], unknown[]>({
    maxWeight: MAX_MERGED_READS,
    run: async (sql, batch) => {
      const rows = await this.read<{ i: number }>(sql, [JSON.stringify(batch)]);
      const answers: unknown[][] = batch.map(() => []);
      for (const row of rows) answers[row.i].push(row);
      return answers;
    },
  });
  private closed = false;
  /** How many `related` reads have started: the next takes connection `related <this % RELATED_CONNECTIONS>`. */
  private relatedReads = 0;
  private readonly checkpoints: NodeJS.Timeout;
  /** The checkpoints' connection, read-write, opened on the first; and the checkpoint under way. */
  private checkpointer?: Promise<sqlite3.Database>;
  private checkpointing?: Promise<void>;

  /**
   * `filename`: the database Knex has opened and migrated (so it is in WAL mode already).
   * `restartFrames`: the WAL's size in frames past which a checkpoint restarts it (default RESTART_FRAMES).
   * `aside`: runs a task while the writer's queue starts no write (GroupedWrites.aside): a RESTART runs so,
   * where it would otherwise take the lock from a writer that then sleeps in SQLite's busy handler, by steps
   * of 1, 2, 5, 10 ms…, past the checkpoint's end. By default, the task as it comes (a checkpointer beside
   * another's writer).
   */
  constructor(
    private readonly filename: string,
    private readonly restartFrames = RESTART_FRAMES,
    private readonly aside: <T>(task: () => Promise<T>) => Promise<T> = (task) => task(),
  ) {
    this.checkpoints = setInterval(() => {
      this.checkpointing ??= this.checkpoint().finally(() => {
        this.checkpointing = undefined;
      });
    }, CHECKPOINT_MS);
    this.checkpoints.unref();
  }

  /**
   * Runs `sql` on the read-only connection of its `kind` (opened on its first read). Never for a read
   * inside a transaction, which must see the transaction's own writes.
   */
  async read<T>(sql: string, params: SqlValue[], kind: ReadKind = 'point'): Promise<T[]> {
    if (this.closed) throw new DatabaseClosedError();
    const { cache } = await this.reader(kind === 'related' ? `related${this.relatedReads++ % RELATED_CONNECTIONS}` : kind);
    return cache.all<T>(sql, params);
  }

  /**
   * Runs `sql` on a `query` connection (TIMED_CONNECTIONS of them), and interrupts it (errors.ts,
   * isQueryCanceled) once it has run for `ms`. sqlite3_interrupt() stops whatever runs on the connection,
   * so each takes one timed read at a time: the one interrupted is always the one that took too long. A
   * read waiting its turn is not timed meanwhile: it holds nothing of the database.
   */
  async timedRead<T>(sql: string, params: SqlValue[], ms: number): Promise<T[]> {
    const connection = await this.timed.take();
    try {
      if (this.closed) throw new DatabaseClosedError();
      const { db, cache } = await this.reader(`query${connection}`);
      const timer = setTimeout(() => db.interrupt(), ms);
      try {
        return await cache.all<T>(sql, params);
      } finally {
        clearTimeout(timer);
      }
    } finally {
      this.timed.give(connection);
    }
  }

  /**
   * The rows of one read among many alike, such as row reads by id, on the `point` connection: the
   * reads of `sql` asked for while a run of it is under way wait for it to end, then go out together,
   * as one run (../engine/grouping.ts). `sql` reads them all: its one parameter is a JSON array of each read's `params`, and it
   * answers each row with `i`, the index in that array of the read it belongs to (json_each's `key`).
   * A hand-off to the driver's thread costs the main thread far more than a read by primary key, the
   * more so under load, when the thread of the pool it wakes competes with it for the cores.
   */
  readMerged<T>(sql: string, params: SqlValue[]): Promise<T[]> {
    return this.merged.add(sql, params) as Promise<T[]>;
  }

  /**
   * Runs `work` with reads that all see one snapshot: a read transaction on a read-only connection of
   * the snapshots', which it has to itself until `work` settles (SNAPSHOT_CONNECTIONS at a time; others
   * queue for one).
   */
  async snapshot<T>(work: (read: SnapshotRead) => Promise<T>): Promise<T> {
    const connection = await this.snapshots.take((seconds) => this.waits.emit('wait', 'sqlite_snapshot', seconds));
    try {
      if (this.closed) throw new DatabaseClosedError();
      const { cache } = await this.reader(`snapshot${connection}`);
      await cache.all('begin', []);
      try {
        return await work((sql, params) => cache.all(sql, params));
      } finally {
        await cache.all('commit', []);
      }
    } finally {
      this.snapshots.give(connection);
    }
  }

  /**
   * Copies what it can of the WAL into the database file. A failure (the file gone, say) is left for
   * the next one to meet again: writes never wait for a checkpoint, and a WAL that grows meanwhile is
   * only a larger file.
   */
  private async checkpoint(): Promise<void> {
    this.checkpointer ??= new Promise((resolve, reject) => {
      const db = new sqlite3.Database(this.filename, (error) => (error ? reject(error) : resolve(db)));
      db.configure('busyTimeout', RESTART_WAIT_MS);
    });
    const db = await this.checkpointer.catch(() => undefined);
    if (!db) {
      this.checkpointer = undefined;
      return;
    }
    const checkpoint = (mode: 'passive' | 'restart') =>
      new Promise<Checkpointed | undefined>((resolve) =>
        db.all<Checkpointed>(`pragma wal_checkpoint(${mode})`, (error, rows) => resolve(error ? undefined : rows[0])),
      );
    let passive = await checkpoint('passive');
    // Each pass copies the frames the writer added during the one before (unless it started the WAL over meanwhile).
    let added = Number.POSITIVE_INFINITY;
    for (let pass = 0; pass < CATCH_UP_PASSES && added > CATCH_UP_FRAMES && passive && passive.log > this.restartFrames; pass++) {
      const next = await checkpoint('passive');
      added = next ? next.log - passive.log : 0;
      passive = next;
    }
    if (passive && passive.log > this.restartFrames) await this.aside(() => checkpoint('restart'));
  }

  /** Ends the checkpoints, then finalizes every statement and closes the readers. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.checkpoints);
    await this.checkpointing;
    const checkpointer = await this.checkpointer?.catch(() => undefined);
    this.checkpointer = undefined;
    await new Promise<void>((resolve) => (checkpointer ? checkpointer.close(() => resolve()) : resolve()));
    const readers = [...this.readers.values()];
    this.readers.clear();
    for (const opening of readers) {
      const reader = await opening.catch(() => undefined);
      if (!reader) continue;
      await reader.cache.finalize();
      await new Promise<void>((resolve, reject) => reader.db.close((error) => (error ? reject(error) : resolve())));
    }
  }

  private reader(kind: ReadKind): Promise<Reader> {
    const open = this.readers.get(kind);
    if (open) return open;
    const opening = new Promise<Reader>((resolve, reject) => {
      const db = new sqlite3.Database(this.filename, sqlite3.OPEN_READONLY, (error) => {
        if (error) return reject(error);
        // As the writer's: wait up to 5 s for a lock (a read in WAL mode waits only during recovery).
        db.configure('busyTimeout', 5000);
        // A page is one string made here: a longer one fails (errors.ts, isTooBig) before it is made, where
        // one longer than V8 can hold would end the process (../rows.ts, MAX_PAGE_BYTES).
        if (kind !== 'point') db.configure('limit', sqlite3.LIMIT_LENGTH, MAX_PAGE_BYTES);
        const copies = kind === 'point' ? ROW_READ_COPIES : kind === 'scan' || kind.startsWith('related') ? PAGE_READ_COPIES : 1;
        resolve({ db, cache: new StatementCache(db, copies) });
      });
    });
    this.readers.set(kind, opening);
    // A connection that failed to open is not kept: the next read tries again.
    opening.catch(() => {
      if (this.readers.get(kind) === opening) this.readers.delete(kind);
    });
    return opening;
  }
}

/** A kind's read-only connections, by number, each taken by one read (or snapshot) at a time. */
class Turns {
  private readonly free: number[];
  /** The takers waiting for a connection, in the order they asked. */
  private readonly waiting: ((connection: number) => void)[] = [];

  constructor(connections: number) {
    this.free = Array.from({ length: connections }, (_, index) => index);
  }

  /** A free connection's number, or the next one given back, waiting its turn: `waited` is told how long it waited, in seconds. */
  async take(waited?: (seconds: number) => void): Promise<number> {
    const connection = this.free.pop();
    if (connection !== undefined) return connection;
    const askedAt = performance.now();
    const given = await new Promise<number>((resolve) => this.waiting.push(resolve));
    waited?.((performance.now() - askedAt) / 1000);
    return given;
  }

  /** Hands `connection` to the taker that waited longest, or frees it. */
  give(connection: number): void {
    const next = this.waiting.shift();
    if (next) next(connection);
    else this.free.push(connection);
  }
}
