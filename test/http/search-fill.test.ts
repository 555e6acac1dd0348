// A search index made over the rows already there (docs/search.md, "The search index"): a batch of rows a
// transaction, after its declaration commits, so that the database's other writes take their turn between
// (on SQLite, every account's), while writes of the collection keep their own rows' words; dropped half-way,
// it stops; a process killed half-way leaves it to the next, which goes on from where it ended.
import { expect } from 'chai';
import type { Knex } from 'knex';
import { type BackendName, describeEachBackend, knexOf, workspaceOn } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/** Rows enough for a making of many batches (1,000 rows each). */
const ROWS = 40_000;
const INDEX = { type: 'search', fields: ['title', 'body'] };
const filter = (value: object) => `filter=${encodeURIComponent(JSON.stringify(value))}`;

/** Row `n`'s fields: every row holds `note`, the odd ones `odd`. */
const row = (n: number) => ({ title: `note ${n}`, body: n % 2 === 1 ? 'odd words' : 'even words' });

async function seed(client: Client, collection: string) {
  expect((await client.post('/v1/collections', { name: collection })).status).to.equal(201);
  for (let first = 1; first <= ROWS; first += 1000) {
    const batch = Array.from({ length: 1000 }, (_, n) => row(first + n));
    const stored = await client.post(`/v1/collections/${collection}/rows`, batch);
    expect(stored.status, stored.text).to.equal(201);
  }
}

/** The ids of the rows a search of `text` finds, and how many it counts. */
async function searched(client: Client, collection: string, text: string) {
  const found = await client.get<{ id: number }[]>(`/v1/collections/${collection}/rows?count=exact&limit=5&${filter({ $search: text })}`);
  expect(found.status, found.text).to.equal(200);
  return { count: Number(found.headers.get('rowbase-total-count')), ids: found.body.map((each) => each.id) };
}

/** What is left of the collection's search index's making (collections.search_fill), null when nothing is. */
async function fillOf(knex: Knex, collection: string): Promise<{ after: number; until: number } | null> {
  const [found] = await knex('collections').where({ name: collection }).select('search_fill');
  return found?.search_fill ? JSON.parse(found.search_fill) : null;
}

describeEachBackend('search: an index made over the rows already there', (backend) => {
  let server: TestServer;
  let client: Client;
  let knex: Knex;
  before(async function () {
    this.timeout(300_000);
    server = await startTestServer({}, { backend });
    client = await server.client();
    knex = knexOf(backend, server.databaseUrl);
  });
  after(async () => {
    await knex?.destroy();
    await server?.stop();
  });

  it("lets other writes through while it is made, keeps the words of the collection's writes meanwhile, and finds every row once made", async function () {
    this.timeout(300_000);
    await seed(client, 'notes');
    const other = await server.client();
    expect((await other.post('/v1/collections', { name: 'elsewhere' })).status).to.equal(201);
    let answered = false;
    const made = client.post('/v1/collections/notes/indexes', INDEX).finally(() => {
      answered = true;
    });
    // Declared: its making under way, a batch a transaction.
    while ((await fillOf(knex, 'notes')) === null) expect(answered, 'the index was made before a batch of it was seen').to.equal(false);
    const elsewhere = await other.post('/v1/collections/elsewhere/rows', [{ n: 1 }]);
    expect(elsewhere.status, elsewhere.text).to.equal(201);
    expect(answered, "another account's write waited for the whole making").to.equal(false);
    // The last rows, which the making reaches last: one changed, one deleted.
    const changed = await client.patch(`/v1/collections/notes/rows/${ROWS}`, { body: 'fresh words' });
    expect(changed.status, changed.text).to.equal(200);
    expect((await client.delete(`/v1/collections/notes/rows/${ROWS - 1}`)).status).to.equal(204);
    const inserted = await client.post('/v1/collections/notes/rows', [{ title: 'note late', body: 'odd words' }]);
    expect(inserted.status, inserted.text).to.equal(201);

    const answer = await made;
    expect(answer.status, answer.text).to.equal(201);
    expect(await fillOf(knex, 'notes')).to.equal(null);
    expect((await searched(client, 'notes', 'note')).count).to.equal(ROWS);
    expect(await searched(client, 'notes', 'fresh')).to.deep.equal({ count: 1, ids: [ROWS] });
    // Odd rows, less the deleted one (ROWS - 1), with the late one.
    expect((await searched(client, 'notes', 'odd')).count).to.equal(ROWS / 2);
    // Even rows, less the changed one (ROWS).
    expect((await searched(client, 'notes', 'even')).count).to.equal(ROWS / 2 - 1);
  });

  it('stops when its index is dropped half-way, and is made whole again when declared again', async function () {
    this.timeout(300_000);
    await seed(client, 'drafts');
    const made = client.post('/v1/collections/drafts/indexes', INDEX);
    while ((await fillOf(knex, 'drafts')) === null);
    expect((await client.delete('/v1/collections/drafts/indexes/search:title,body')).status).to.equal(204);
    expect((await made).status).to.equal(201);
    expect(await fillOf(knex, 'drafts')).to.equal(null);
    expect((await client.get(`/v1/collections/drafts/rows?${filter({ $search: 'note' })}`)).status).to.equal(400);

    expect((await client.post('/v1/collections/drafts/indexes', INDEX)).status).to.equal(201);
    expect((await searched(client, 'drafts', 'note')).count).to.equal(ROWS);
    expect((await searched(client, 'drafts', 'odd')).count).to.equal(ROWS / 2);
  });
});

describeEachBackend('search: an index half made when its process is killed', (backend: BackendName) => {
  const suite = workspaceOn(backend);

  it('is made to its end by the next process, from where it ended', async function () {
    this.timeout(300_000);
    const { workspace, database, knex } = suite;
    const environment = { DATABASE_URL: database.url };
    // A plan without a rate: the default plan's is below the seeding's burst.
    const plan = await workspace.run(['plans', 'set', 'burst', '--quota', '100000', '--period', 'day', '--no-rate'], environment);
    expect(plan.code, plan.stderr).to.equal(0);
    const created = await workspace.run(['keys', 'create', '--account', 'searching', '--plan', 'burst', '--json'], environment);
    expect(created.code, created.stderr).to.equal(0);
    const { key } = JSON.parse(created.stdout);
    const making = await workspace.serve(environment);
    const client = new Client(making.url, key);
    await seed(client, 'notes');
    client.post('/v1/collections/notes/indexes', INDEX).catch(() => {});
    // Killed once a batch has committed, with most of the rows still to fill.
    for (let fill = await fillOf(knex, 'notes'); !fill || fill.after === 0; fill = await fillOf(knex, 'notes'))
      if (making.child.exitCode !== null) throw new Error('the server exited');
    making.signal('SIGKILL');
    expect((await making.exited).signal).to.equal('SIGKILL');
    const left = await fillOf(knex, 'notes');
    expect(left, 'the making had ended before the kill').to.not.equal(null);
    expect(left?.until).to.equal(ROWS);

    const restarted = await workspace.serve(environment);
    while ((await fillOf(knex, 'notes')) !== null) if (restarted.child.exitCode !== null) throw new Error('the server exited');
    const again = new Client(restarted.url, key);
    expect((await searched(again, 'notes', 'note')).count).to.equal(ROWS);
    expect(await searched(again, 'notes', `${ROWS}`)).to.deep.equal({ count: 1, ids: [ROWS] });
    expect((await searched(again, 'notes', 'even')).count).to.equal(ROWS / 2);
  });
});
