// Batches of inserts alone (src/db/rows/batch.ts, writeBatch) that wait beside each other are written
// together as one write (on PostgreSQL one statement over their collections): each batch answered its
// own rows, after those of the batches before it in the group, and a group that fails runs each batch
// again alone, so that only the failing one fails, naming its own operation.
import { expect } from 'chai';
import { openStore, type Store } from '../../../src/db/open-store.ts';
import type { BatchOperation, BatchResult } from '../../../src/db/rows/batch.ts';
import { ApiError } from '../../../src/errors.ts';
import { checkRowSchema } from '../../../src/schema/check.ts';
import { describeEachBackend, storeWithAccount, type TestDatabase } from '../../support/backends.ts';
import { range } from '../../support/feed.ts';

type Row = { id: number; n: number };

describeEachBackend('batches of inserts written together', (backend) => {
  let database: TestDatabase;
  let store: Store;
  let accountId: number;
  before(async () => {
    ({ database, store, accountId } = await storeWithAccount(backend, 'writer'));
    for (const name of ['a', 'b']) await store.createCollection(accountId, name);
  });
  after(async () => {
    await store?.close().catch(() => {});
    await database?.drop();
  });

  const rowsOf = (result: BatchResult) => JSON.parse((result as { rows: { json: string } }).rows.json) as Row[];

  const operations = (n: number, into = 'b'): BatchOperation[] => [
    { op: 'insert', collection: 'a', rows: [{ n }] },
    { op: 'insert', collection: into, rows: [{ n }, { n }] },
  ];
  /** The batches of `ns`, called at once, in one turn: the first two are under way while the others wait, and go together. */
  const sendAtOnce = (ns: number[], failing?: number) =>
    Promise.allSettled(ns.map((n) => store.writeBatch(accountId, operations(n, n === failing ? 'absent' : 'b'))));
  const stored = async (name: string) =>
    (await store.knex('rows').join('collections', 'collections.id', 'rows.collection_id').where({ name })).length;

  /**
   * Each batch's rows as answered, skipping `failing`'s: its own, those in b consecutive, and the ids of
   * all of them those after `before`, one in a and two in b a batch, each once. (Groups under way at once
   * commit in either order, as requests sent at once do.)
   */
  function expectRows(settled: PromiseSettledResult<BatchResult[]>[], ns: number[], before: number, failing?: number) {
    const ids: { a: number[]; b: number[] } = { a: [], b: [] };
    for (const [index, outcome] of settled.entries()) {
      if (ns[index] === failing) continue;
      expect(outcome.status).to.equal('fulfilled');
      const [inA, inB] = (outcome as PromiseFulfilledResult<BatchResult[]>).value.map(rowsOf);
      expect([...inA, ...inB].map(({ n }) => n)).to.deep.equal([ns[index], ns[index], ns[index]]);
      expect(inB[1].id).to.equal(inB[0].id + 1);
      ids.a.push(inA[0].id);
      ids.b.push(...inB.map(({ id }) => id));
    }
    const written = ns.length - (failing === undefined ? 0 : 1);
    expect(ids.a.sort((x, y) => x - y)).to.deep.equal(range(before + 1, before + written));
    expect(ids.b.sort((x, y) => x - y)).to.deep.equal(range(2 * before + 1, 2 * (before + written)));
  }

  it('answers each batch sent at once its own rows, each written once', async () => {
    const ns = range(1, 12);
    expectRows(await sendAtOnce(ns), ns, 0);
    expect([await stored('a'), await stored('b')]).to.deep.equal([12, 24]);
  });

  it('fails only the batch that fails, naming its operation, the others written in order', async () => {
    const ns = range(13, 24);
    const failing = 19;
    const settled = await sendAtOnce(ns, failing);
    const refused = settled[ns.indexOf(failing)];
    expect(refused.status).to.equal('rejected');
    const problem = (refused as PromiseRejectedResult).reason as ApiError;
    expect(problem).to.be.instanceOf(ApiError);
    expect([problem.code, problem.options.operation]).to.deep.equal(['not_found', 1]);
    expectRows(settled, ns, 12, failing);
    expect([await stored('a'), await stored('b')]).to.deep.equal([23, 46]);
  });

  it('fails only the batch whose row takes a value of a unique index, naming its operation, the others written', async () => {
    await store.createCollection(accountId, 'u');
    await store.createIndex(accountId, 'u', ['email'], true);
    await store.insertRows(accountId, 'u', [{ email: 'taken' }]);
    const failing = 5;
    const settled = await Promise.allSettled(
      range(1, 8).map((n) =>
        store.writeBatch(accountId, [
          { op: 'insert', collection: 'a', rows: [{ n }] },
          { op: 'insert', collection: 'u', rows: [{ email: n === failing ? 'taken' : `e${n}` }] },
        ]),
      ),
    );
    const refused = settled[failing - 1];
    expect(refused.status).to.equal('rejected');
    const problem = (refused as PromiseRejectedResult).reason as ApiError;
    expect([problem.code, problem.options.operation]).to.deep.equal(['unique_violation', 1]);
    expect(settled.filter(({ status }) => status === 'fulfilled')).to.have.length(7);
    const emails = await store.knex('rows').join('collections', 'collections.id', 'rows.collection_id').where({ name: 'u' }).select('data');
    expect(emails.map(({ data }) => JSON.parse(data).email).sort()).to.deep.equal(['e1', 'e2', 'e3', 'e4', 'e6', 'e7', 'e8', 'taken']);
    expect(await stored('a')).to.equal(30);
  });

  it('checks a batch against the schema another instance set since this one last saw the collection', async () => {
    await store.createCollection(accountId, 'typed');
    expect(rowsOf((await store.writeBatch(accountId, [{ op: 'insert', collection: 'typed', rows: [{ n: 1 }] }]))[0])).to.deep.equal([
      { id: 1, n: 1 },
    ]);
    const other = await openStore(database.url);
    try {
      await other.putSchema(accountId, 'typed', checkRowSchema({ type: 'object', properties: { n: { type: 'integer' } } }, 'schema'));
    } finally {
      await other.close();
    }
    const refused = await store
      .writeBatch(accountId, [
        { op: 'insert', collection: 'a', rows: [{ n: 0 }] },
        { op: 'insert', collection: 'typed', rows: [{ n: 'two' }] },
      ])
      .catch((error: unknown) => error as ApiError);
    expect(refused).to.be.instanceOf(ApiError);
    expect([(refused as ApiError).code, (refused as ApiError).options.operation]).to.deep.equal(['row_invalid', 1]);
    const [, written] = await store.writeBatch(accountId, [
      { op: 'insert', collection: 'a', rows: [{ n: 0 }] },
      { op: 'insert', collection: 'typed', rows: [{ n: 2 }] },
    ]);
    expect(rowsOf(written)).to.deep.equal([{ id: 2, n: 2 }]);
  });
});
