// `rowbase backup` as a real process, beside a real `rowbase serve` under a write load; the copy opened
// by another real server (docs/operations.md, "Backup").
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import sqlite3 from 'sqlite3';
import { createDatabase, skipWithoutPostgres } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { pollUntil, type ServeProcess, Workspace } from '../support/process.ts';

type Row = { id: number; writer?: number; n?: number };

describe('rowbase backup (sqlite)', () => {
  let workspace: Workspace;
  let server: ServeProcess;
  let key: string;
  let client: Client;
  const rowbase = (...args: string[]) => workspace.run(args);
  const file = (name: string) => join(workspace.dir, name);

  before(async () => {
    workspace = await Workspace.create();
    server = await workspace.serve();
    // A plan with room for every request here, at any rate: the writers write as fast as they can.
    expect((await rowbase('plans', 'set', 'bulk', '--quota', '100000000', '--period', 'month', '--no-rate')).code).to.equal(0);
    const created = await rowbase('keys', 'create', '--account', 'acme', '--plan', 'bulk', '--json');
    expect(created.code, created.stderr).to.equal(0);
    key = JSON.parse(created.stdout).key;
    client = new Client(server.url, key);
  });

  after(() => workspace.cleanUp());

  it('copies the database while writes go on: the copy opens, whole, as a working database with every write acknowledged before it began', async function () {
    this.timeout(120_000);
    expect((await client.post('/v1/collections', { name: 'load' })).status).to.equal(201);
    // A typed collection, whose schema and unique index the copy must keep.
    const schema = { type: 'object', properties: { email: { type: 'string' } } };
    expect((await client.post('/v1/collections', { name: 'typed', schema })).status).to.equal(201);
    expect((await client.post('/v1/collections/typed/indexes', { fields: ['email'], unique: true })).status).to.equal(201);
    expect((await client.post('/v1/collections/typed/rows', [{ email: 'a' }])).status).to.equal(201);
    // Some weight, so that the copy has pages to read while the writes go on.
    const filler = 'rows written while the database is copied. '.repeat(10);
    for (let batch = 0; batch < 20; batch++) {
      const rows = Array.from({ length: 1000 }, (_, n) => ({ batch, n, filler }));
      expect((await client.post('/v1/collections/load/rows', rows)).status).to.equal(201);
    }
    const acknowledged = new Set<number>();
    let stopped = false;
    const writers = [0, 1, 2, 3].map(async (writer) => {
      for (let n = 0; !stopped; n++) {
        const written = await client.post<Row[]>('/v1/collections/load/rows', [{ writer, n }]);
        expect(written.status).to.equal(201);
        acknowledged.add(written.body[0].id);
      }
    });
    try {
      await pollUntil(async () => acknowledged.size >= 50, 30_000);
      const beforeBackup = new Set(acknowledged);

      const backup = await rowbase('backup', file('copy.sqlite'));
      const duringBackup = acknowledged.size - beforeBackup.size;

      expect(backup.code, backup.stderr).to.equal(0);
      expect(backup.stderr).to.match(/^rowbase: database sqlite:[^\n]+\nrowbase: backed up to [^\n]+copy\.sqlite in [\d.]+ s\n$/);
      // The server took writes while the backup ran.
      expect(duringBackup).to.be.above(0);
      stopped = true;
      await Promise.all(writers);

      expect(await pragma(file('copy.sqlite'), 'integrity_check')).to.deep.equal([{ integrity_check: 'ok' }]);
      expect(await pragma(file('copy.sqlite'), 'journal_mode')).to.deep.equal([{ journal_mode: 'wal' }]);

      const restored = await workspace.serve({ DATABASE_URL: `sqlite:${file('copy.sqlite')}` });
      const copy = new Client(restored.url, key);
      const ids: number[] = [];
      for (let offset = 0; ; offset += 1000) {
        const page = await copy.get<Row[]>(`/v1/collections/load/rows?limit=1000&offset=${offset}`);
        expect(page.status).to.equal(200);
        ids.push(...page.body.map((row) => row.id));
        if (page.body.length < 1000) break;
      }
      const inCopy = new Set(ids);
      const missing = [...beforeBackup].filter((id) => !inCopy.has(id));
      expect(missing, 'writes acknowledged before the backup began').to.deep.equal([]);
      // Ids are handed out in order: the copy holds a prefix of them, with no gap.
      expect(ids).to.deep.equal(Array.from({ length: ids.length }, (_, index) => index + 1));
      const described = await copy.get<{ row_count: number; seq: number }>('/v1/collections/load');
      expect(described.body).to.include({ row_count: ids.length, seq: ids.length });
      // A working database: it takes writes.
      const written = await copy.post<Row[]>('/v1/collections/load/rows', [{ after: 'restore' }]);
      expect(written.status).to.equal(201);
      expect(written.body[0].id).to.equal(ids.length + 1);
      expect((await copy.get('/v1/collections/typed/schema')).body).to.deep.equal(schema);
      expect((await copy.post<{ code: string }>('/v1/collections/typed/rows', [{ email: 7 }])).status).to.equal(422);
      expect((await copy.post<{ code: string }>('/v1/collections/typed/rows', [{ email: 'a' }])).body.code).to.equal('unique_violation');
    } finally {
      stopped = true;
      await Promise.allSettled(writers);
    }
  });

  it('refuses a file that exists unless --force, and the database itself, with one line', async () => {
    await writeFile(file('taken.sqlite'), 'not a database');

    const refused = await rowbase('backup', file('taken.sqlite'));
    expect(refused.code).to.equal(2);
    expect(refused.stderr).to.equal(`rowbase: ${file('taken.sqlite')} exists already; give --force to replace it\n`);
    expect(await readFile(file('taken.sqlite'), 'utf8')).to.equal('not a database');

    const replaced = await rowbase('backup', '--force', file('taken.sqlite'));
    expect(replaced.code, replaced.stderr).to.equal(0);
    expect(await pragma(file('taken.sqlite'), 'integrity_check')).to.deep.equal([{ integrity_check: 'ok' }]);

    const itself = await rowbase('backup', '--force', file('rowbase.sqlite'));
    expect(itself.code).to.equal(2);
    expect(itself.stderr).to.equal(`rowbase: ${file('rowbase.sqlite')} is the database itself\n`);

    const noFolder = await rowbase('backup', file('absent/copy.sqlite'));
    expect(noFolder.code).to.equal(2);
    expect(noFolder.stderr).to.equal(`rowbase: there is no folder ${file('absent')} to write copy.sqlite in\n`);
    expect(existsSync(file('absent'))).to.equal(false);
  });
});

describe('rowbase backup (postgres)', () => {
  before(async function () {
    await skipWithoutPostgres(this);
  });

  it('says to use pg_dump, in one line, and exits 2', async () => {
    const database = await createDatabase('postgres');
    const workspace = await Workspace.create();
    try {
      const refused = await workspace.run(['backup', join(workspace.dir, 'copy')], { DATABASE_URL: database.url });

      expect(refused.code).to.equal(2);
      expect(refused.stderr).to.equal(
        'rowbase: backup copies a SQLite database; for PostgreSQL use pg_dump: pg_dump --format=custom --file=rowbase.dump "$DATABASE_URL" (docs/operations.md, "Backup")\n',
      );
      expect(existsSync(join(workspace.dir, 'copy'))).to.equal(false);
    } finally {
      await workspace.cleanUp();
      await database.drop();
    }
  });
});

/** `pragma <name>` on the database file `path`, opened read-only. */
function pragma(path: string, name: string): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const db = new sqlite3.Database(path, sqlite3.OPEN_READONLY, (error) => {
      if (error) return reject(error);
      db.all(`pragma ${name}`, (failed, rows) => db.close(() => (failed ? reject(failed) : resolve(rows))));
    });
  });
}
