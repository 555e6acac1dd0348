// A batch through a crash (openapi.yaml, writeBatch): `rowbase serve` killed with SIGKILL while batches
// across two collections are being written and committed. After the restart every batch is there whole
// or not at all: its rows in both collections, its events, and each collection's counters agree.
import { expect } from 'chai';
import type { Knex } from 'knex';
import { type BackendName, createDatabase, describeEachBackend, knexOf, type TestDatabase } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { Workspace } from '../support/process.ts';

type Row = { id: number; batch: number; part: number };

/** Batches sent at once, and rows each writes into each collection. */
const BATCHES = 40;
const ROWS = 200;

describeEachBackend('a batch through SIGKILL', (backend: BackendName) => {
  let workspace: Workspace;
  let database: TestDatabase;
  let knex: Knex;
  const environment = () => ({ DATABASE_URL: database.url });

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

  it('leaves each batch whole or absent, in both collections, with its events', async () => {
    // A plan without a rate: the default plan's is below a burst of batches.
    const plan = await workspace.run(['plans', 'set', 'burst', '--quota', '100000', '--period', 'day', '--no-rate'], environment());
    expect(plan.code, plan.stderr).to.equal(0);
    const created = await workspace.run(['keys', 'create', '--account', 'crashing', '--plan', 'burst', '--json'], environment());
    expect(created.code, created.stderr).to.equal(0);
    const { key } = JSON.parse(created.stdout);
    const server = await workspace.serve(environment());
    const client = new Client(server.url, key);
    for (const name of ['orders', 'lines']) expect((await client.post('/v1/collections', { name })).status).to.equal(201);

    const rows = (batch: number) => Array.from({ length: ROWS }, (_, part) => ({ batch, part }));
    const sent = Array.from({ length: BATCHES }, (_, batch) =>
      fetch(`${server.url}/v1/batch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          operations: [
            { op: 'insert', collection: 'orders', rows: rows(batch) },
            { op: 'insert', collection: 'lines', rows: rows(batch) },
          ],
        }),
      }).then(
        (response) => response.status,
        () => 0,
      ),
    );
    // Killed once a batch is answered, with the others queued, writing or committing.
    await new Promise<void>((resolve) => {
      for (const status of sent) void status.then((value) => value === 200 && resolve());
    });
    server.signal('SIGKILL');
    expect((await server.exited).signal).to.equal('SIGKILL');
    const statuses = await Promise.all(sent);
    // Answered, or cut off by the crash (0): nothing else.
    expect(statuses.filter((status) => status !== 200 && status !== 0)).to.deep.equal([]);
    const answered = statuses.filter((status) => status === 200).length;

    const restarted = await workspace.serve(environment());
    const again = new Client(restarted.url, key);
    // Read from the database itself: more rows than one page holds.
    const stored = async (collection: string) => {
      const [{ id }] = await knex('collections').where({ name: collection }).select('id');
      const byBatch = new Map<number, number>();
      const rows = await knex('rows').where({ collection_id: id }).select('data');
      for (const { data } of rows) {
        const { batch } = (typeof data === 'string' ? JSON.parse(data) : data) as Row;
        byBatch.set(batch, (byBatch.get(batch) ?? 0) + 1);
      }
      return { byBatch, count: rows.length };
    };
    const [orders, lines] = [await stored('orders'), await stored('lines')];
    // Every batch answered 200 is there; every batch is whole in both, or in neither.
    expect(orders.byBatch.size).to.be.at.least(answered);
    expect([...orders.byBatch.keys()].sort()).to.deep.equal([...lines.byBatch.keys()].sort());
    for (const counts of [orders.byBatch, lines.byBatch]) for (const count of counts.values()) expect(count).to.equal(ROWS);
    // Each collection's counters and events agree with its rows: one insert event a row, seqs 1 to n.
    for (const [name, { count }] of [
      ['orders', orders],
      ['lines', lines],
    ] as const) {
      const collection = await again.get<{ row_count: number; seq: number }>(`/v1/collections/${name}`);
      expect(collection.body).to.include({ row_count: count, seq: count });
      const [{ id }] = await knex('collections').where({ name }).select('id');
      const events = await knex('events').where({ collection_id: id }).orderBy('seq').select('seq');
      expect(events.map((event) => Number(event.seq))).to.deep.equal(Array.from({ length: count }, (_, index) => index + 1));
    }
  });
});
