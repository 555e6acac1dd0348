// Grouped writes on SQLite (src/db/engine/grouping.ts, GroupedWrites): concurrent row writes share transactions, and each
// still succeeds or fails alone, with nothing of a failed one stored; inserts into one collection merge.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import sqlite3 from 'sqlite3';
import type { SqliteStore } from '../../../src/db/open-store.ts';
import { openStore, type Store } from '../../../src/db/open-store.ts';
import type { ApiError } from '../../../src/errors.ts';
import { pollUntil } from '../../support/process.ts';

type Row = { id: number } & Record<string, unknown>;

describe('grouped writes on SQLite', () => {
  let dir: string;
  let store: Store;
  let accountId: number;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rowbase-writes-'));
    store = await openStore(`sqlite:${join(dir, 'rowbase.sqlite')}`);
    await store.createKey('writer');
    accountId = (await store.knex('accounts').where({ name: 'writer' }).first('id')).id;
    await store.createCollection(accountId, 'notes');
  });
  afterEach(async () => {
    await store.close().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });
  const writes = () => (store as SqliteStore).writes;
  const codeOf = (settled: PromiseSettledResult<unknown>) => (settled.status === 'rejected' ? (settled.reason as ApiError).code : 'ok');

  it('commit concurrent writes together, and a failing one alone fails, leaving no trace', async () => {
    await store.insertRows(accountId, 'notes', [{ n: 0 }]);
    const before = { ...writes().stats };
    const settled = await Promise.allSettled([
      ...Array.from({ length: 30 }, (_, n) => store.insertRows(accountId, 'notes', [{ n: n + 1 }])),
      store.updateRow(accountId, 'notes', 999, { format: 'merge', fields: { n: -1 } }), // no such row
      store.deleteRow(accountId, 'notes', 998), // no such row
      store.insertRows(accountId, 'other', [{ n: -1 }]), // no such collection
      store.updateRow(accountId, 'notes', 1, { format: 'merge', fields: { patched: true } }),
    ]);
    expect(settled.map(codeOf)).to.deep.equal([...Array(30).fill('ok'), 'not_found', 'not_found', 'not_found', 'ok']);
    const groups = writes().stats.groups - before.groups;
    expect(writes().stats.writes - before.writes).to.be.greaterThan(groups, 'some writes shared a transaction');

    // The 31 rows, ids 1..31 with no gap; seqs 1..32 with no gap (31 inserts and the patch), and the
    // counters as they should be: the failed writes moved nothing.
    const rows = await store.knex('rows').orderBy('id').select('id');
    expect(rows.map((r) => Number(r.id))).to.deep.equal(Array.from({ length: 31 }, (_, i) => i + 1));
    const events = await store.knex('events').orderBy('seq').select('seq', 'type');
    expect(events.map((e) => Number(e.seq))).to.deep.equal(Array.from({ length: 32 }, (_, i) => i + 1));
    expect(events.filter((e) => e.type === 'update')).to.have.length(1);
    const collection = await store.getCollection(accountId, 'notes');
    expect(collection.row_count).to.equal(31);
    expect(JSON.parse((await store.getRow(accountId, 'notes', 1)).json)).to.deep.equal({ id: 1, n: 0, patched: true });
  });

  it('merge concurrent inserts into one collection, each keeping its rows together and in order', async () => {
    await store.createCollection(accountId, 'more');
    const before = writes().stats.merged;
    const sizes = Array.from({ length: 24 }, (_, n) => 1 + ((n * 7) % 5));
    const answers = await Promise.all(
      sizes.map(async (size, n) => {
        const collection = n % 3 === 0 ? 'more' : 'notes';
        const rows = Array.from({ length: size }, (_, i) => ({ request: n, i }));
        return { collection, sent: rows, got: JSON.parse((await store.insertRows(accountId, collection, rows)).json) as Row[] };
      }),
    );
    expect(writes().stats.merged - before).to.be.greaterThan(0, 'some inserts were merged');
    for (const collection of ['notes', 'more']) {
      const mine = answers.filter((answer) => answer.collection === collection);
      // Each request's rows: as sent, with consecutive ids; all of them: ids 1..n, each once.
      for (const { sent, got } of mine) {
        expect(got.map(({ id, ...fields }) => fields)).to.deep.equal(sent);
        expect(got.map((row) => row.id - got[0].id)).to.deep.equal(sent.map((_, i) => i));
      }
      const ids = mine.flatMap(({ got }) => got.map((row) => row.id)).sort((a, b) => a - b);
      expect(ids).to.deep.equal(Array.from({ length: ids.length }, (_, i) => i + 1));
      // Each row stored as answered, and its insert event has the row's id as its seq.
      const { id } = await store.knex('collections').where({ name: collection }).first('id');
      const events = await store.readEvents(Number(id), { after: 0, limit: 1000 });
      expect(events.map((event) => [event.seq, event.row])).to.deep.equal(
        mine
          .flatMap(({ got }) => got)
          .sort((a, b) => a.id - b.id)
          .map((row) => [row.id, row]),
      );
    }
  });

  it('merge concurrent patches of one collection without losing any, each event the row as that patch left it', async () => {
    await store.insertRows(accountId, 'notes', [{ row: 1 }, { row: 2 }, { row: 3 }]);
    const before = writes().stats.merged;
    // Thirty patches over three rows, each adding a field of its own: a lost update loses a field.
    const answers = await Promise.all(
      Array.from(
        { length: 30 },
        async (_, n) =>
          JSON.parse((await store.updateRow(accountId, 'notes', 1 + (n % 3), { format: 'merge', fields: { [`p${n}`]: n } })).json) as Row,
      ),
    );
    expect(writes().stats.merged - before).to.be.greaterThan(0, 'some patches were merged');
    for (const id of [1, 2, 3]) {
      const mine = Array.from({ length: 30 }, (_, n) => n).filter((n) => n % 3 === id - 1);
      const row = JSON.parse((await store.getRow(accountId, 'notes', id)).json);
      expect(row).to.deep.equal({ id, row: id, ...Object.fromEntries(mine.map((n) => [`p${n}`, n])) });
    }
    // Each answer is the row as its own patch left it; the events, in seq order, grow each row one field at a time.
    const { id } = await store.knex('collections').where({ name: 'notes' }).first('id');
    const events = (await store.readEvents(Number(id), { after: 3, limit: 100 })).map((event) => event.row as Row);
    expect(events).to.have.length(30);
    for (const answer of answers) expect(events).to.deep.include(answer);
    for (const rowId of [1, 2, 3]) {
      const sizes = events.filter((row) => row.id === rowId).map((row) => Object.keys(row).length);
      expect(sizes).to.deep.equal(Array.from({ length: 10 }, (_, i) => 3 + i));
    }
  });

  it('merge concurrent patches only with patches of as many fields, and lose none of any size', async () => {
    await store.insertRows(accountId, 'notes', [{ row: 1 }, { row: 2 }]);
    const before = writes().stats.merged;
    // Forty patches over two rows, of one to four fields each (a statement sets a number of fields).
    const patches = Array.from({ length: 40 }, (_, n) =>
      Object.fromEntries(Array.from({ length: 1 + (n % 4) }, (_, i) => [`p${n}_${i}`, n])),
    );
    await Promise.all(patches.map((patch, n) => store.updateRow(accountId, 'notes', 1 + (n % 2), { format: 'merge', fields: patch })));
    expect(writes().stats.merged - before).to.be.greaterThan(0, 'some patches were merged');
    for (const id of [1, 2]) {
      const mine = patches.filter((_, n) => n % 2 === id - 1);
      expect(JSON.parse((await store.getRow(accountId, 'notes', id)).json)).to.deep.equal(Object.assign({ id, row: id }, ...mine));
    }
  });

  it('merge patches of rows that exist with patches of rows that do not, each row found in its own collection', async () => {
    await store.createCollection(accountId, 'more');
    await store.insertRows(accountId, 'notes', [{ row: 1 }, { row: 2 }, { row: 3 }]);
    await store.insertRows(accountId, 'more', [{ other: 1 }, { other: 2 }, { other: 3 }]);
    const before = writes().stats.merged;
    // Ids 1..3 in notes, 7 and 8 that it never had, each three times over; `more` has rows 1..3 of its own.
    const ids = Array.from({ length: 15 }, (_, n) => [1, 7, 2, 8, 3][n % 5]);
    const settled = await Promise.allSettled(
      ids.map((id, n) => store.updateRow(accountId, 'notes', id, { format: 'merge', fields: { [`p${n}`]: n } })),
    );
    expect(writes().stats.merged - before).to.be.greaterThan(0, 'some patches were merged');
    expect(settled.map(codeOf)).to.deep.equal(ids.map((id) => (id > 3 ? 'not_found' : 'ok')));
    for (const id of [1, 2, 3]) {
      const mine = ids.flatMap((rowId, n) => (rowId === id ? [[`p${n}`, n]] : []));
      expect(JSON.parse((await store.getRow(accountId, 'notes', id)).json)).to.deep.equal({ id, row: id, ...Object.fromEntries(mine) });
      expect(JSON.parse((await store.getRow(accountId, 'more', id)).json)).to.deep.equal({ id, other: id });
    }
    // Only the nine patches that found their row took a seq, with no gap, and each its row's event.
    const { id, last_seq } = await store.knex('collections').where({ name: 'notes' }).first('id', 'last_seq');
    expect(Number(last_seq)).to.equal(3 + 9);
    const events = await store.readEvents(Number(id), { after: 3, limit: 100 });
    expect(events.map((event) => event.seq)).to.deep.equal(Array.from({ length: 9 }, (_, i) => 4 + i));
    expect(events.map((event) => (event.row as Row).id).sort()).to.deep.equal([1, 1, 1, 2, 2, 2, 3, 3, 3]);
  });

  it('send a second merged write while one is under way, and still give ids and seqs in the order they commit', async () => {
    const before = writes().stats.overlapped;
    // Waves of concurrent inserts: while one group is under way, the next has more than enough writers waiting.
    const answers: Row[][] = [];
    for (let wave = 0; wave < 5; wave++) {
      const sent = Array.from({ length: 40 }, (_, n) =>
        store.insertRows(accountId, 'notes', [
          { wave, n },
          { wave, n, second: true },
        ]),
      );
      for (const answer of await Promise.all(sent)) answers.push(JSON.parse(answer.json));
    }
    expect(writes().stats.overlapped - before).to.be.greaterThan(0, 'a merged write went out beside another');
    // Each request's two rows have consecutive ids; all of them are 1..400, each once.
    for (const [first, second] of answers) expect(second.id).to.equal(first.id + 1);
    const ids = answers
      .flat()
      .map((row) => row.id)
      .sort((a, b) => a - b);
    expect(ids).to.deep.equal(Array.from({ length: 400 }, (_, i) => i + 1));
    // Each row's insert event has its id as its seq, and carries the row as answered.
    const { id } = await store.knex('collections').where({ name: 'notes' }).first('id');
    const events = await store.readEvents(Number(id), { after: 0, limit: 1000 });
    const byId = new Map(answers.flat().map((row) => [row.id, row]));
    expect(events.map((event) => [event.seq, event.row])).to.deep.equal(ids.map((rowId) => [rowId, byId.get(rowId)]));
  });

  // Field by field in SQL, and (for names no JSON path can spell) made in Node from the row read in a transaction.
  for (const [how, field] of [
    ['set field by field', (n: number) => `p${n}`],
    ['made in Node from the row as read', (n: number) => `p"${n}`],
  ] as const) {
    it(`lose no patch of a row that two instances patch at once, ${how}`, async () => {
      await store.insertRows(accountId, 'notes', [{ row: 1 }]);
      const other = await openStore(`sqlite:${join(dir, 'rowbase.sqlite')}`);
      try {
        // Each instance's writes go between the other's: a patch must be made from the row as the last write left it.
        const answers = await Promise.all(
          Array.from({ length: 40 }, (_, n) =>
            (n % 2 === 0 ? store : other).updateRow(accountId, 'notes', 1, { format: 'merge', fields: { [field(n)]: n } }),
          ),
        );
        const fields = Object.fromEntries(Array.from({ length: 40 }, (_, n) => [field(n), n]));
        expect(JSON.parse((await store.getRow(accountId, 'notes', 1)).json)).to.deep.equal({ id: 1, row: 1, ...fields });
        // One event per patch, in seq order, each the row one field larger than the one before.
        const { id } = await store.knex('collections').where({ name: 'notes' }).first('id');
        const events = (await store.readEvents(Number(id), { after: 1, limit: 100 })).map((event) => event.row as Row);
        expect(events.map((row) => Object.keys(row).length)).to.deep.equal(Array.from({ length: 40 }, (_, i) => 3 + i));
        for (const answer of answers) expect(events).to.deep.include(JSON.parse(answer.json));
      } finally {
        await other.close();
      }
    });
  }

  it('run a task aside only while no write is under way, and start none until it has ended', async () => {
    // Committed rows, as another connection sees them (a RESTART checkpoint's, say).
    const reader = new sqlite3.Database(join(dir, 'rowbase.sqlite'), sqlite3.OPEN_READONLY);
    const committed = () =>
      new Promise<number>((resolve, reject) =>
        reader.get<{ n: number }>('select count(*) as n from rows', (error, row) => (error ? reject(error) : resolve(row.n))),
      );
    try {
      // Writes back to back, from before the task is queued until after it has ended.
      let going = true;
      const load = Array.from({ length: 20 }, async (_, n) => {
        while (going) await store.insertRows(accountId, 'notes', [{ n }]);
      });
      await pollUntil(async () => (await committed()) >= 100, 10_000);
      // A write under way as the task began, or begun during it, would commit between two of its reads.
      const seen = await writes().aside(async () => {
        const counts: number[] = [];
        for (let read = 0; read < 10; read++) counts.push(await committed());
        return counts;
      });
      going = false;
      await Promise.all(load);
      expect(seen[0]).to.be.at.least(100);
      expect(seen).to.deep.equal(Array(10).fill(seen[0]));
      expect(await committed()).to.be.above(seen[0], 'the writes went on after the task');
    } finally {
      await new Promise((resolve) => reader.close(resolve));
    }
  });

  it('answer a write only once its group has committed', async () => {
    // Each answer finds its row through the read-only connection, which sees only committed data.
    const seen = await Promise.all(
      Array.from({ length: 20 }, async (_, n) => {
        const [row] = JSON.parse((await store.insertRows(accountId, 'notes', [{ n }])).json);
        return JSON.parse((await store.getRow(accountId, 'notes', row.id)).json).n;
      }),
    );
    expect(seen).to.deep.equal(Array.from({ length: 20 }, (_, n) => n));
  });
});
