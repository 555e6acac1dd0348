// The hot reads on SQLite, outside Knex: a second connection, read-only, whose statements are prepared
// once and reused. Knex's one connection stays the writer (and serves every cold read); in WAL mode
// this reader runs beside it, so a read never waits behind a write transaction, and it sees every
// transaction committed before the read began (read-your-writes holds: a write is acknowledged only
// once committed). Errors leave as the driver's and are translated at the store's edge (errors.ts).
import sqlite3 from 'sqlite3';

/** Thrown for a read asked of a closed reader: the store translates it to 503 unavailable. */
export class DatabaseClosedError extends Error {
  constructor() {
    super('the database is closed');
  }
}

export class SqliteReads {
  private connection: Promise<sqlite3.Database> | undefined;
  private readonly statements = new Map<string, Promise<sqlite3.Statement>>();
  private closed = false;

  /** `filename`: the database Knex has opened and migrated (so it is in WAL mode already). Opened on first read. */
  constructor(private readonly filename: string) {}

  /**
   * Every row that `sql` answers for `params`. `all` steps the statement to its end, which ends its
   * read transaction: a statement left on a row would hold its snapshot, and the next read would not
   * see later commits.
   */
  async all<T>(sql: string, params: (string | number)[]): Promise<T[]> {
    const statement = await this.prepared(sql);
    if (this.closed) throw new DatabaseClosedError();
    return new Promise((resolve, reject) => {
      statement.all(params, (error: Error | null, rows: T[]) => (error ? reject(error) : resolve(rows)));
    });
  }

  /** Waits for the reads under way, then closes the connection; later reads fail with DatabaseClosedError. */
  async close(): Promise<void> {
    this.closed = true;
    const connection = this.connection;
    if (!connection) return;
    const statements = await Promise.allSettled(this.statements.values());
    for (const settled of statements) {
      if (settled.status === 'fulfilled') await new Promise<void>((resolve) => settled.value.finalize(() => resolve()));
    }
    const db = await connection.catch(() => undefined);
    await new Promise<void>((resolve, reject) => (db ? db.close((error) => (error ? reject(error) : resolve())) : resolve()));
  }

  private prepared(sql: string): Promise<sqlite3.Statement> {
    if (this.closed) return Promise.reject(new DatabaseClosedError());
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.open().then(
        (db) =>
          new Promise<sqlite3.Statement>((resolve, reject) => {
            const prepared = db.prepare(sql, (error) => (error ? reject(error) : resolve(prepared)));
          }),
      );
      const kept = statement;
      this.statements.set(sql, kept);
      // A statement that failed to prepare is not kept: the next read tries again.
      kept.catch(() => {
        if (this.statements.get(sql) === kept) this.statements.delete(sql);
      });
    }
    return statement;
  }

  private open(): Promise<sqlite3.Database> {
    if (this.connection) return this.connection;
    const connection = new Promise<sqlite3.Database>((resolve, reject) => {
      const db = new sqlite3.Database(this.filename, sqlite3.OPEN_READONLY, (error) => {
        if (error) return reject(error);
        // As the writer's: wait up to 5 s for a lock (a read in WAL mode waits only during recovery).
        db.configure('busyTimeout', 5000);
        resolve(db);
      });
    });
    this.connection = connection;
    // A connection that failed to open is not kept either.
    connection.catch(() => {
      if (this.connection === connection) this.connection = undefined;
    });
    return connection;
  }
}
