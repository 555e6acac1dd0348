// Rows that expire, against random writes (docs/expiry.md, "Gone at once" and "Deleted within seconds"):
// a collection with a time to live, a unique index and a sort index takes random inserts, patches, deletes,
// upserts (`on_conflict`), batches of an insert and a patch, and deletes by filter, its rows expiring far in
// the past, far in the future or never (values that name no instant), with the sweeper running every few
// milliseconds, and with none until the test asks (so that expired rows stay stored and hold their values).
// After each write, every read shows exactly the rows a model says live: a page by id, by the sort index both
// ways, filtered and counted, an aggregate, the collection's row_count; a write to an expired row is a 404, and
// a unique value an expired row holds is free to every write; and once swept, each expired row has one
// `delete` event marked expired, each row deleted by hand one without a reason. On both backends.
import { expect } from 'chai';
import fc from 'fast-check';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { changeLog, madeCollection, walkedRows } from '../support/expiry.ts';
import { type Row, sortRows } from '../support/order.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Fields = Record<string, unknown>;
type Problem = { code: string };
/** A row of the model: its fields as stored, and whether it was deleted by a request. */
type Held = { fields: Fields; deleted: boolean };

/** Values of `expires_at` past, to come and naming no instant, each read as docs/expiry.md says. */
const EXPIRED = ['2001-01-01T00:00:00Z', '1999-12-31t23:59:59.5z', '2020-06-01T12:00:00+01:00'];
const LATER = ['2999-01-01T00:00:00Z', '2998-05-05t10:00:00.25-05:00'];
const NEVER: unknown[] = ['soon', '2001-02-29T00:00:00Z', '2001-01-01T00:00:00', 5, null, true];
const expiresAt = fc.constantFrom<unknown>(...EXPIRED, ...LATER, ...NEVER);
const expiredBy = (fields: Fields) => EXPIRED.includes(fields.expires_at as string);

/** A row's fields: a unique `email` among few (or none), a `score` of the sort index (or none), an expiry. */
const rowFields = fc.record(
  { email: fc.constantFrom('a', 'b', 'c', 'd'), score: fc.integer({ min: 0, max: 5 }), expires_at: expiresAt },
  { requiredKeys: [] },
);
const operation = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('insert' as const), rows: fc.array(rowFields, { minLength: 1, maxLength: 3 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('patch' as const), pick: fc.nat(), fields: rowFields }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('upsert' as const),
      row: fc.record(
        { email: fc.constantFrom('a', 'b', 'c', 'd'), score: fc.integer({ min: 0, max: 5 }), expires_at: expiresAt },
        { requiredKeys: ['email'] },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('deleteWhere' as const), atMost: fc.integer({ min: 0, max: 5 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('batch' as const), row: rowFields, pick: fc.nat(), fields: rowFields }) },
);
type Operation = typeof operation extends fc.Arbitrary<infer T> ? T : never;

/** The ids of a walk from the page `first` by its Links, each page a 200. */
const walkedIds = async (client: Client, first: string) => (await walkedRows(client, first)).map((row) => row.id);
describeEachBackend('rows that expire, against random writes', (backend) => {
  let collections = 0;
  // The sweeper every 20 ms, between the writes and the reads; and none until asked, so that expired rows stay
  // stored, holding their values. Every field ordered by has its sort index at once.
  for (const [sweeps, sweepMs] of [
    ['the sweeper every 20 ms', 20],
    ['no sweep until the end', 3_600_000],
  ] as const) {
    describe(sweeps, () => {
      let server: TestServer;
      let client: Client;
      before(async () => {
        server = await startTestServer({ expirySweepIntervalMs: sweepMs, sortIndexMinRows: 0 }, { backend });
        client = await server.client();
      });
      after(() => server.stop());

      it('shows exactly the rows that live on every read, through every write, and gives each expired row one delete event', async function () {
        this.timeout(300_000);
        await fc.assert(
          fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 10 }), async (ops) => {
            const name = `x${++collections}`;
            await madeCollection(client, name);
            expect((await client.post(`/v1/collections/${name}/indexes`, { fields: ['email'], unique: true })).status).to.equal(201);
            await applied(client, name, ops, () => server.feed.sweeper.runOnce());
          }),
          { numRuns: Number(process.env.RUNS ?? 15) },
        );
      });
    });
  }
});

/**
 * Applies `ops` to the collection `name` (with its time to live and its unique index of `email`), each
 * answered as the model says, every read checked against it after each (readsShow); then every row by
 * id and a walk by cursor; then, once `sweep` has deleted every expired row, its delete events.
 */
async function applied(client: Client, name: string, ops: Operation[], sweep: () => Promise<unknown>): Promise<void> {
  const rowsPath = `/v1/collections/${name}/rows`;
  const model = new Map<number, Held>();
  const lives = (held: Held) => !held.deleted && !expiredBy(held.fields);
  const live = () => [...model].filter(([, held]) => lives(held));
  const liveHolding = (email: unknown, but?: number) => live().find(([id, held]) => id !== but && held.fields.email === email);
  const rowOf = (id: number, fields: Fields): Row => ({ id, ...fields });
  const pick = (n: number) => [...model.keys()][n % model.size];

  for (const op of ops) {
    if (op.kind === 'insert') {
      const emails = op.rows.map((row) => row.email).filter((email) => email !== undefined);
      const clash = new Set(emails).size < emails.length || emails.some((email) => liveHolding(email));
      const inserted = await client.post<Row[] & Problem>(rowsPath, op.rows);
      expect(inserted.status, inserted.text).to.equal(clash ? 409 : 201);
      if (clash) expect(inserted.body.code).to.equal('unique_violation');
      else
        for (const [index, row] of inserted.body.entries()) {
          expect(row).to.deep.equal(rowOf(row.id, op.rows[index]));
          model.set(row.id, { fields: op.rows[index], deleted: false });
        }
    } else if ((op.kind === 'patch' || op.kind === 'delete') && model.size > 0) {
      const id = pick(op.pick);
      const held = model.get(id) as Held;
      if (op.kind === 'delete') {
        expect((await client.delete(`${rowsPath}/${id}`)).status).to.equal(lives(held) ? 204 : 404);
        if (lives(held)) held.deleted = true;
      } else {
        const patched = await client.patch<Row & Problem>(`${rowsPath}/${id}`, op.fields);
        const clash = op.fields.email !== undefined && liveHolding(op.fields.email, id);
        const empty = Object.keys(op.fields).length === 0;
        expect(patched.status, patched.text).to.equal(empty ? 400 : !lives(held) ? 404 : clash ? 409 : 200);
        if (patched.status === 409) expect(patched.body.code).to.equal('unique_violation');
        if (patched.status === 200) {
          held.fields = { ...held.fields, ...op.fields };
          expect(patched.body).to.deep.equal(rowOf(id, held.fields));
        }
      }
    } else if (op.kind === 'upsert') {
      const upserted = await client.post<Row[]>(`${rowsPath}?on_conflict=email`, [op.row]);
      expect(upserted.status, upserted.text).to.equal(200);
      const [row] = upserted.body;
      const holder = liveHolding(op.row.email);
      if (holder) holder[1].fields = { ...holder[1].fields, ...op.row };
      else {
        expect(model.has(row.id), 'a new row').to.equal(false);
        model.set(row.id, { fields: op.row, deleted: false });
      }
      expect(row).to.deep.equal(rowOf(row.id, (model.get(row.id) as Held).fields));
    } else if (op.kind === 'deleteWhere') {
      const matched = live().filter(([, held]) => typeof held.fields.score === 'number' && held.fields.score <= op.atMost);
      const filter = encodeURIComponent(JSON.stringify({ score: { $lte: op.atMost } }));
      const deleted = await client.delete<{ count: number }>(`${rowsPath}?filter=${filter}`);
      expect(deleted.status, deleted.text).to.equal(200);
      expect(deleted.body.count).to.equal(matched.length);
      for (const [, held] of matched) held.deleted = true;
    } else if (op.kind === 'batch') {
      // An insert, then a patch of a row stored before (when there is one, and the patch sets a field).
      const id = model.size > 0 && Object.keys(op.fields).length > 0 ? pick(op.pick) : undefined;
      const operations: object[] = [{ op: 'insert', collection: name, rows: [op.row] }];
      if (id !== undefined) operations.push({ op: 'update', collection: name, id, patch: op.fields });
      const batch = await client.post<{ results: { status: number; body: unknown }[] } & Problem & { operation: number }>('/v1/batch', {
        operations,
      });
      const held = id === undefined ? undefined : (model.get(id) as Held);
      // The update meets the row the insert wrote, as the insert meets the rows stored.
      const failed =
        op.row.email !== undefined && liveHolding(op.row.email)
          ? [409, 0]
          : held && !lives(held)
            ? [404, 1]
            : id !== undefined && op.fields.email !== undefined && (liveHolding(op.fields.email, id) || op.fields.email === op.row.email)
              ? [409, 1]
              : undefined;
      if (failed) {
        expect([batch.status, batch.body.operation], batch.text).to.deep.equal(failed);
      } else {
        expect(batch.status, batch.text).to.equal(200);
        const [row] = (batch.body.results[0].body as Row[]) ?? [];
        expect(row).to.deep.equal(rowOf(row.id, op.row));
        model.set(row.id, { fields: op.row, deleted: false });
        if (held && id !== undefined) {
          held.fields = { ...held.fields, ...op.fields };
          expect(batch.body.results[1].body).to.deep.equal(rowOf(id, held.fields));
        }
      }
    }
    await readsShow(
      client,
      name,
      live().map(([id, held]) => rowOf(id, held.fields)),
    );
  }

  // Every row by id: a 404 once deleted or expired; a walk by cursor through the sort index.
  for (const [id, held] of model) {
    const got = await client.get<Row>(`${rowsPath}/${id}`);
    expect(got.status, `row ${id}`).to.equal(lives(held) ? 200 : 404);
    if (lives(held)) expect(got.body).to.deep.equal(rowOf(id, held.fields));
  }
  const byScore = sortRows(
    live().map(([id, held]) => rowOf(id, held.fields)),
    [{ field: 'score', direction: 'desc' }],
  );
  expect(await walkedIds(client, `${rowsPath}?order_by=score&order=desc&limit=2`)).to.deep.equal(byScore.map((row) => row.id));

  // Once every expired row is swept: one delete event each, marked expired; one without a reason for each deleted by hand.
  await sweep();
  const expired = [...model].filter(([, held]) => !held.deleted && expiredBy(held.fields));
  const expected = [...model]
    .filter(([, held]) => !lives(held))
    .map(([id, held]): [number, string | undefined] => [id, held.deleted ? undefined : 'expired'])
    .sort(([a], [b]) => a - b);
  expect(await sweptDeletes(client, name, expired.length)).to.deep.equal(expected);
}

/**
 * What the reads of the collection `name` show against `rows`, the rows that live: a page by id, by
 * `score` through its sort index both ways, filtered and counted, an aggregate's count and the collection's row_count.
 */
async function readsShow(client: Client, name: string, rows: Row[]): Promise<void> {
  const rowsPath = `/v1/collections/${name}/rows`;
  const page = async (query: string) => {
    const response = await client.get<Row[]>(`${rowsPath}?${query}`);
    expect(response.status, response.text).to.equal(200);
    return response;
  };
  expect((await page('limit=1000')).body).to.deep.equal(sortRows(rows, [{ field: 'id', direction: 'asc' }]));
  for (const direction of ['asc', 'desc'] as const)
    expect(
      (await page(`order_by=score&order=${direction}&limit=1000`)).body.map((row) => row.id),
      direction,
    ).to.deep.equal(sortRows(rows, [{ field: 'score', direction }]).map((row) => row.id));
  const atLeastTwo = rows.filter((row) => typeof row.score === 'number' && row.score >= 2);
  const filtered = await page(`filter=${encodeURIComponent(JSON.stringify({ score: { $gte: 2 } }))}&count=exact&limit=1000`);
  expect(filtered.body.map((row) => row.id)).to.deep.equal(atLeastTwo.map((row) => row.id).sort((a, b) => a - b));
  expect(filtered.headers.get('rowbase-total-count')).to.equal(String(atLeastTwo.length));
  const aggregated = await client.post<{ groups: { rows: number }[] }>(`/v1/collections/${name}/aggregate`, {
    aggregates: { rows: { count: {} } },
  });
  expect(aggregated.status, aggregated.text).to.equal(200);
  expect(aggregated.body.groups[0]?.rows ?? 0).to.equal(rows.length);
  expect((await client.get<{ row_count: number }>(`/v1/collections/${name}`)).body.row_count).to.equal(rows.length);
  expect(await walkedIds(client, `${rowsPath}?order_by=id&limit=2`)).to.deep.equal(rows.map((row) => row.id).sort((a, b) => a - b));
}

/**
 * The collection's delete events as [row id, reason], by row id, once `expired` of them are marked
 * expired: a wait on the change log, bounded by the clock (the sweeper runs every 20 ms).
 */
async function sweptDeletes(client: Client, name: string, expired: number): Promise<[number, string | undefined][]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const deletes = (await changeLog(client, name))
      .filter((change) => change.type === 'delete')
      .map((change): [number, string | undefined] => [
        (change as { row: Row }).row.id,
        'reason' in change ? (change.reason as string) : undefined,
      ]);
    if (deletes.filter(([, reason]) => reason === 'expired').length >= expired || Date.now() > deadline)
      return deletes.sort(([a], [b]) => a - b);
  }
}
