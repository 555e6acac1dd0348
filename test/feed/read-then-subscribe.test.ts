// contract.md, "Real-time feed": "A client can read rows over REST, then subscribe with `since` and miss
// nothing." A page of rows carries `Rowbase-Seq`, the collection's latest event seq as of the snapshot its
// rows were read from; a feed subscribed with that `since` brings exactly the changes the page does not
// show. Checked on every way rows.ts reads a page, and while a writer writes.
import { expect } from 'chai';
import type { Config } from '../../src/config.ts';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { FeedClient, type FeedMessage, range, seqs } from '../support/feed.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Row = { id: number; a?: number | null } & Record<string, unknown>;
type Change = Extract<FeedMessage, { type: 'insert' | 'update' | 'delete' }>;

/** Each way listRows() reads a page: its query, and the server settings that lead there. */
const paths: { name: string; config: Partial<Config>; query: string; order(rows: Row[]): Row[] }[] = [
  { name: 'ordered by id (one statement)', config: {}, query: 'order_by=id&order=desc', order: (rows) => byA(rows, 'id', 'desc') },
  { name: 'sorted whole by a field (one statement)', config: {}, query: 'order_by=a&order=desc', order: (rows) => byA(rows, 'a', 'desc') },
  {
    name: 'from a sort index, ascending (one statement)',
    config: { sortIndexMinRows: 0 },
    query: 'order_by=a&order=asc',
    order: (rows) => byA(rows, 'a', 'asc'),
  },
  {
    name: 'from a sort index, descending into the rows missing the field (two statements, one snapshot)',
    config: { sortIndexMinRows: 0 },
    query: 'order_by=a&order=desc',
    order: (rows) => byA(rows, 'a', 'desc'),
  },
];

/** contract.md's order for integer (or missing) values of `field`: missing and null last, ties by id. */
function byA(rows: Row[], field: 'id' | 'a', order: 'asc' | 'desc'): Row[] {
  const dir = order === 'asc' ? 1 : -1;
  const value = (row: Row) => (field === 'id' ? row.id : row.a);
  return [...rows].sort((x, y) => {
    const [vx, vy] = [value(x), value(y)];
    const [mx, my] = [vx === undefined || vx === null, vy === undefined || vy === null];
    if (mx !== my) return mx ? 1 : -1;
    return dir * ((mx ? 0 : (vx as number) - (vy as number)) || x.id - y.id);
  });
}

/** The rows after applying `changes` (whole rows: insert and update set, delete removes) to `rows`. */
function apply(rows: Map<number, Row>, changes: Change[]): void {
  for (const change of changes) {
    if (change.type === 'delete') rows.delete(change.row.id);
    else rows.set(change.row.id, change.row as Row);
  }
}

describeEachBackend('reading rows, then subscribing with since=Rowbase-Seq', (backend) => {
  const servers = new Map<string, { server: TestServer; client: Client }>();
  let collections = 0;

  before(async () => {
    for (const config of [{}, { sortIndexMinRows: 0 }]) {
      const server = await startTestServer(config, { backend });
      servers.set(JSON.stringify(config), { server, client: await server.client() });
    }
  });
  after(() => Promise.all([...servers.values()].map(({ server }) => server.stop())));

  for (const path of paths) {
    describe(`a page ${path.name}`, () => {
      let server: TestServer;
      let client: Client;
      before(() => {
        ({ server, client } = servers.get(JSON.stringify(path.config)) as { server: TestServer; client: Client });
      });
      const rowsOf = (name: string) => `/v1/collections/${name}/rows`;
      const newCollection = async () => {
        const name = `c${++collections}`;
        expect((await client.post('/v1/collections', { name })).status).to.equal(201);
        return name;
      };
      const page = async (name: string, query = '') => {
        const response = await client.get<Row[]>(`${rowsOf(name)}?${path.query}&limit=1000${query}`);
        expect(response.status).to.equal(200);
        return { rows: response.body, seq: Number(response.headers.get('rowbase-seq')) };
      };

      it('carries the number of events so far, and since=it replays exactly the later ones', async () => {
        const name = await newCollection();
        await client.post(rowsOf(name), [{ a: 1 }, {}, { a: 3 }]);
        await client.patch(`${rowsOf(name)}/1`, { a: 5 });
        await client.delete(`${rowsOf(name)}/2`);
        const read = await page(name);
        expect(read.seq).to.equal(5);
        expect(read.rows).to.deep.equal(
          path.order([
            { id: 1, a: 5 },
            { id: 3, a: 3 },
          ]),
        );

        await client.post(rowsOf(name), [{ a: 2 }]);
        await client.patch(`${rowsOf(name)}/3`, { a: null });
        await client.delete(`${rowsOf(name)}/1`);
        const feed = await FeedClient.open(server.url, client.key, { collection: name, since: read.seq });
        expect(feed.ready.seq).to.equal(8);
        await client.post(rowsOf(name), [{ a: 9 }]);
        const changes = (await feed.changesCount(4)) as Change[];
        expect(changes.map((change) => [change.type, change.seq, change.row.id])).to.deep.equal([
          ['insert', 6, 4],
          ['update', 7, 3],
          ['delete', 8, 1],
          ['insert', 9, 5],
        ]);
        await feed.close();
        expect((await page(name)).seq).to.equal(9);
      });

      it('carries it on an empty page, and HEAD too; a missing collection is 404 without it', async () => {
        const name = await newCollection();
        expect(await page(name)).to.deep.equal({ rows: [], seq: 0 });
        await client.post(rowsOf(name), [{ a: 1 }, {}]);
        expect(await page(name, '&offset=5')).to.deep.equal({ rows: [], seq: 2 });
        const head = await client.request('HEAD', `${rowsOf(name)}?${path.query}`);
        expect(head.headers.get('rowbase-seq')).to.equal('2');
        const missing = await client.get(`${rowsOf('missing')}?${path.query}`);
        expect(missing.status).to.equal(404);
        expect(missing.headers.get('rowbase-seq')).to.equal(null);
      });

      it('shows exactly the rows of the events up to its Rowbase-Seq while a writer writes', async function () {
        this.timeout(60_000);
        const name = await newCollection();
        await page(name); // makes the sort index, where the server makes one
        const live: number[] = [];
        let nextId = 1;
        let writing = true;
        const write = async () => {
          for (let round = 1; round <= 40; round++) {
            // Writes that run at once: on SQLite they may be merged into one transaction (src/db/engine/grouping.ts, GroupedWrites).
            const [patched, deleted] = live.length >= 2 ? [live[round % live.length], live.shift()] : [];
            const writes: Promise<unknown>[] = [client.post(rowsOf(name), [{ a: round % 7 }, {}, { a: -round }])];
            live.push(nextId, nextId + 1, nextId + 2);
            nextId += 3;
            if (patched !== undefined && patched !== deleted) {
              writes.push(client.patch(`${rowsOf(name)}/${patched}`, { a: round % 3 === 0 ? null : round }));
            }
            if (deleted !== undefined) writes.push(client.delete(`${rowsOf(name)}/${deleted}`));
            for (const response of (await Promise.all(writes)) as { status: number }[])
              expect(response.status).to.be.oneOf([200, 201, 204]);
          }
        };
        const writer = write().finally(() => {
          writing = false;
        });
        const samples: { rows: Row[]; seq: number }[] = [];
        const reader = async () => {
          while (writing) samples.push(await page(name));
        };
        await Promise.all([writer, reader(), reader(), reader()]);

        const last = (await client.get<{ seq: number }>(`/v1/collections/${name}`)).body.seq;
        const feed = await FeedClient.open(server.url, client.key, { collection: name, since: 0 });
        const changes = (await feed.seqReached(last)) as Change[];
        await feed.close();
        expect(seqs(changes)).to.deep.equal(range(1, last));
        const during = new Set(samples.map((sample) => sample.seq).filter((seq) => seq > 0 && seq < last));
        expect(during.size, 'pages read while the writer wrote').to.be.greaterThan(3);

        const state = new Map<number, Row>();
        let applied = 0;
        for (const sample of samples.sort((x, y) => x.seq - y.seq)) {
          apply(state, changes.slice(applied, sample.seq));
          applied = sample.seq;
          expect(sample.rows, `the page of Rowbase-Seq ${sample.seq}`).to.deep.equal(path.order([...state.values()]));
        }
      });
    });
  }
});
