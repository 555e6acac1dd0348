// Unique indexes under writes that race for their values (openapi.yaml, UniqueViolation; docs/expiry.md):
// random rounds of inserts, patches, upserts, batches and deletes of rows holding a few values of a unique
// index, fired at once, in a collection with a time to live whose rows may expire, with the sweeper running
// every 20 ms. Whatever the interleaving, each write answers as its own operation says (a value taken is a
// 409 unique_violation naming its field, never another code, never a 5xx), and after each round no two rows
// that live hold one value, and a value that no live row holds is free to a new row. On both backends.
import { expect } from 'chai';
import fc from 'fast-check';
import { describeEachBackend } from '../support/backends.ts';
import type { Client, Response } from '../support/client.ts';
import { madeCollection } from '../support/expiry.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Row = { id: number; code?: string; expires_at?: string };
type Problem = { code: string; fields?: string[]; operation?: number };

const CODES = ['a', 'b', 'c'];
const code = fc.constantFrom(...CODES);
/** A row's expiry: in the past (gone at once), far ahead, or none. */
const expiry = fc.constantFrom<string | undefined>('2001-01-01T00:00:00Z', '2999-01-01T00:00:00Z', undefined);
const write = fc.oneof(
  fc.record({ kind: fc.constant('insert' as const), code, expiry }),
  fc.record({ kind: fc.constant('patch' as const), pick: fc.nat(), code, expiry }),
  fc.record({ kind: fc.constant('upsert' as const), code, expiry }),
  fc.record({ kind: fc.constant('batch' as const), code, pick: fc.nat(), other: code }),
  fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('deleteWhere' as const), code }),
);
type Write = typeof write extends fc.Arbitrary<infer T> ? T : never;

/** The statuses each write may answer, whatever it races with: a taken value is a 409 unique_violation. */
const allowed: Record<Write['kind'], number[]> = {
  insert: [201, 409],
  patch: [200, 404, 409],
  upsert: [200, 409],
  batch: [200, 404, 409],
  delete: [204, 404],
  deleteWhere: [200],
};

describeEachBackend('unique values under racing writes', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;

  before(async () => {
    server = await startTestServer({ expirySweepIntervalMs: 20 }, { backend });
    client = await server.client();
  });
  after(() => server.stop());

  it('answers each write as its own operation says, and keeps one live holder of a value at most', async function () {
    this.timeout(300_000);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(write, { minLength: 2, maxLength: 8 }), { minLength: 1, maxLength: 4 }), async (rounds) => {
        const name = await madeCollection(client, `u${++collections}`);
        expect((await client.post(`/v1/collections/${name}/indexes`, { fields: ['code'], unique: true })).status).to.equal(201);
        const rowsPath = `/v1/collections/${name}/rows`;
        const ids: number[] = [];
        for (const round of rounds) {
          const answers = await Promise.all(round.map((each) => sent(client, name, each, ids)));
          for (const [index, answer] of answers.entries()) {
            const { kind } = round[index];
            expect(allowed[kind], `${kind}: ${answer.status} ${answer.text}`).to.include(answer.status);
            if (answer.status === 409) {
              const problem = answer.body as Problem;
              expect([problem.code, problem.fields], answer.text).to.deep.equal(['unique_violation', ['code']]);
            }
            if (answer.status === 201) ids.push(...(answer.body as Row[]).map((row) => row.id));
            if (kind === 'upsert' && answer.status === 200) ids.push(...(answer.body as Row[]).map((row) => row.id));
            if (kind === 'batch' && answer.status === 200)
              ids.push(...((answer.body as { results: { body: Row[] }[] }).results[0].body ?? []).map((row) => row.id));
          }
          const page = await client.get<Row[]>(`${rowsPath}?limit=1000`);
          expect(page.status, page.text).to.equal(200);
          const held = page.body.flatMap((row) => (row.code === undefined ? [] : [row.code]));
          expect(new Set(held).size, JSON.stringify(page.body)).to.equal(held.length);
          // A value no live row holds is free: a row holding it is written (and deleted again).
          const free = CODES.find((value) => !held.includes(value));
          if (free !== undefined) {
            const taken = await client.post<Row[]>(rowsPath, [{ code: free }]);
            expect(taken.status, taken.text).to.equal(201);
            expect((await client.delete(`${rowsPath}/${taken.body[0].id}`)).status).to.equal(204);
          }
        }
      }),
      { numRuns: Number(process.env.RUNS ?? 15) },
    );
  });
});

/** Sends `each` to the collection `name`, a row of `ids` (those written so far) where it names one. */
function sent(client: Client, name: string, each: Write, ids: readonly number[]): Promise<Response> {
  const rowsPath = `/v1/collections/${name}/rows`;
  const id = 'pick' in each ? (ids.length > 0 ? ids[each.pick % ids.length] : 1) : 1;
  const row = 'expiry' in each ? { code: each.code, ...(each.expiry ? { expires_at: each.expiry } : {}) } : {};
  switch (each.kind) {
    case 'insert':
      return client.post(rowsPath, [row]);
    case 'patch':
      return client.patch(`${rowsPath}/${id}`, row);
    case 'upsert':
      return client.post(`${rowsPath}?on_conflict=code`, [row]);
    case 'batch':
      return client.post('/v1/batch', {
        operations: [
          { op: 'insert', collection: name, rows: [{ code: each.code }] },
          { op: 'update', collection: name, id, patch: { code: each.other } },
        ],
      });
    case 'delete':
      return client.delete(`${rowsPath}/${id}`);
    case 'deleteWhere':
      return client.delete(`${rowsPath}?filter=${encodeURIComponent(JSON.stringify({ code: each.code }))}`);
  }
}
