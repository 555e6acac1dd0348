// A row read by id held to a caller's read rule (src/db/reads/rows.ts, getRow's `where`), the rule tested
// in the row's own statement: each read answers its row exactly when matches() (src/query/evaluate.ts)
// says the rule holds for it, and the 404 of a missing row otherwise. The reads go out at once, so that
// on SQLite those of one rule's shape share one statement, each with its own bindings (readers.ts,
// readMerged): no read may answer by another's.
import { expect } from 'chai';
import { openStore, type Store } from '../../../src/db/open-store.ts';
import { ApiError } from '../../../src/errors.ts';
import { matches, type Row } from '../../../src/query/evaluate.ts';
import { type Filter, type JsonValue, readFilter } from '../../../src/query/filter.ts';
import { createDatabase, describeEachBackend, type TestDatabase } from '../../support/backends.ts';

/** Rows whose fields the rules below name, of every JSON type, some missing a field, strings that are hard to bind. */
const ROWS: Record<string, JsonValue>[] = [
  { owner: 'ada', n: 1, public: true, tags: ['a', 'b'], team: { id: 7 } },
  { owner: 'bob', n: 2.5, public: false, tags: ['b'], team: { id: 8 } },
  { owner: 'ada', n: -3, tags: [], team: null },
  { owner: 'q"?\\', n: 2 ** 53, public: true },
  { owner: 'é\ud800', n: 0, tags: ['?'], team: { id: 7, name: 'x' } },
  { owner: null, n: '1' },
  { n: 10, public: true, tags: ['a'] },
  { owner: '?', n: 1e21, team: { id: '7' } },
];

/**
 * Rules as a grant fills them in: several values of each shape (one statement text a shape on SQLite,
 * each its own bindings), of every binding type (texts, numbers, null, booleans), with `?` in values.
 */
const RULES: JsonValue[] = [
  ...['ada', 'bob', 'q"?\\', 'é\ud800', '?', 'nobody'].map((owner) => ({ owner })),
  ...[0, 1, 2.5, 2 ** 53, -3].map((n) => ({ n: { $gte: n } })),
  ...[true, false].map((flag) => ({ public: flag })),
  { owner: null },
  { owner: { $exists: false } },
  ...['a', 'b', '?'].map((tag) => ({ tags: { $contains: tag } })),
  ...[7, '7', 8].map((id) => ({ 'team.id': id })),
  { team: { id: 7 } },
  ...(
    [
      ['ada', true],
      ['bob', false],
    ] as const
  ).map(([owner, flag]): JsonValue => ({ $or: [{ owner }, { public: flag }] })),
  ...[['ada'], ['bob', '?'], []].map((owners) => ({ owner: { $in: owners } })),
  ...[1, 3, 7].map((id) => ({ id: { $lte: id }, $not: { owner: 'bob' } })),
  { owner: { $prefix: 'q"' } },
  { n: { $gt: 1, $lt: 3 } },
];

describeEachBackend('a row read by id held to a rule', (backend) => {
  let database: TestDatabase;
  let store: Store;
  let accountId: number;
  let stored: Row[];
  before(async () => {
    database = await createDatabase(backend);
    store = await openStore(database.url);
    const { key } = await store.createKey('reader');
    accountId = (await store.findPrincipal(key))!.accountId;
    await store.createCollection(accountId, 'notes');
    stored = JSON.parse((await store.insertRows(accountId, 'notes', ROWS)).json);
  });
  after(async () => {
    await store?.close().catch(() => {});
    await database?.drop();
  });

  const filterOf = (rule: JsonValue): Filter => {
    const { filter, errors } = readFilter(rule);
    expect(errors, JSON.stringify(rule)).to.equal(undefined);
    return filter!;
  };

  /** Each read's answer: the row, or the 404's detail. */
  const answer = (read: Promise<{ json: string }>) =>
    read.then(
      ({ json }) => JSON.parse(json) as Row,
      (error: unknown) => {
        if (!(error instanceof ApiError)) throw error;
        expect(error.status).to.equal(404);
        return error.detail;
      },
    );

  it('answers each row the rule holds for, and a missing row for every other, reads of one shape sent together', async () => {
    const filters = RULES.map(filterOf);
    // Every row by every rule, at once, then again: a grant's filter is one object for all its reads.
    for (let round = 0; round < 2; round++) {
      const reads = filters.flatMap((filter) => stored.map((row) => answer(store.getRow(accountId, 'notes', row.id, filter))));
      const answers = await Promise.all(reads);
      const expected = filters.flatMap((filter) =>
        stored.map((row) => (matches(filter, row) ? row : `There is no row ${row.id} in collection notes.`)),
      );
      expect(answers).to.deep.equal(expected);
    }
    // Some rows granted and some not, by most rules: the table tells rules apart.
    const telling = filters.filter((filter) => {
      const granted = stored.filter((row) => matches(filter, row)).length;
      return granted > 0 && granted < stored.length;
    });
    expect(telling.length).to.be.above(RULES.length * 0.7);
  });

  it('answers a missing row, and a missing collection, as without a rule', async () => {
    const filter = filterOf({ owner: 'ada' });
    const outcomes = await Promise.all([
      answer(store.getRow(accountId, 'notes', 1_000, filter)),
      answer(store.getRow(accountId, 'absent', 1, filter)),
      answer(store.getRow(accountId, 'notes', 1, filter)),
    ]);
    expect(outcomes).to.deep.equal(['There is no row 1000 in collection notes.', 'There is no collection named absent.', stored[0]]);
  });
});
