// Webhooks across crashes and instances (docs/webhooks.md, "Guarantees"): `rowbase serve` killed with
// SIGKILL in the middle of a delivery loses nothing once started again, and on PostgreSQL another
// instance takes a dead one's deliveries over once its lease ends, while two live instances never have
// one webhook's change in flight twice at once. Receivers are on 127.0.0.1.
import { expect } from 'chai';
import { type BackendName, createDatabase, describeEachBackend, skipWithoutPostgres, type TestDatabase } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { pollUntil, type ServeProcess, Workspace } from '../support/process.ts';
import { Receiver } from '../support/receiver.ts';

/** The whole attempt; a dead instance's lease ends five seconds after the timeout. */
const TIMEOUT_MS = 1000;

const settings = { ROWBASE_WEBHOOKS_ALLOW_PRIVATE: 'on', ROWBASE_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) };

/** A receiver that never answers its first request (the attempt under way when the server dies), and 204 to the others. */
const holdingTheFirst = () =>
  Receiver.start((_request, index, response) => {
    if (index > 0) response.writeHead(204).end();
  });

async function killed(server: ServeProcess): Promise<void> {
  server.signal('SIGKILL');
  expect((await server.exited).signal).to.equal('SIGKILL');
}

const seqsOf = (receiver: Receiver) => receiver.messages.map(({ seq }) => seq);
const idsOf = (receiver: Receiver) => receiver.received.map(({ headers }) => headers['webhook-id']);

describeEachBackend('webhooks through SIGKILL', (backend: BackendName) => {
  let workspace: Workspace;
  let database: TestDatabase;
  let receiver: Receiver;
  beforeEach(async () => {
    workspace = await Workspace.create();
    database = backend === 'sqlite' ? { url: workspace.databaseUrl, drop: async () => {} } : await createDatabase(backend);
    receiver = await holdingTheFirst();
  });
  afterEach(async () => {
    await receiver.stop();
    await workspace.cleanUp();
    await database.drop();
  });

  it('delivers every change, in order, once started again, the one under way again with its webhook-id', async () => {
    const environment = { DATABASE_URL: database.url, ...settings };
    const key = (await workspace.run(['keys', 'create', '--account', 'crashing', '--json'], environment)).stdout;
    const server = await workspace.serve(environment);
    const client = new Client(server.url, JSON.parse(key).key);
    expect((await client.post('/v1/collections', { name: 'notes' })).status).to.equal(201);
    expect((await client.post('/v1/webhooks', { url: receiver.url })).status).to.equal(201);
    expect((await client.post('/v1/collections/notes/rows', [{ n: 1 }, { n: 2 }, { n: 3 }])).status).to.equal(201);
    await receiver.waitFor(1);
    await killed(server);

    await workspace.serve(environment);
    await receiver.waitFor(4);
    expect(seqsOf(receiver)).to.deep.equal([1, 1, 2, 3]);
    const ids = idsOf(receiver);
    expect(ids[1]).to.equal(ids[0]);
    expect(new Set(ids).size).to.equal(3);
  });
});

describe('webhooks of several instances on one PostgreSQL database', function () {
  this.timeout(60_000);
  let workspace: Workspace;
  let database: TestDatabase;
  let environment: Record<string, string>;
  let key: string;
  before(async function () {
    await skipWithoutPostgres(this);
  });
  beforeEach(async () => {
    workspace = await Workspace.create();
    database = await createDatabase('postgres');
    environment = { DATABASE_URL: database.url, ...settings };
    // A plan without a rate: the writes below come faster than the free plan's ten a second.
    await workspace.run(['plans', 'set', 'unlimited', '--quota', '1000000', '--period', 'month', '--no-rate'], environment);
    key = JSON.parse(
      (await workspace.run(['keys', 'create', '--account', 'shared', '--plan', 'unlimited', '--json'], environment)).stdout,
    ).key;
  });
  afterEach(async () => {
    await workspace?.cleanUp();
    await database?.drop();
  });

  it('never has one change in flight twice at once, and delivers each once, in order, whichever instance wrote it', async () => {
    let inFlight = 0;
    let most = 0;
    const receiver = await Receiver.start((_request, _index, response) => {
      most = Math.max(most, ++inFlight);
      // Answered on a later turn, so that a second request, were it sent meanwhile, would overlap.
      setImmediate(() => {
        inFlight--;
        response.writeHead(204).end();
      });
    });
    try {
      const instances = await Promise.all([workspace.serve(environment), workspace.serve(environment)]);
      const [a, b] = instances.map((instance) => new Client(instance.url, key));
      await a.post('/v1/collections', { name: 'shared' });
      await a.post('/v1/webhooks', { url: receiver.url });
      for (let n = 0; n < 30; n++) expect((await (n % 2 === 0 ? a : b).post('/v1/collections/shared/rows', [{ n }])).status).to.equal(201);
      await receiver.waitFor(30);
      expect(seqsOf(receiver)).to.deep.equal(Array.from({ length: 30 }, (_, i) => i + 1));
      expect(most).to.equal(1);
    } finally {
      await receiver.stop();
    }
  });

  it("takes a dead instance's delivery over once its lease ends, with the same webhook-id", async () => {
    // An attempt long enough to outlast the second instance's start: it is still under way at the kill,
    // so the second takes the delivery over by the lease's end, not as a retry of a failed attempt.
    const timeoutMs = 5000;
    const slow = { ...environment, ROWBASE_WEBHOOK_TIMEOUT_MS: String(timeoutMs) };
    const receiver = await holdingTheFirst();
    try {
      const first = await workspace.serve(slow);
      const client = new Client(first.url, key);
      await client.post('/v1/collections', { name: 'shared' });
      const hook = (await client.post<{ id: number }>('/v1/webhooks', { url: receiver.url })).body;
      await client.post('/v1/collections/shared/rows', [{ n: 1 }, { n: 2 }]);
      // The first instance holds the delivery: the second is not running yet.
      await receiver.waitFor(1);
      const leased = performance.now();
      const second = new Client((await workspace.serve(slow)).url, key);
      type Page = { deliveries: { seq: number; attempt: number; outcome: string }[] };
      expect((await client.get<Page>(`/v1/webhooks/${hook.id}/deliveries`)).body.deliveries).to.deep.equal([]);
      await killed(first);
      await receiver.waitFor(3);
      // The lease: the timeout and five seconds from the claim, just before the first attempt; then the next poll.
      const took = performance.now() - leased;
      expect(took).to.be.above(timeoutMs + 5000 - 1000);
      expect(took).to.be.below(timeoutMs + 5000 + 2000);
      expect(seqsOf(receiver)).to.deep.equal([1, 1, 2]);
      expect(idsOf(receiver)[1]).to.equal(idsOf(receiver)[0]);
      let log: Page['deliveries'] = [];
      await pollUntil(async () => {
        log = (await second.get<Page>(`/v1/webhooks/${hook.id}/deliveries`)).body.deliveries;
        return log.length === 2;
      }, 5000);
      expect(log.map(({ seq, attempt, outcome }) => [seq, attempt, outcome])).to.deep.equal([
        [2, 1, 'delivered'],
        [1, 1, 'delivered'],
      ]);
    } finally {
      await receiver.stop();
    }
  });
});
