// SQLite's writer: Knex's one connection, on which every write runs in the writer's queue
// (../engine/grouping.ts, GroupedWrites), and the statements each connection prepares once and reuses
// (StatementCache): Knex has node-sqlite3 prepare and finalize a new statement for every query, which
// costs more than running it.
import type { Knex } from 'knex';
import type sqlite3 from 'sqlite3';
import type { SqlValue, WriteTx } from '../engine/dialect.ts';
import { DatabaseClosedError } from '../engine/errors.ts';

/**
 * The writer: Knex's one connection, which every write runs on while the writer's queue holds it
 * (../engine/grouping.ts, GroupedWrites), with its statements prepared once (StatementCache).
 */
export class SqliteWriter {
  /** By connection: the one Knex's pool holds, and any it opens again after losing one. */
  private readonly caches = new Map<unknown, StatementCache>();
  private closed = false;

  /**
   * Runs `sql` inside `trx`, on the connection the transaction holds, and answers its rows. `once`: a
   * statement made for one request, which the driver prepares and finalizes for this run, so that it
   * takes no place among the connection's kept statements.
   */
  async inTransaction<T>(trx: WriteTx, sql: string, params: SqlValue[], once = false): Promise<T[]> {
    if (this.closed) throw new DatabaseClosedError();
    // A transaction's client answers the connection it holds (Knex's makeTxClient).
    const connection = (await trx.client.acquireConnection()) as sqlite3.Database;
    if (once)
      return new Promise((resolve, reject) => connection.all(sql, params, (error, rows) => (error ? reject(error) : resolve(rows as T[]))));
    return this.cacheOf(connection).all<T>(sql, params);
  }

  /**
   * Runs `sql` on its own, as Knex's raw() would, on the connection when Knex's pool lends it (after
   * the writer's queue lets it go), with its kept statement.
   */
  async alone<T>(knex: Knex, sql: string, params: SqlValue[]): Promise<T[]> {
    if (this.closed) throw new DatabaseClosedError();
    const connection = (await knex.client.acquireConnection()) as sqlite3.Database;
    try {
      return await this.cacheOf(connection).all<T>(sql, params);
    } finally {
      await knex.client.releaseConnection(connection);
    }
  }

  private cacheOf(connection: sqlite3.Database): StatementCache {
    let cache = this.caches.get(connection);
    if (!cache) {
      cache = new StatementCache(connection);
      this.caches.set(connection, cache);
    }
    return cache;
  }

  /** Finalizes the writer's statements, after the runs under way; Knex closes its connection after this. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.caches.values()].map((cache) => cache.finalize()));
    this.caches.clear();
  }
}

/** SQL texts kept per connection at most; the least recently used is finalized first. */
const MAX_STATEMENTS = 64;

/** One prepared statement, and how many runs of it are under way. */
interface Copy {
  statement: Promise<sqlite3.Statement>;
  /** The statement, once prepared: run at once, without waiting a turn for `statement`. */
  prepared?: sqlite3.Statement;
  running: number;
}

/** One connection's prepared statements, by SQL text. */
export class StatementCache {
  private readonly statements = new Map<string, Copy[]>();

  /** `copies`: statements prepared per SQL text at most, for runs that overlap. Default 1. */
  constructor(
    private readonly db: sqlite3.Database,
    private readonly copies = 1,
  ) {}

  /**
   * Every row that `sql` answers for `params` (none for a write without RETURNING). `all` steps the
   * statement to its end, which finishes it: a statement left on a row would hold a read snapshot,
   * or keep COMMIT waiting, until its next use.
   */
  all<T>(sql: string, params: SqlValue[]): Promise<T[]> {
    const copy = this.copy(sql);
    copy.running++;
    // Not an async function, and no turn waited for a statement already prepared: the reads and writes
    // of every request come through here.
    if (copy.prepared) return run<T>(copy, copy.prepared, params);
    return copy.statement.then(
      (statement) => run<T>(copy, statement, params),
      (error) => {
        copy.running--;
        throw error;
      },
    );
  }

  /** Finalizes every statement, after the runs under way: SQLite closes no connection that has some. */
  async finalize(): Promise<void> {
    const copies = [...this.statements.values()].flat();
    this.statements.clear();
    await Promise.all(copies.map(({ statement }) => statement.then(finalize, () => {})));
  }

  /** An idle statement of `sql`; else a new one, while there may be more; else the least busy. */
  private copy(sql: string): Copy {
    let copies = this.statements.get(sql);
    if (copies) {
      this.statements.delete(sql); // moved last: the map is in order of use
    } else {
      copies = [];
      if (this.statements.size >= MAX_STATEMENTS) {
        const [oldest, evicted] = this.statements.entries().next().value as [string, Copy[]];
        this.statements.delete(oldest);
        // node-sqlite3 queues the finalize behind the runs of the statement under way.
        for (const { statement } of evicted) statement.then(finalize, () => {});
      }
    }
    this.statements.set(sql, copies);
    let least: Copy | undefined;
    for (const copy of copies) if (!least || copy.running < least.running) least = copy;
    if (least && (least.running === 0 || copies.length >= this.copies)) return least;
    const fresh: Copy = { statement: this.prepare(sql), running: 0 };
    copies.push(fresh);
    fresh.statement.then(
      (statement) => {
        fresh.prepared = statement;
      },
      // A statement that failed to prepare is not kept: the next run tries again.
      () => {
        const kept = this.statements.get(sql);
        if (kept?.includes(fresh)) kept.splice(kept.indexOf(fresh), 1);
      },
    );
    return fresh;
  }

  private prepare(sql: string): Promise<sqlite3.Statement> {
    return new Promise<sqlite3.Statement>((resolve, reject) => {
      const prepared = this.db.prepare(sql, (error) => (error ? reject(error) : resolve(prepared)));
    });
  }
}

/** Runs `statement` of `copy` (counted as running) to its end. */
function run<T>(copy: Copy, statement: sqlite3.Statement, params: SqlValue[]): Promise<T[]> {
  return new Promise((resolve, reject) => {
    try {
      statement.all(params, (error: Error | null, rows: T[]) => {
        copy.running--;
        if (error) reject(error);
        else resolve(rows);
      });
    } catch (error) {
      copy.running--;
      reject(error);
    }
  });
}

const finalize = (statement: sqlite3.Statement) => new Promise<void>((resolve) => statement.finalize(() => resolve()));
