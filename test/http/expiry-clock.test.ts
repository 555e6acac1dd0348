// Rows that expire on a clock set back (docs/expiry.md, "A clock set back"): `rowbase serve` run with its
// clock an hour ahead of the host's (test/support/clock.cjs, preloaded), then set back to the host's while
// it runs, then restarted on the host's clock. A row that expired by the later time stays gone from a get,
// pages (by id, through a sort index both ways, a walk by cursor, filtered), a count, an aggregate, the collection's row_count and
// a patch, though the sweeper has not deleted it, on both backends.
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { type BackendName, describeEachBackend, workspaceOn } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { walkedN } from '../support/expiry.ts';

type Row = { id: number; n: number };

const clockPreload = fileURLToPath(new URL('../support/clock.cjs', import.meta.url));
const HOUR = 3_600_000;
const at = (ms: number) => new Date(ms).toISOString();

/** What the reads of the collection `sessions` show: row 1 by id, every page's rows' n, the counts. */
async function shown(client: Client) {
  const ns = async (query: string) => {
    const page = await client.get<Row[]>(`/v1/collections/sessions/rows?${query}`);
    expect(page.status, page.text).to.equal(200);
    return page.body.map((row) => row.n);
  };
  const counted = await client.get<Row[]>('/v1/collections/sessions/rows?count=exact&limit=1');
  const aggregated = await client.post<{ groups: { rows: number }[] }>('/v1/collections/sessions/aggregate', {
    aggregates: { rows: { count: {} } },
  });
  return {
    get: (await client.get('/v1/collections/sessions/rows/1')).status,
    byId: await ns('limit=10'),
    byN: await ns('order_by=n&limit=10'),
    byNDescending: await ns('order_by=n&order=desc&limit=10'),
    walked: await walkedN(client, '/v1/collections/sessions/rows?order_by=n&limit=1'),
    filtered: await ns(`filter=${encodeURIComponent(JSON.stringify({ n: { $lt: 3 } }))}`),
    count: counted.headers.get('rowbase-total-count'),
    aggregated: aggregated.body.groups[0]?.rows,
    rowCount: (await client.get<{ row_count: number }>('/v1/collections/sessions')).body.row_count,
    patch: (await client.patch('/v1/collections/sessions/rows/1', { seen: true })).status,
  };
}

/** Row 1 expired, rows 2 and 3 live: what every read shows. */
const EXPECTED = {
  get: 404,
  byId: [2, 3],
  byN: [2, 3],
  byNDescending: [3, 2],
  walked: [2, 3],
  filtered: [2],
  count: '2',
  aggregated: 2,
  rowCount: 2,
  patch: 404,
};

describeEachBackend('rows that expire, on a clock set back', (backend: BackendName) => {
  const suite = workspaceOn(backend);

  it('brings no expired row back, while the process runs on and after a restart, though none was swept', async function () {
    this.timeout(120_000);
    const { workspace, database, knex } = suite;
    // No sweep in the test (once an hour); every field ordered by gets its sort index at once.
    const environment = { DATABASE_URL: database.url, ROWBASE_EXPIRY_SWEEP_MS: String(HOUR), ROWBASE_SORT_INDEX_MIN_ROWS: '0' };
    // A plan without a rate: every read of shown() runs at once.
    const plan = await workspace.run(['plans', 'set', 'unhurried', '--quota', '100000', '--period', 'day', '--no-rate'], environment);
    expect(plan.code, plan.stderr).to.equal(0);
    const created = await workspace.run(['keys', 'create', '--account', 'clock', '--plan', 'unhurried', '--json'], environment);
    expect(created.code, created.stderr).to.equal(0);
    const { key } = JSON.parse(created.stdout);

    const ahead = await workspace.serve({ ...environment, NODE_OPTIONS: `--require ${clockPreload}`, CLOCK_AHEAD_MS: String(HOUR) });
    const client = new Client(ahead.url, key);
    expect((await client.post('/v1/collections', { name: 'sessions' })).status).to.equal(201);
    expect((await client.put('/v1/collections/sessions/ttl', { field: 'expires_at' })).status).to.equal(200);
    // Row 1 expires half an hour from the host's now: the process, an hour ahead, finds it expired.
    const host = Date.now();
    const rows = [{ n: 1, expires_at: at(host + HOUR / 2) }, { n: 2, expires_at: at(host + 2 * HOUR) }, { n: 3 }];
    expect((await client.post('/v1/collections/sessions/rows', rows)).status).to.equal(201);
    expect(await shown(client)).to.deep.equal(EXPECTED);

    ahead.signal('SIGUSR2');
    await ahead.logged('clock set back');
    expect(await shown(client), 'on the clock set back').to.deep.equal(EXPECTED);

    // Stopped, then started again on the host's clock, an hour behind the time the database kept.
    ahead.signal('SIGTERM');
    expect((await ahead.exited).code).to.equal(0);
    const behind = await workspace.serve(environment);
    expect(await shown(new Client(behind.url, key)), 'after a restart on the clock set back').to.deep.equal(EXPECTED);
    // Not swept: the expired row is still stored, and passed by.
    const [{ n }] = await knex('rows').count({ n: '*' });
    expect(Number(n)).to.equal(3);
    behind.signal('SIGTERM');
    await behind.exited;
  });
});
