// Inserts sent with an Idempotency-Key (src/db/rows/idempotency.ts) go together with the other inserts into
// their collection: on SQLite one statement stores the rows and the answers of their keys
// (src/db/sqlite/sql.ts, row_inserts), on PostgreSQL one statement too (src/db/postgres/sql.ts,
// insertBatchWithAnswersSql). Each
// key's answer is stored with its rows, and a key answered already fails its own insert alone.
import { expect } from 'chai';
import type { SqliteStore, Store } from '../../../src/db/open-store.ts';
import { insertBatchWithAnswersSql } from '../../../src/db/postgres/sql/rows.ts';
import type { Fields, InsertedRows } from '../../../src/db/rows/rows.ts';
import { type FoundAnswer, OnceTaken } from '../../../src/idempotency/answers.ts';
import { describeEachBackend, storeWithAccount, type TestDatabase } from '../../support/backends.ts';
import { pollUntil } from '../../support/process.ts';

type Row = { id: number } & Record<string, unknown>;

describeEachBackend('inserts sent with an Idempotency-Key, merged', (backend) => {
  let database: TestDatabase;
  let store: Store;
  let accountId: number;
  beforeEach(async () => {
    ({ database, store, accountId } = await storeWithAccount(backend, 'writer'));
    await store.createCollection(accountId, 'notes');
  });
  afterEach(async () => {
    await store?.close().catch(() => {});
    await database?.drop();
  });

  const at = new Date().toISOString();
  const expiresAt = new Date(Date.now() + 60_000).toISOString();
  const once = (key: string) => ({ key, hash: `hash of ${key}`, at, expiresAt });
  const insert = (rows: Fields[], key?: string) =>
    store.insertRows(accountId, 'notes', rows, { once: key === undefined ? undefined : once(key) });
  const merged = () => (backend === 'sqlite' ? (store as SqliteStore).writes.stats.merged : undefined);
  const found = (key: string) => store.findOnce(accountId, key, at);
  /** The answer as it is stored, from what the insert answered. */
  const storedOf = ({ json, versions }: InsertedRows): Omit<FoundAnswer, 'hash'> => ({
    status: 201,
    headers: versions.length === 1 ? { ETag: `"${versions[0]}"` } : {},
    body: json,
  });

  it('store each key answer with its rows, exactly as the insert answered, merged with inserts sent without one', async () => {
    const before = merged();
    const sent = Array.from({ length: 16 }, (_, n) => ({
      rows: Array.from({ length: n % 4 }, (_, i) => ({ n, i, text: 'é "quoted" \\' })),
      key: n % 3 === 0 ? undefined : `k${n}`,
    }));
    const answers = await Promise.all(sent.map(({ rows, key }) => insert(rows, key)));
    if (before !== undefined) expect(merged()! - before).to.be.greaterThan(0, 'some inserts were merged');
    for (const [index, { rows, key }] of sent.entries()) {
      const answer = answers[index];
      expect((JSON.parse(answer.json) as Row[]).map(({ id, ...fields }) => fields)).to.deep.equal(rows);
      if (key === undefined) continue;
      const stored = await found(key);
      expect(stored, key).to.deep.equal({ hash: `hash of ${key}`, ...storedOf(answer) });
    }
    const all = answers.flatMap(({ json }) => JSON.parse(json) as Row[]).sort((a, b) => a.id - b.id);
    expect(all.map((row) => row.id)).to.deep.equal(Array.from({ length: all.length }, (_, i) => i + 1));
    expect(await store.knex('idempotency_keys').count({ n: '*' }).first()).to.deep.equal({ n: backend === 'sqlite' ? 10 : '10' });
  });

  it('fail only the insert whose key was answered already, storing nothing of it, and the others', async () => {
    const first = await insert([{ n: 0 }], 'answered');
    const settled = await Promise.allSettled([
      insert([{ n: 1 }]),
      insert([{ n: 2 }], 'fresh'),
      insert([{ n: 3 }], 'answered'),
      insert([{ n: 4 }, { n: 5 }]),
    ]);
    expect(settled.map((each) => each.status)).to.deep.equal(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((settled[2] as PromiseRejectedResult).reason).to.be.instanceOf(OnceTaken);
    expect(await found('answered')).to.deep.equal({ hash: 'hash of answered', ...storedOf(first) });
    expect(await found('fresh')).to.deep.equal({
      hash: 'hash of fresh',
      ...storedOf((settled[1] as PromiseFulfilledResult<InsertedRows>).value),
    });
    const rows = (await store.knex('rows').orderBy('id').select('data')).map(({ data }) => JSON.parse(data).n);
    expect(rows.sort()).to.deep.equal([0, 1, 2, 4, 5]);
  });

  it('find the answer before the collection: a key answered already is taken even once its collection is gone', async () => {
    await insert([{ n: 0 }], 'answered');
    await store.deleteCollection(accountId, 'notes');
    const retry = insert([{ n: 0 }], 'answered');
    await retry.then(
      () => expect.fail('the retry wrote'),
      (error) => expect(error).to.be.instanceOf(OnceTaken),
    );
    const fresh = insert([{ n: 0 }], 'fresh');
    await fresh.then(
      () => expect.fail('an insert into no collection'),
      (error) => expect(error.code).to.equal('not_found'),
    );
    expect(await found('fresh')).to.equal(undefined);
  });

  // On PostgreSQL the statement stores the key's answer through the primary key: an answer stored
  // meanwhile by another transaction is met there, once that one commits. (On SQLite one writer runs at a time.)
  if (backend === 'postgres') {
    it('fail the insert whose key another request answered while its statement ran, writing nothing of it', async () => {
      const other = await store.knex.client.acquireConnection();
      try {
        // Another request's answer, stored and not yet committed, without the key's lock (as if it had
        // been answered before this request looked for it).
        const otherPid = (await other.query('select pg_backend_pid() as pid')).rows[0].pid;
        await other.query('begin');
        await other.query(
          `insert into idempotency_keys (account_id, key, request_hash, status, headers, body, created_at, expires_at)
            values ($1, 'raced', 'hash of raced', 201, '{}', '[]', $2, $3)`,
          [accountId, at, expiresAt],
        );
        const raced = insert([{ n: 1 }], 'raced');
        const settled = raced.then(
          () => expect.fail('the insert wrote'),
          (error: unknown) => error,
        );
        // The insert waits for the other transaction, at the answer it would store.
        // (Asked on a connection of its own: inside a transaction, pg_stat_activity stays as first read.)
        await pollUntil(async () => {
          const { rows } = await store.knex.raw('select count(*)::int as n from pg_stat_activity where ? = any(pg_blocking_pids(pid))', [
            otherPid,
          ]);
          return rows[0].n > 0;
        }, 10_000);
        await other.query('commit');
        expect(await settled).to.be.instanceOf(OnceTaken);
      } finally {
        await store.knex.client.releaseConnection(other);
      }
      expect(await found('raced')).to.deep.equal({ hash: 'hash of raced', status: 201, headers: {}, body: '[]' });
      expect(await store.knex('rows').count({ n: '*' }).first()).to.deep.equal({ n: '0' });
      expect(await store.knex('events').count({ n: '*' }).first()).to.deep.equal({ n: '0' });
    });

    // A connection plans its named statements once, for their later runs alike (PostgreSQL's generic
    // plan). Planned when the keys' table was empty, as in a new database, a look for a key by any
    // other way than the primary key reads the whole table, for every key, however large it grows.
    it('plan no read of the whole table of answers, even when planned while it was empty', async () => {
      await store.knex.raw('vacuum analyze idempotency_keys');
      const connection = await store.knex.client.acquireConnection();
      try {
        await connection.query('set plan_cache_mode = force_generic_plan');
        await connection.query(
          `prepare keyed_insert (integer, text, integer, text, text, text, text, text, bigint) as ${insertBatchWithAnswersSql}`,
        );
        const { rows } = await connection.query("explain execute keyed_insert (1, 'notes', 1, '{}', 'channel', 'instance', '[]', '0', 0)");
        const plan = rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n');
        expect(plan).to.include('Insert on idempotency_keys');
        expect(plan).not.to.include('Seq Scan on idempotency_keys');
      } finally {
        await connection.query('deallocate keyed_insert; reset plan_cache_mode');
        await store.knex.client.releaseConnection(connection);
      }
    });
  }

  it('take again a key whose answer expired, storing the new answer', async () => {
    await insert([{ n: 0 }], 'old');
    await store.knex('idempotency_keys').where({ key: 'old' }).update({ expires_at: '2000-01-01T00:00:00.000Z' });
    const again = await insert([{ n: 1 }], 'old');
    expect(await found('old')).to.deep.equal({ hash: 'hash of old', ...storedOf(again) });
  });
});
