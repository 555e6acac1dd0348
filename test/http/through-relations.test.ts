// Reads through relations (docs/relations.md, "Filtering through a relation" and "Ordering by a related
// row's field"), on both backends: the related rows a `$match` or `$some` finds read in the page's own
// snapshot; a publishable key's caller held to the related collection's rules; pages ordered by a
// to-one relation's field, against an in-memory reference, walked by cursors while rows change; and
// where a filter through a relation is refused, saying why.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import { Client, type Response } from '../support/client.ts';
import { appKey, EndUser, tokenOf } from '../support/end-users.ts';
import { type OrderKey, sortRows } from '../support/order.ts';
import { random } from '../support/random.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { watchHealth } from '../support/watchdog.ts';

type Row = { id: number } & Record<string, unknown>;
type Problem = { code: string; detail: string; errors?: { in: string; name: string; message: string }[] };

const filterQuery = (filter: object) => `filter=${encodeURIComponent(JSON.stringify(filter))}`;

const ids = (rows: readonly Row[]) => rows.map((row) => row.id);

/** The next of a page's `Link`, as a path and query, or undefined when it has none. */
const nextLink = (response: Response<unknown>) => /^<([^>]+)>; rel="next"$/.exec(response.headers.get('link') ?? '')?.[1];

/**
 * `rows` with each one's value of the key `field` through a relation set under that name, as the order
 * reads it (`read`: undefined when the related row is none, unreadable, or lacks the field), for
 * sortRows() to order them as the service does.
 */
const withRelated = (rows: readonly Row[], field: string, read: (row: Row) => unknown): Row[] =>
  rows.map((row) => {
    const value = read(row);
    return value === undefined ? row : { ...row, [field]: value };
  });

describeEachBackend('reads through relations', (backend) => {
  let server: TestServer;
  let client: Client;

  before(async () => {
    server = await startTestServer({ sortIndexMinRows: 0, webhooksAllowPrivate: true }, { backend });
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
        for (let step = 0; step < 30 && moving; step++) {
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

  it('expands the rows of a page as one snapshot reads them, while batches change and move them', async function () {
    this.timeout(120_000);
    // Every batch sets one `step` on both authors and every book, and moves every book to the other
    // author: in any one snapshot, each book's step is its author's, and each author has all or none.
    await collections('writers', 'novels');
    expect((await client.post('/v1/collections/writers/rows', [{ step: 0 }, { step: 0 }])).status).to.equal(201);
    const novels = 8;
    const stored = await client.post(
      '/v1/collections/novels/rows',
      Array.from({ length: novels }, () => ({ author_id: 1, step: 0 })),
    );
    expect(stored.status).to.equal(201);
    await relate('novels', 'author', { field: 'author_id', collection: 'writers', reverse: 'novels' });
    let moving = true;
    const writer = (async () => {
      try {
        for (let step = 1; step <= 30 && moving; step++) {
          const to = step % 2 === 0 ? 1 : 2;
          const operations = [
            ...[1, 2].map((id) => ({ op: 'update', collection: 'writers', id, patch: { step } })),
            ...Array.from({ length: novels }, (_, index) => ({
              op: 'update',
              collection: 'novels',
              id: index + 1,
              patch: { author_id: to, step },
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
    const readWhileMoving = async () => {
      while (moving) {
        const books = await client.get<Row[]>('/v1/collections/novels/rows?expand=author&limit=100');
        expect(books.status, books.text).to.equal(200);
        for (const book of books.body) expect((book._expand as { author: Row }).author.step, JSON.stringify(book)).to.equal(book.step);
        const authors = await client.get<Row[]>('/v1/collections/writers/rows?expand=novels&limit=100');
        expect(authors.status, authors.text).to.equal(200);
        const counts = authors.body.map((author) => {
          const own = (author._expand as { novels: Row[] }).novels;
          for (const book of own) expect(book.step, JSON.stringify(author)).to.equal(author.step);
          return own.length;
        });
        expect(counts.sort(), JSON.stringify(authors.body)).to.deep.equal([0, novels]);
        reads++;
      }
    };
    const reader = () => readWhileMoving().finally(() => (moving = false));
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

    it("orders by a related row's field it may read: a related row it may not read orders as missing; a hidden field is 403", async () => {
      const caller = callers.get('u2') as EndUser;
      const name = (user: string) => (note: Row) => {
        const related = member(note.member_id);
        return readsMember(user, related) ? (related as Row).name : undefined;
      };
      const visible = withRelated(
        notes.filter((note) => readsNote('u2', note)),
        'member.name',
        name('u2'),
      );
      for (const [order, keys] of [
        ['asc', [{ field: 'member.name', direction: 'asc' }]],
        ['desc', [{ field: 'member.name', direction: 'desc' }]],
      ] as [string, OrderKey[]][]) {
        const expected = ids(sortRows(visible, keys));
        const walked: number[] = [];
        let next: string | undefined = `/v1/collections/notes/rows?order_by=member.name&order=${order}&limit=9`;
        while (next) {
          const page: Response<Row[]> = await caller.get<Row[]>(next);
          expect(page.status, page.text).to.equal(200);
          walked.push(...ids(page.body));
          next = nextLink(page);
        }
        expect(walked).to.deep.equal(expected);
      }
      // With a secret key the other user's members order by their names.
      const all = await client.get<Row[]>('/v1/collections/notes/rows?order_by=member.name&limit=1000');
      const everyName = (note: Row) => member(note.member_id)?.name;
      expect(ids(all.body)).to.deep.equal(
        ids(sortRows(withRelated(notes, 'member.name', everyName), [{ field: 'member.name', direction: 'asc' }])),
      );
      const refused = async (query: string, body?: object) => {
        const answer = body
          ? await caller.post<Problem>('/v1/collections/notes/query', body)
          : await caller.get<Problem>(`/v1/collections/notes/rows?${query}`);
        expect(answer.status, answer.text).to.equal(403);
        return [answer.body.detail, answer.body.errors?.[0]];
      };
      expect(await refused('order_by=n,member.secret')).to.deep.equal([
        'The rules of collection members hide field secret from this caller (fields.secret.read): it may not be filtered, ordered, grouped, aggregated or selected.',
        { in: 'query', name: 'order_by', message: 'names field secret, which the rules hide' },
      ]);
      expect((await refused('', { order: [{ field: 'n' }, { field: 'member.secret', direction: 'desc' }] }))[1]).to.deep.equal({
        in: 'body',
        name: '/order/1/field',
        message: 'names field secret, which the rules hide',
      });
      expect((await refused('order_by=vault.gold'))[0]).to.equal(
        'The rules of collection vaults refuse this: read: false denies every caller.',
      );
      // Which member a card names would tell its hidden `ref`.
      const cards = await caller.get<Problem>('/v1/collections/cards/rows?order_by=holder.name');
      expect([cards.status, cards.body.errors?.[0].message]).to.deep.equal([403, 'names field ref, which the rules hide']);
    });
  });

  describe("ordered by a to-one relation's field", () => {
    /** Values of every JSON type, missing and null among them, and ties. */
    const values = [3, -1, 2.5, 3, 'b', 'a', 'B', '', 'é', true, false, null, { k: 1 }, [1], undefined];
    let made = 0;

    /** A collection of writers of every kind of name and one of stories naming them (or none), related by `author`. */
    async function storiesAndWriters() {
      const n = ++made;
      const [writers, stories] = [`writers${n}`, `stories${n}`];
      await collections(writers, stories);
      const next = random(100 + n);
      const people: Row[] = values.map((name, index) =>
        name === undefined ? { id: index + 1, age: index } : { id: index + 1, name, age: index },
      );
      const rows: Row[] = Array.from({ length: 50 }, (_, index) => {
        const row: Row = { id: index + 1, score: next(4) };
        const pick = next(10);
        if (pick > 0) row.author_id = pick === 1 ? null : 1 + next(people.length);
        return row;
      });
      await insert(writers, people);
      await insert(stories, rows);
      await relate(stories, 'author', { field: 'author_id', collection: writers });
      return { writers, stories, people, rows };
    }

    /** Each order as `order_by` and `order`: every direction, related keys first, last and beside `id`. */
    const orders = [
      ['author.name', 'asc'],
      ['author.name', 'desc'],
      ['author.name,score', 'desc,asc'],
      ['score,author.name', 'asc,desc'],
      ['author.age,id', 'desc,asc'],
    ];
    /** The keys of `order_by` and `order`, for the reference. */
    const keysOf = (orderBy: string, order: string): OrderKey[] =>
      orderBy.split(',').map((field, index) => ({ field, direction: order.split(',')[index] as OrderKey['direction'] }));

    for (const [orderBy, order] of orders) {
      it(`orders by ${orderBy} ${order} as the reference does, and walks it by cursors while rows and related rows change`, async () => {
        const keys = keysOf(orderBy, order);
        const { writers, stories, people, rows } = await storiesAndWriters();
        const related = (field: string) => (row: Row) => {
          const writer = people.find((person) => person.id === row.author_id);
          return writer && Object.hasOwn(writer, field) ? writer[field] : undefined;
        };
        const reference = (list: readonly Row[]) => {
          let keyed = [...list];
          for (const { field } of keys) if (field.startsWith('author.')) keyed = withRelated(keyed, field, related(field.slice(7)));
          return ids(sortRows(keyed, keys));
        };
        const expected = reference(rows);
        const whole = await client.get<Row[]>(`/v1/collections/${stories}/rows?order_by=${orderBy}&order=${order}&limit=1000`);
        expect(whole.status, whole.text).to.equal(200);
        expect(ids(whole.body)).to.deep.equal(expected);
        const some = await client.get<Row[]>(`/v1/collections/${stories}/rows?order_by=${orderBy}&order=${order}&limit=10&offset=20`);
        expect(ids(some.body)).to.deep.equal(expected.slice(20, 30));
        const queried = await client.post<{ rows: Row[] }>(`/v1/collections/${stories}/query`, {
          order: keys,
          limit: 1000,
          count: 'exact',
        });
        expect(ids(queried.body.rows)).to.deep.equal(expected);

        // The walk: between pages a story is inserted, one moves to another writer, a writer is renamed
        // (its stories move), a story changes outside the order, and one is deleted.
        const moved = new Set<number>();
        const renamed = new Set<number>();
        const walked: Row[] = [];
        let next: string | undefined = `/v1/collections/${stories}/rows?order_by=${orderBy}&order=${order}&limit=7`;
        for (let step = 1; next; step++) {
          const page: Response<Row[]> = await client.get<Row[]>(next);
          expect(page.status, page.text).to.equal(200);
          walked.push(...page.body);
          next = nextLink(page);
          const at = (k: number) => rows[(step * k) % rows.length].id;
          expect(
            (await client.post(`/v1/collections/${stories}/rows`, [{ author_id: 1 + (step % people.length), score: step % 4 }])).status,
          ).to.equal(201);
          if (
            (await client.patch(`/v1/collections/${stories}/rows/${at(29)}`, { author_id: 1 + ((step * 5) % people.length) })).status ===
            200
          )
            moved.add(at(29));
          const writer = 1 + ((step * 7) % people.length);
          expect(
            (
              await client.patch(`/v1/collections/${writers}/rows/${writer}`, {
                name: values[(step * 3) % values.length] ?? 'z',
                age: 100 - step,
              })
            ).status,
          ).to.equal(200);
          renamed.add(writer);
          await client.patch(`/v1/collections/${stories}/rows/${at(17)}`, { note: step });
          if ((await client.delete(`/v1/collections/${stories}/rows/${at(13)}`)).status === 204) moved.add(at(13));
        }
        const stayed = rows.filter((row) => !moved.has(row.id) && !(typeof row.author_id === 'number' && renamed.has(row.author_id)));
        const seen = walked.filter((row) => stayed.some((kept) => kept.id === row.id));
        expect(ids(seen), 'every row that stayed in place, once, in order').to.deep.equal(reference(stayed));
        expect(stayed.length).to.be.greaterThan(10);
      });
    }

    it('takes a cursor of a list in a query, and refuses one of another order; a relation followed by no field is 400', async () => {
      const { stories, people, rows } = await storiesAndWriters();
      // Filtered on a field with a sort index (a page ordered by it made one), whose range it reads.
      expect((await client.get(`/v1/collections/${stories}/rows?order_by=score`)).status).to.equal(200);
      const filtered = await client.get<Row[]>(
        `/v1/collections/${stories}/rows?${filterQuery({ score: { $gte: 2 } })}&order_by=author.age&order=desc&limit=1000`,
      );
      const age = (row: Row) => people.find((person) => person.id === row.author_id)?.age;
      const kept = withRelated(
        rows.filter((row) => (row.score as number) >= 2),
        'author.age',
        age,
      );
      expect(ids(filtered.body)).to.deep.equal(ids(sortRows(kept, [{ field: 'author.age', direction: 'desc' }])));
      const first = await client.get<Row[]>(`/v1/collections/${stories}/rows?order_by=author.name&order=desc&limit=5`);
      const after = new URL(nextLink(first) ?? '', server.url).searchParams.get('after') ?? '';
      const queried = await client.post<{ rows: Row[] }>(`/v1/collections/${stories}/query`, {
        order: [{ field: 'author.name', direction: 'desc' }],
        limit: 5,
        after,
      });
      const listed = await client.get<Row[]>(nextLink(first) ?? '');
      expect(ids(queried.body.rows)).to.deep.equal(ids(listed.body));
      expect((await client.get(`/v1/collections/${stories}/rows?order_by=author.age&order=desc&limit=5&after=${after}`)).status).to.equal(
        400,
      );
      const empty = await client.get<Problem>(`/v1/collections/${stories}/rows?order_by=author.`);
      expect([empty.status, empty.body.errors?.[0]]).to.deep.equal([
        400,
        { in: 'query', name: 'order_by', message: `author. names no field of writers${made}` },
      ]);
      // A name before the dot that is no to-one relation is a top-level field, as before relations.
      const plain = await client.get<Row[]>(`/v1/collections/${stories}/rows?order_by=score.x&limit=3`);
      expect(ids(plain.body)).to.deep.equal([1, 2, 3]);
    });
  });

  it('refuses a filter through a relation in the feed, a webhook and a rule with a 400 saying why', async () => {
    await collections('shelves', 'boxes');
    await relate('boxes', 'shelf', { field: 'shelf_id', collection: 'shelves' });
    const why =
      'a change to a related row is no change of this collection: no event would say when a row comes to match or stops matching.';
    const through = { shelf: { $match: { label: 'top' } } };
    // The feed's changes over HTTP are its subscriptions, checked as a socket's upgrade is.
    const changes = await client.get<Problem>(`/v1/collections/boxes/changes?${filterQuery(through)}`);
    expect([changes.status, changes.body.detail, changes.body.errors]).to.deep.equal([
      400,
      `A feed's filter may not reach into related rows ($match, $some): ${why}`,
      [{ in: 'query', name: 'filter', message: 'holds $match or $some' }],
    ]);
    const hook = await client.post<Problem>('/v1/webhooks', { url: 'http://127.0.0.1:9/hook', collections: ['boxes'], filter: through });
    expect([hook.status, hook.body.detail]).to.deep.equal([
      400,
      `A webhook's filter may not reach into related rows ($match, $some): ${why}`,
    ]);
    const rules = await client.put<Problem>('/v1/collections/boxes/rules', { read: { $or: [{ mine: true }, { shelf: { $some: {} } }] } });
    expect([rules.status, rules.body.detail, rules.body.errors?.[0].name]).to.deep.equal([
      400,
      `The rules are not valid: a rule's filter may not reach into related rows ($match, $some): ${why}`,
      '/read/$or/1/shelf',
    ]);
  });
});
