// PostgreSQL's inserts into one collection, batched (src/db/postgres/rows.ts): concurrent inserts each
// keep consecutive ids, and their events follow in id order.
import { expect } from 'chai';
import type { Store } from '../../../src/db/open-store.ts';
import { skipWithoutPostgres, storeWithAccount, type TestDatabase } from '../../support/backends.ts';

type Row = { id: number } & Record<string, unknown>;

describe('inserts on PostgreSQL', () => {
  describe('on a database', () => {
    let database: TestDatabase;
    let store: Store;
    let accountId: number;
    before(async function () {
      await skipWithoutPostgres(this);
    });
    beforeEach(async () => {
      ({ database, store, accountId } = await storeWithAccount('postgres', 'writer'));
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
          return { sent: rows, got: JSON.parse((await store.insertRows(accountId, 'notes', rows)).json) as Row[] };
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
