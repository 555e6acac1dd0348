// Rules on every path of the HTTP API (docs/access.md, "Rules on requests"): two end users whose rows
// interleave each read, count, aggregate and write exactly their own, never a hidden field, whatever
// operation they take; an anonymous caller is refused a rule naming a claim, and a claim that looks like an
// operator reaches nothing.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { appKey, EndUser, tokenOf } from '../support/end-users.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { watchHealth } from '../support/watchdog.ts';

type Problem = { code: string; detail: string; errors?: { in: string; name: string; message: string }[]; operation?: number };
type Row = { id: number; owner?: string; kind?: string; n?: number; internal?: string };

const mine = { owner: { $auth: 'sub' } };
const RULES = { read: mine, create: mine, update: mine, delete: mine, fields: { internal: { read: false, write: false } } };

describeEachBackend('rules on requests', (backend) => {
  let server: TestServer;
  let admin: Client;
  let key: string;
  let ada: EndUser;
  let bob: EndUser;
  let collections = 0;
  /** A collection of `rows` rows, owned by ada and bob in turn, each with an internal field; its name. */
  async function notes(rows = 12): Promise<string> {
    const name = `notes${++collections}`;
    expect((await admin.post('/v1/collections', { name })).status).to.equal(201);
    expect((await admin.put(`/v1/collections/${name}/rules`, RULES)).status).to.equal(200);
    const seeded = Array.from({ length: rows }, (_, index) => ({
      owner: index % 2 === 0 ? 'ada' : 'bob',
      kind: index % 3 === 0 ? 'a' : 'b',
      n: index,
      internal: `secret ${index}`,
    }));
    if (rows > 0) expect((await admin.post(`/v1/collections/${name}/rows`, seeded)).status).to.equal(201);
    return name;
  }
  /** Every row of the collection as the admin sees it. */
  const all = async (name: string) => (await admin.get<Row[]>(`/v1/collections/${name}/rows?limit=1000`)).body;
  const owned = (rows: Row[], owner: string) => rows.filter((row) => row.owner === owner);
  const withoutInternal = (rows: Row[]) => rows.map(({ internal: _, ...row }) => row);

  before(async () => {
    server = await startTestServer({}, { backend });
    admin = await server.client();
    key = await appKey(admin);
    ada = new EndUser(server.url, key, await tokenOf('ada'));
    bob = new EndUser(server.url, key, await tokenOf('bob'));
  });
  after(() => server.stop());
  watchHealth(() => server);

  describe('reads', () => {
    it('lists, counts and pages exactly the caller’s rows, without the hidden field', async () => {
      const name = await notes();
      const rows = await all(name);
      for (const [user, owner] of [
        [ada, 'ada'],
        [bob, 'bob'],
      ] as const) {
        const page = await user.get<Row[]>(`/v1/collections/${name}/rows?count=exact`);
        expect(page.status).to.equal(200);
        expect(page.body).to.deep.equal(withoutInternal(owned(rows, owner)));
        expect(page.headers.get('rowbase-total-count')).to.equal(String(owned(rows, owner).length));
        // Pages of two, each following the last one's cursor.
        const seen: Row[] = [];
        let after: string | null = null;
        do {
          const query: { status: number; body: { rows: Row[]; next: string | null } } = await user.post(`/v1/collections/${name}/query`, {
            limit: 2,
            order: [{ field: 'n', direction: 'desc' }],
            ...(after ? { after } : {}),
          });
          expect(query.status).to.equal(200);
          seen.push(...query.body.rows);
          after = query.body.next;
        } while (after);
        expect(seen).to.deep.equal(withoutInternal(owned(rows, owner)).reverse());
        const versioned = await user.get<{ row: Row }[]>(`/v1/collections/${name}/versioned-rows`);
        expect(versioned.body.map(({ row }) => row)).to.deep.equal(withoutInternal(owned(rows, owner)));
      }
    });

    it('aggregates only the caller’s rows', async () => {
      const name = await notes();
      const rows = owned(await all(name), 'ada');
      const answer = await ada.post<{ groups: { kind: string; count: number; total: number }[] }>(`/v1/collections/${name}/aggregate`, {
        group_by: ['kind'],
        aggregates: { count: { count: {} }, total: { sum: 'n' } },
      });
      expect(answer.status).to.equal(200);
      const expected = ['a', 'b'].map((kind) => {
        const ofKind = rows.filter((row) => row.kind === kind);
        return { kind, count: ofKind.length, total: ofKind.reduce((sum, row) => sum + (row.n as number), 0) };
      });
      expect(answer.body.groups).to.deep.equal(expected.filter((group) => group.count > 0));
      const counted = await ada.get<{ groups: { count: number }[] }>(`/v1/collections/${name}/aggregate`);
      expect(counted.body.groups).to.deep.equal([{ count: rows.length }]);
    });

    it('answers a row of another user 404, before any If-None-Match, and the caller’s own without the hidden field', async () => {
      const name = await notes(4);
      const [first, second] = await all(name);
      const theirs = await bob.get<Problem>(`/v1/collections/${name}/rows/${first.id}`, { headers: { 'if-none-match': '*' } });
      expect(theirs.status).to.equal(404);
      expect(theirs.body.detail).to.equal(`There is no row ${first.id} in collection ${name}.`);
      const own = await bob.get<Row>(`/v1/collections/${name}/rows/${second.id}`);
      expect(own.status).to.equal(200);
      expect(own.body).to.deep.equal(withoutInternal([second])[0]);
      const held = await bob.get(`/v1/collections/${name}/rows/${second.id}`, {
        headers: { 'if-none-match': own.headers.get('etag') as string },
      });
      expect(held.status).to.equal(304);
    });

    it('answers rows read by id at once by several users each by their own token: their own rows, 404 for every other', async () => {
      // No hidden field: the rule alone, tested in the row's statement, keeps a row from who may not read it.
      const name = await notes(12);
      expect((await admin.put(`/v1/collections/${name}/rules`, { ...RULES, fields: {} })).status).to.equal(200);
      const rows = await all(name);
      const carol = new EndUser(server.url, key, await tokenOf('carol'));
      const users = { ada, bob, carol } as const;
      // Every row by every user, all at once and twice over: on SQLite the reads of one rule go out together.
      const reads = Object.entries(users).flatMap(([user, client]) =>
        [...rows, ...rows].map(async (row) => {
          const answer = await client.get<Row>(`/v1/collections/${name}/rows/${row.id}`);
          return { user, id: row.id, status: answer.status, body: answer.status === 200 ? answer.body : undefined };
        }),
      );
      const expected = Object.keys(users).flatMap((user) =>
        [...rows, ...rows].map((row) => {
          const own = row.owner === user;
          return { user, id: row.id, status: own ? 200 : 404, body: own ? row : undefined };
        }),
      );
      expect(await Promise.all(reads)).to.deep.equal(expected);
    });

    it('refuses to filter, order, select, group or aggregate by a hidden field: 403 naming it', async () => {
      const name = await notes(2);
      const refusals = [
        await ada.get<Problem>(`/v1/collections/${name}/rows?filter=${encodeURIComponent('{"internal":"secret 0"}')}`),
        await ada.get<Problem>(`/v1/collections/${name}/rows?filter=${encodeURIComponent('{"$not":{"internal.x":{"$exists":true}}}')}`),
        await ada.get<Problem>(`/v1/collections/${name}/rows?order_by=internal`),
        await ada.get<Problem>(`/v1/collections/${name}/rows?select=n,internal`),
        await ada.post<Problem>(`/v1/collections/${name}/query`, { order: [{ field: 'internal' }] }),
        await ada.post<Problem>(`/v1/collections/${name}/aggregate`, { group_by: ['internal'] }),
        await ada.post<Problem>(`/v1/collections/${name}/aggregate`, { aggregates: { m: { max: 'internal' } } }),
        await ada.get<Problem>(`/v1/collections/${name}/aggregate?group_by=internal`),
        await ada.patch<Problem>(`/v1/collections/${name}/rows?filter=${encodeURIComponent('{"internal":"x"}')}`, { n: 1 }),
        await ada.delete<Problem>(`/v1/collections/${name}/rows?filter=${encodeURIComponent('{"internal":"x"}')}`),
      ];
      for (const refusal of refusals) {
        expect(refusal.status).to.equal(403);
        expect(refusal.body.code).to.equal('forbidden');
        expect(refusal.body.detail).to.include('internal');
      }
    });

    it('answers 403 where the rules grant no one or name a claim an anonymous caller lacks, and nothing to a claim shaped like an operator', async () => {
      const name = await notes(4);
      const anonymous = new EndUser(server.url, key);
      // No token where the rule names a claim: refused, saying so, rather than an empty page that hides it.
      const tokenless = await anonymous.get<Problem>(`/v1/collections/${name}/rows`);
      expect(tokenless.status).to.equal(403);
      expect(tokenless.body.detail).to.equal(
        `The rules of collection ${name} refuse this: read: denied to anonymous callers: it names the claim sub, and the caller has no token.`,
      );
      const sly = new EndUser(server.url, key, await tokenOf({ $ne: null }));
      expect((await sly.get<Row[]>(`/v1/collections/${name}/rows`)).body).to.deep.equal([]);
      expect((await sly.post<{ groups: { count: number }[] }>(`/v1/collections/${name}/aggregate`, {})).body.groups).to.deep.equal([
        { count: 0 },
      ]);
      const closed = `closed${++collections}`;
      await admin.post('/v1/collections', { name: closed });
      const refused = await ada.get<Problem>(`/v1/collections/${closed}/rows`);
      expect(refused.status).to.equal(403);
      expect(refused.body.detail).to.include('read: false');
    });

    it('leaves a secret key as it was: every row, every field', async () => {
      const name = await notes(4);
      const rows = await all(name);
      expect(rows).to.have.length(4);
      expect(rows.every((row) => typeof row.internal === 'string')).to.equal(true);
    });
  });

  describe('writes', () => {
    it('creates only rows the create rule allows, and never sets a field whose write rule denies it', async () => {
      const name = await notes(0);
      const made = await ada.post<Row[]>(`/v1/collections/${name}/rows`, [{ owner: 'ada', n: 1 }]);
      expect(made.status).to.equal(201);
      const forged = await ada.post<Problem>(`/v1/collections/${name}/rows`, [
        { owner: 'ada', n: 2 },
        { owner: 'bob', n: 3 },
      ]);
      expect(forged.status).to.equal(403);
      expect(forged.body.detail).to.include('create');
      const internal = await ada.post<Problem>(`/v1/collections/${name}/rows`, [{ owner: 'ada', internal: 'mine' }]);
      expect(internal.status).to.equal(403);
      expect(internal.body.detail).to.include('fields.internal.write');
      expect((await all(name)).map((row) => row.n)).to.deep.equal([1]);
    });

    it('upserts: the insert branch by the create rule, the update branch on the caller’s rows only, answered masked', async () => {
      const name = await notes(4);
      expect((await admin.post(`/v1/collections/${name}/indexes`, { fields: ['n'], unique: true })).status).to.equal(201);
      const own = await ada.post<Row[]>(`/v1/collections/${name}/rows?on_conflict=n`, [{ owner: 'ada', n: 0, kind: 'z' }]);
      expect(own.status).to.equal(200);
      expect(own.body[0]).to.deep.include({ n: 0, kind: 'z' });
      expect(own.body[0]).not.to.have.property('internal');
      const theirs = await ada.post<Problem>(`/v1/collections/${name}/rows?on_conflict=n`, [{ owner: 'ada', n: 1, kind: 'z' }]);
      expect(theirs.status).to.equal(404);
      const forged = await ada.post<Problem>(`/v1/collections/${name}/rows?on_conflict=n`, [{ owner: 'bob', n: 99 }]);
      expect(forged.status).to.equal(403);
      // Which row an upsert patches would tell the value of a hidden field.
      expect((await admin.post(`/v1/collections/${name}/indexes`, { fields: ['internal'], unique: true })).status).to.equal(201);
      const probed = await ada.post<Problem>(`/v1/collections/${name}/rows?on_conflict=internal`, [{ owner: 'ada', internal: 'secret 0' }]);
      expect(probed.status).to.equal(403);
      expect(probed.body.errors?.[0].name).to.equal('on_conflict');
      const batched = await ada.post<Problem>('/v1/batch', {
        operations: [{ op: 'upsert', collection: name, on_conflict: ['internal'], rows: [{ owner: 'ada', internal: 'secret 0' }] }],
      });
      expect(batched.status).to.equal(403);
      expect(batched.body.operation).to.equal(0);
      expect((await all(name)).find((row) => row.n === 1)?.kind).to.not.equal('z');
    });

    it('patches the caller’s rows in every format, answered masked; another’s is 404, one given away is 403', async () => {
      const name = await notes(4);
      const [first, second] = await all(name);
      const path = `/v1/collections/${name}/rows/${first.id}`;
      const formats = [
        ['application/json', { n: 10 }],
        ['application/merge-patch+json', { n: 11 }],
        ['application/json-patch+json', [{ op: 'replace', path: '/n', value: 12 }]],
      ] as const;
      for (const [type, patch] of formats) {
        const patched = await ada.request<Row>('PATCH', path, { raw: JSON.stringify(patch), headers: { 'content-type': type } });
        expect(patched.status).to.equal(200);
        expect(patched.body).not.to.have.property('internal');
        const refused = await bob.request<Problem>('PATCH', path, { raw: JSON.stringify(patch), headers: { 'content-type': type } });
        expect(refused.status).to.equal(404);
      }
      // If-Match on another's row: the 404 of a row not there, never the 412 that would tell it is.
      const guessed = await bob.patch<Problem>(path, { n: 1 }, { headers: { 'if-match': '"0.0"' } });
      expect(guessed.status).to.equal(404);
      const given = await ada.patch<Problem>(path, { owner: 'bob' });
      expect(given.status).to.equal(403);
      expect(given.body.detail).to.include('after');
      const internal = await ada.patch<Problem>(path, { internal: 'x' });
      expect(internal.status).to.equal(403);
      const tested = await ada.request<Problem>('PATCH', path, {
        raw: JSON.stringify([{ op: 'test', path: '/internal', value: 'secret 0' }]),
        headers: { 'content-type': 'application/json-patch+json' },
      });
      expect(tested.status).to.equal(403);
      expect(tested.body.errors?.[0].name).to.equal('/0/path');
      const copied = await ada.request<Problem>('PATCH', path, {
        raw: JSON.stringify([{ op: 'copy', from: '/internal', path: '/n' }]),
        headers: { 'content-type': 'application/json-patch+json' },
      });
      expect(copied.status).to.equal(403);
      const rows = await all(name);
      expect(rows[0]).to.deep.include({ owner: 'ada', n: 12, internal: 'secret 0' });
      expect(rows[1]).to.deep.equal(second);
    });

    it('changes and deletes by filter only the caller’s rows: the rule ANDed into the filter', async () => {
      const name = await notes(8);
      const before = await all(name);
      const changed = await ada.patch<{ count: number; rows: Row[] }>(
        `/v1/collections/${name}/rows?filter=${encodeURIComponent('{"n":{"$gte":0}}')}&return=rows`,
        { kind: 'c' },
      );
      expect(changed.status).to.equal(200);
      expect(changed.body.count).to.equal(4);
      expect(changed.body.rows.every((row) => row.owner === 'ada' && row.kind === 'c' && !('internal' in row))).to.equal(true);
      const deleted = await bob.delete<{ count: number }>(`/v1/collections/${name}/rows?filter=${encodeURIComponent('{"kind":"c"}')}`);
      expect(deleted.body.count).to.equal(0);
      const gone = await bob.delete<{ count: number }>(`/v1/collections/${name}/rows?filter=${encodeURIComponent('{"n":{"$gte":0}}')}`);
      expect(gone.body.count).to.equal(4);
      const after = await all(name);
      expect(after).to.deep.equal(owned(before, 'ada').map((row) => ({ ...row, kind: 'c' })));
    });

    it('deletes the caller’s row; another’s is 404 and stays', async () => {
      const name = await notes(2);
      const [first, second] = await all(name);
      expect((await bob.delete(`/v1/collections/${name}/rows/${first.id}`)).status).to.equal(404);
      expect((await bob.delete(`/v1/collections/${name}/rows/${first.id}`, { headers: { 'if-match': '"0.0"' } })).status).to.equal(404);
      expect((await bob.delete(`/v1/collections/${name}/rows/${second.id}`)).status).to.equal(204);
      expect((await all(name)).map((row) => row.id)).to.deep.equal([first.id]);
    });

    it('holds each operation of a batch to the rules, the first refused rolling the whole batch back', async () => {
      const name = await notes(4);
      const [first, second] = await all(name);
      const ok = await ada.post<{ results: { status: number; body?: Row }[] }>('/v1/batch', {
        operations: [
          { op: 'insert', collection: name, rows: [{ owner: 'ada', n: 100 }] },
          { op: 'update', collection: name, id: first.id, patch: { n: 101 } },
        ],
      });
      expect(ok.status).to.equal(200);
      expect(ok.body.results[1].body).to.deep.equal({ id: first.id, owner: 'ada', kind: first.kind, n: 101 });
      for (const operation of [
        { op: 'update', collection: name, id: second.id, patch: { n: 0 } },
        { op: 'delete', collection: name, id: second.id },
        { op: 'insert', collection: name, rows: [{ owner: 'bob' }] },
        {
          op: 'update',
          collection: name,
          id: first.id,
          patch: [{ op: 'test', path: '/internal', value: 'x' }],
          patch_format: 'json-patch',
        },
      ]) {
        const before = await all(name);
        const refused = await ada.post<Problem>('/v1/batch', {
          operations: [{ op: 'insert', collection: name, rows: [{ owner: 'ada', n: 200 }] }, operation],
        });
        expect(refused.status).to.be.oneOf([403, 404]);
        expect(refused.body.operation).to.equal(1);
        expect(await all(name)).to.deep.equal(before);
      }
    });

    it('replays an Idempotency-Key’s answer only to the user who sent it', async () => {
      const name = await notes(2);
      const [first] = await all(name);
      const path = `/v1/collections/${name}/rows/${first.id}`;
      const headers = { 'idempotency-key': `k-${name}` };
      expect((await ada.patch(path, { n: 7 }, { headers })).status).to.equal(200);
      const again = await ada.patch(path, { n: 7 }, { headers });
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      const other = await bob.patch<Problem>(path, { n: 7 }, { headers });
      expect(other.status).to.equal(422);
      expect(other.headers.get('idempotent-replayed')).to.equal(null);
    });
  });

  describe('rules and issuers changed', () => {
    it('takes changed and removed rules at once on this instance', async () => {
      const name = await notes(2);
      expect((await ada.get<Row[]>(`/v1/collections/${name}/rows`)).body).to.have.length(1);
      await admin.put(`/v1/collections/${name}/rules`, { ...RULES, read: true });
      expect((await ada.get<Row[]>(`/v1/collections/${name}/rows`)).body).to.have.length(2);
      await admin.delete(`/v1/collections/${name}/rules`);
      expect((await ada.get<Problem>(`/v1/collections/${name}/rows`)).status).to.equal(403);
    });

    it('takes changed rules at once on the grant a token’s requests share, for reads, writes and hidden fields', async () => {
      // The grant of a token is kept while the rules stay (src/handlers/grants.ts): each change below
      // follows requests that made it and used it, and the very next request must see the new rules.
      const name = await notes(4);
      const [first, second] = await all(name);
      const path = `/v1/collections/${name}/rows`;
      const anonymous = new EndUser(server.url, key);
      const adas = owned(await all(name), 'ada').map((row) => row.id);
      for (let round = 0; round < 3; round++) {
        expect((await ada.get<Row[]>(path)).body.map((row) => row.id)).to.deep.equal(adas);
        expect((await ada.get(`${path}/${first.id}`)).status).to.equal(200);
        expect((await ada.get(`${path}/${second.id}`)).status).to.equal(404);
        expect((await anonymous.get(path)).status).to.equal(403);
      }
      // Reads narrowed: nothing the old grant granted is read, written or deleted.
      await admin.put(`/v1/collections/${name}/rules`, { ...RULES, read: { owner: 'nobody' } });
      expect((await ada.get<Row[]>(path)).body).to.deep.equal([]);
      expect((await ada.get(`${path}/${first.id}`)).status).to.equal(404);
      expect((await ada.patch(`${path}/${first.id}`, { n: 50 })).status).to.equal(404);
      expect((await ada.delete(`${path}/${first.id}`)).status).to.equal(404);
      const counted = await ada.post<{ groups: { count: number }[] }>(`/v1/collections/${name}/aggregate`, {});
      expect(counted.body.groups).to.deep.equal([{ count: 0 }]);
      // A field hidden no more, then another hidden: the masks of the new rules at once.
      await admin.put(`/v1/collections/${name}/rules`, { ...RULES, fields: { kind: { read: false } } });
      const shown = await ada.get<Row>(`${path}/${first.id}`);
      expect(shown.body).to.deep.equal({ id: first.id, owner: 'ada', n: first.n, internal: first.internal });
      expect((await ada.get<Row[]>(path)).body.every((row) => typeof row.internal === 'string' && !('kind' in row))).to.equal(true);
      expect((await ada.patch(`${path}/${first.id}`, { internal: 'set' })).status).to.equal(200);
      // Writes closed, and an anonymous caller let in: the grants of both changed.
      await admin.put(`/v1/collections/${name}/rules`, { ...RULES, read: true, update: false });
      expect((await ada.patch(`${path}/${first.id}`, { n: 51 })).status).to.equal(403);
      expect((await anonymous.get<Row[]>(path)).body).to.have.length(4);
      expect((await all(name)).find((row) => row.id === first.id)).to.deep.include({ n: first.n, internal: 'set' });
    });

    describe('on another instance of the database', () => {
      let other: TestServer;
      before(async () => {
        other = await startTestServer({}, { backend, database: { url: server.databaseUrl, drop: async () => {} } });
      });
      after(() => other.stop());

      /** The status `request` answers within a second of `change`, asked again until it is `status`. */
      async function within(request: () => Promise<{ status: number }>, status: number): Promise<number> {
        const deadline = Date.now() + 1000;
        let answer = await request();
        while (answer.status !== status && Date.now() < deadline) answer = await request();
        return answer.status;
      }

      it('sees changed rules within a second, while requests are under way', async () => {
        const name = await notes(2);
        const there = new EndUser(other.url, key, ada.token);
        const [first] = await all(name);
        const path = `/v1/collections/${name}/rows/${first.id}`;
        expect((await there.get(path)).status).to.equal(200);
        await admin.put(`/v1/collections/${name}/rules`, { ...RULES, read: { owner: 'nobody' } });
        expect(await within(() => there.get(path), 404)).to.equal(404);
        await admin.put(`/v1/collections/${name}/rules`, RULES);
        expect(await within(() => there.get(path), 200)).to.equal(200);
      });

      it('takes changed rules within a second on the grants it keeps there, pages and rows alike', async () => {
        const name = await notes(4);
        const there = new EndUser(other.url, key, ada.token);
        const path = `/v1/collections/${name}/rows`;
        const rows = await all(name);
        const [adas, bobs] = ['ada', 'bob'].map((owner) => owned(rows, owner).map((row) => row.id));
        const ids = async () => (await there.get<Row[]>(`${path}?order_by=n`)).body.map((row) => row.id);
        for (let round = 0; round < 3; round++) expect(await ids()).to.deep.equal(adas);
        // Ada's token now reads bob's rows, and none of its own.
        await admin.put(`/v1/collections/${name}/rules`, { ...RULES, read: { owner: 'bob' } });
        const deadline = Date.now() + 1000;
        let seen = await ids();
        while (JSON.stringify(seen) !== JSON.stringify(bobs) && Date.now() < deadline) seen = await ids();
        expect(seen).to.deep.equal(bobs);
        expect((await there.get(`${path}/${adas[0]}`)).status).to.equal(404);
        expect((await there.patch(`${path}/${adas[0]}`, { n: 1 })).status).to.equal(404);
      });

      it('refuses the tokens of a deleted issuer within a second', async () => {
        const name = await notes(2);
        const there = new EndUser(other.url, key, await tokenOf('ada'));
        const path = `/v1/collections/${name}/rows`;
        expect((await there.get(path)).status).to.equal(200);
        expect((await admin.delete('/v1/auth/issuers/app')).status).to.equal(204);
        try {
          expect(await within(() => there.get(path), 401)).to.equal(401);
        } finally {
          await appKey(admin);
        }
      });
    });
  });
});
