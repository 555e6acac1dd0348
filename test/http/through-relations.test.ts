// Reads through relations (docs/relations.md, "Filtering through a relation" and "Ordering by a related
// row's field"), on both backends: the related rows a `$match` or `$some` finds read in the page's own
// snapshot; a publishable key's caller held to the related collection's rules; pages ordered by a
// to-one relation's field, against an in-memory reference, walked by cursors while rows change; and
// where a filter through a relation is refused, saying why.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { watchHealth } from '../support/watchdog.ts';

type Row = { id: number } & Record<string, unknown>;

const filterQuery = (filter: object) => `filter=${encodeURIComponent(JSON.stringify(filter))}`;

describeEachBackend('reads through relations', (backend) => {
  let server: TestServer;
  let client: Client;

  before(async () => {
    server = await startTestServer({ sortIndexMinRows: 0 }, { backend });
    client = await server.client();
  });
  after(() => server.stop());
  watchHealth(() => server);

  async function collections(...names: string[]) {
    for (const name of names) expect((await client.post('/v1/collections', { name })).status).to.equal(201);
  }
  async function relate(collection: string, name: string, body: object) {
    const answer = await client.put(`/v1/collections/${collection}/relations/${name}`, body);
    expect(answer.status, answer.text).to.equal(200);
  }

  it('reads the related rows a $match finds and the page (its count, an aggregate) in one snapshot, while batches move them', async () => {
    // Every batch moves all the books to the other author and makes that author the one `on`: in any
    // one snapshot, every book's author is on. Read in two steps, a batch between them would leave none.
    await collections('authors', 'books');
    expect((await client.post('/v1/collections/authors/rows', [{ on: true }, { on: false }])).status).to.equal(201);
    const books = 12;
    expect(
      (
        await client.post(
          '/v1/collections/books/rows',
          Array.from({ length: books }, () => ({ author_id: 1 })),
        )
      ).status,
    ).to.equal(201);
    await relate('books', 'author', { field: 'author_id', collection: 'authors' });
    const on = filterQuery({ author: { $match: { on: true } } });
    let moving = true;
    const writer = (async () => {
      try {
        for (let step = 0; step < 60 && moving; step++) {
          const [to, from] = step % 2 === 0 ? [2, 1] : [1, 2];
          const operations = [
            { op: 'update', collection: 'authors', id: to, patch: { on: true } },
            { op: 'update', collection: 'authors', id: from, patch: { on: false } },
            ...Array.from({ length: books }, (_, index) => ({
              op: 'update',
              collection: 'books',
              id: index + 1,
              patch: { author_id: to },
            })),
          ];
          const batch = await client.post('/v1/batch', { operations });
          expect(batch.status, batch.text).to.equal(200);
        }
      } finally {
        moving = false;
      }
    })();
    let reads = 0;
    const reader = async () => {
      try {
        await readWhileMoving();
      } finally {
        moving = false;
      }
    };
    const readWhileMoving = async () => {
      while (moving) {
        const page = await client.get<Row[]>(`/v1/collections/books/rows?${on}&count=exact&limit=100`);
        expect(page.status, page.text).to.equal(200);
        expect([page.body.length, page.headers.get('rowbase-total-count')]).to.deep.equal([books, String(books)]);
        const counted = await client.post<{ groups: { n: number }[] }>('/v1/collections/books/aggregate', {
          filter: { author: { $match: { on: true } } },
          aggregates: { n: { count: {} } },
        });
        expect(counted.status, counted.text).to.equal(200);
        expect(counted.body.groups).to.deep.equal([{ n: books }]);
        reads++;
      }
    };
    await Promise.all([writer, reader(), reader()]);
    expect(reads).to.be.greaterThan(10);
  });
});
