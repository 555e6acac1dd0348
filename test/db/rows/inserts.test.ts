// An insert's rows handed over to the store (src/db/rows/inserts.ts, insertRows, `handOver`, as a request's
// are): once checked and written as text, the array it was given is emptied, so that a batch waiting for the
// write holds its rows' texts, not their objects; a refused insert, or one not handed over, leaves the array
// as it was. The rows answered and stored are the ones sent, on each backend.
import { expect } from 'chai';
import type { Store } from '../../../src/db/open-store.ts';
import { ApiError } from '../../../src/errors.ts';
import { checkRowSchema } from '../../../src/schema/check.ts';
import { describeEachBackend, storeWithAccount, type TestDatabase } from '../../support/backends.ts';

describeEachBackend('an insert hands its rows over', (backend) => {
  let database: TestDatabase;
  let store: Store;
  let accountId: number;
  before(async () => {
    ({ database, store, accountId } = await storeWithAccount(backend, 'writer'));
    await store.createCollection(accountId, 'loose');
    await store.createCollection(accountId, 'typed');
    await store.putSchema(
      accountId,
      'typed',
      checkRowSchema({ type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] }, 'schema'),
    );
  });
  after(async () => {
    await store?.close().catch(() => {});
    await database?.drop();
  });

  const storedFields = async (collection: string) =>
    (
      await store.knex('rows').join('collections', 'collections.id', 'rows.collection_id').where({ name: collection }).orderBy('rows.id')
    ).map(({ data }: { data: string }) => JSON.parse(data));

  for (const collection of ['loose', 'typed']) {
    it(`empties the array once the rows are written, and answers and stores them as sent (${collection})`, async () => {
      const rows = [
        { n: 1, s: 'é' },
        { n: 2, nested: { deep: [1, 2] } },
      ];
      const sent = structuredClone(rows);
      const inserted = await store.insertRows(accountId, collection, rows, { handOver: true });
      expect(rows).to.deep.equal([]);
      const answered = JSON.parse(inserted.json) as { id: number }[];
      expect(answered.map(({ id, ...fields }) => fields)).to.deep.equal(sent);
      expect(inserted.versions).to.have.length(2);
      expect(await storedFields(collection)).to.deep.equal(sent);
    });
  }

  it('leaves the array as it was when the rows are not handed over', async () => {
    const rows = [{ n: 4 }, { n: 5 }];
    const inserted = await store.insertRows(accountId, 'typed', rows);
    expect(rows).to.deep.equal([{ n: 4 }, { n: 5 }]);
    expect((JSON.parse(inserted.json) as { n: number }[]).map(({ n }) => n)).to.deep.equal([4, 5]);
  });

  it('leaves the array as it was when the rows are refused', async () => {
    const rows = [{ n: 3 }, { n: 'three' }];
    const error = await store.insertRows(accountId, 'typed', rows, { handOver: true }).then(
      () => undefined,
      (refused: unknown) => refused,
    );
    expect(error).to.be.instanceOf(ApiError);
    expect((error as ApiError).code).to.equal('row_invalid');
    expect(rows).to.deep.equal([{ n: 3 }, { n: 'three' }]);
  });
});
