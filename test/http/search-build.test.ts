// A search right after its index is made (docs/search.md, "The search index"): a search index declared
// over 20,000 rows while inserts go on, and its rows counted under `$search` at once, in a list, a ranked
// list and an aggregate, answer within the bound on a read's time (config.ts, queryTimeoutMs), on each
// backend, though the planner's statistics were taken before those rows and words were there.
import { expect } from 'chai';
import { describeEachBackend, knexOf } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const ROWS = 20_000;
/** Long enough for a count of 20,000 rows on a loaded host, far shorter than one that reads them 20,000 times. */
const TIMEOUT_MS = 2000;
/** Collections of two rows each, which make a collection look small to statistics taken before its rows came. */
const SMALL_COLLECTIONS = 100;
const filter = (value: object) => `filter=${encodeURIComponent(JSON.stringify(value))}`;

/** Row `n`'s fields: every row holds `note`, one in ten `red`, one in a thousand `rare`. */
const row = (n: number) => ({
  title: `note ${n} ${n % 10 === 0 ? 'red' : 'blue'}`,
  body: `${n % 1000 === 0 ? 'rare ' : ''}words of row ${n} in a body of some length`,
});

describeEachBackend('search: counted right after its index is made', (backend) => {
  let server: TestServer;
  let client: Client;
  before(async function () {
    this.timeout(600_000);
    server = await startTestServer({ queryTimeoutMs: TIMEOUT_MS }, { backend });
    client = await server.client();
    for (let n = 0; n < SMALL_COLLECTIONS; n++) {
      const name = `small${n}`;
      expect((await client.post('/v1/collections', { name })).status).to.equal(201);
      expect((await client.post(`/v1/collections/${name}/rows`, [row(n), row(n + 1)])).status).to.equal(201);
      expect((await client.post(`/v1/collections/${name}/indexes`, { type: 'search', fields: ['title', 'body'] })).status).to.equal(201);
    }
    expect((await client.post('/v1/collections', { name: 'notes' })).status).to.equal(201);
    // The statistics as the database's own upkeep (autovacuum, SQLite's optimize) may leave them: taken
    // before the collection's rows came.
    const knex = knexOf(backend, server.databaseUrl);
    try {
      await knex.raw('analyze');
    } finally {
      await knex.destroy();
    }
    for (let first = 0; first < ROWS; first += 1000) {
      const batch = Array.from({ length: 1000 }, (_, n) => row(first + n));
      expect((await client.post('/v1/collections/notes/rows', batch)).status).to.equal(201);
    }
  });
  after(() => server?.stop());

  it('answers a count under $search at once, while inserts go on', async function () {
    this.timeout(300_000);
    let inserting = true;
    let inserted = 0;
    const inserts = (async () => {
      while (inserting) {
        expect((await client.post('/v1/collections/notes/rows', [row(ROWS + inserted)])).status).to.equal(201);
        inserted++;
      }
    })();
    const expected: Record<string, (n: number) => boolean> = {
      note: () => true,
      red: (n) => n % 10 === 0,
      rare: (n) => n % 1000 === 0,
      'red no': (n) => n % 10 === 0,
    };
    try {
      const made = await client.post('/v1/collections/notes/indexes', { type: 'search', fields: ['title', 'body'] });
      expect(made.status, made.text).to.equal(201);
      for (const [text, holds] of Object.entries(expected)) {
        // Rows inserted after the index was made count too: at least those the index was made over.
        const least = Array.from({ length: ROWS }, (_, n) => n).filter(holds).length;
        for (const query of ['limit=1&count=exact', 'limit=1&count=exact&order_by=_score']) {
          const counted = await client.get(`/v1/collections/notes/rows?${query}&${filter({ $search: text })}`);
          expect(counted.status, `${text}, ${query}: ${counted.text}`).to.equal(200);
          expect(Number(counted.headers.get('rowbase-total-count')), text).to.be.at.least(least);
        }
        const aggregate = await client.post<{ groups: { count: number }[] }>('/v1/collections/notes/aggregate', {
          filter: { $search: text },
        });
        expect(aggregate.status, `${text}: ${aggregate.text}`).to.equal(200);
        expect(aggregate.body.groups[0].count, text).to.be.at.least(least);
      }
    } finally {
      inserting = false;
      await inserts;
    }
    expect(inserted, 'inserts went on').to.be.above(0);
  });
});
