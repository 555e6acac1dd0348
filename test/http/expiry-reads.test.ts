// Rows that expire on the read paths beside pages and cursors (docs/expiry.md, "Gone at once"): a search,
// `$some`, an order through a relation, the feed (live and replayed) and the change log's pages, changes by
// filter, aggregates, a collection's row_count and `rowbase export` (a child process), on both backends.
import { join } from 'node:path';
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { changeLog as changesOf, expired, madeCollection, nextLink, walkedN } from '../support/expiry.ts';
import { FeedClient, type FeedMessage } from '../support/feed.ts';
import { Workspace } from '../support/process.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Row = { id: number; [field: string]: unknown };
type Collection = { name: string; row_count: number; seq: number };
/** What a change by filter answers with `return=rows`. */
type Changed = { count: number; rows?: Row[] };

const past = '2001-01-01T00:00:00Z';
const future = '2999-01-01T00:00:00Z';
const filter = (value: object) => `filter=${encodeURIComponent(JSON.stringify(value))}`;
/** A change as [type, row id, reason]: what the feed and the change log are compared by. */
const changeOf = (change: FeedMessage) => [
  change.type,
  'row' in change ? (change.row as Row).id : undefined,
  'reason' in change ? change.reason : undefined,
];

describeEachBackend('rows that expire, on every read path', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;
  const collection = (ttl = true) => madeCollection(client, `r${++collections}`, ttl);
  /**
   * Inserts the collection's rows n = 1 to 12, `fields(n)` beside n, each even one expiring `inMs` from
   * now: answers once the first of them (row 2) reads 404, a wait on the row, never a fixed delay.
   */
  async function expiringSoon(name: string, inMs: number, fields: (n: number) => object = () => ({})): Promise<() => Promise<void>> {
    const at = new Date(Date.now() + inMs).toISOString();
    const rows = Array.from({ length: 12 }, (_, index) => ({
      n: index + 1,
      ...fields(index + 1),
      ...(index % 2 === 1 ? { expires_at: at } : {}),
    }));
    expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
    return () => expired(client, `/v1/collections/${name}/rows/2`, at);
  }
  const walk = (first: string) => walkedN(client, first);
  const changeLog = (name: string, limit: number) => changesOf(client, name, limit);

  before(async () => {
    // A sweep only when a test asks for one (runOnce); a page ordered by a field reads its sort index at once.
    server = await startTestServer({ expirySweepIntervalMs: 3_600_000, sortIndexMinRows: 0 }, { backend });
    client = await server.client('reader');
  });
  after(() => server.stop());

  it('searches past expired rows: a page, its count, a query, and walks by id and by score past rows that expire mid-walk', async () => {
    const name = await collection();
    expect((await client.post(`/v1/collections/${name}/indexes`, { type: 'search', fields: ['text'] })).status).to.equal(201);
    const gone = await expiringSoon(name, 3000, (n) => ({ text: `red shoe ${n}` }));
    const search = `/v1/collections/${name}/rows?${filter({ $search: 'red' })}&limit=3`;
    const [byId, byScore] = [await client.get<Row[]>(search), await client.get<Row[]>(`${search}&order_by=_score`)];
    expect([byId.body.length, byScore.body.length]).to.deep.equal([3, 3]);
    await gone();
    const odd = [1, 3, 5, 7, 9, 11];
    for (const first of [byId, byScore]) {
      const shown = first.body.map((row) => row.n as number);
      const rest = await walk(nextLink(first) as string);
      expect(rest.filter((n) => n % 2 === 0 || shown.includes(n))).to.deep.equal([]);
      expect([...shown, ...rest].filter((n) => n % 2 === 1).sort((a, b) => a - b)).to.deep.equal(odd);
    }
    expect(await walk(search)).to.deep.equal(odd);
    const counted = await client.get<Row[]>(`${search}&count=exact`);
    expect(counted.headers.get('rowbase-total-count')).to.equal('6');
    const queried = await client.post<{ rows: Row[]; total?: number }>(`/v1/collections/${name}/query`, {
      filter: { $search: 'shoe' },
      order: [{ field: '_score' }],
      count: 'exact',
    });
    expect(queried.status, queried.text).to.equal(200);
    expect(queried.body.total).to.equal(6);
    expect(queried.body.rows.map((row) => row.n as number).sort((a, b) => a - b)).to.deep.equal(odd);
  });

  it('$some finds no expired related row; an order through a relation sorts a row whose related row expired as one naming none', async () => {
    const people = await collection();
    const posts = await collection();
    const relation = { field: 'author_id', collection: people, on_delete: 'cascade', reverse: 'posts' };
    expect((await client.put(`/v1/collections/${posts}/relations/author`, relation)).status).to.equal(200);
    await client.post(`/v1/collections/${people}/rows`, [
      { name: 'ada' },
      { name: 'bob', expires_at: future },
      { name: 'cy' },
      { name: 'dee', expires_at: future },
    ]);
    const named = await client.post(`/v1/collections/${posts}/rows`, [
      { author_id: 1, expires_at: past },
      { author_id: 2 },
      { author_id: 3 },
      { author_id: 1 },
      { author_id: 4, expires_at: past },
    ]);
    expect(named.status, named.text).to.equal(201);
    // bob expires once his post names him: a write naming an expired row is refused (docs/expiry.md).
    expect((await client.patch(`/v1/collections/${people}/rows/2`, { expires_at: past })).status).to.equal(200);
    const some = await client.get<Row[]>(`/v1/collections/${people}/rows?${filter({ posts: { $some: {} } })}`);
    expect(some.status, some.text).to.equal(200);
    // dee's one post expired, bob expired himself.
    expect(some.body.map((row) => row.name)).to.deep.equal(['ada', 'cy']);
    const none = await client.get<Row[]>(`/v1/collections/${people}/rows?${filter({ $not: { posts: { $some: {} } } })}`);
    expect(none.body.map((row) => row.name)).to.deep.equal(['dee']);
    // Post 2's author expired: it sorts last, as a post naming no author does, in both directions.
    for (const [order, ids] of [
      ['asc', [4, 3, 2]],
      ['desc', [3, 4, 2]],
    ] as const) {
      const ordered = await client.get<Row[]>(`/v1/collections/${posts}/rows?order_by=author.name&order=${order}`);
      expect(ordered.status, ordered.text).to.equal(200);
      expect(ordered.body.map((row) => row.id)).to.deep.equal(ids);
      expect(await walk(`/v1/collections/${posts}/rows?order_by=author.name&order=${order}&limit=1`)).to.have.length(3);
    }
  });

  it("keeps a row's insert and update as history and receives its expiry once, as a delete marked expired: live, replayed, and in the log's pages", async () => {
    const name = await collection();
    const live = await FeedClient.open(server.url, client.key, { collection: name });
    try {
      expect((await client.post(`/v1/collections/${name}/rows`, [{ n: 1, expires_at: future }, { n: 2 }])).status).to.equal(201);
      expect((await client.patch(`/v1/collections/${name}/rows/1`, { expires_at: past })).status).to.equal(200);
      // Other tests' expired rows are swept too: this collection's one delete is counted below.
      expect(await server.feed.sweeper.runOnce()).to.be.at.least(1);
      expect(await server.feed.sweeper.runOnce()).to.equal(0);
      // A change after the sweeps: a second delete of row 1 would come before it.
      expect((await client.post(`/v1/collections/${name}/rows`, [{ n: 3 }])).status).to.equal(201);
      const expected = [
        ['insert', 1, undefined],
        ['insert', 2, undefined],
        ['update', 1, undefined],
        ['delete', 1, 'expired'],
        ['insert', 3, undefined],
      ];
      expect((await live.changesCount(5)).map(changeOf)).to.deep.equal(expected);
      const replay = await FeedClient.open(server.url, client.key, { collection: name, since: 0 });
      try {
        expect((await replay.changesCount(5)).map(changeOf)).to.deep.equal(expected);
      } finally {
        await replay.close();
      }
      for (const limit of [1, 2, 1000]) expect((await changeLog(name, limit)).map(changeOf)).to.deep.equal(expected);
      // The deleted row as it was when it expired.
      const deleted = (await changeLog(name, 1000))[3];
      expect('row' in deleted && deleted.row).to.deep.equal({ id: 1, n: 1, expires_at: past });
    } finally {
      await live.close();
    }
    expect(live.changes).to.have.length(5);
  });

  it('changes by filter, aggregates and row_count pass rows by from the instant they expire, before the sweep', async () => {
    const name = await collection();
    const gone = await expiringSoon(name, 3000, (n) => ({ g: n % 3 }));
    const described = async () => (await client.get<Collection>(`/v1/collections/${name}`)).body;
    const listed = async () => (await client.get<Collection[]>('/v1/collections')).body.find((each) => each.name === name);
    const before = await described();
    expect(before.row_count).to.equal(12);
    await gone();
    expect((await described()).row_count).to.equal(6);
    expect((await listed())?.row_count).to.equal(6);
    // The rows that live: n = 1, 3, 5, 7, 9, 11, in the groups n % 3.
    const aggregated = await client.post<{ groups: { g: number; rows: number; total: number }[] }>(`/v1/collections/${name}/aggregate`, {
      group_by: ['g'],
      aggregates: { rows: { count: {} }, total: { sum: 'n' } },
    });
    expect(aggregated.status, aggregated.text).to.equal(200);
    expect([...aggregated.body.groups].sort((a, b) => a.g - b.g)).to.deep.equal([
      { g: 0, rows: 2, total: 12 },
      { g: 1, rows: 2, total: 8 },
      { g: 2, rows: 2, total: 16 },
    ]);
    const patched = await client.patch<Changed>(`/v1/collections/${name}/rows?${filter({ g: 0 })}&return=rows`, { seen: true });
    expect(patched.status, patched.text).to.equal(200);
    expect(patched.body.rows?.map((row) => row.n)).to.deep.equal([3, 9]);
    const deleted = await client.delete<Changed>(`/v1/collections/${name}/rows?${filter({ g: 1 })}`);
    expect(deleted.status, deleted.text).to.equal(200);
    expect(deleted.body.count).to.equal(2);
    const left = await client.get<Row[]>(`/v1/collections/${name}/rows`);
    expect(left.body.map((row) => row.n)).to.deep.equal([3, 5, 9, 11]);
    expect((await described()).row_count).to.equal(4);
    // Other tests' expired rows are swept too.
    expect(await server.feed.sweeper.runOnce()).to.be.at.least(6);
    const after = await described();
    expect(after.row_count).to.equal(4);
    // Two updates, two deletes by filter, six expiries.
    expect(after.seq - before.seq).to.equal(10);
  });

  it('answers a get of an expired row 404 as of a missing row, never of a missing collection, read beside gets of other rows and collections', async () => {
    const name = await collection();
    const rows = [{ n: 1 }, { n: 2, expires_at: past }, { n: 3, expires_at: future }];
    expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
    // Sent together, so that on SQLite they are read in one merged statement.
    const gets = ['rows/1', 'rows/2', 'rows/3', 'rows/4'].map((row) => client.get<Row>(`/v1/collections/${name}/${row}`));
    const elsewhere = client.get<Row>('/v1/collections/missing/rows/2');
    const [one, two, three, four, missing] = await Promise.all([...gets, elsewhere]);
    expect([one.status, three.status]).to.deep.equal([200, 200]);
    expect([one.body.n, three.body.n]).to.deep.equal([1, 3]);
    for (const [answer, id] of [
      [two, 2],
      [four, 4],
    ] as const) {
      expect(answer.status).to.equal(404);
      expect(answer.body).to.include({ code: 'not_found', detail: `There is no row ${id} in collection ${name}.` });
    }
    expect(missing.status).to.equal(404);
    expect(missing.body).to.include({ code: 'not_found', detail: 'There is no collection named missing.' });
    // A patch of the expired row is a 404 of the row alike.
    const patched = await client.patch(`/v1/collections/${name}/rows/2`, { n: 5 });
    expect(patched.status).to.equal(404);
    expect(patched.body).to.include({ detail: `There is no row 2 in collection ${name}.` });
  });

  it('exports the rows that live, counted so in the first line, which an import takes whole (rowbase export, a child process)', async () => {
    const exporter = await server.client('exporter');
    expect((await exporter.post('/v1/collections', { name: 'carts' })).status).to.equal(201);
    expect((await exporter.put('/v1/collections/carts/ttl', { field: 'expires_at' })).status).to.equal(200);
    const rows = [{ n: 1, expires_at: past }, { n: 2 }, { n: 3, expires_at: future }, { n: 4, expires_at: past }];
    expect((await exporter.post('/v1/collections/carts/rows', rows)).status).to.equal(201);
    const workspace = await Workspace.create();
    try {
      const env = { DATABASE_URL: server.databaseUrl };
      const file = join(workspace.dir, 'carts.ndjson');
      const exported = await workspace.run(['export', '--account', 'exporter', '--collection', 'carts', '--out', file], env);
      expect(exported.code, exported.stderr).to.equal(0);
      const printed = await workspace.run(['export', '--account', 'exporter', '--collection', 'carts'], env);
      const [first, ...lines] = printed.stdout.trimEnd().split('\n');
      expect(JSON.parse(first).row_count).to.equal(2);
      expect(lines.map((line) => JSON.parse(line))).to.deep.equal([
        { id: 2, n: 2 },
        { id: 3, n: 3, expires_at: future },
      ]);
      const imported = await workspace.run(['import', '--account', 'exporter', '--collection', 'copied', file], env);
      expect(imported.code, imported.stderr).to.equal(0);
      expect((await exporter.get<Row[]>('/v1/collections/copied/rows')).body.map((row) => row.id)).to.deep.equal([2, 3]);
    } finally {
      await workspace.cleanUp();
    }
  });
});
