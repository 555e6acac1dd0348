// PostgreSQL's merged inserts (src/db/merged-inserts.ts): inserts into one collection that wait their
// turn go as one statement, each request keeping its rows together and in order, and a merged
// statement that fails runs each of its inserts alone.
import { expect } from 'chai';
import type { Knex } from 'knex';
import { type InsertStatement, mergedInsert } from '../../../src/db/postgres/merged-inserts.ts';
import { openStore, type Store } from '../../../src/db/store.ts';
import { createDatabase, postgresUnavailable, type TestDatabase } from '../../support/backends.ts';

type Row = { id: number } & Record<string, unknown>;

describe('merged inserts on PostgreSQL', () => {
  describe('the queue', () => {
    /** A statement that takes a turn of the event loop, answers ids from 1 on, and records what it was given. */
    const fakeStatement = (refuse = '') => {
      const statements: string[][] = [];
      let next = 1;
      const statement: InsertStatement = async (texts) => {
        statements.push(texts);
        await new Promise((resolve) => setImmediate(resolve));
        if (texts.includes(refuse)) throw new Error('refused');
        const first = next;
        next += texts.length;
        return first;
      };
      return { statements, statement };
    };
    const knex = () => ({}) as Knex;

    it('runs two statements at once, and merges the inserts that wait meanwhile, in order', async () => {
      const { statements, statement } = fakeStatement();
      const db = knex();
      const requests = Array.from({ length: 6 }, (_, n) => [`${n}a`, `${n}b`]);
      const firsts = await Promise.all(requests.map((texts) => mergedInsert(db, 'c', texts, statement)));
      expect(statements).to.deep.equal([
        ['0a', '0b'],
        ['1a', '1b'],
        ['2a', '2b', '3a', '3b', '4a', '4b', '5a', '5b'],
      ]);
      expect(firsts).to.deep.equal([1, 3, 5, 7, 9, 11]);
    });

    it('runs each insert of a failed merged statement alone, so that only the failing one fails', async () => {
      const { statements, statement } = fakeStatement('bad');
      const db = knex();
      const settled = await Promise.allSettled(
        [['0'], ['1'], ['2'], ['bad'], ['4']].map((texts) => mergedInsert(db, 'c', texts, statement)),
      );
      expect(settled.map((each) => (each.status === 'fulfilled' ? each.value : 'failed'))).to.deep.equal([1, 2, 3, 'failed', 4]);
      expect(statements).to.deep.equal([['0'], ['1'], ['2', 'bad', '4'], ['2'], ['bad'], ['4']]);
    });

    it('keeps the inserts of different collections apart', async () => {
      const { statements, statement } = fakeStatement();
      const db = knex();
      await Promise.all(['a', 'b', 'a', 'b', 'a', 'b'].map((key, n) => mergedInsert(db, key, [`${key}${n}`], statement)));
      for (const texts of statements) expect(new Set(texts.map((text) => text[0])).size).to.equal(1);
    });
  });

  describe('on a database', () => {
    let database: TestDatabase;
    let store: Store;
    let accountId: number;
    before(async function () {
      if (await postgresUnavailable()) this.skip();
    });
    beforeEach(async () => {
      database = await createDatabase('postgres');
      store = await openStore(database.url);
      await store.createKey('writer');
      accountId = (await store.knex('accounts').where({ name: 'writer' }).first('id')).id;
      await store.createCollection(accountId, 'notes');
    });
    afterEach(async () => {
      await store?.close().catch(() => {});
      await database?.drop();
    });

    it('stores concurrent inserts each with consecutive ids, and their events in id order', async () => {
      const sizes = Array.from({ length: 24 }, (_, n) => 1 + ((n * 7) % 5));
      const answers = await Promise.all(
        sizes.map(async (size, n) => {
          const rows = Array.from({ length: size }, (_, i) => ({ request: n, i, text: 'a\u0000b' }));
          return { sent: rows, got: JSON.parse(await store.insertRows(accountId, 'notes', rows)) as Row[] };
        }),
      );
      for (const { sent, got } of answers) {
        expect(got.map(({ id, ...fields }) => fields)).to.deep.equal(sent);
        expect(got.map((row) => row.id - got[0].id)).to.deep.equal(sent.map((_, i) => i));
      }
      const all = answers.flatMap(({ got }) => got).sort((a, b) => a.id - b.id);
      expect(all.map((row) => row.id)).to.deep.equal(Array.from({ length: all.length }, (_, i) => i + 1));
      const { id } = await store.knex('collections').where({ name: 'notes' }).first('id');
      const events = await store.readEvents(Number(id), { after: 0, limit: 1000 });
      expect(events.map((event) => [event.seq, event.row])).to.deep.equal(all.map((row) => [row.id, row]));
      expect((await store.getCollection(accountId, 'notes')).row_count).to.equal(all.length);
    });
  });
});
