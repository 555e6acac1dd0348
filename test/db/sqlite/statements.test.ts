// The hot statements on SQLite (src/db/sqlite/rows.ts, StatementCache and SqliteWriter; readers.ts):
// prepared once per connection, reads on read-only connections of their own beside Knex's writer.
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { byName } from '../../../src/db/engine/sql/pages.ts';
import type { SqliteStore } from '../../../src/db/open-store.ts';
import { openStore, type Store } from '../../../src/db/open-store.ts';
import { SqliteReaders } from '../../../src/db/sqlite/readers.ts';
import { orderedPage } from '../../../src/db/sqlite/sql/reads.ts';
import { searchSql } from '../../../src/db/sqlite/sql/search.ts';
import { ApiError } from '../../../src/errors.ts';
import { SCORE } from '../../../src/query/order.ts';
import { pollUntil } from '../../support/process.ts';

describe('SQLite hot statements', () => {
  let dir: string;
  let store: Store;
  let accountId: number;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rowbase-reads-'));
    store = await openStore(`sqlite:${join(dir, 'rowbase.sqlite')}`);
    await store.createKey('reader');
    accountId = (await store.knex('accounts').where({ name: 'reader' }).first('id')).id;
    await store.createCollection(accountId, 'notes');
  });
  afterEach(async () => {
    await store.close().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });

  const sqlite = () => (store as SqliteStore).readers;

  it('read through a connection of their own, which cannot write', async () => {
    await store.insertRows(accountId, 'notes', [{ n: 1 }]);
    expect(JSON.parse((await store.getRow(accountId, 'notes', 1)).json)).to.deep.equal({ id: 1, n: 1 });
    let failure: { code?: string } | undefined;
    await sqlite()
      .read('delete from rows', [])
      .catch((error: { code?: string }) => (failure = error));
    expect(failure?.code).to.equal('SQLITE_READONLY');
    expect(JSON.parse((await store.getRow(accountId, 'notes', 1)).json)).to.deep.equal({ id: 1, n: 1 });
  });

  it('read every write committed before they begin, however often the statement was used before', async () => {
    await store.insertRows(accountId, 'notes', [{ n: 1 }, { n: 2 }]);
    for (let n = 3; n < 10; n++) {
      expect(JSON.parse((await store.getRow(accountId, 'notes', 1)).json)).to.have.property('n', n - 2);
      await store.updateRow(accountId, 'notes', 1, { format: 'merge', fields: { n: n - 1 } });
    }
    await store.deleteRow(accountId, 'notes', 2);
    let missing: unknown;
    await store.getRow(accountId, 'notes', 2).catch((error) => (missing = error));
    expect(missing).to.be.instanceOf(ApiError).and.to.include({ code: 'not_found' });
  });

  it('read pages on a connection of their own: a slow one holds up no write and no row read', async () => {
    await store.insertRows(accountId, 'notes', [{ n: 1 }]);
    const done: string[] = [];
    // Stands for a page that orders a large collection: it reads for a good while.
    const count = 'with recursive n(i) as (select 1 union all select i + 1 from n where i < 3000000) select count(*) as c from n';
    const page = sqlite()
      .read(count, [], 'scan')
      .then(() => done.push('page'));
    await store.insertRows(accountId, 'notes', [{ n: 2 }]).then(() => done.push('write'));
    await store.getRow(accountId, 'notes', 2).then(() => done.push('row'));
    await page;
    expect(done).to.deep.equal(['write', 'row', 'page']);

    // And listRows finds the collection on the other and reads its page there (a page by id), or, timed,
    // on the connection of pages that sort (a page by a field without a sort index); getRow reads on the other.
    const kinds: unknown[] = [];
    const read = sqlite().read.bind(sqlite());
    sqlite().read = (sql: string, params: Parameters<typeof read>[1], kind = 'point' as const) => {
      kinds.push(kind);
      return read(sql, params, kind);
    };
    const timedRead = sqlite().timedRead.bind(sqlite());
    sqlite().timedRead = (sql: string, params: Parameters<typeof read>[1], ms: number) => {
      kinds.push('query');
      return timedRead(sql, params, ms);
    };
    await store.listRows(accountId, 'notes', { limit: 10, offset: 0, order: [{ field: 'id', direction: 'desc' as const }] });
    await store.listRows(accountId, 'notes', { limit: 10, offset: 0, order: [{ field: 'n', direction: 'desc' as const }] });
    await store.getRow(accountId, 'notes', 1);
    expect(kinds).to.deep.equal(['scan', 'point', 'query', 'point']);
  });

  it('run timed reads two at a time, each interrupted on its own connection, a third waiting its turn untimed', async () => {
    const done: string[] = [];
    const count = (n: number) =>
      `with recursive n(i) as (select 1 union all select i + 1 from n where i < ${n}) select count(*) as c from n`;
    const slow = sqlite()
      .timedRead(count(3_000_000), [], 60_000)
      .then(() => done.push('slow'));
    // A second timed read takes the other connection: it ends while the first still reads.
    await sqlite().timedRead(count(10), [], 60_000);
    done.push('quick');
    await slow;
    expect(done).to.deep.equal(['quick', 'slow']);

    // Each interrupted once it has read for its bound, on its own connection; the third read waited for one
    // of them, untimed meanwhile, and then read to its end within its own bound.
    const outcomes = await Promise.all(
      [count(100_000_000), count(100_000_000), count(10)].map((sql) =>
        sqlite()
          .timedRead<{ c: number }>(sql, [], 300)
          .then(
            (rows) => rows[0].c,
            (error: { code?: string }) => error.code,
          ),
      ),
    );
    expect(outcomes).to.deep.equal(['SQLITE_INTERRUPT', 'SQLITE_INTERRUPT', 10]);
  });

  it('answer many row reads at once, each with its own row, beside writes that each read sees once committed', async () => {
    await store.insertRows(
      accountId,
      'notes',
      Array.from({ length: 200 }, (_, n) => ({ n: n + 1 })),
    );
    const reads = Array.from({ length: 200 }, (_, n) => store.getRow(accountId, 'notes', n + 1));
    expect((await Promise.all(reads)).map(({ json }) => JSON.parse(json))).to.deep.equal(
      Array.from({ length: 200 }, (_, n) => ({ id: n + 1, n: n + 1 })),
    );
    for (let round = 1; round <= 20; round++) {
      await store.updateRow(accountId, 'notes', 1, { format: 'merge', fields: { n: -round } });
      const seen = await Promise.all(Array.from({ length: 10 }, () => store.getRow(accountId, 'notes', 1)));
      expect(seen.map(({ json }) => JSON.parse(json).n)).to.deep.equal(Array(10).fill(-round));
    }
    // Every copy of the statement is finalized on close, or the write-ahead log would stay.
    await store.close();
    expect(existsSync(join(dir, 'rowbase.sqlite-wal'))).to.equal(false);
  });

  it('answer row reads sent together each on its own: found, missing, or of a missing collection', async () => {
    await store.insertRows(accountId, 'notes', [{ n: 1 }, {}]);
    const outcomes = await Promise.all(
      [
        ['notes', 1],
        ['other', 1],
        ['notes', 3],
        ['notes', 2],
        ['notes', 1],
      ].map(([collection, id]) =>
        store.getRow(accountId, collection as string, id as number).then(
          ({ json }) => JSON.parse(json),
          (error: ApiError) => error.detail,
        ),
      ),
    );
    expect(outcomes).to.deep.equal([
      { id: 1, n: 1 },
      'There is no collection named other.',
      'There is no row 3 in collection notes.',
      { id: 2 },
      { id: 1, n: 1 },
    ]);
  });

  it('tell a missing row from a missing collection', async () => {
    const details: string[] = [];
    for (const collection of ['notes', 'other']) {
      await store.getRow(accountId, collection, 1).catch((error: ApiError) => details.push(error.detail));
    }
    expect(details).to.deep.equal(['There is no row 1 in collection notes.', 'There is no collection named other.']);
  });

  it('keep the store closing cleanly, whatever statements were prepared and dropped', async () => {
    // More batch sizes than statements kept: the oldest are finalized on the way.
    for (let size = 1; size <= 80; size++) {
      await store.insertRows(
        accountId,
        'notes',
        Array.from({ length: size }, (_, n) => ({ n })),
      );
    }
    expect(JSON.parse((await store.getRow(accountId, 'notes', (80 * 81) / 2)).json)).to.deep.equal({ id: (80 * 81) / 2, n: 79 });
    // SQLite refuses to close a connection with statements not finalized (and Knex does not say so);
    // the last connection to close takes the write-ahead log away.
    await store.close();
    expect(existsSync(join(dir, 'rowbase.sqlite-wal'))).to.equal(false);
  });

  it('answer 503 unavailable once the store is closed', async () => {
    await store.insertRows(accountId, 'notes', [{ n: 1 }]);
    await store.getRow(accountId, 'notes', 1);
    await store.close();
    let failure: unknown;
    await store.getRow(accountId, 'notes', 1).catch((error) => (failure = error));
    expect(failure).to.be.instanceOf(ApiError).and.to.include({ code: 'unavailable', status: 503 });
  });

  it('checkpoint the WAL on a connection of their own: the database file takes the writes, though the writer never checkpoints', async () => {
    const file = join(dir, 'rowbase.sqlite');
    const [{ wal_autocheckpoint }] = await store.knex.raw('pragma wal_autocheckpoint');
    expect(wal_autocheckpoint).to.equal(0);
    const before = statSync(file).size;
    const text = 'x'.repeat(1000);
    await store.insertRows(
      accountId,
      'notes',
      Array.from({ length: 500 }, (_, n) => ({ n, text })),
    );
    // 500 KB of rows and as much of events went to the WAL; only a checkpoint copies them into the file.
    await pollUntil(async () => statSync(file).size > before + 500_000, 5000);
    expect(statSync(file).size).to.be.greaterThan(before + 500_000);
  });

  it("keep the writer's temporary B-trees in its page cache and a file past it, not all in the heap", async () => {
    const [{ temp_store }] = await store.knex.raw('pragma temp_store');
    expect(temp_store).to.equal(1); // FILE
    // A statement whose temporary B-tree outgrows the cache (an INSERT … SELECT of 5,000 rows of 1 KB) still writes.
    const text = 'x'.repeat(1000);
    await store.insertRows(
      accountId,
      'notes',
      Array.from({ length: 5000 }, (_, n) => ({ n, text })),
    );
    expect((await store.getRow(accountId, 'notes', 5000)).json).to.include('"n":4999');
  });

  it('start the WAL over under a steady load of reads beside the writes, which a passive checkpoint never does', async () => {
    const file = join(dir, 'rowbase.sqlite');
    await store.insertRows(accountId, 'notes', [{ n: 0 }]);
    // A checkpointer beside the store's, restarting past 64 frames (256 KB) where the store's waits for 16 MB,
    // aside of the store's writes as the store's own does.
    const { writes } = store as SqliteStore;
    const restarting = new SqliteReaders(file, 64, (task) => writes.aside(task));
    // The WAL header's checkpoint sequence number, which goes up each time a writer starts the WAL over.
    const header = Buffer.alloc(16);
    const restarts = () => {
      const fd = openSync(`${file}-wal`, 'r');
      readSync(fd, header, 0, 16, 0);
      closeSync(fd);
      return header.readUInt32BE(12);
    };
    let going = true;
    // Writes back to back, and reads beside them, none of them ever stopping.
    const load = [
      ...Array.from({ length: 4 }, async () => {
        while (going) await store.getRow(accountId, 'notes', 1);
      }),
      ...Array.from({ length: 20 }, async (_, n) => {
        while (going) await store.insertRows(accountId, 'notes', [{ n }]);
      }),
    ];
    const first = restarts();
    let seen = 0;
    try {
      // Each start over needs the writer's lock within the checkpointer's short wait: on a loaded host
      // fewer land a second, so the bound is only there to end a test whose WAL never starts over.
      for (const started = performance.now(); seen < 3 && performance.now() - started < 20_000; ) {
        await store.getRow(accountId, 'notes', 1);
        seen = restarts() - first;
      }
    } finally {
      going = false;
      await Promise.all(load);
      await restarting.close();
    }
    expect(seen, 'the WAL never started over').to.be.at.least(3);
  });

  it("read a page ranked by _score from its best scores, then each one's row by its key, never every row", async () => {
    // The best scores' LIMIT is bound, so SQLite's planner cannot count them: left to choose, it read every
    // row of the collection and looked each one's score up (docs/search.md, "The cost of a ranked page").
    const page = { limit: 20, offset: 0, order: [{ field: SCORE, direction: 'desc' as const }], scored: true, now: Date.now() };
    const { sql: text, params } = orderedPage(byName(accountId, 'notes'), page, undefined, searchSql.scores(['red', 'shoes']));
    const plan = (await sqlite().read<{ detail: string }>(`explain query plan ${text}`, params)).map(({ detail }) => detail);
    expect(plan).to.include('SCAN scored');
    const rowReads = plan.filter((detail) => /^(SCAN|SEARCH) rows\b/.test(detail));
    expect(rowReads).to.have.length.above(0);
    for (const read of rowReads) expect(read).to.match(/\(collection_id=\? AND id=\?\)$/);
  });
});
