// Reads through relations (docs/relations.md, "Filtering through a relation" and "Ordering by a related
// row's field"), on both backends: the related rows a `$match` or `$some` finds read in the page's own
// snapshot; a publishable key's caller held to the related collection's rules; pages ordered by a
// to-one relation's field, against an in-memory reference, walked by cursors while rows change; and
// where a filter through a relation is refused, saying why.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { appKey, EndUser, tokenOf } from '../support/end-users.ts';
import { random } from '../support/random.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { watchHealth } from '../support/watchdog.ts';

type Row = { id: number } & Record<string, unknown>;
type Problem = { code: string; detail: string; errors?: { in: string; name: string; message: string }[] };

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
  /** Stores `rows` in the collection, in order, so that each gets its id. */
  async function insert(collection: string, rows: Row[]) {
    const stored = await client.post<Row[]>(
      `/v1/collections/${collection}/rows`,
      rows.map(({ id, ...fields }) => fields),
    );
    expect(stored.body.map((row) => row.id)).to.deep.equal(rows.map((row) => row.id));
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

  describe("a publishable key's caller, held to the related collection's rules", () => {
    // Members are read by their owner only, and hide `secret`; notes are read by their owner and by
    // everyone when shared, and hide `private`. A note names a member of either user: the related rows
    // of one user's notes interleave with the other's.
    const members: Row[] = [];
    const notes: Row[] = [];
    const users = ['u1', 'u2'] as const;
    const callers = new Map<string, EndUser>();

    before(async () => {
      await collections('members', 'notes', 'vaults', 'cards');
      const next = random(4);
      for (let id = 1; id <= 40; id++)
        members.push({ id, owner: users[next(2)], name: `m${next(6)}`, level: next(10), secret: `s${next(3)}` });
      for (let id = 1; id <= 150; id++) {
        const note: Row = { id, owner: ['u1', 'u2', 'shared'][next(3)], n: next(20), private: next(2) === 0 };
        if (next(6) > 0) note.member_id = 1 + next(40);
        notes.push(note);
      }
      await insert('members', members);
      await insert('notes', notes);
      expect((await client.post('/v1/collections/vaults/rows', [{ gold: 1 }])).status).to.equal(201);
      expect((await client.post('/v1/collections/cards/rows', [{ ref: 1 }])).status).to.equal(201);
      await relate('notes', 'member', { field: 'member_id', collection: 'members', reverse: 'notes' });
      await relate('notes', 'vault', { field: 'vault_id', collection: 'vaults' });
      await relate('cards', 'holder', { field: 'ref', collection: 'members' });
      const mine = { owner: { $auth: 'sub' } };
      const rules: [string, object][] = [
        ['members', { read: mine, fields: { secret: { read: false } } }],
        ['notes', { read: { $or: [mine, { owner: 'shared' }] }, update: mine, fields: { private: { read: false } } }],
        ['vaults', { read: false }],
        ['cards', { read: true, fields: { ref: { read: false } } }],
      ];
      for (const [name, body] of rules) expect((await client.put(`/v1/collections/${name}/rules`, body)).status).to.equal(200);
      const key = await appKey(client);
      for (const user of users) callers.set(user, new EndUser(server.url, key, await tokenOf(user)));
    });

    const member = (id: unknown) => members.find((row) => row.id === id);
    const readsMember = (user: string, row: Row | undefined) => row !== undefined && row.owner === user;
    const readsNote = (user: string, row: Row) => row.owner === user || row.owner === 'shared';
    /** A note as the user is answered it: without `private`. */
    const shownNote = ({ private: _, ...row }: Row) => row;
    const ids = (rows: Row[]) => rows.map((row) => row.id);

    it('matches only related rows the caller may read, in pages, counts, $not, $some and aggregates, as the reference says', async () => {
      const next = random(40);
      for (let round = 0; round < 12; round++) {
        const user = users[round % 2];
        const caller = callers.get(user) as EndUser;
        const name = `m${next(6)}`;
        const level = next(10);
        const inner = round % 3 === 0 ? { name } : { level: { $gte: level } };
        const holds = (row: Row) => (round % 3 === 0 ? row.name === name : (row.level as number) >= level);
        const matched = (note: Row) => {
          const related = member(note.member_id);
          return readsMember(user, related) && holds(related as Row);
        };
        const visible = notes.filter((note) => readsNote(user, note));
        const page = await caller.get<Row[]>(
          `/v1/collections/notes/rows?${filterQuery({ member: { $match: inner } })}&limit=1000&count=exact`,
        );
        expect(page.status, page.text).to.equal(200);
        expect(page.body).to.deep.equal(visible.filter(matched).map(shownNote));
        expect(page.headers.get('rowbase-total-count')).to.equal(String(visible.filter(matched).length));
        const not = await caller.post<{ rows: Row[] }>('/v1/collections/notes/query', {
          filter: { $not: { member: { $match: inner } } },
          limit: 1000,
        });
        expect(ids(not.body.rows)).to.deep.equal(ids(visible.filter((note) => !matched(note))));
        // The same filter with a secret key sees the other user's members too: the rules made the difference.
        const all = await client.get<Row[]>(`/v1/collections/notes/rows?${filterQuery({ member: { $match: inner } })}&limit=1000`);
        expect(ids(all.body)).to.deep.equal(ids(notes.filter((note) => member(note.member_id) && holds(member(note.member_id) as Row))));
        const counted = await caller.post<{ groups: { n: number }[] }>('/v1/collections/notes/aggregate', {
          filter: { member: { $match: inner } },
          aggregates: { n: { count: {} } },
        });
        expect(counted.body.groups).to.deep.equal([{ n: visible.filter(matched).length }]);
        const least = next(20);
        const some = await caller.get<Row[]>(
          `/v1/collections/members/rows?${filterQuery({ notes: { $some: { n: { $gte: least } } } })}&limit=1000`,
        );
        expect(some.status, some.text).to.equal(200);
        const hasNote = (row: Row) =>
          notes.some((note) => note.member_id === row.id && readsNote(user, note) && (note.n as number) >= least);
        expect(ids(some.body)).to.deep.equal(ids(members.filter((row) => readsMember(user, row) && hasNote(row))));
      }
    });

    it('changes by filter through a relation only the rows whose related row the caller may read matches', async () => {
      const caller = callers.get('u1') as EndUser;
      // A name some of u1's notes reach through u1's members, and others through u2's.
      const reached = (note: Row) => member(note.member_id)?.name;
      const first = notes.find((note) => note.owner === 'u1' && readsMember('u1', member(note.member_id)));
      const chosenName = reached(first as Row) as string;
      const filter = { member: { $match: { name: chosenName } } };
      const patched = await caller.patch<{ count: number }>(`/v1/collections/notes/rows?${filterQuery(filter)}`, { seen: true });
      expect(patched.status, patched.text).to.equal(200);
      const chosen = notes.filter(
        (note) => note.owner === 'u1' && readsMember('u1', member(note.member_id)) && reached(note) === chosenName,
      );
      const others = notes.filter(
        (note) => note.owner === 'u1' && !readsMember('u1', member(note.member_id)) && reached(note) === chosenName,
      );
      expect([chosen.length > 0, others.length > 0]).to.deep.equal([true, true]);
      expect(patched.body).to.deep.equal({ count: chosen.length });
      const seen = await client.get<Row[]>(`/v1/collections/notes/rows?${filterQuery({ seen: true })}&limit=1000`);
      expect(ids(seen.body)).to.deep.equal(ids(chosen));
    });

    it('refuses a hidden related field, a hidden relation field and a related collection it may not read, with a 403 naming each', async () => {
      const caller = callers.get('u1') as EndUser;
      const refused = async (path: string, body?: object) => {
        const answer = body ? await caller.post<Problem>(path, body) : await caller.get<Problem>(path);
        expect(answer.status, answer.text).to.equal(403);
        return [answer.body.detail, answer.body.errors?.[0]];
      };
      expect(await refused(`/v1/collections/notes/rows?${filterQuery({ member: { $match: { secret: 's1' } } })}`)).to.deep.equal([
        'The rules of collection members hide field secret from this caller (fields.secret.read): it may not be filtered, ordered, grouped, aggregated or selected.',
        { in: 'query', name: 'filter', message: 'names field secret, which the rules hide' },
      ]);
      // Nested under $or and $not, in a query's body and an aggregate's.
      const nested = { $or: [{ n: 1 }, { $not: { member: { $match: { secret: { $exists: true } } } } }] };
      expect((await refused('/v1/collections/notes/query', { filter: nested }))[1]).to.deep.equal({
        in: 'body',
        name: '/filter',
        message: 'names field secret, which the rules hide',
      });
      expect((await refused('/v1/collections/notes/aggregate', { filter: nested, aggregates: { n: { count: {} } } }))[1]).to.include({
        name: '/filter',
      });
      // $some reads the related collection's hidden field too.
      expect((await refused(`/v1/collections/members/rows?${filterQuery({ notes: { $some: { private: true } } })}`))[0]).to.include(
        'collection notes hide field private',
      );
      // Which member a card names would tell its hidden `ref`.
      expect((await refused(`/v1/collections/cards/rows?${filterQuery({ holder: { $match: {} } })}`))[0]).to.include('hide field ref');
      expect((await refused(`/v1/collections/notes/rows?${filterQuery({ vault: { $match: { gold: 1 } } })}`))[0]).to.equal(
        'The rules of collection vaults refuse this: read: false denies every caller.',
      );
      // A secret key is held to no rule.
      expect((await client.get(`/v1/collections/notes/rows?${filterQuery({ vault: { $match: { gold: 1 } } })}`)).status).to.equal(200);
      // A key limited to named collections reaches no other through a relation.
      const made = await client.post<{ key: string }>('/v1/keys', { scope: 'read', collections: ['notes'] });
      const limited = new Client(server.url, made.body.key);
      const outside = await limited.get<Problem>(`/v1/collections/notes/rows?${filterQuery({ member: { $match: {} } })}`);
      expect([outside.status, outside.body.detail]).to.deep.equal([
        403,
        'The key is limited to collections it names, and members, which member relates to, is not one of them.',
      ]);
    });
  });
});
