// Several `rowbase serve` processes on one PostgreSQL database behave, to every client, as one service
// (contract.md, "Storage and scale"): each subscriber gets every event of its collection, whichever
// instance made the change, in seq order and without gaps, and one instance's death stops nothing else.
import { expect } from 'chai';
import { createDatabase, skipWithoutPostgres, type TestDatabase } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { applyToView, FeedClient, type FeedMessage, type FeedRow } from '../support/feed.ts';
import { pollUntil, type ServeProcess, Workspace } from '../support/process.ts';

type Row = { id: number } & Record<string, unknown>;

describe('several instances on one PostgreSQL database', () => {
  let workspace: Workspace;
  let database: TestDatabase;
  let instances: ServeProcess[];
  let key: string;
  before(async function () {
    await skipWithoutPostgres(this);
    workspace = await Workspace.create();
    database = await createDatabase('postgres');
    const env = { DATABASE_URL: database.url };
    // Both start at once: the migration lock makes one wait for the other.
    instances = await Promise.all([workspace.serve(env), workspace.serve(env)]);
    const created = await workspace.run(['keys', 'create', '--account', 'shared', '--plan', 'pro', '--json'], env);
    expect(created.code, created.stderr).to.equal(0);
    key = JSON.parse(created.stdout).key;
    await workspace.run(['plans', 'set', 'pro', '--quota', '1000000', '--period', 'month', '--no-rate'], env);
  });
  after(async () => {
    await workspace?.cleanUp();
    await database?.drop();
  });

  const inserts = (messages: FeedMessage[]) => messages.filter((m): m is Extract<FeedMessage, { type: 'insert' }> => m.type === 'insert');

  it('delivers every event, from either instance, to subscribers on both, gap-free and each batch contiguous', async () => {
    const [a, b] = instances.map((instance) => new Client(instance.url, key));
    expect((await a.post('/v1/collections', { name: 'shared' })).status).to.equal(201);
    const feeds = await Promise.all(
      [...instances, ...instances].map((instance) => FeedClient.open(instance.url, key, { collection: 'shared' })),
    );
    const batches = Array.from({ length: 20 }, (_, n) => Array.from({ length: 15 }, (_, i) => ({ batch: n, i })));
    const responses = await Promise.all(batches.map((batch, n) => (n % 2 === 0 ? a : b).post<Row[]>('/v1/collections/shared/rows', batch)));
    expect(responses.map((r) => r.status)).to.deep.equal(batches.map(() => 201));
    const total = batches.length * 15;

    const received = await Promise.all(feeds.map(async (feed) => inserts(await feed.changesCount(total))));
    const seqs = received[0].map((m) => m.seq);
    expect(seqs).to.deep.equal(
      Array.from({ length: total }, (_, i) => i + 1),
      'seq from 1, in order, no gaps',
    );
    for (const messages of received.slice(1)) expect(messages).to.deep.equal(received[0], 'every subscriber sees the same sequence');
    const seqOfRow = new Map(received[0].map((m) => [m.row.id, m.seq]));
    for (const response of responses) {
      const batchSeqs = response.body.map((row) => seqOfRow.get(row.id) as number);
      expect(batchSeqs).to.deep.equal(
        batchSeqs.map((_, i) => batchSeqs[0] + i),
        'a batch takes consecutive seqs',
      );
      expect(response.body.map((row) => received[0].find((m) => m.row.id === row.id)?.row)).to.deep.equal(response.body);
    }
    await Promise.all(feeds.map((feed) => feed.close()));
  });

  it('refuses a key revoked with the CLI on every instance within a second', async () => {
    const env = { DATABASE_URL: database.url };
    const created = await workspace.run(['keys', 'create', '--account', 'shared', '--json'], env);
    const revoked = JSON.parse(created.stdout);
    const seenBy = (instance: ServeProcess, withKey: string) => new Client(instance.url, withKey).get('/v1/collections');
    for (const instance of instances) expect((await seenBy(instance, revoked.key)).status).to.equal(200);

    const revoking = await workspace.run(['keys', 'revoke', revoked.prefix], env);

    expect(revoking.code, revoking.stderr).to.equal(0);
    await Promise.all(instances.map((instance) => pollUntil(async () => (await seenBy(instance, revoked.key)).status === 401, 1000)));
    for (const instance of instances) expect((await seenBy(instance, key)).status).to.equal(200);
  });

  it('applies a plan changed with the CLI on every instance within a second', async () => {
    const env = { DATABASE_URL: database.url };
    const limitOn = async (instance: ServeProcess) => (await new Client(instance.url, key).get('/v1/usage')).headers.get('ratelimit-limit');
    for (const instance of instances) expect(await limitOn(instance)).to.equal('1000000');

    const changed = await workspace.run(['plans', 'set', 'pro', '--quota', '2000000', '--period', 'month'], env);

    expect(changed.code, changed.stderr).to.equal(0);
    await Promise.all(instances.map((instance) => pollUntil(async () => (await limitOn(instance)) === '2000000', 1000)));
  });

  it('keeps filtered views exact on both instances, whichever instance writes, and gives every update previous', async () => {
    const [a, b] = instances.map((instance) => new Client(instance.url, key));
    expect((await a.post('/v1/collections', { name: 'filtered' })).status).to.equal(201);
    const filter = JSON.stringify({ status: 'open' });
    const feeds = await Promise.all(instances.map((instance) => FeedClient.open(instance.url, key, { collection: 'filtered', filter })));
    const everything = await FeedClient.open(instances[1].url, key, { collection: 'filtered' });
    const rows = '/v1/collections/filtered/rows';
    await a.post(rows, [{ status: 'open' }, { status: 'closed' }, { status: 'open' }]); // seq 1-3
    await b.patch(`${rows}/2`, { status: 'open' }); // 4: enters
    await a.patch(`${rows}/1`, { status: 'closed' }); // 5: leaves
    await b.patch(`${rows}/1`, { n: 1 }); // 6: stays out
    await a.delete(`${rows}/3`); // 7: matched
    await b.delete(`${rows}/1`); // 8: did not match
    await a.post(rows, [{ status: 'open', last: true }]); // 9

    const listed = await b.get<Row[]>(`${rows}?${new URLSearchParams({ filter })}`);
    for (const feed of feeds) {
      const messages = await feed.seqReached(9);
      expect(messages.map((m) => ('seq' in m ? m.seq : undefined))).to.deep.equal([1, 3, 4, 5, 7, 9]);
      expect(messages.map((m) => (m.type === 'update' ? m.matches : undefined))).to.deep.equal([
        undefined,
        undefined,
        undefined,
        false,
        undefined,
        undefined,
      ]);
      const view = new Map<number, FeedRow>();
      for (const message of messages) applyToView(view, message);
      expect([...view.values()].sort((x, y) => x.id - y.id)).to.deep.equal(listed.body);
    }
    const updates = (await everything.seqReached(9)).filter((m) => m.type === 'update');
    expect(updates.map((m) => m.previous)).to.deep.equal([
      { id: 2, status: 'closed' },
      { id: 1, status: 'open' },
      { id: 1, status: 'closed' },
    ]);
    await Promise.all([...feeds, everything].map((feed) => feed.close()));
  });

  it('keeps serving and delivering on one instance after the other is killed', async () => {
    const [doomed, survivor] = instances;
    const client = new Client(survivor.url, key);
    expect((await client.post('/v1/collections', { name: 'after-kill' })).status).to.equal(201);
    const feed = await FeedClient.open(survivor.url, key, { collection: 'after-kill' });
    doomed.signal('SIGKILL');
    expect((await doomed.exited).signal).to.equal('SIGKILL');
    const response = await client.post<Row[]>('/v1/collections/after-kill/rows', [{ n: 1 }, { n: 2 }]);
    expect(response.status).to.equal(201);
    expect(inserts(await feed.changesCount(2)).map((m) => m.seq)).to.deep.equal([1, 2]);
    expect((await client.get('/health')).status).to.equal(200);
    await feed.close();
  });
});
