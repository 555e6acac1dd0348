// Unique indexes as keys (src/db/collections/indexes.ts): declaring one keys its own collection's rows and
// holds no other collection's writes; its keys follow every write of its rows.
import { expect } from 'chai';
import type { Store } from '../../../src/db/open-store.ts';
import type { ApiError } from '../../../src/errors.ts';
import { jsonText } from '../../../src/rows.ts';
import { describeEachBackend, skipWithoutPostgres, storeWithAccount, type TestDatabase } from '../../support/backends.ts';
import { pollUntil } from '../../support/process.ts';

describeEachBackend('unique indexes', (backend) => {
  let database: TestDatabase;
  let store: Store;
  let accountId: number;
  before(async function () {
    if (backend === 'postgres') await skipWithoutPostgres(this);
    ({ database, store, accountId } = await storeWithAccount(backend, 'keyed'));
  });
  after(async () => {
    await store?.close().catch(() => {});
    await database?.drop();
  });

  /** The keys stored of the collection `name`, each its row's id and whether it is null, by row. */
  const keysOf = async (name: string) => {
    const { id } = await store.knex('collections').where({ account_id: accountId, name }).first('id');
    const keys = await store.knex('unique_keys').where({ collection_id: id }).orderBy('row_id').select('row_id', 'key');
    return keys.map((key: { row_id: number | string; key: string | null }) => [Number(key.row_id), key.key !== null]);
  };

  it('keys each row of its collection alone, null where a field is missing or null, and each write after', async () => {
    await store.createCollection(accountId, 'people');
    await store.createCollection(accountId, 'others');
    await store.insertRows(accountId, 'people', [{ email: 'a' }, { email: null }, {}]);
    await store.insertRows(accountId, 'others', [{ email: 'a' }]);
    await store.createIndex(accountId, 'people', ['email'], true);
    expect(await keysOf('people')).to.deep.equal([
      [1, true],
      [2, false],
      [3, false],
    ]);
    expect(await keysOf('others')).to.deep.equal([]);
    await store.insertRows(accountId, 'people', [{ email: 'b' }]);
    await store.updateRow(accountId, 'people', 3, { format: 'merge', fields: { email: 'c' } });
    await store.deleteRow(accountId, 'people', 1);
    expect(await keysOf('people')).to.deep.equal([
      [2, false],
      [3, true],
      [4, true],
    ]);
    await store.deleteIndex(accountId, 'people', 'email');
    expect(await keysOf('people')).to.deep.equal([]);
  });

  it("keeps its values unique before and after its field's sort index is made, the strings then its keys on SQLite no more", async () => {
    await store.createCollection(accountId, 'sorting');
    await store.insertRows(accountId, 'sorting', [{ email: 'a' }, { email: 1 }]);
    await store.createIndex(accountId, 'sorting', ['email'], true);
    const holderOf = async (email: unknown) => {
      try {
        await store.insertRows(accountId, 'sorting', [{ email }]);
      } catch (error) {
        return (error as ApiError).options.existing_id;
      }
      return undefined;
    };
    expect(await keysOf('sorting')).to.deep.equal([
      [1, true],
      [2, true],
    ]);
    expect([await holderOf('a'), await holderOf(1)]).to.deep.equal([1, 2]);
    // The sort index of the field, listed: on SQLite it keeps the strings from now on.
    await store.sortBy(accountId, 'sorting', 'email');
    expect(await keysOf('sorting')).to.deep.equal(
      backend === 'sqlite'
        ? [[2, true]]
        : [
            [1, true],
            [2, true],
          ],
    );
    expect([await holderOf('a'), await holderOf(1.0), await holderOf('b')]).to.deep.equal([1, 2, undefined]);
    expect(await holderOf('b')).to.equal(3);
  });

  it("refuses an import whose rows repeat a value among themselves or a stored row's, naming the holder: nothing imported", async () => {
    await store.createCollection(accountId, 'imported');
    await store.createIndex(accountId, 'imported', ['email'], true);
    await store.sortBy(accountId, 'imported', 'email');
    await store.insertRows(accountId, 'imported', [{ email: 'a' }, { email: 1 }]);
    const rows = (...emails: unknown[]) => emails.map((email, i) => ({ id: 10 + i, text: JSON.stringify({ email }) }));
    const refusal = async (imported: { id: number; text: string }[]) => {
      try {
        await store.importRows(accountId, 'imported', imported, 0);
      } catch (error) {
        return [(error as ApiError).code, (error as ApiError).options.existing_id];
      }
      return undefined;
    };
    expect(await refusal(rows('b', 'a'))).to.deep.equal(['unique_violation', 1]);
    expect(await refusal(rows('b', 1.0))).to.deep.equal(['unique_violation', 2]);
    expect(await refusal(rows('c', 'b', 'c'))).to.deep.equal(['unique_violation', 10]);
    expect(
      JSON.parse(
        jsonText((await store.listRows(accountId, 'imported', { limit: 10, offset: 0, order: [{ field: 'id', direction: 'asc' }] })).json),
      ),
    ).to.have.length(2);
    await store.importRows(accountId, 'imported', rows('b', 'c'), 0);
    expect(await refusal([{ id: 20, text: '{"email":"c"}' }])).to.deep.equal(['unique_violation', 11]);
  });

  // On PostgreSQL a unique index was a partial index of the shared rows table, made holding the table in
  // SHARE mode: every account's writes waited for it. (On SQLite one writer runs at a time.)
  if (backend === 'postgres') {
    it("is declared holding its own collection's writes alone: another collection's insert goes on meanwhile", async () => {
      await store.createCollection(accountId, 'held');
      await store.createCollection(accountId, 'free');
      const holder = await store.knex.client.acquireConnection();
      try {
        // A write of `held` under way: its collection's row held until it commits.
        const holderPid = (await holder.query('select pg_backend_pid() as pid')).rows[0].pid;
        await holder.query('begin');
        await holder.query('select id from collections where account_id = $1 and name = $2 for update', [accountId, 'held']);
        const declared = store.createIndex(accountId, 'held', ['email'], true);
        // The declaration waits for that write, on the collection's row.
        await pollUntil(async () => {
          const { rows } = await store.knex.raw('select count(*)::int as n from pg_stat_activity where ? = any(pg_blocking_pids(pid))', [
            holderPid,
          ]);
          return rows[0].n > 0;
        }, 10_000);
        const inserted = JSON.parse((await store.insertRows(accountId, 'free', [{ email: 'a' }])).json);
        expect(inserted).to.deep.equal([{ id: 1, email: 'a' }]);
        await holder.query('commit');
        expect(await declared).to.deep.equal({ name: 'email', fields: ['email'], unique: true });
      } finally {
        await store.knex.client.releaseConnection(holder);
      }
    });
  }
});
