// The sweeper through a crash (docs/expiry.md, "A crash"): `rowbase serve` killed with SIGKILL in the
// middle of a sweep of many expired rows. After the restart no expired row is visible, the sweep goes on
// to the end, and every expired row is deleted once, with one delete event marked expired; no other row goes.
import { expect } from 'chai';
import type { Knex } from 'knex';
import { type BackendName, createDatabase, describeEachBackend, knexOf, type TestDatabase } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { Workspace } from '../support/process.ts';

type Row = { id: number; n: number };

/** The rows inserted, and those of them that expired (every n not a multiple of 4): a sweep of many batches. */
const ROWS = 20_000;
const expires = (n: number) => n % 4 !== 0;
const past = '2001-01-01T00:00:00Z';
const future = '2999-01-01T00:00:00Z';

describeEachBackend('the sweeper through SIGKILL', (backend: BackendName) => {
  let workspace: Workspace;
  let database: TestDatabase;
  let knex: Knex;

  beforeEach(async () => {
    workspace = await Workspace.create();
    database = backend === 'sqlite' ? { url: workspace.databaseUrl, drop: async () => {} } : await createDatabase(backend);
    knex = knexOf(backend, database.url);
  });
  afterEach(async () => {
    await knex.destroy();
    await workspace.cleanUp();
    await database.drop();
  });

  it('deletes each expired row once, with one event, and shows none after the restart', async function () {
    this.timeout(300_000);
    const environment = (sweepMs: number) => ({ DATABASE_URL: database.url, ROWBASE_EXPIRY_SWEEP_MS: String(sweepMs) });
    const plan = await workspace.run(['plans', 'set', 'burst', '--quota', '100000', '--period', 'day', '--no-rate'], environment(10));
    expect(plan.code, plan.stderr).to.equal(0);
    const created = await workspace.run(['keys', 'create', '--account', 'sweeping', '--plan', 'burst', '--json'], environment(10));
    expect(created.code, created.stderr).to.equal(0);
    const { key } = JSON.parse(created.stdout);

    // Stored by a server that does not sweep (once an hour), then swept by one that sweeps every 10 ms.
    const storing = await workspace.serve(environment(3_600_000));
    const client = new Client(storing.url, key);
    expect((await client.post('/v1/collections', { name: 'sessions' })).status).to.equal(201);
    expect((await client.put('/v1/collections/sessions/ttl', { field: 'expires_at' })).status).to.equal(200);
    for (let start = 1; start <= ROWS; start += 1000) {
      const rows = Array.from({ length: 1000 }, (_, index) => ({ n: start + index, expires_at: expires(start + index) ? past : future }));
      expect((await client.post('/v1/collections/sessions/rows', rows)).status).to.equal(201);
    }
    storing.signal('SIGKILL');
    await storing.exited;
    const [{ id: collectionId }] = await knex('collections').where({ name: 'sessions' }).select('id');
    const deletes = () => knex('events').where({ collection_id: collectionId, type: 'delete' });
    const count = async (query: Knex.QueryBuilder) => Number((await query.count({ n: '*' }))[0].n);
    const stored = () => count(knex('rows').where({ collection_id: collectionId }));

    // Killed once the sweep's first batch has committed, with most of the expired rows still stored.
    const sweeping = await workspace.serve(environment(10));
    while ((await count(deletes())) === 0) if (sweeping.child.exitCode !== null) throw new Error('the server exited');
    sweeping.signal('SIGKILL');
    expect((await sweeping.exited).signal).to.equal('SIGKILL');
    const expired = Array.from({ length: ROWS }, (_, index) => index + 1).filter(expires);
    const live = ROWS - expired.length;
    expect(await stored(), 'the sweep had ended before the kill').to.be.above(live);

    const restarted = await workspace.serve(environment(10));
    const again = new Client(restarted.url, key);
    const counted = await again.get<Row[]>('/v1/collections/sessions/rows?count=exact&limit=5');
    expect(counted.headers.get('rowbase-total-count')).to.equal(String(live));
    expect(counted.body.map((row) => row.n)).to.deep.equal([4, 8, 12, 16, 20]);
    expect((await again.get('/v1/collections/sessions/rows/1')).status).to.equal(404);
    expect((await again.get<{ row_count: number }>('/v1/collections/sessions')).body.row_count).to.equal(live);
    while ((await stored()) > live) if (restarted.child.exitCode !== null) throw new Error('the server exited');

    const events: { row_id: number | string; reason: string | null }[] = await deletes().select('row_id', 'reason');
    expect(events.map((event) => event.reason).filter((reason) => reason !== 'expired')).to.deep.equal([]);
    const ids = events.map((event) => Number(event.row_id)).sort((a, b) => a - b);
    expect(ids).to.have.length(expired.length);
    expect(ids).to.deep.equal(expired);
    // The rows that live are all there, and the collection's count agrees with what is stored.
    const left = await knex('rows').where({ collection_id: collectionId }).orderBy('id').select('id');
    expect(left.map((row) => Number(row.id))).to.deep.equal(Array.from({ length: live }, (_, index) => (index + 1) * 4));
    expect((await again.get<{ row_count: number }>('/v1/collections/sessions')).body.row_count).to.equal(live);
    restarted.signal('SIGTERM');
    await restarted.exited;
  });
});
