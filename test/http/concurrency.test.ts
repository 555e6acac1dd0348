// A model check of concurrent writes (contract.md, "Rows", "Real-time feed", "Storage and scale"): a
// random mix of inserts (single, batch, and batches that must be refused), patches (two of one row at
// once, and of field names that SQLite patches in Node), deletes and reads, all fired at once, then
// three accounts compared: the rows read over REST, the events a subscriber got from seq 1 replayed over
// an empty model, and what each request was answered. Whatever the interleaving, they must agree: each
// 2xx write has exactly one event, each event's row is what its write answered and follows from the row
// before it, a refused write left nothing, and readers that subscribe with `since` mid-run miss nothing
// and repeat nothing. On PostgreSQL the requests go to two instances, one a `rowbase serve` process.
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import fc from 'fast-check';
import { describeEachBackend } from '../support/backends.ts';
import { Client, type Response } from '../support/client.ts';
import { FeedClient, type FeedMessage, range } from '../support/feed.ts';
import { type ServeProcess, Workspace } from '../support/process.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { watchHealth } from '../support/watchdog.ts';

type Row = { id: number } & Record<string, unknown>;
type Change = Extract<FeedMessage, { row: unknown }>;

/** Field names a JSON path cannot spell, or that JavaScript orders first: SQLite patches those in Node. */
const fieldNames = ['n', 'text', 'a"b', '0', 'x\\y', 'k\ud800'];
const SEEDED = 6;

type Op =
  | { kind: 'insert'; rows: number; bad: boolean }
  | { kind: 'patch'; id: number; field: string }
  | { kind: 'delete'; id: number }
  | { kind: 'read'; id: number }
  | { kind: 'list' };

// Ids mostly among the seeded rows and the first inserted ones, so that writes of one row meet.
const rowId = fc.integer({ min: 1, max: SEEDED + 4 });
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('insert' as const), rows: fc.integer({ min: 1, max: 6 }), bad: fc.boolean() }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('patch' as const), id: rowId, field: fc.constantFrom(...fieldNames) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), id: rowId }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('read' as const), id: rowId }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'list' as const }) },
);
// Two patches of one row at once, beside the rest.
const ops = fc
  .tuple(fc.array(op, { minLength: 20, maxLength: 40 }), rowId, fc.constantFrom(...fieldNames))
  .map(([mix, id, field]) => [...mix, { kind: 'patch' as const, id, field }, { kind: 'patch' as const, id, field: 'n' }]);

/** What a request of `op` number `tag` sends: each write carries its tag, so its event can be told apart. */
function bodyOf(op: Op, tag: number): unknown {
  if (op.kind === 'insert') {
    const rows: Record<string, unknown>[] = range(1, op.rows).map((i) => ({ op: tag, i }));
    // One row among the others that the batch may not hold: the whole batch is refused.
    if (op.bad) rows[Math.floor(op.rows / 2)] = { op: tag, id: 1 };
    return rows;
  }
  if (op.kind === 'patch') return { tag, [op.field]: tag };
  return undefined;
}

interface Reader {
  page: Row[];
  seq: number;
  feed: FeedClient;
}

describeEachBackend('concurrent writes and reads', (backend) => {
  let server: TestServer;
  let workspace: Workspace | undefined;
  let other: ServeProcess | undefined;
  let clients: Client[];
  let collections = 0;

  before(async function () {
    this.timeout(30_000);
    // A page ordered by a field makes its sort index at once (src/db/collections/sort-indexes.ts).
    server = await startTestServer({ sortIndexMinRows: 1 }, { backend });
    const client = await server.client();
    clients = [client];
    if (backend === 'postgres') {
      // A second instance, a process of its own, on the same database.
      workspace = await Workspace.create();
      other = await workspace.serve({ DATABASE_URL: server.databaseUrl, ROWBASE_SORT_INDEX_MIN_ROWS: '1' });
      clients.push(new Client(other.url, client.key));
    }
  });
  after(async () => {
    await workspace?.cleanUp();
    await server?.stop();
  });
  watchHealth(() => server);

  it('leave the rows, the events from seq 1 and the answers in agreement, whatever the mix', async function () {
    this.timeout(60_000);
    await fc.assert(
      fc.asyncProperty(ops, async (mix) => {
        const name = `model${++collections}`;
        const [first] = clients;
        const base = `/v1/collections/${name}`;
        expect((await first.post('/v1/collections', { name })).status).to.equal(201);
        expect(
          (
            await first.post(
              `${base}/rows`,
              range(1, SEEDED).map((i) => ({ seed: i })),
            )
          ).status,
        ).to.equal(201);
        const feed = await FeedClient.open(server.url, first.key, { collection: name, since: 0 });
        const readers: Promise<Reader>[] = [];

        const answers = await Promise.all(
          mix.map(async (op, tag): Promise<Response<unknown>> => {
            const client = clients[tag % clients.length];
            switch (op.kind) {
              case 'insert':
                return client.post(`${base}/rows`, bodyOf(op, tag));
              case 'patch':
                return client.patch(`${base}/rows/${op.id}`, bodyOf(op, tag));
              case 'delete':
                return client.delete(`${base}/rows/${op.id}`);
              case 'read':
                return client.get(`${base}/rows/${op.id}`);
              case 'list': {
                // Read, then subscribe with since=Rowbase-Seq while the writes go on (contract.md, "Real-time feed").
                const response = await client.get<Row[]>(`${base}/rows?limit=1000`);
                const seq = Number(response.headers.get('rowbase-seq'));
                readers.push(
                  FeedClient.open(client.url, client.key, { collection: name, since: seq }).then((feed) => ({
                    page: response.body,
                    seq,
                    feed,
                  })),
                );
                return response;
              }
            }
          }),
        );
        for (const [tag, answer] of answers.entries())
          expect(answer.status, `${JSON.stringify(mix[tag])}: ${answer.text}`).to.be.below(500);

        const latest = (await first.get<{ seq: number }>(base)).body.seq;
        const events = (await feed.seqReached(latest)).filter((message): message is Change => 'row' in message);
        expect(
          events.map((event) => event.seq),
          'every seq from 1, once, in order',
        ).to.deep.equal(range(1, latest));

        // The events replayed in order over an empty model, each following from the row before it.
        const model = new Map<number, Row>();
        const states = new Map<number, Row[]>();
        const at = new Map<number, Row[]>([[0, []]]);
        let lastId = 0;
        for (const event of events) {
          const row = event.row as Row;
          const before = model.get(row.id);
          if (event.type === 'insert') {
            expect(before, `seq ${event.seq} inserts row ${row.id} twice`).to.equal(undefined);
            expect(row.id, `seq ${event.seq}: ids increase in commit order`).to.be.greaterThan(lastId);
            lastId = row.id;
            model.set(row.id, row);
          } else if (event.type === 'update') {
            expect(before, `seq ${event.seq} updates a row that is not there`).to.not.equal(undefined);
            const tag = row.tag as number;
            expect(mix[tag]?.kind, `seq ${event.seq}: an update of a patch`).to.equal('patch');
            expect(row, `seq ${event.seq}: the patch over the row as it was`).to.deep.equal({
              ...before,
              ...(bodyOf(mix[tag], tag) as object),
            });
            model.set(row.id, row);
          } else {
            expect(row, `seq ${event.seq}: a delete carries the row as it was`).to.deep.equal(before);
            model.delete(row.id);
          }
          states.set(row.id, [...(states.get(row.id) ?? []), row]);
          at.set(
            event.seq,
            [...model.values()].sort((a, b) => a.id - b.id),
          );
        }

        const list = await first.get<Row[]>(`${base}/rows?limit=1000`);
        expect(list.body, 'the rows over REST are the replayed events').to.deep.equal(at.get(latest));

        // Each answer against the events.
        const ofOp = (tag: number) => events.filter((event) => (event.row as Row).op === tag && event.type === 'insert');
        for (const [tag, op] of mix.entries()) {
          const answer = answers[tag];
          const what = `${JSON.stringify(op)} answered ${answer.status} ${answer.text}`;
          if (op.kind === 'insert') {
            if (op.bad) {
              expect(answer.status, what).to.equal(400);
              expect(ofOp(tag), `${what}: nothing of it stored`).to.deep.equal([]);
              continue;
            }
            expect(answer.status, what).to.equal(201);
            const inserted = ofOp(tag);
            expect(
              inserted.map((event) => event.row),
              what,
            ).to.deep.equal(answer.body);
            expect(
              inserted.map((event) => event.seq - inserted[0].seq),
              `${what}: consecutive seqs`,
            ).to.deep.equal(range(0, op.rows - 1));
          } else if (op.kind === 'patch') {
            const updated = events.filter((event) => event.type === 'update' && (event.row as Row).tag === tag);
            expect([200, 404], what).to.include(answer.status);
            expect(
              updated.map((event) => event.row),
              what,
            ).to.deep.equal(answer.status === 200 ? [answer.body] : []);
          } else if (op.kind === 'delete') {
            expect([204, 404], what).to.include(answer.status);
          } else if (op.kind === 'read') {
            expect([200, 404], what).to.include(answer.status);
            if (answer.status === 200) expect(states.get(op.id), `${what}: a state the row had`).to.deep.include(answer.body);
          }
        }
        // Each row's delete events are the 204s its deletes got.
        for (const id of new Set(mix.flatMap((op) => (op.kind === 'delete' ? [op.id] : [])))) {
          const deleted = events.filter((event) => event.type === 'delete' && (event.row as Row).id === id).length;
          const answered = mix.filter((op, tag) => op.kind === 'delete' && op.id === id && answers[tag].status === 204).length;
          expect(deleted, `row ${id}: a delete event for each 204`).to.equal(answered);
        }

        // Each reader's page is the state at its seq, and its feed brings every later event, once.
        for (const reader of await Promise.all(readers)) {
          expect(reader.page, `the page read at seq ${reader.seq}`).to.deep.equal(at.get(reader.seq));
          if (latest > reader.seq) await reader.feed.seqReached(latest);
          expect(reader.feed.changes, `since=${reader.seq}`).to.deep.equal(events.slice(reader.seq));
          await reader.feed.close();
        }
        await feed.close();
      }),
      { numRuns: 8, endOnFailure: true },
    );
  });

  // Random, so that PostgreSQL cannot compress it under btree's bound on an index key.
  const long = () => randomBytes(3000).toString('base64');

  it('store every batch merged with one holding a string longer than any index key, that one too', async () => {
    const [first] = clients;
    const name = `merged${++collections}`;
    const base = `/v1/collections/${name}`;
    await first.post('/v1/collections', { name });
    await first.post(`${base}/rows`, [{ s: 'a' }, { s: 'b' }]);
    expect((await first.get(`${base}/rows?order_by=s`)).status).to.equal(200);
    const feed = await FeedClient.open(server.url, first.key, { collection: name, since: 0 });

    const batches = range(0, 15).map((n) => range(0, 4).map((i) => ({ batch: n, s: `${n}-${i}` })));
    batches[7][2].s = long();
    const answers = await Promise.all(batches.map((batch, n) => clients[n % clients.length].post<Row[]>(`${base}/rows`, batch)));
    // PostgreSQL keys the string's first 400 characters (src/db/collections/sort-indexes.ts); it refused the write before.
    for (const answer of answers) expect(answer.status, answer.text).to.equal(201);

    const latest = (await first.get<{ seq: number }>(base)).body.seq;
    expect(latest).to.equal(2 + 5 * batches.length);
    const events = (await feed.seqReached(latest)).filter((message): message is Change => 'row' in message);
    expect(events.map((event) => event.seq)).to.deep.equal(range(1, latest));
    const stored = answers.flatMap((answer) => answer.body);
    expect(events.slice(2).map((event) => event.row)).to.have.deep.members(stored);
    const page = await first.get<Row[]>(`${base}/rows?order_by=s&limit=1000`);
    expect(page.body).to.have.length(2 + 5 * batches.length);
    // The strings are ASCII: code unit order is code point order.
    expect(page.body.map((row) => row.s)).to.deep.equal(page.body.map((row) => row.s as string).sort());
    await feed.close();
  });

  it('order pages exactly by strings of any length, which PostgreSQL keys by their first 400 characters', async () => {
    const [first] = clients;
    const name = `unindexed${++collections}`;
    const base = `/v1/collections/${name}`;
    await first.post('/v1/collections', { name });
    const shared = 'p'.repeat(450);
    const rows = [{ s: 'b' }, { s: long() }, { s: 'a' }, { s: `${shared}b` }, { s: `${shared}a` }, { s: shared }, { s: 1 }, {}];
    expect((await first.post(`${base}/rows`, rows)).status).to.equal(201);
    // Patched in too, once the field has its index: the patch's key is cut as the insert's.
    expect((await first.get(`${base}/rows?order_by=s`)).status).to.equal(200);
    expect((await first.patch(`${base}/rows/3`, { s: `${shared}c` })).status).to.equal(200);
    rows[2] = { s: `${shared}c` };
    // Numbers first, then strings by code point (ASCII here: as JavaScript compares them), missing last.
    const byS = (x: Row, y: Row) =>
      typeof x.s !== typeof y.s
        ? rankOf(x) - rankOf(y)
        : x.s === y.s
          ? x.id - y.id
          : (x.s as string | number) < (y.s as string | number)
            ? -1
            : 1;
    const rankOf = (row: Row) => (typeof row.s === 'number' ? 0 : typeof row.s === 'string' ? 1 : 2);
    const ascending = rows.map((row, index) => ({ ...row, id: index + 1 }) as Row).sort(byS);
    const missing = ascending.filter((row) => row.s === undefined);
    const descending = [...ascending.filter((row) => row.s !== undefined)].reverse().concat(missing);
    for (const [order, expected] of [
      ['asc', ascending],
      ['desc', descending],
    ] as const) {
      const whole = await first.get<Row[]>(`${base}/rows?order_by=s&order=${order}`);
      expect(whole.body, order).to.deep.equal(expected);
      const pages = await Promise.all(
        range(0, 3).map((n) => first.get<Row[]>(`${base}/rows?order_by=s&order=${order}&limit=3&offset=${3 * n}`)),
      );
      expect(
        pages.flatMap((page) => page.body),
        `${order}, in pages of 3`,
      ).to.deep.equal(expected);
    }
  });

  it('delete a collection under writes and feeds: no 5xx, nothing left of it, every feed told, the name free to start again', async function () {
    this.timeout(30_000);
    const [first] = clients;
    const name = `doomed${++collections}`;
    const base = `/v1/collections/${name}`;
    await first.post('/v1/collections', { name });
    await first.post(
      `${base}/rows`,
      range(1, 20).map((n) => ({ n, s: `${n}` })),
    );
    await first.get(`${base}/rows?order_by=s`); // a sort index, so that its keys must go too
    const open = (n: number) =>
      FeedClient.open(clients[n % clients.length].url, first.key, { collection: name, since: n % 2 === 0 ? 0 : undefined });
    const before = await Promise.all(range(0, 5).map(open));

    const writes = range(0, 59).map((n) => {
      const client = clients[n % clients.length];
      if (n % 3 === 0) return client.post(`${base}/rows`, [{ n }, { n: -n }]);
      if (n % 3 === 1) return client.patch(`${base}/rows/${(n % 20) + 1}`, { s: `p${n}` });
      return client.delete(`${base}/rows/${(n % 20) + 1}`);
    });
    // The delete while the writes are under way, and feeds asked for meanwhile.
    await Promise.race(writes);
    const during = range(0, 5).map((n) => open(n).catch((error: Error) => error));
    const deleted = await first.delete(base);
    expect(deleted.status).to.equal(204);
    for (const answer of await Promise.all(writes)) expect([200, 201, 204, 404], answer.text).to.include(answer.status);

    for (const feed of [...before, ...(await Promise.all(during))]) {
      if (feed instanceof Error) {
        expect(feed.message).to.equal('upgrade refused with 404');
        continue;
      }
      expect(await feed.closing(), JSON.stringify(feed.changes.at(-1))).to.deep.equal({ code: 4404, reason: 'collection deleted' });
      const changes = feed.messages.filter((message): message is Change => 'row' in message);
      // In seq order with no gap, from 1 for a feed that asked since=0.
      const seqs = changes.map((change) => change.seq);
      expect(seqs).to.deep.equal(range(seqs[0] ?? 1, (seqs[0] ?? 1) + seqs.length - 1));
      // The last message; the only one for a feed whose collection went before its subscription was live (asyncapi.yaml).
      expect(feed.messages.at(-1)).to.deep.equal({ type: 'collection_deleted', collection: name });
      feed.checkValid();
    }

    // Nothing of it left, whatever write came last.
    const { knex } = server.store;
    for (const table of ['rows', 'events', 'sort_keys']) {
      const orphans = await knex(table).whereNotIn('collection_id', knex('collections').select('id')).count({ n: '*' });
      expect(Number(orphans[0].n), `${table} of no collection`).to.equal(0);
    }
    // The name starts again: a new collection, its own seqs and ids from 1.
    expect((await first.post('/v1/collections', { name })).status).to.equal(201);
    const fresh = await FeedClient.open(server.url, first.key, { collection: name, since: 0 });
    expect(fresh.ready.seq).to.equal(0);
    const inserted = await first.post<Row[]>(`${base}/rows`, [{ again: true }]);
    expect(inserted.body).to.deep.equal([{ id: 1, again: true }]);
    const [event] = await fresh.changesCount(1);
    expect(event).to.deep.include({ type: 'insert', seq: 1, row: { id: 1, again: true } });
    expect((await first.get(`${base}/rows?order_by=s`)).body).to.deep.equal([{ id: 1, again: true }]);
    await fresh.close();
  });
});
