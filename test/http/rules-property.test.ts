// Rules against random queries (docs/access.md, "Rules on requests"): an end user's list and query, with any
// filter, order and selection, answer exactly the rows of their own that the filter keeps (as
// src/query/evaluate.ts's matches() keeps them, the rule ANDed in), with their count, never a hidden field;
// their aggregates count and sum those rows alone, and their patches and deletes by filter change those rows
// alone, every other row left as it was. A filter that names the hidden field or a path under it, however
// deep among its operators, or an order or selection that names it, is a 403, and changes nothing. Rows are
// owned by the caller, by another user, by no one, and by values that only look like the caller's (an
// object, an array holding the name, another case). Through a relation, held to the related collection's
// rules: a `$match` reaches only related rows the caller may read, a to-one expansion is its row masked or
// null, and a to-many one at most its `limit` of the rows the caller may read, by id, a cut list named. A
// random batch of inserts, patches and deletes is applied whole where the rules grant each operation, as a
// model of them applies it, and else refused at the first they do not (404 or 403, as the model says),
// nothing of it stored; so is a random upsert (`on_conflict`), whose rows patch the caller's rows, meet
// another's as its 404, and insert only what `create` grants.
import { expect } from 'chai';
import fc from 'fast-check';
import { matches } from '../../src/query/evaluate.ts';
import { parseFilter } from '../../src/query/filter.ts';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { appKey, EndUser, tokenOf } from '../support/end-users.ts';
import { filters } from '../support/filters.ts';
import { type OrderKey, type Row, sortRows } from '../support/order.ts';
import { random } from '../support/random.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const owners: unknown[] = ['ada', 'bob', 'Ada', 'ada ', ['ada'], { sub: 'ada' }, null];
const kinds = ['a', 'b', '', 'é'];
const rows: Record<string, unknown>[] = Array.from({ length: 48 }, (_, n) => {
  const row: Record<string, unknown> = { n, kind: kinds[n % kinds.length], internal: { k: n % 3, text: `secret ${n}` } };
  // Every other row is ada's; the rest go round the other owners, one in seven without any.
  if (n % 2 === 0) row.owner = 'ada';
  else if (n % 7 !== 1) row.owner = owners[1 + (n % (owners.length - 1))];
  if (n % 5 === 2) row.tags = ['ada', n % 4];
  return row;
});

/** ada's grant, as the rule reads for her token: what her rows are, by the filter's own semantics. */
const granted = parseFilter({ owner: 'ada' });

const RULES = {
  read: { owner: { $auth: 'sub' } },
  create: { owner: { $auth: 'sub' } },
  update: { owner: { $auth: 'sub' } },
  delete: { owner: { $auth: 'sub' } },
  fields: { internal: { read: false, write: false } },
};

/** Fields a query may name, the hidden one and a path under it among them. */
const field = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom('n', 'kind', 'owner', 'tags', 'missing', 'id') },
  { weight: 1, arbitrary: fc.constantFrom('internal', 'internal.k') },
);
const filter = filters({
  field,
  scalar: fc.oneof(fc.constantFrom('ada', 'bob', 'Ada', ...kinds), fc.integer({ min: -1, max: 49 }), fc.constantFrom(null, true, 0.5)),
  composites: [['ada'], { sub: 'ada' }, ['ada', 1]],
  prefixes: ['a', 'A', ''],
});
const order = fc.uniqueArray(
  fc.record({ field: field.filter((name) => name !== 'id'), direction: fc.constantFrom<'asc' | 'desc'>('asc', 'desc') }),
  { maxLength: 2, selector: (key) => key.field },
);
const selection = fc.option(
  fc.uniqueArray(
    field.filter((name) => name !== 'id'),
    { minLength: 1, maxLength: 3 },
  ),
  { nil: undefined },
);

/**
 * Whether a filter names the hidden field, or a path under it (`internal.k`), anywhere: a field of a filter
 * is a path, where an order's or a selection's is a top-level name (openapi.yaml, order_by and select), so
 * that `internal.k` there is a field of its own, which no row has.
 */
function filterNamesHidden(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(filterNamesHidden);
  if (value === null || typeof value !== 'object') return false;
  return Object.entries(value).some(([key, inner]) => key === 'internal' || key.startsWith('internal.') || filterNamesHidden(inner));
}

describeEachBackend('rules against random queries', (backend) => {
  let server: TestServer;
  let admin: Client;
  let ada: EndUser;
  let stored: Row[];
  let collections = 0;
  /** A collection of `rows` under RULES, its name; its rows as stored. */
  async function notes(): Promise<[string, Row[]]> {
    const name = `notes${++collections}`;
    expect((await admin.post('/v1/collections', { name })).status).to.equal(201);
    expect((await admin.put(`/v1/collections/${name}/rules`, RULES)).status).to.equal(200);
    return [name, (await admin.post<Row[]>(`/v1/collections/${name}/rows`, rows)).body];
  }
  before(async () => {
    server = await startTestServer({}, { backend });
    admin = await server.client();
    [, stored] = await notes();
    ada = new EndUser(server.url, await appKey(admin), await tokenOf('ada'));
  });
  after(() => server?.stop());

  /** The ids of ada's rows that `sent` keeps, in the order of `keys` (by id without any). */
  function expectedIds(sent: unknown, keys: OrderKey[], of = stored): number[] {
    const kept = parseFilter(sent);
    return sortRows(
      of.filter((row) => matches(granted, row) && matches(kept, row)),
      keys.length > 0 ? keys : [{ field: 'id', direction: 'asc' }],
    ).map((row) => row.id);
  }

  it('answers a list of exactly the caller’s rows the filter keeps, in order, counted, without the hidden field; 403 for naming it', async () => {
    await fc.assert(
      fc.asyncProperty(filter, order, selection, async (sent, keys: OrderKey[], select) => {
        const query: Record<string, string> = { filter: JSON.stringify(sent), count: 'exact', limit: '1000' };
        if (keys.length > 0) {
          query.order_by = keys.map((key) => key.field).join(',');
          query.order = keys.map((key) => key.direction).join(',');
        }
        if (select) query.select = select.join(',');
        const response = await ada.get<Row[]>(`/v1/collections/notes1/rows?${new URLSearchParams(query)}`);
        if (filterNamesHidden(sent) || [...keys.map((key) => key.field), ...(select ?? [])].includes('internal')) {
          expect(response.status, response.text).to.equal(403);
          return;
        }
        expect(response.status, response.text).to.equal(200);
        const expected = expectedIds(sent, keys);
        expect(response.body.map((row) => row.id)).to.deep.equal(expected);
        expect(response.headers.get('rowbase-total-count')).to.equal(String(expected.length));
        for (const row of response.body) expect(row).not.to.have.property('internal');
      }),
      { numRuns: 150 },
    );
  });

  it('answers a query of exactly the caller’s rows the filter keeps, in order, with their total; 403 for naming the hidden field', async () => {
    await fc.assert(
      fc.asyncProperty(filter, order, async (sent, keys: OrderKey[]) => {
        const body = { filter: sent, ...(keys.length > 0 ? { order: keys } : {}), limit: 1000, count: 'exact' };
        const response = await ada.post<{ rows: Row[]; total: number }>('/v1/collections/notes1/query', body);
        if (filterNamesHidden(sent) || keys.some((key) => key.field === 'internal')) {
          expect(response.status, response.text).to.equal(403);
          return;
        }
        expect(response.status, response.text).to.equal(200);
        const expected = expectedIds(sent, keys);
        expect(response.body.rows.map((row) => row.id)).to.deep.equal(expected);
        expect(response.body.total).to.equal(expected.length);
        for (const row of response.body.rows) expect(row).not.to.have.property('internal');
      }),
      { numRuns: 100 },
    );
  });

  it('aggregates exactly the caller’s rows the filter keeps, by group; 403 for a filter naming the hidden field', async () => {
    await fc.assert(
      fc.asyncProperty(filter, async (sent) => {
        const body = { filter: sent, group_by: ['kind'], aggregates: { count: { count: {} }, total: { sum: 'n' } } };
        const response = await ada.post<{ groups: { kind: string; count: number; total: number }[] }>(
          '/v1/collections/notes1/aggregate',
          body,
        );
        if (filterNamesHidden(sent)) {
          expect(response.status, response.text).to.equal(403);
          return;
        }
        expect(response.status, response.text).to.equal(200);
        const kept = new Set(expectedIds(sent, []));
        const expected = [...kinds]
          .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
          .map((kind) => {
            const ofKind = stored.filter((row) => kept.has(row.id) && row.kind === kind);
            return { kind, count: ofKind.length, total: ofKind.reduce((sum, row) => sum + (row.n as number), 0) };
          })
          .filter((group) => group.count > 0);
        expect(response.body.groups).to.deep.equal(expected);
      }),
      { numRuns: 100 },
    );
  });

  it('patches and then deletes by filter exactly the caller’s rows the filter keeps, and leaves every other row as it was', async () => {
    await fc.assert(
      fc.asyncProperty(filter, async (sent) => {
        const [name, before] = await notes();
        const query = `filter=${encodeURIComponent(JSON.stringify(sent))}`;
        const patched = await ada.patch<{ count: number }>(`/v1/collections/${name}/rows?${query}`, { touched: true });
        if (filterNamesHidden(sent)) {
          expect(patched.status, patched.text).to.equal(403);
          expect(await allRows(admin, name)).to.deep.equal(before);
          return;
        }
        expect(patched.status, patched.text).to.equal(200);
        const kept = new Set(expectedIds(sent, [], before));
        expect(patched.body.count).to.equal(kept.size);
        const touched = before.map((row) => (kept.has(row.id) ? { ...row, touched: true } : row));
        expect(await allRows(admin, name)).to.deep.equal(touched);
        const deleted = await ada.delete<{ count: number }>(`/v1/collections/${name}/rows?${query}`);
        expect(deleted.status, deleted.text).to.equal(200);
        expect(deleted.body.count).to.equal(kept.size);
        const left = touched.filter((row) => !kept.has(row.id));
        expect(await allRows(admin, name)).to.deep.equal(left);
      }),
      { numRuns: 40 },
    );
  });
});

describeEachBackend('rules through relations against random pages', (backend) => {
  // Members are read by their owner alone and hide `secret`; posts are read by their owner and by everyone
  // when shared. A post names a member of either user, or none.
  const members: Row[] = [];
  const posts: Row[] = [];
  const next = random(63);
  for (let id = 1; id <= 30; id++) members.push({ id, owner: ['ada', 'bob'][next(2)], level: next(10), secret: `s${id}` });
  for (let id = 1; id <= 90; id++) {
    const post: Row = { id, owner: ['ada', 'bob', 'shared'][next(3)], n: next(20) };
    if (next(5) > 0) post.member_id = 1 + next(30);
    posts.push(post);
  }
  const readsMember = (row: Row | undefined): row is Row => row !== undefined && row.owner === 'ada';
  const readsPost = (row: Row) => row.owner === 'ada' || row.owner === 'shared';
  const memberOf = (post: Row) => members.find((row) => row.id === post.member_id);
  const shownMember = ({ secret: _, ...row }: Row) => row;
  const postFilter = filters({
    field: fc.constantFrom('n', 'owner', 'member_id', 'missing', 'id'),
    scalar: fc.oneof(fc.constantFrom('ada', 'bob', 'shared'), fc.integer({ min: -1, max: 31 }), fc.constantFrom(null, true)),
    composites: [['ada'], { sub: 'ada' }],
    prefixes: ['a', 's', ''],
  });

  let server: TestServer;
  let ada: EndUser;
  before(async () => {
    server = await startTestServer({}, { backend });
    const admin = await server.client();
    for (const [name, rows] of [
      ['members', members],
      ['posts', posts],
    ] as const) {
      expect((await admin.post('/v1/collections', { name })).status).to.equal(201);
      const sent = rows.map(({ id: _, ...row }) => row);
      expect((await admin.post(`/v1/collections/${name}/rows`, sent)).status).to.equal(201);
    }
    const relation = { field: 'member_id', collection: 'members', reverse: 'posts' };
    expect((await admin.put('/v1/collections/posts/relations/member', relation)).status).to.equal(200);
    const mine = { owner: { $auth: 'sub' } };
    const rules = { members: { read: mine, fields: { secret: { read: false } } }, posts: { read: { $or: [mine, { owner: 'shared' }] } } };
    for (const [name, body] of Object.entries(rules)) expect((await admin.put(`/v1/collections/${name}/rules`, body)).status).to.equal(200);
    ada = new EndUser(server.url, await appKey(admin), await tokenOf('ada'));
  });
  after(() => server?.stop());

  it('answers the posts it may read that a random filter and $match keep, each expanded to its member only where it may read it, masked', async () => {
    await fc.assert(
      fc.asyncProperty(postFilter, fc.option(fc.integer({ min: 0, max: 10 }), { nil: undefined }), async (sent, least) => {
        const filter = least === undefined ? sent : { ...sent, member: { $match: { level: { $gte: least } } } };
        const response = await ada.post<{ rows: Row[] }>('/v1/collections/posts/query', { filter, expand: { member: {} }, limit: 1000 });
        expect(response.status, response.text).to.equal(200);
        const reached = (post: Row) => {
          const member = memberOf(post);
          return least === undefined || (readsMember(member) && (member.level as number) >= least);
        };
        const kept = parseFilter(sent);
        const expected = posts
          .filter((post) => readsPost(post) && matches(kept, post) && reached(post))
          .map((post) => {
            const member = memberOf(post);
            return { ...post, _expand: { member: readsMember(member) ? shownMember(member) : null } };
          });
        expect(response.body.rows).to.deep.equal(expected);
      }),
      { numRuns: 100 },
    );
  });

  it('answers the members it may read, each expanded to at most `limit` of the posts naming it that it may read, by id, the cut named', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: 10 }), async (limit, least) => {
        const body = { filter: { level: { $gte: least } }, expand: { posts: { limit } }, limit: 1000 };
        const response = await ada.post<{ rows: Row[] }>('/v1/collections/members/query', body);
        expect(response.status, response.text).to.equal(200);
        const expected = members
          .filter((member) => readsMember(member) && (member.level as number) >= least)
          .map((member) => {
            const naming = posts.filter((post) => post.member_id === member.id && readsPost(post));
            const cut = naming.length > limit ? { $cut: ['posts'] } : {};
            return { ...shownMember(member), _expand: { posts: naming.slice(0, limit), ...cut } };
          });
        expect(response.body.rows).to.deep.equal(expected);
      }),
      { numRuns: 40 },
    );
  });
});

describeEachBackend('rules over random batches and upserts', (backend) => {
  type Op =
    | { op: 'insert'; rows: Record<string, unknown>[] }
    | { op: 'update'; id: number; patch: Record<string, unknown> }
    | { op: 'delete'; id: number };
  // Mostly what the rules grant (ada's rows are the odd ids of the eight seeded), so that batches of
  // several operations are applied whole as often as refused.
  const ownerOf = fc.oneof({ weight: 6, arbitrary: fc.constant<unknown>('ada') }, fc.constantFrom<unknown>('bob', undefined));
  const internal = fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, fc.constant('x'));
  const inserted = fc.record({ owner: ownerOf, n: fc.integer({ min: 0, max: 9 }), internal });
  const id = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(1, 3, 5, 7) }, fc.integer({ min: 1, max: 10 }));
  const patch = fc.oneof(
    { weight: 6, arbitrary: fc.record({ n: fc.integer({ min: 0, max: 9 }) }) },
    { weight: 2, arbitrary: fc.constant({ n: null }) },
    fc.constant({ owner: 'bob' }),
    fc.constant({ internal: 'x' }),
  );
  const operation: fc.Arbitrary<Op> = fc.oneof(
    fc.array(inserted, { minLength: 1, maxLength: 2 }).map((rows): Op => ({ op: 'insert', rows: rows.map(withoutUndefined) })),
    { weight: 2, arbitrary: fc.record({ id, patch }).map(({ id, patch }): Op => ({ op: 'update', id, patch })) },
    id.map((id): Op => ({ op: 'delete', id })),
  );

  // An upsert's rows: the keys of the seeded rows (k1 and k3 ada's, k2 bob's), and new ones.
  type Sent = { key: string; owner: string; n: number };
  const sentRow = fc.record({
    key: fc.constantFrom('k1', 'k2', 'k3', 'k4', 'k5', 'k6'),
    owner: fc.oneof({ weight: 5, arbitrary: fc.constant('ada') }, fc.constant('bob')),
    n: fc.integer({ min: 0, max: 9 }),
  });

  let server: TestServer;
  let admin: Client;
  let ada: EndUser;
  let collections = 0;
  before(async () => {
    server = await startTestServer({}, { backend });
    admin = await server.client();
    ada = new EndUser(server.url, await appKey(admin), await tokenOf('ada'));
  });
  after(() => server?.stop());
  /** A new collection under RULES, its name. */
  async function fresh(): Promise<string> {
    const name = `writes${++collections}`;
    expect((await admin.post('/v1/collections', { name })).status).to.equal(201);
    expect((await admin.put(`/v1/collections/${name}/rules`, RULES)).status).to.equal(200);
    return name;
  }

  /**
   * What the batch does as the rules say, one operation after another on `rows` (as the admin reads them)
   * from the id after `lastId`: the rows after it, or the first operation refused and its status.
   */
  function batchModel(rows: Row[], lastId: number, operations: Op[]): { rows: Row[] } | { refused: number; status: number } {
    let held = rows.map((row) => ({ ...row }));
    let id = lastId;
    for (const [index, operation] of operations.entries()) {
      if (operation.op === 'insert') {
        if (operation.rows.some((row) => row.owner !== 'ada' || 'internal' in row)) return { refused: index, status: 403 };
        held = [...held, ...operation.rows.map((row) => ({ id: ++id, ...row }))];
        continue;
      }
      const row = held.find((candidate) => candidate.id === operation.id);
      if (row === undefined || row.owner !== 'ada') return { refused: index, status: 404 };
      if (operation.op === 'delete') {
        held = held.filter((candidate) => candidate !== row);
        continue;
      }
      if ('internal' in operation.patch || operation.patch.owner === 'bob') return { refused: index, status: 403 };
      // A top-level merge: each field given replaces its value, null included (openapi.yaml, updateRow).
      const patched = { ...row, ...operation.patch };
      held = held.map((candidate) => (candidate === row ? patched : candidate));
    }
    return { rows: held };
  }

  it('applies a random batch of an end user whole where the rules grant every operation, and else refuses it at the first they do not, storing nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 5 }), async (operations) => {
        const name = await fresh();
        const seeded = Array.from({ length: 8 }, (_, index) => ({
          owner: index % 2 === 0 ? 'ada' : 'bob',
          n: index,
          internal: `s${index}`,
        }));
        const before = (await admin.post<Row[]>(`/v1/collections/${name}/rows`, seeded)).body;
        const expected = batchModel(before, before.length, operations);
        const sent = operations.map((operation) => ({ ...operation, collection: name }));
        const response = await ada.post<{ operation?: number }>('/v1/batch', { operations: sent });
        const after = await allRows(admin, name);
        if ('refused' in expected) {
          expect(response.status, response.text).to.equal(expected.status);
          expect(response.body.operation, response.text).to.equal(expected.refused);
          expect(after).to.deep.equal(before);
        } else {
          expect(response.status, response.text).to.equal(200);
          expect(after).to.deep.equal(expected.rows);
        }
      }),
      { numRuns: 60 },
    );
  });

  /**
   * What an upsert of `sent` does as the rules say, row after row on `rows` from the id after `lastId`: a
   * row whose key a stored row holds patches it (a top-level merge), where the caller may read that row
   * (else 404) and may keep it after (else 403); any other is inserted, where `create` holds (else 403).
   * The rows after it, or the statuses of the rows refused, each as if those before it were written.
   */
  function upsertModel(rows: Row[], lastId: number, sent: Sent[]): { rows: Row[]; refused: number[] } {
    let held = rows.map((row) => ({ ...row }));
    let id = lastId;
    const refused: number[] = [];
    for (const row of sent) {
      const stored = held.find((candidate) => candidate.key === row.key);
      if (stored === undefined) {
        if (row.owner === 'ada') held = [...held, { id: ++id, ...row }];
        else refused.push(403);
      } else if (stored.owner !== 'ada') refused.push(404);
      else if (row.owner !== 'ada') refused.push(403);
      else held = held.map((candidate) => (candidate === stored ? { ...stored, ...row } : candidate));
    }
    return { rows: held, refused };
  }

  it('upserts an end user’s random rows as the rules say: all written where each is granted, else nothing, 404 or 403 as refused', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(sentRow, { minLength: 1, maxLength: 3 }), async (sent) => {
        const name = await fresh();
        expect((await admin.post(`/v1/collections/${name}/indexes`, { fields: ['key'], unique: true })).status).to.equal(201);
        const seeded = [
          { key: 'k1', owner: 'ada', n: 1, internal: 's1' },
          { key: 'k2', owner: 'bob', n: 2, internal: 's2' },
          { key: 'k3', owner: 'ada', n: 3, internal: 's3' },
        ];
        const before = (await admin.post<Row[]>(`/v1/collections/${name}/rows`, seeded)).body;
        const expected = upsertModel(before, before.length, sent);
        const response = await ada.post<Row[]>(`/v1/collections/${name}/rows?on_conflict=key`, sent);
        const after = await allRows(admin, name);
        if (expected.refused.length > 0) {
          expect(response.status, response.text).to.be.oneOf(expected.refused);
          expect(after).to.deep.equal(before);
        } else {
          expect(response.status, response.text).to.equal(200);
          expect(after).to.deep.equal(expected.rows);
          for (const row of response.body) expect(row).not.to.have.property('internal');
        }
      }),
      { numRuns: 60 },
    );
  });
});

/** `row` without its members that are undefined, as JSON would carry it. */
function withoutUndefined(row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(row).filter(([, value]) => value !== undefined));
}

/** Every row of the collection `name` as the secret key `admin` reads it, fields and all. */
async function allRows(admin: Client, name: string): Promise<Row[]> {
  return (await admin.get<Row[]>(`/v1/collections/${name}/rows?limit=1000`)).body;
}
