// Idempotency-Key through a crash (openapi.yaml, IdempotencyKey): `rowbase serve` killed with SIGKILL
// between the client's send and its read of the answer. Whether the server committed or not, the retry
// makes the change exactly once: it replays the stored answer, or, with nothing stored, runs the request.
import { connect, type Socket } from 'node:net';
import { expect } from 'chai';
import type { Knex } from 'knex';
import { type BackendName, createDatabase, describeEachBackend, knexOf, type TestDatabase } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { pollUntil, type ServeProcess, Workspace } from '../support/process.ts';

type Row = { id: number } & Record<string, unknown>;

describeEachBackend('Idempotency-Key through SIGKILL', (backend: BackendName) => {
  let workspace: Workspace;
  let database: TestDatabase;
  let knex: Knex;
  let key: string;
  const environment = () => ({ DATABASE_URL: database.url });

  beforeEach(async () => {
    workspace = await Workspace.create();
    database = backend === 'sqlite' ? { url: workspace.databaseUrl, drop: async () => {} } : await createDatabase(backend);
    const created = await workspace.run(['keys', 'create', '--account', 'crashing', '--json'], environment());
    expect(created.code, created.stderr).to.equal(0);
    key = JSON.parse(created.stdout).key;
    knex = knexOf(backend, database.url);
  });
  afterEach(async () => {
    await knex.destroy();
    await workspace.cleanUp();
    await database.drop();
  });

  /** Sends an insert with `idempotencyKey` on a socket of its own, and never reads the answer. */
  function sendInsert(server: ServeProcess, idempotencyKey: string): Socket {
    const { port } = new URL(server.url);
    const body = JSON.stringify([{ n: 1 }]);
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => {}); // the server dies under it
    socket.write(
      `POST /v1/collections/notes/rows HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nIdempotency-Key: ${idempotencyKey}\r\n\r\n${body}`,
    );
    return socket;
  }

  async function killed(server: ServeProcess): Promise<void> {
    server.signal('SIGKILL');
    expect((await server.exited).signal).to.equal('SIGKILL');
  }

  it('replays the stored answer when the change was committed before the crash', async () => {
    const server = await workspace.serve(environment());
    const client = new Client(server.url, key);
    expect((await client.post('/v1/collections', { name: 'notes' })).status).to.equal(201);
    const socket = sendInsert(server, 'committed');
    // The answer is stored with the change, in one transaction: once it is there, so is the row.
    await pollUntil(async () => (await knex('idempotency_keys').where({ key: 'committed' })).length === 1, 10_000);
    await killed(server);
    socket.destroy();

    const restarted = await workspace.serve(environment());
    const retry = await new Client(restarted.url, key).post<Row[]>('/v1/collections/notes/rows', [{ n: 1 }], {
      headers: { 'idempotency-key': 'committed' },
    });
    expect(retry.status).to.equal(201);
    expect(retry.headers.get('idempotent-replayed')).to.equal('true');
    expect(retry.body).to.deep.equal([{ id: 1, n: 1 }]);
    expect((await new Client(restarted.url, key).get('/v1/collections/notes/rows')).body).to.deep.equal([{ id: 1, n: 1 }]);
  });

  it('runs the request once on retry when the crash came before the commit', async () => {
    const server = await workspace.serve(environment());
    const client = new Client(server.url, key);
    expect((await client.post('/v1/collections', { name: 'notes' })).status).to.equal(201);
    // Another writer holds the collection (SQLite: the database's write lock), so the insert cannot commit.
    const blocker = await knex.transaction();
    if (backend === 'sqlite') await blocker.raw('update collections set name = name');
    else await blocker.raw('select id from collections for update');
    const socket = sendInsert(server, 'uncommitted');
    await killed(server);
    socket.destroy();
    await blocker.rollback();
    expect(await knex('idempotency_keys')).to.deep.equal([]);
    expect(await knex('rows')).to.deep.equal([]);

    const restarted = await workspace.serve(environment());
    const again = new Client(restarted.url, key);
    const retry = await again.post<Row[]>('/v1/collections/notes/rows', [{ n: 1 }], { headers: { 'idempotency-key': 'uncommitted' } });
    expect(retry.status).to.equal(201);
    expect(retry.headers.get('idempotent-replayed')).to.equal(null);
    const replay = await again.post<Row[]>('/v1/collections/notes/rows', [{ n: 1 }], { headers: { 'idempotency-key': 'uncommitted' } });
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    expect(replay.text).to.equal(retry.text);
    expect((await again.get('/v1/collections/notes/rows')).body).to.deep.equal([{ id: 1, n: 1 }]);
  });
});
