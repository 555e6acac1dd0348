// Migrations that change what stored data means (src/db/migrations.ts), run over a database written
// the old way.
import { expect } from 'chai';
import knexFactory, { type Knex } from 'knex';
import type { Client as PgClient } from 'pg';
import { hashKey } from '../../../src/api-keys/hash.ts';
import { migrationSource } from '../../../src/db/engine/migrations.ts';
import { replaceUnprefixedKey } from '../../../src/db/engine/sql/collections.ts';
import { openStore, type Store } from '../../../src/db/open-store.ts';
import { postgresSchema } from '../../../src/db/postgres/migrations.ts';
import { keyColumns } from '../../../src/db/postgres/sql/collections.ts';
import { sqliteSchema } from '../../../src/db/sqlite/migrations.ts';
import { keysOrderSql } from '../../../src/db/sqlite/sql/collections.ts';
import { jsonText } from '../../../src/rows.ts';
import { createDatabase, describeEachBackend, skipWithoutPostgres, type TestDatabase } from '../../support/backends.ts';
import { Client } from '../../support/client.ts';
import { FeedClient, type FeedMessage } from '../../support/feed.ts';
import { startTestServer } from '../../support/server.ts';

type Row = { id: number } & Record<string, unknown>;

describe('migrations on PostgreSQL', () => {
  let database: TestDatabase;
  let store: Store;
  before(async function () {
    await skipWithoutPostgres(this);
    database = await createDatabase('postgres');
  });
  after(async () => {
    await store?.close();
    await database?.drop();
  });

  const page = (field: string, order: 'asc' | 'desc') => ({ limit: 1000, offset: 0, order: [{ field, direction: order }] });
  /** The rows of `collection`'s page by `field`, all of them. */
  const rowsOf = async (accountId: number, collection: string, field: string, order: 'asc' | 'desc' = 'asc') =>
    JSON.parse(jsonText((await store.listRows(accountId, collection, page(field, order))).json)) as Row[];
  /** The ids of `collection`'s page by `field`, both ways. */
  const idsBothWays = (accountId: number, collection: string, field: string) =>
    Promise.all((['asc', 'desc'] as const).map(async (order) => (await rowsOf(accountId, collection, field, order)).map((row) => row.id)));
  const open = () => openStore(database.url, { sortIndexes: { minRows: 0, max: 16 } });
  /** Forgets that `migration` ran, opens the database again, which runs it again, and checks that it did. */
  async function runAgain(migration: string): Promise<void> {
    await store.knex('knex_migrations').where({ name: migration }).delete();
    await store.close();
    store = await open();
    expect(await store.knex('knex_migrations').where({ name: migration }).first('name')).to.deep.equal({ name: migration });
  }

  describe('0004_postgres_sort_key_escape', () => {
    const nul = 'k\u0000';
    const one = 'k\u0001';
    const fields = ['a', nul, one];
    const migration = '0004_postgres_sort_key_escape';
    // In code point order, each with its place; stored shuffled.
    const values = ['', '\u0000', '\u0001', '\\u0000', '\\u0001', 'a', 'a\u0000', 'a\u0000b', 'a\u0001', 'a\u0002'];
    const shuffled = [7, 2, 9, 0, 4, 1, 8, 3, 6, 5].map((i) => values[i]);
    const rows = shuffled.map((v, i) => ({ a: v, [nul]: v, [one]: shuffled[shuffled.length - 1 - i] }));
    const pages = (accountId: number, field: string) => idsBothWays(accountId, 'old', field);
    /** contract.md's order of the stored rows by `field`, both ways (no ties). */
    const expected = (stored: Row[], field: string) => {
      const asc = [...stored]
        .sort((x, y) => Buffer.compare(Buffer.from(x[field] as string), Buffer.from(y[field] as string)))
        .map((r) => r.id);
      return [asc, [...asc].reverse()];
    };

    it('makes again the keys the old escape made (U+0000 read as U+0001), so that an old index orders by code point', async () => {
      store = await open();
      await store.createKey('old');
      const accountId = Number((await store.knex('accounts').where({ name: 'old' }).first('id')).id);
      await store.createCollection(accountId, 'old');
      const stored = JSON.parse((await store.insertRows(accountId, 'old', rows)).json) as Row[];
      for (const field of fields) await pages(accountId, field);
      // A row a field it is not indexed by gives a lone surrogate (which PostgreSQL read as jsonb only since 0005's escape).
      await store.createCollection(accountId, 'lone');
      await store.insertRows(accountId, 'lone', [{ a: 'a\u0001' }, { a: 'a\u0000' }]);
      await store.listRows(accountId, 'lone', page('a', 'asc'));
      await store.updateRow(accountId, 'lone', 2, { format: 'merge', fields: { z: '\ud800' } });

      // The keys as the code before the migration made them.
      const knex = store.knex;
      const { id } = await knex('collections').where({ name: 'old' }).first('id');
      for (const [slot, field] of fields.entries()) {
        await knex.raw(
          `insert into sort_keys (collection_id, slot, row_id, rank, num, str)
            select collection_id, ?::integer, id, ${keyColumns('j')}
            from (select collection_id, id, replace(data, '\\u0000', '\\u0001')::jsonb -> ? as j from rows where collection_id = ?) r
            ${replaceUnprefixedKey}`,
          [slot, field.replaceAll('\u0000', '\u0001'), id],
        );
      }
      for (const field of fields)
        expect(await pages(accountId, field), `${JSON.stringify(field)} before`).not.to.deep.equal(expected(stored, field));
      await runAgain(migration);
      for (const field of fields) expect(await pages(accountId, field), JSON.stringify(field)).to.deep.equal(expected(stored, field));
      const lone = await rowsOf(accountId, 'lone', 'a');
      expect(lone.map((row) => row.id)).to.have.members([1, 2]);
    });
  });

  describe('0005_postgres_sort_key_surrogates', () => {
    const migration = '0005_postgres_sort_key_surrogates';
    const named = 'k\ud7ff';
    const fields = ['a', named];
    // The old keys read U+D7FF as itself, above where a lone surrogate's key (U+D7FF U+0800..U+0FFF) now
    // sorts; the rows with lone surrogates are written once the new keys are made.
    const old = ['', 'b', '\ud7ff', '\ud7ff\u0001', '\ud7ff\u4e00', '\ud7ff\uffff', '\ue000'];
    const lone = ['\ud7ff\ud800', '\ud800', '\udfff'];
    // All of them in code point order.
    const all = ['', 'b', '\ud7ff', '\ud7ff\u0001', '\ud7ff\u4e00', '\ud7ff\ud800', '\ud7ff\uffff', '\ud800', '\udfff', '\ue000'];
    const pages = (accountId: number, field: string) => idsBothWays(accountId, 'd7ff', field);
    /** The ids of the stored rows by code point of `field` (U+D7FF below a lone surrogate), both ways (no ties). */
    const expected = (stored: Row[], field: string) => {
      const asc = [...stored].sort((x, y) => all.indexOf(x[field] as string) - all.indexOf(y[field] as string)).map((r) => r.id);
      return [asc, [...asc].reverse()];
    };

    it('makes again the keys of U+D7FF, so that they sort below those of lone surrogates', async () => {
      if (!store) store = await open();
      await store.createKey('d7ff');
      const accountId = Number((await store.knex('accounts').where({ name: 'd7ff' }).first('id')).id);
      await store.createCollection(accountId, 'd7ff');
      const shuffled = [4, 0, 6, 2, 5, 1, 3].map((i) => old[i]);
      const rows = shuffled.map((v, i) => ({ a: v, [named]: shuffled[shuffled.length - 1 - i] }));
      await store.insertRows(accountId, 'd7ff', rows);
      for (const field of fields) await pages(accountId, field);
      // The keys as the code before the migration made them, of the rows it could read (no lone surrogate).
      const knex = store.knex;
      const { id } = await knex('collections').where({ name: 'd7ff', account_id: accountId }).first('id');
      for (const [slot, field] of fields.entries()) {
        await knex.raw(
          `insert into sort_keys (collection_id, slot, row_id, rank, num, str)
            select collection_id, ?::integer, id, ${keyColumns('j')}
            from (select collection_id, id,
                replace(replace(replace(data, '\\\\', '\\u005c'), '\\u0001', '\\u0001\\u0002'), '\\u0000', '\\u0001\\u0001')::jsonb -> ? as j
              from rows where collection_id = ?) r
            ${replaceUnprefixedKey}`,
          [slot, field, id],
        );
      }
      // Rows with lone surrogates, written (as they are now) beside the old keys.
      await store.insertRows(
        accountId,
        'd7ff',
        lone.map((v, i) => ({ a: v, [named]: lone[lone.length - 1 - i] })),
      );
      const stored = await rowsOf(accountId, 'd7ff', 'id');
      for (const field of fields)
        expect(await pages(accountId, field), `${JSON.stringify(field)} before`).not.to.deep.equal(expected(stored, field));
      await runAgain(migration);
      for (const field of fields) expect(await pages(accountId, field), JSON.stringify(field)).to.deep.equal(expected(stored, field));
    });
  });

  describe('0006_postgres_cut_sort_keys', () => {
    const migration = '0006_postgres_cut_sort_keys';

    it('cuts the string keys made whole before to 400 characters, and pages by them still sort exactly', async () => {
      if (!store) store = await open();
      await store.createKey('cut');
      const accountId = Number((await store.knex('accounts').where({ name: 'cut' }).first('id')).id);
      await store.createCollection(accountId, 'cut');
      const shared = 'q'.repeat(450);
      const stored = JSON.parse(
        (
          await store.insertRows(
            accountId,
            'cut',
            [`${shared}b`, 'a', shared, `${shared}a`, 'z'].map((s) => ({ s })),
          )
        ).json,
      ) as Row[];
      await rowsOf(accountId, 'cut', 's'); // makes the index
      // The keys as the code before the migration made them: whole strings, with no partial index (which
      // 0007 dropped again).
      const { id } = await store.knex('collections').where({ name: 'cut', account_id: accountId }).first('id');
      await store.knex.raw('drop index if exists sort_keys_long');
      for (const row of stored) await store.knex('sort_keys').where({ collection_id: id, row_id: row.id }).update({ str: row.s });
      const longest = async () =>
        Number(
          (
            await store
              .knex('sort_keys')
              .where({ collection_id: id })
              .max({ n: store.knex.raw('length(str)') })
          )[0].n,
        );
      expect(await longest()).to.equal(451);
      await runAgain(migration);
      expect(await longest()).to.equal(400);
      expect((await store.knex.raw("select 1 from pg_indexes where indexname = 'sort_keys_long'")).rows).to.have.length(1);
      // ASCII: code unit order is code point order.
      const asc = [...stored].sort((x, y) => ((x.s as string) < (y.s as string) ? -1 : 1)).map((row) => row.id);
      expect(await idsBothWays(accountId, 'cut', 's')).to.deep.equal([asc, [...asc].reverse()]);
    });
  });
});

describeEachBackend('migration 0008_key_limits', (backend) => {
  it('makes every key made before it an admin key of every collection that never expires: nothing changes for it', async () => {
    // The schema as it was before, with a key made the old way.
    const { database, knex } = await migratedBefore(backend, '0008');
    const key = `rb_${'o'.repeat(32)}`;
    try {
      await oldAccount(knex, key);
    } finally {
      await knex.destroy();
    }

    const server = await startTestServer({}, { backend, database });
    try {
      const principal = await server.store.findPrincipal(key);
      expect(principal).to.include({ account: 'old', scope: 'admin', collections: null, expiresAt: null });
      // 0017_publishable_keys: and a secret key, with no origins nor rate per end user.
      expect(principal).to.include({ kind: 'secret', origins: null, endUserRate: null });
      const [listed] = await server.store.listKeys('old');
      expect(listed).to.include({ scope: 'admin', collections: null, expires_at: null, name: null, revoked_at: null });
      expect(listed).to.include({ kind: 'secret', origins: null, end_user_rate: null });
      const client = new Client(server.url, key);
      expect((await client.post('/v1/collections', { name: 'notes' })).status).to.equal(201);
      expect((await client.post('/v1/collections/notes/rows', [{ n: 1 }])).status).to.equal(201);
      expect((await client.patch('/v1/collections/notes/rows/1', { n: 2 })).status).to.equal(200);
      expect((await client.delete('/v1/collections/notes')).status).to.equal(204);
    } finally {
      await server.stop();
    }
  });
});

describeEachBackend('migration 0009_event_previous', (backend) => {
  it('keeps the events stored before it, whose updates the feed sends without previous, and gives the later ones theirs', async () => {
    const { database, knex } = await migratedBefore(backend, '0009');
    const key = `rb_${'p'.repeat(32)}`;
    const at = '2026-01-01T00:00:00.000Z';
    try {
      // A row inserted open, then closed, as the version before stored them and their events.
      const accountId = await oldAccount(knex, key);
      await knex('collections').insert({ account_id: accountId, name: 'notes', created_at: at, row_count: 1, last_row_id: 1, last_seq: 2 });
      const { id: collectionId } = await knex('collections').where({ name: 'notes' }).first('id');
      await knex('rows').insert({ collection_id: collectionId, id: 1, data: '{"status":"closed"}' });
      await knex('events').insert([
        { collection_id: collectionId, seq: 1, type: 'insert', row_id: 1, row: '{"id":1,"status":"open"}', at },
        { collection_id: collectionId, seq: 2, type: 'update', row_id: 1, row: '{"id":1,"status":"closed"}', at },
      ]);
    } finally {
      await knex.destroy();
    }

    const server = await startTestServer({}, { backend, database });
    try {
      const open = (query: Record<string, string>) => FeedClient.open(server.url, key, { collection: 'notes', since: 0, ...query });
      const [everything, filtered] = await Promise.all([open({}), open({ filter: '{"status":"open"}' })]);
      expect((await new Client(server.url, key).patch('/v1/collections/notes/rows/1', { status: 'open' })).status).to.equal(200);
      const after = { type: 'update', seq: 3, row: { id: 1, status: 'open' }, previous: { id: 1, status: 'closed' } };
      const shape = (message: FeedMessage) => {
        const { at: _at, collection: _collection, ...rest } = message as FeedMessage & { at?: string };
        return rest;
      };
      expect((await everything.changesCount(3)).map(shape)).to.deep.equal([
        { type: 'insert', seq: 1, row: { id: 1, status: 'open' } },
        { type: 'update', seq: 2, row: { id: 1, status: 'closed' } },
        after,
      ]);
      // Without the row before it, the old update is sent to the filtered feed as one that left it.
      expect((await filtered.changesCount(3)).map(shape)).to.deep.equal([
        { type: 'insert', seq: 1, row: { id: 1, status: 'open' } },
        { type: 'update', seq: 2, row: { id: 1, status: 'closed' }, matches: false },
        after,
      ]);
      await Promise.all([everything.close(), filtered.close()]);
    } finally {
      await server.stop();
    }
  });
});

describeEachBackend('migration 0010_row_versions', (backend) => {
  it('gives every row written before it a version: its latest retained event, else its collection latest seq', async () => {
    const { database, knex } = await migratedBefore(backend, '0010');
    const key = `rb_${'v'.repeat(32)}`;
    const at = '2026-01-01T00:00:00.000Z';
    try {
      const accountId = await oldAccount(knex, key);
      // Three rows and five changes; the events of row 1 are pruned, those of rows 2 and 3 retained.
      await knex('collections').insert({ account_id: accountId, name: 'notes', created_at: at, row_count: 3, last_row_id: 3, last_seq: 5 });
      const { id } = await knex('collections').where({ name: 'notes' }).first('id');
      await knex('rows').insert([1, 2, 3].map((row) => ({ collection_id: id, id: row, data: '{}' })));
      await knex('events').insert(
        [
          [2, 2],
          [3, 3],
          [4, 2],
        ].map(([seq, row]) => ({ collection_id: id, seq, type: 'update', row_id: row, row: `{"id":${row}}`, at })),
      );
    } finally {
      await knex.destroy();
    }

    const server = await startTestServer({}, { backend, database });
    try {
      const client = new Client(server.url, key);
      const etags = [];
      for (const row of [1, 2, 3]) etags.push((await client.get(`/v1/collections/notes/rows/${row}`)).headers.get('etag'));
      const { id } = await server.store.knex('collections').where({ name: 'notes' }).first('id');
      expect(etags).to.deep.equal([`"${id}.5"`, `"${id}.4"`, `"${id}.3"`]);
      // The next write of a row gives it a version no row had.
      const patched = await client.patch('/v1/collections/notes/rows/1', { n: 1 }, { headers: { 'if-match': etags[0] as string } });
      expect(patched.headers.get('etag')).to.equal(`"${id}.6"`);
    } finally {
      await server.stop();
    }
  });
});

/** A Knex of a new database of `backend` whose schema is as the migrations before `migration` left it. */
async function migratedBefore(backend: 'sqlite' | 'postgres', migration: string) {
  const database = await createDatabase(backend);
  const schema = backend === 'postgres' ? postgresSchema : sqliteSchema;
  const all = migrationSource(schema);
  const earlier = async (extensions: readonly string[]) => (await all.getMigrations(extensions)).filter((name) => name < migration);
  const connection = backend === 'postgres' ? database.url : { filename: database.url.slice('sqlite:'.length) };
  const knex = knexFactory({ client: backend === 'postgres' ? 'pg' : 'sqlite3', connection, useNullAsDefault: true });
  await knex.migrate.latest({ migrationSource: { ...all, getMigrations: earlier } });
  return { database, schema, knex };
}

/** How many foreign keys the PostgreSQL table `table` has (migrations 0029 and 0036). */
async function foreignKeysOf(knex: Knex, table: string): Promise<number> {
  return (await knex.raw("select count(*)::int as n from pg_constraint where conrelid = ?::regclass and contype = 'f'", [table])).rows[0].n;
}

/**
 * The account `old` and its collections named by `indexes`, each row with the columns given (`search`,
 * `uniques`: the indexes a collection has), as a migration finds them: their ids by name.
 */
async function oldCollections(knex: Knex, indexes: Record<string, object>): Promise<Record<string, number>> {
  const at = '2026-01-01T00:00:00.000Z';
  await knex('accounts').insert({ name: 'old', plan: 'free', created_at: at });
  const { id: accountId } = await knex('accounts').first('id');
  const ids: Record<string, number> = {};
  for (const [name, columns] of Object.entries(indexes)) {
    await knex('collections').insert({ account_id: accountId, name, created_at: at, ...columns });
    ids[name] = (await knex('collections').where({ name }).first('id')).id;
  }
  return ids;
}

/** Whether the keys' table has the column `carried` (migrations 0033 and 0034). */
async function carriesTexts(knex: Knex): Promise<boolean> {
  return knex('sort_keys')
    .select('carried')
    .then(
      () => true,
      () => false,
    );
}

/** The account `old` and its key `key`, as a migration finds them written the old way: the account's id. */
async function oldAccount(knex: Knex, key: string): Promise<number> {
  const at = '2026-01-01T00:00:00.000Z';
  await knex('accounts').insert({ name: 'old', plan: 'free', created_at: at });
  const { id } = await knex('accounts').where({ name: 'old' }).first('id');
  await knex('api_keys').insert({ account_id: id, prefix: key.slice(0, 11), hash: hashKey(key), created_at: at });
  return Number(id);
}

/**
 * The account `old`, its key `key` and its collection `people` holding `rows` (ids from 1), as a migration
 * finds them written the old way, the collection's row with `collection` more: the collection's id.
 */
async function oldPeople(knex: Knex, key: string, rows: object[], collection: Record<string, string> = {}): Promise<number> {
  const at = '2026-01-01T00:00:00.000Z';
  const accountId = await oldAccount(knex, key);
  const count = rows.length;
  await knex('collections').insert({
    account_id: accountId,
    name: 'people',
    created_at: at,
    row_count: count,
    last_row_id: count,
    last_seq: count,
    ...collection,
  });
  const { id } = await knex('collections').where({ name: 'people' }).first('id');
  await knex('rows').insert(rows.map((row, i) => ({ collection_id: id, id: i + 1, data: JSON.stringify(row), version: i + 1 })));
  return Number(id);
}

describeEachBackend('migration 0027_unique_keys', (backend) => {
  it('keys the rows of each unique index made before it, drops its index of the database, and keeps its values unique', async () => {
    const { database, schema, knex } = await migratedBefore(backend, '0027');
    const key = `rb_${'u'.repeat(32)}`;
    let indexId: number;
    try {
      const id = await oldPeople(knex, key, [{ email: 'a', n: 1 }, { email: 'b' }, {}]);
      await knex('collection_indexes').insert({ collection_id: id, fields: '["email"]', is_unique: true });
      indexId = Number((await knex('collection_indexes').first('id')).id);
      // The unique index as it was made before: an index of the database over the rows of its collection.
      await knex.raw(schema.uniqueIndexes.made(`rows_unique_${indexId}`, Number(id), ['email']));
    } finally {
      await knex.destroy();
    }

    const server = await startTestServer({}, { backend, database });
    try {
      const indexes =
        backend === 'postgres'
          ? (await server.store.knex.raw('select indexname as name from pg_indexes where tablename = ?', ['rows'])).rows
          : await server.store.knex.raw("select name from sqlite_master where type = 'index' and tbl_name = 'rows'");
      expect(indexes.map((index: { name: string }) => index.name)).to.not.include(`rows_unique_${indexId}`);
      const client = new Client(server.url, key);
      const repeated = await client.post<{ code: string; existing_id: number }>('/v1/collections/people/rows', [{ email: 'a' }]);
      expect(repeated.status).to.equal(409);
      expect(repeated.body).to.include({ code: 'unique_violation', existing_id: 1 });
      expect((await client.patch('/v1/collections/people/rows/3', { email: 'b' })).status).to.equal(409);
      const upserted = await client.post<Row[]>('/v1/collections/people/rows?on_conflict=email', [{ email: 'a', n: 2 }, { email: 'c' }]);
      expect(upserted.body).to.deep.equal([
        { id: 1, email: 'a', n: 2 },
        { id: 4, email: 'c' },
      ]);
      expect((await client.delete('/v1/collections/people/indexes/email')).status).to.equal(204);
      expect((await client.post('/v1/collections/people/rows', [{ email: 'a' }])).status).to.equal(201);
    } finally {
      await server.stop();
    }
  });
});

describe('migration 0029_postgres_keys_go_with_rows', () => {
  before(async function () {
    await skipWithoutPostgres(this);
  });

  it("drops unique_keys' foreign key to rows, deletes a deleted row's keys by a trigger, and going back keys by the foreign key again", async () => {
    const { database, knex } = await migratedBefore('postgres', '0029');
    const foreignKeys = () => foreignKeysOf(knex, 'unique_keys');
    try {
      await knex('accounts').insert({ name: 'old', plan: 'free', created_at: '2026-01-01T00:00:00.000Z' });
      const { id: accountId } = await knex('accounts').first('id');
      await knex('collections').insert({ account_id: accountId, name: 'people', created_at: '2026-01-01T00:00:00.000Z' });
      const { id } = await knex('collections').first('id');
      await knex('rows').insert([1, 2, 3].map((n) => ({ collection_id: id, id: n, data: '{}', version: n })));
      await knex('unique_keys').insert([1, 2, 3].map((n) => ({ collection_id: id, row_id: n, index_id: 1, key: `k${n}` })));
      expect(await foreignKeys()).to.equal(1);
      await knex.migrate.up({ migrationSource: migrationSource(postgresSchema) });
      expect(await foreignKeys()).to.equal(0);
      await knex('rows').where({ collection_id: id, id: 1 }).delete();
      expect(
        (await knex('unique_keys').orderBy('row_id').select('row_id')).map((key: { row_id: string }) => Number(key.row_id)),
      ).to.deep.equal([2, 3]);
      // A key with no row (none is written so) is deleted going back, which the foreign key would refuse.
      await knex('unique_keys').insert({ collection_id: id, row_id: 9, index_id: 1, key: 'k9' });
      await knex.migrate.down({ migrationSource: migrationSource(postgresSchema) });
      expect(await foreignKeys()).to.equal(1);
      await knex('rows').where({ collection_id: id, id: 2 }).delete();
      expect((await knex('unique_keys').select('row_id')).map((key: { row_id: string }) => Number(key.row_id))).to.deep.equal([3]);
    } finally {
      await knex.destroy();
      await database.drop();
    }
  });
});

describe('migration 0036_postgres_words_go_with_rows', () => {
  before(async function () {
    await skipWithoutPostgres(this);
  });

  it("drops search_rows' foreign key to rows, deletes a deleted row's words and keys by the trigger, and going back deletes words by the foreign key again", async () => {
    const { database, knex } = await migratedBefore('postgres', '0036');
    const foreignKeys = () => foreignKeysOf(knex, 'search_rows');
    const idsOf = async (table: string, collectionId: number) =>
      (await knex(table).where({ collection_id: collectionId }).orderBy('row_id').select('row_id')).map((held: { row_id: string }) =>
        Number(held.row_id),
      );
    try {
      // `notes` has words (a search index), `people` unique keys (a unique index), `plain` neither.
      const ids = await oldCollections(knex, { notes: { search: '["title"]' }, people: { uniques: '[[1,["email"]]]' }, plain: {} });
      for (const id of Object.values(ids)) {
        await knex('rows').insert([1, 2, 3, 4].map((n) => ({ collection_id: id, id: n, data: '{}', version: n })));
      }
      await knex('search_rows').insert([1, 2, 3, 4].map((n) => ({ collection_id: ids.notes, row_id: n, words: `'w${n}':1` })));
      await knex('unique_keys').insert([1, 2, 3, 4].map((n) => ({ collection_id: ids.people, row_id: n, index_id: 1, key: `k${n}` })));
      expect(await foreignKeys()).to.equal(1);
      await knex.migrate.up({ migrationSource: migrationSource(postgresSchema) });
      expect(await foreignKeys()).to.equal(0);
      for (const name of ['notes', 'people', 'plain'])
        await knex('rows').where({ collection_id: ids[name] }).whereIn('id', [1, 2]).delete();
      expect(await idsOf('search_rows', ids.notes)).to.deep.equal([3, 4]);
      expect(await idsOf('unique_keys', ids.people)).to.deep.equal([3, 4]);
      // Rows of several collections in one statement.
      await knex('rows').where({ id: 3 }).delete();
      expect([await idsOf('search_rows', ids.notes), await idsOf('unique_keys', ids.people)]).to.deep.equal([[4], [4]]);
      // Words of no row (none are written so) are deleted going back, which the foreign key would refuse.
      await knex('search_rows').insert({ collection_id: ids.notes, row_id: 9, words: "'w9':1" });
      await knex.migrate.down({ migrationSource: migrationSource(postgresSchema) });
      expect(await foreignKeys()).to.equal(1);
      await knex('rows').where({ id: 4 }).delete();
      expect([await idsOf('search_rows', ids.notes), await idsOf('unique_keys', ids.people)]).to.deep.equal([[], []]);
    } finally {
      await knex.destroy();
      await database.drop();
    }
  });

  it("reads no word or key of a collection without a search or unique index, when another's fill the tables, and deletes the other's", async () => {
    const { database, knex } = await migratedBefore('postgres', '0037');
    const many = 20_000;
    // One connection: the trigger's statements keep their plans per connection, generic after the fifth run.
    const connection = (await knex.client.acquireConnection()) as PgClient;
    try {
      const ids = await oldCollections(knex, { corpus: { search: '["title"]', uniques: '[[1,["email"]]]' }, plain: {} });
      await knex.raw('insert into rows (collection_id, id, data, version) select ?, g, ?, g from generate_series(1, ?) g', [
        ids.corpus,
        '{}',
        many,
      ]);
      await knex.raw("insert into search_rows (collection_id, row_id, words) select ?, g, 'w:1' from generate_series(1, ?) g", [
        ids.corpus,
        many,
      ]);
      await knex.raw(
        "insert into unique_keys (collection_id, row_id, index_id, key) select ?, g, 1, 'k' || g from generate_series(1, ?) g",
        [ids.corpus, many],
      );
      await knex('rows').insert(
        Array.from({ length: 10 }, (_, i) => ({ collection_id: ids.plain, id: i + 1, data: '{}', version: i + 1 })),
      );
      await knex.raw('analyze search_rows, unique_keys');
      const scans = async () => {
        await connection.query('select pg_stat_force_next_flush()');
        const { rows } = await connection.query(
          "select relname, seq_scan, idx_scan from pg_stat_user_tables where relname in ('search_rows', 'unique_keys') order by relname",
        );
        return rows.map((row: { relname: string; seq_scan: string; idx_scan: string }) => [
          row.relname,
          Number(row.seq_scan),
          Number(row.idx_scan),
        ]);
      };
      const before = await scans();
      // The corpus's first thousand rows deleted by one statement, then each of plain's by a statement of its own.
      await connection.query('delete from rows where collection_id = $1 and id <= 1000', [ids.corpus]);
      const afterCorpus = await scans();
      for (let id = 1; id <= 10; id++) await connection.query('delete from rows where collection_id = $1 and id = $2', [ids.plain, id]);
      expect(await scans()).to.deep.equal(afterCorpus);
      expect(afterCorpus.map(([table, , index], i) => [table, Number(index) > Number(before[i][2])])).to.deep.equal([
        ['search_rows', true],
        ['unique_keys', true],
      ]);
      const left = async (table: string) => Number((await knex(table).where({ collection_id: ids.corpus }).count({ n: '*' }))[0].n);
      expect([await left('search_rows'), await left('unique_keys')]).to.deep.equal([many - 1000, many - 1000]);
    } finally {
      await knex.client.releaseConnection(connection);
      await knex.destroy();
      await database.drop();
    }
  });
});

describe('migration 0030_sqlite_strings_kept_by_sort_indexes', () => {
  it('deletes the string keys of a unique index over one sorted field, which its sort index keeps, and going back keys them again', async () => {
    const { database, knex } = await migratedBefore('sqlite', '0030');
    const key = `rb_${'s'.repeat(32)}`;
    const keys = async () =>
      (await knex('unique_keys').orderBy(['index_id', 'row_id']).select('index_id', 'row_id', 'key')).map(
        (held: { index_id: number; row_id: number; key: string | null }) => [Number(held.index_id), Number(held.row_id), held.key],
      );
    const before = [
      [1, 1, '["a"]'],
      [1, 2, '[1]'],
      [1, 3, null],
      [2, 1, '["x"]'],
      [3, 1, '["a","x"]'],
      [3, 2, null],
      [3, 3, null],
    ];
    try {
      // `email` unique alone and sorted; `tag` unique alone and not sorted; (email, tag) unique together.
      const id = await oldPeople(knex, key, [{ email: 'a', tag: 'x' }, { email: 1 }, {}], {
        sorted: '["email"]',
        uniques: '[[1,["email"]],[2,["tag"]],[3,["email","tag"]]]',
      });
      await knex('sort_keys').insert([
        { collection_id: id, slot: 0, row_id: 1, rank: 2, str: 'a' },
        { collection_id: id, slot: 0, row_id: 2, rank: 1, num: 1 },
        { collection_id: id, slot: 0, row_id: 3, rank: 5 },
      ]);
      await knex('collection_indexes').insert([
        { collection_id: id, fields: '["email"]', is_unique: true },
        { collection_id: id, fields: '["tag"]', is_unique: true },
        { collection_id: id, fields: '["email","tag"]', is_unique: true },
      ]);
      await knex('unique_keys').insert(
        before.map(([index, row, held]) => ({ collection_id: id, index_id: index, row_id: row, key: held })),
      );
      await knex.migrate.up({ migrationSource: migrationSource(sqliteSchema) });
      expect(await keys()).to.deep.equal(before.filter(([index, row]) => !(index === 1 && row === 1)));
      await knex.migrate.down({ migrationSource: migrationSource(sqliteSchema) });
      expect(await keys()).to.deep.equal(before);
      await knex.migrate.up({ migrationSource: migrationSource(sqliteSchema) });
    } finally {
      await knex.destroy();
    }

    const server = await startTestServer({}, { backend: 'sqlite', database });
    try {
      const client = new Client(server.url, key);
      for (const [row, holder] of [
        [{ email: 'a' }, 1],
        [{ email: 1.0 }, 2],
        [{ tag: 'x' }, 1],
      ] as const) {
        const repeated = await client.post<{ code: string; existing_id: number }>('/v1/collections/people/rows', [row]);
        expect(repeated.status, JSON.stringify(row)).to.equal(409);
        expect(repeated.body).to.include({ code: 'unique_violation', existing_id: holder });
      }
      expect((await client.patch('/v1/collections/people/rows/3', { email: 'a' })).status).to.equal(409);
      expect((await client.patch('/v1/collections/people/rows/1', { email: 'b' })).status).to.equal(200);
      expect((await client.post('/v1/collections/people/rows', [{ email: 'a' }])).status).to.equal(201);
    } finally {
      await server.stop();
    }
  });
});

describeEachBackend('migration 0031_sort_key_pairs', (backend) => {
  it('gives keys a prefix and pairs an index of their own, and going back drops the slots from the first pair on', async () => {
    const { database, schema, knex } = await migratedBefore(backend, '0031');
    const at = '2026-01-01T00:00:00.000Z';
    const source = migrationSource(schema);
    const keysOf = async (id: number) =>
      (await knex('sort_keys').where({ collection_id: id }).orderBy(['slot', 'row_id']).select('slot', 'row_id')).map(
        (key: { slot: number; row_id: number | string }) => [Number(key.slot), Number(key.row_id)],
      );
    try {
      await knex('accounts').insert({ name: 'old', plan: 'free', created_at: at });
      const { id: accountId } = await knex('accounts').first('id');
      await knex('collections').insert({ account_id: accountId, name: 'scores', created_at: at, row_count: 2, sorted: '["n"]' });
      const { id } = await knex('collections').first('id');
      await knex('rows').insert([1, 2].map((n) => ({ collection_id: id, id: n, data: `{"n":${n},"o":"a"}`, version: n })));
      await knex('sort_keys').insert([1, 2].map((n) => ({ collection_id: id, slot: 0, row_id: n, rank: 1, num: n })));
      await knex.migrate.up({ migrationSource: source });
      expect((await knex('sort_keys').whereNotNull('prefix').select('row_id')).length).to.equal(0);
      // A pair made after it, in slot 1, and a field's in slot 2.
      await knex('collections').where({ id }).update({ sorted: '["n",["o","n"],"o"]' });
      const pairKeys = [1, 2].map((n) => ({ collection_id: id, slot: 1, row_id: n, rank: 1, num: n, prefix: '2:a' }));
      await knex('sort_keys').insert([...pairKeys, ...[1, 2].map((n) => ({ collection_id: id, slot: 2, row_id: n, rank: 2, str: 'a' }))]);
      await knex.migrate.down({ migrationSource: source });
      expect((await knex('collections').where({ id }).first('sorted')).sorted).to.equal('["n"]');
      expect(await keysOf(id)).to.deep.equal([
        [0, 1],
        [0, 2],
      ]);
      let failed = false;
      await knex('sort_keys')
        .select('prefix')
        .catch(() => {
          failed = true;
        });
      expect(failed, 'no prefix once gone back').to.equal(true);
      await knex.migrate.up({ migrationSource: source });
      expect((await knex('sort_keys').select('prefix')).length).to.equal(2);
    } finally {
      await knex.destroy();
      await database.drop();
    }
  });
});

describe("the migrations of a relation field's keys carrying texts", () => {
  /**
   * The statement of the order's index on `backend`, and what it reads once the migration has run and once
   * it has gone back.
   */
  const orders = {
    postgres: {
      migration: '0033',
      sql: "select indexdef as def from pg_indexes where tablename = 'sort_keys' and indexname = 'sort_keys_order'",
      carrying: /\(collection_id, slot, rank, num, str, row_id\) INCLUDE \(carried\)$/,
      plain: /\(collection_id, slot, rank, num, str, row_id\)$/,
      // Whether the order index holds the texts once the migration has run (on SQLite, the keys' table alone: 0035).
      heldByIndex: true,
    },
    sqlite: {
      migration: '0034',
      sql: "select sql as def from sqlite_master where type = 'index' and name = 'sort_keys_order'",
      carrying: /\(collection_id, slot, rank, num, str, row_id, carried\)$/,
      plain: /\(collection_id, slot, rank, num, str, row_id\)$/,
      heldByIndex: false,
    },
  } as const;
  /** The statement of the order's index on `backend`, without the quotes Knex put around the names of the index 0003 made. */
  const orderIndexOf = async (backend: 'sqlite' | 'postgres', knex: Knex) => {
    const answer = await knex.raw(orders[backend].sql);
    return ((backend === 'postgres' ? answer.rows : answer)[0].def as string).replaceAll('`', '');
  };

  for (const backend of ['sqlite', 'postgres'] as const) {
    const order = orders[backend];
    const where = order.heldByIndex ? 'has the order index hold them' : 'leaves the order index as it was';
    it(`${order.migration} fills the texts a relation field's keys carry, ${where}, and going back drops them (${backend})`, async function () {
      if (backend === 'postgres') await skipWithoutPostgres(this);
      const { database, knex } = await migratedBefore(backend, order.migration);
      const at = '2026-01-01T00:00:00.000Z';
      const source = migrationSource(backend === 'postgres' ? postgresSchema : sqliteSchema);
      const orderIndex = () => orderIndexOf(backend, knex);
      try {
        await knex('accounts').insert({ name: 'old', plan: 'free', created_at: at });
        const { id: accountId } = await knex('accounts').first('id');
        await knex('collections').insert({ account_id: accountId, name: 'posts', created_at: at });
        await knex('collections').insert({
          account_id: accountId,
          name: 'comments',
          created_at: at,
          row_count: 4,
          sorted: '["post_id","n"]',
        });
        const { id } = await knex('collections').where({ name: 'comments' }).first('id');
        const { id: postsId } = await knex('collections').where({ name: 'posts' }).first('id');
        await knex('collection_relations').insert({
          collection_id: id,
          name: 'post',
          field: 'post_id',
          target_id: postsId,
          on_delete: 'restrict',
          created_at: at,
        });
        // A number, a string (no id), a number in a text too long to carry, a number.
        const texts = [
          '{"post_id":1,"n":1}',
          '{"post_id":"x","n":2}',
          `{"post_id":1,"n":3,"t":"${'x'.repeat(2500)}"}`,
          '{"post_id":2,"n":4}',
        ];
        await knex('rows').insert(texts.map((data, i) => ({ collection_id: id, id: i + 1, data, version: i + 1 })));
        const postKey = (n: number) => (n === 2 ? { rank: 2, str: 'x' } : { rank: 1, num: n === 4 ? 2 : 1 });
        await knex('sort_keys').insert([
          ...[1, 2, 3, 4].map((n) => ({ collection_id: id, slot: 0, row_id: n, ...postKey(n) })),
          ...[1, 2, 3, 4].map((n) => ({ collection_id: id, slot: 1, row_id: n, rank: 1, num: n })),
        ]);
        await knex.migrate.up({ migrationSource: source });
        const carried = await knex('sort_keys').whereNotNull('carried').orderBy(['slot', 'row_id']).select('slot', 'row_id', 'carried');
        expect(
          carried.map((key: { slot: number; row_id: string; carried: string }) => [Number(key.slot), Number(key.row_id), key.carried]),
        ).to.deep.equal([
          [0, 1, texts[0]],
          [0, 4, texts[3]],
        ]);
        expect(await orderIndex()).to.match(order.heldByIndex ? order.carrying : order.plain);
        await knex.migrate.down({ migrationSource: source });
        expect(await orderIndex()).to.match(order.plain);
        expect(await carriesTexts(knex), 'no carried once gone back').to.equal(false);
      } finally {
        await knex.destroy();
        await database.drop();
      }
    });
  }

  it("0035 has SQLite's order index that 0034 first made leave the texts to the keys' table, and going back holds them in it again (sqlite)", async () => {
    const { database, knex } = await migratedBefore('sqlite', '0035');
    const source = migrationSource(sqliteSchema);
    const orderIndex = () => orderIndexOf('sqlite', knex);
    try {
      // As 0034 made it until it left the index as it was.
      for (const statement of keysOrderSql.covering) await knex.raw(statement);
      expect(await orderIndex()).to.match(orders.sqlite.carrying);
      await knex.migrate.up({ migrationSource: source });
      expect(await orderIndex()).to.match(orders.sqlite.plain);
      expect(await knex('sort_keys').select('carried')).to.deep.equal([]);
      await knex.migrate.down({ migrationSource: source });
      expect(await orderIndex()).to.match(orders.sqlite.carrying);
    } finally {
      await knex.destroy();
      await database.drop();
    }
  });

  it("0034 and 0035 make SQLite's order index of a database from before them neither time, and going back leaves it without the texts (sqlite)", async () => {
    const { database, knex } = await migratedBefore('sqlite', '0034');
    const source = migrationSource(sqliteSchema);
    const orderIndex = () => orderIndexOf('sqlite', knex);
    const made: string[] = [];
    knex.on('query', ({ sql }: { sql: string }) => {
      if (/sort_keys_order/.test(sql)) made.push(sql);
    });
    try {
      await knex.migrate.latest({ migrationSource: source });
      expect(made.filter((sql) => /^(create|drop) index/.test(sql))).to.deep.equal([]);
      expect(await orderIndex()).to.match(orders.sqlite.plain);
      expect(await knex('sort_keys').select('carried')).to.deep.equal([]);
      await knex.migrate.rollback({ migrationSource: source });
      expect(await orderIndex()).to.match(orders.sqlite.plain);
      expect(await carriesTexts(knex), 'no carried once gone back').to.equal(false);
    } finally {
      await knex.destroy();
      await database.drop();
    }
  });
});
