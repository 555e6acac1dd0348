// Pages read from a pair's slot (src/db/engine/sorted.ts; src/db/reads/pages.ts, pairedPage): an app's
// user's page under a rule `owner == sub`, ordered by another field, is one range of the pair (owner,
// score)'s keys, read in the page's order. Every page must be the one the rule and the order make in
// memory (test/support/order.ts), in both directions, by offsets and by cursors, the rows missing the
// field or null last, after every kind of write; an owner's value equal as JSON (1 and 1.0) is one owner,
// one of another type ("1", true) another; an owner no prefix holds exactly (2.5: src/db/engine/sorted.ts)
// is read as before, without the pair; and no user ever sees another's row.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client, Response } from '../support/client.ts';
import { appKey, EndUser, tokenOf } from '../support/end-users.ts';
import { type Row, sortRows } from '../support/order.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const owners: unknown[] = ['ada', 'bob', 1, '1', true, 2.5];
const scores: unknown[] = [3, -1, 2.5, 'b', 'a', null, undefined, true, false, { a: 1 }, [1], 3, 'b', 0];
const seeded = Array.from({ length: 60 }, (_, n) => {
  const row: Record<string, unknown> = { owner: owners[n % owners.length], n };
  const score = scores[(n * 3) % scores.length];
  if (score !== undefined) row.score = score;
  return row;
});

/** The next of a page's `Link`, as a path and query, or undefined when it has none. */
function nextLink(response: Response): string | undefined {
  const link = response.headers.get('link');
  const match = link === null ? null : /^<(\/v1\/[^>]+)>; rel="next"$/.exec(link);
  return match?.[1];
}

describeEachBackend('pages read from a pair of fields: a rule’s equality, then the order', (backend) => {
  let server: TestServer;
  let client: Client;
  let users: { sub: unknown; user: EndUser }[];
  before(async () => {
    server = await startTestServer({ sortIndexMinRows: 20 }, { backend });
    client = await server.client();
    await client.post('/v1/collections', { name: 'owned' });
    const rules = { read: { owner: { $auth: 'sub' } }, create: true, update: true, delete: true };
    expect((await client.put('/v1/collections/owned/rules', rules)).status).to.equal(200);
    expect((await client.post('/v1/collections/owned/indexes', { fields: ['k'], unique: true })).status).to.equal(201);
    expect((await client.post('/v1/collections/owned/rows', seeded)).status).to.equal(201);
    const key = await appKey(client);
    users = await Promise.all(
      ['ada', 'bob', 1, '1', 2.5].map(async (sub) => ({ sub, user: new EndUser(server.url, key, await tokenOf(sub)) })),
    );
  });
  after(() => server?.stop());

  const sortedOf = async () =>
    JSON.parse((await server.store.knex('collections').where({ name: 'owned' }).first('sorted')).sorted) as unknown[];
  /** Every row, as the admin reads them. */
  const stored = async () => (await client.get<Row[]>('/v1/collections/owned/rows?limit=1000')).body;

  /** The prefix a pair's key holds of an owner (src/db/engine/sorted.ts). */
  const prefixOf = (owner: unknown) =>
    typeof owner === 'string'
      ? `2:${owner}`
      : typeof owner === 'number'
        ? Number.isSafeInteger(owner)
          ? `1:${owner}`
          : '1:~'
        : typeof owner === 'boolean'
          ? `3:${Number(owner)}`
          : null;
  /** Each row's key of the pair (owner, score) holds its owner's prefix; every row has one. */
  async function expectKeys() {
    const slot = (await sortedOf()).findIndex((entry) => JSON.stringify(entry) === '["owner","score"]');
    const { id } = await server.store.knex('collections').where({ name: 'owned' }).first('id');
    const keys = await server.store.knex('sort_keys').where({ collection_id: id, slot }).select('row_id', 'prefix');
    const held = new Map(keys.map((key: { row_id: number | string; prefix: string | null }) => [Number(key.row_id), key.prefix]));
    const rows = await stored();
    expect(held.size).to.equal(rows.length);
    for (const row of rows) expect(held.get(row.id), JSON.stringify(row)).to.equal(prefixOf(row.owner));
  }

  /** Every page of every user, both ways, by offset and by cursor, against the rows in memory. */
  async function expectPages(field = 'score') {
    const rows = await stored();
    for (const { sub, user } of users) {
      for (const direction of ['asc', 'desc'] as const) {
        // The owner equal to the user's sub as JSON: 1 and 1.0 are one value, "1" and true others.
        const mine = sortRows(
          rows.filter((row) => row.owner === sub),
          [{ field, direction }],
        );
        const walked: Row[] = [];
        let next: string | undefined = `/v1/collections/owned/rows?order_by=${field}&order=${direction}&limit=4`;
        while (next) {
          const response: Response<Row[]> = await user.get<Row[]>(next);
          expect(response.status, response.text).to.equal(200);
          walked.push(...response.body);
          next = nextLink(response);
        }
        expect(walked, `${String(sub)} ${direction} by cursor`).to.deep.equal(mine);
        for (const offset of [0, 3, 7, Math.max(0, mine.length - 1)]) {
          const response = await user.get<Row[]>(
            `/v1/collections/owned/rows?order_by=${field}&order=${direction}&limit=5&offset=${offset}`,
          );
          expect(response.status, response.text).to.equal(200);
          expect(response.body, `${String(sub)} ${direction} from ${offset}`).to.deep.equal(mine.slice(offset, offset + 5));
        }
      }
    }
  }

  it('makes the pair of the rule’s field and the order’s on a user’s first page, and reads every page from it', async () => {
    const response = await users[0].user.get<Row[]>('/v1/collections/owned/rows?order_by=score&limit=3');
    expect(response.status).to.equal(200);
    expect(await sortedOf()).to.deep.include.members([['owner', 'score']]);
    await expectKeys();
    await expectPages();
  });

  it('keeps the pages exact through inserts, batches, patches, upserts, deletes, changes by filter and an import', async () => {
    const rows = await stored();
    const ofAda = rows.filter((row) => row.owner === 'ada');
    const ofBob = rows.filter((row) => row.owner === 'bob');
    // A row moves from ada to bob, another's score goes null, another's field goes.
    expect((await client.patch(`/v1/collections/owned/rows/${ofAda[0].id}`, { owner: 'bob' })).status).to.equal(200);
    expect((await client.patch(`/v1/collections/owned/rows/${ofBob[0].id}`, { score: null })).status).to.equal(200);
    expect((await client.patch(`/v1/collections/owned/rows/${ofBob[1].id}`, { score: 'zz', n: -1 })).status).to.equal(200);
    expect((await client.delete(`/v1/collections/owned/rows/${ofAda[1].id}`)).status).to.equal(204);
    // 1.0 is the owner 1's row, as its text says it; "1" stays another's.
    const raw = '[{"owner":1.0,"score":7,"n":100},{"owner":"1","score":7,"n":101},{"owner":1e0,"score":-7,"n":102}]';
    const inserted = await client.request('POST', '/v1/collections/owned/rows', { raw, headers: { 'content-type': 'application/json' } });
    expect(inserted.status, inserted.text).to.equal(201);
    const batch = await client.post('/v1/batch', {
      operations: [
        { op: 'insert', collection: 'owned', rows: [{ owner: 'ada', score: 1.5, k: 'x' }] },
        { op: 'update', collection: 'owned', id: ofAda[2].id, patch: { owner: 1 } },
        { op: 'delete', collection: 'owned', id: ofBob[2].id },
      ],
    });
    expect(batch.status, batch.text).to.equal(200);
    // An upsert moves the row keyed x to bob.
    const upserted = await client.post('/v1/collections/owned/rows?on_conflict=k', [{ k: 'x', owner: 'bob', score: 2 }]);
    expect(upserted.status, upserted.text).to.be.oneOf([200, 201]);
    // Every row of "1" to ada, by filter.
    const moved = await client.patch(`/v1/collections/owned/rows?filter=${encodeURIComponent('{"owner":"1"}')}`, { owner: 'ada' });
    expect(moved.status, moved.text).to.equal(200);
    // bob's rows of score 3 go by filter; rows come in by an import (src/cli/import.ts), one with 1.0 as its text says.
    const gone = await client.delete(`/v1/collections/owned/rows?filter=${encodeURIComponent('{"owner":"bob","score":3}')}`);
    expect(gone.status, gone.text).to.equal(200);
    const accountId = Number((await server.store.knex('collections').where({ name: 'owned' }).first('account_id')).account_id);
    const last = Math.max(...(await stored()).map((row) => row.id));
    const imported = ['{"owner":1.0,"score":0.5}', '{"owner":"bob","score":"c"}', '{"owner":"ada"}'];
    await server.store.importRows(
      accountId,
      'owned',
      imported.map((text, n) => ({ id: last + 10 + n, text })),
      last + 20,
    );
    await expectKeys();
    await expectPages();
    // Each user's own writes, under the rule.
    const [ada] = users;
    const mine = await ada.user.post<Row[]>('/v1/collections/owned/rows', [{ owner: 'ada', score: -100 }]);
    expect(mine.status, mine.text).to.equal(201);
    expect((await ada.user.patch(`/v1/collections/owned/rows/${mine.body[0].id}`, { score: 100 })).status).to.equal(200);
    await expectKeys();
    await expectPages();
  });

  it('answers a page ordered by another field from another pair, and never another owner’s rows', async () => {
    await expectPages('n');
    expect(await sortedOf()).to.deep.include.members([
      ['owner', 'score'],
      ['owner', 'n'],
    ]);
    for (const { sub, user } of users) {
      const response = await user.get<Row[]>('/v1/collections/owned/rows?order_by=score&order=desc&limit=100');
      for (const row of response.body) expect(row.owner).to.deep.equal(sub);
    }
  });

  it('makes the pair of a declared index’s first two fields at once, in a collection of any size', async () => {
    await client.post('/v1/collections', { name: 'declared' });
    const rows = Array.from({ length: 9 }, (_, n) => ({ owner: n % 2 ? 'ada' : 'bob', score: (n * 5) % 7, at: n }));
    expect((await client.post('/v1/collections/declared/rows', rows)).status).to.equal(201);
    expect((await client.post('/v1/collections/declared/indexes', { fields: ['owner', 'score', 'at'] })).status).to.equal(201);
    const { sorted } = await server.store.knex('collections').where({ name: 'declared' }).first('sorted');
    expect(JSON.parse(sorted)).to.deep.equal(['owner', 'score', 'at', ['owner', 'score']]);
    const all = (await client.get<Row[]>('/v1/collections/declared/rows')).body;
    for (const direction of ['asc', 'desc'] as const) {
      const filter = encodeURIComponent('{"owner":"ada"}');
      const page = await client.get<Row[]>(
        `/v1/collections/declared/rows?filter=${filter}&order_by=score&order=${direction}&limit=3&offset=1`,
      );
      const expected = sortRows(
        all.filter((row) => row.owner === 'ada'),
        [{ field: 'score', direction }],
      );
      expect(page.body).to.deep.equal(expected.slice(1, 4));
    }
  });
});
