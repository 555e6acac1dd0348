// Collections' rules (openapi.yaml, the `rules` tag; docs/access.md, "Rules"): set, read, removed and
// checked by admin keys, every refusal a 400 naming its place; test/http/rules-enforced.test.ts holds requests to them.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';
import { watchHealth } from '../support/watchdog.ts';

type Problem = { code: string; errors?: { in: string; name: string; message: string }[] };
type Check = { allowed: boolean; reason: string; hidden?: string[] };

const mine = { owner: { $auth: 'sub' } };
const rules = { read: mine, create: mine, update: mine, delete: 'authenticated', fields: { email: { read: mine, write: false } } };
const full = { ...rules };

describeEachBackend('rules', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;
  async function collection(): Promise<string> {
    const name = `r${++collections}`;
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    return name;
  }

  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
  });
  after(() => server.stop());
  watchHealth(() => server);

  describe('PUT, GET and DELETE …/rules', () => {
    it('sets rules, answers them with every member, replaces and removes them', async () => {
      const name = await collection();
      expect((await client.get<Problem>(`/v1/collections/${name}/rules`)).status).to.equal(404);
      const put = await client.put(`/v1/collections/${name}/rules`, rules);
      expect(put.status).to.equal(200);
      expect(put.body).to.deep.equal(full);
      expect((await client.get(`/v1/collections/${name}/rules`)).body).to.deep.equal(full);
      const replaced = await client.put(`/v1/collections/${name}/rules`, { read: true });
      expect(replaced.body).to.deep.equal({ read: true, create: false, update: false, delete: false, fields: {} });
      expect((await client.delete(`/v1/collections/${name}/rules`)).status).to.equal(204);
      expect((await client.get(`/v1/collections/${name}/rules`)).status).to.equal(404);
      expect((await client.delete(`/v1/collections/${name}/rules`)).status).to.equal(404);
    });

    it('answers 404 for a collection that does not exist, and forgets the rules of one deleted', async () => {
      expect((await client.put('/v1/collections/none/rules', rules)).status).to.equal(404);
      expect((await client.get('/v1/collections/none/rules')).status).to.equal(404);
      const name = await collection();
      await client.put(`/v1/collections/${name}/rules`, rules);
      expect((await client.delete(`/v1/collections/${name}`)).status).to.equal(204);
      expect((await client.post('/v1/collections', { name })).status).to.equal(201);
      expect((await client.get(`/v1/collections/${name}/rules`)).status).to.equal(404);
    });

    it('refuses each wrong place with a 400 naming it', async () => {
      const name = await collection();
      const cases: [object, string][] = [
        [{ read: { owner: { $auth: '' } } }, '/read/owner/$auth'],
        [{ read: { $auth: 'sub' } }, '/read/$auth'],
        [{ read: { owner: { $near: 1 } } }, '/read/owner/$near'],
        [{ fields: { email: { read: 'someone' } } }, '/fields/email/read'],
        [{ fields: { id: { read: false } } }, '/fields/id'],
        [{ read: { s: 'x'.repeat(17 * 1024) } }, ''],
      ];
      for (const [body, place] of cases) {
        const put = await client.put<Problem>(`/v1/collections/${name}/rules`, body);
        expect(put.status, place).to.equal(400);
        expect(put.body.code).to.equal('validation_failed');
        expect(put.body.errors?.map((error) => error.name)).to.include(place);
      }
      const unknown = await client.put<Problem>(`/v1/collections/${name}/rules`, { reed: true });
      expect(unknown.status).to.equal(400);
      expect(JSON.stringify(unknown.body.errors)).to.contain('reed');
      expect((await client.get(`/v1/collections/${name}/rules`)).status).to.equal(404);
    });

    it('deletes once for one Idempotency-Key, replaying the first answer (a PUT is idempotent by itself)', async () => {
      const name = await collection();
      expect((await client.put(`/v1/collections/${name}/rules`, rules)).status).to.equal(200);
      const send = () => client.delete(`/v1/collections/${name}/rules`, { headers: { 'idempotency-key': `rules-${name}` } });
      expect((await send()).status).to.equal(204);
      const again = await send();
      expect(again.status).to.equal(204);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
    });

    it('is admin work: 403 to a write key and a publishable key; 404 to a key limited to other collections', async () => {
      const account = `rules-${backend}-limits`;
      const admin = await server.client(account);
      expect((await admin.post('/v1/collections', { name: 'notes' })).status).to.equal(201);
      const writer = await server.client(account, TEST_PLAN, { scope: 'write' });
      const limited = await server.client(account, TEST_PLAN, { collections: ['other'] });
      const { key } = (await admin.post<{ key: string }>('/v1/keys', { kind: 'publishable', origins: ['https://app.example'] })).body;
      const publishable = new Client(server.url, key);
      for (const [caller, status] of [
        [writer, 403],
        [publishable, 403],
        [limited, 404],
      ] as const) {
        const statuses = [
          (await caller.get('/v1/collections/notes/rules')).status,
          (await caller.put('/v1/collections/notes/rules', rules)).status,
          (await caller.delete('/v1/collections/notes/rules')).status,
          (await caller.post('/v1/collections/notes/rules/check', { operation: 'read', claims: null, row: {} })).status,
        ];
        expect(statuses).to.deep.equal([status, status, status, status]);
      }
    });
  });

  describe('POST …/rules/check', () => {
    it("answers for two users whose rows interleave: each only their own, the other's email hidden", async () => {
      const name = await collection();
      await client.put(`/v1/collections/${name}/rules`, { ...rules, read: { $or: [mine, { shared: true }] } });
      const rows = [1, 2, 3, 4].map((id) => ({ id, owner: id % 2 ? 'ann' : 'bob', shared: id === 4, email: `${id}@x` }));
      const check = async (body: object) => (await client.post<Check>(`/v1/collections/${name}/rules/check`, body)).body;
      for (const [sub, own] of [
        ['ann', [1, 3]],
        ['bob', [2, 4]],
      ] as const) {
        const read = await Promise.all(rows.map((row) => check({ operation: 'read', claims: { sub }, row })));
        expect(read.map(({ allowed }, index) => allowed && rows[index].id)).to.deep.equal(
          rows.map(({ id }) => ((own as readonly number[]).includes(id) || id === 4) && id),
        );
        const hidden = read.filter(({ allowed }) => allowed).map((answer) => answer.hidden);
        expect(hidden).to.deep.include([]);
        const deletes = await Promise.all(rows.map((row) => check({ operation: 'update', claims: { sub }, row, change: { text: 'x' } })));
        expect(deletes.filter(({ allowed }) => allowed).length).to.equal(2);
      }
      expect(await check({ operation: 'read', claims: { sub: 'ann' }, row: rows[3] })).to.deep.equal({
        allowed: true,
        reason: `read: the row matches ${JSON.stringify({ $or: [mine, { shared: true }] })} for these claims`,
        hidden: ['email'],
      });
      expect(await check({ operation: 'delete', claims: null, row: rows[0] })).to.deep.equal({
        allowed: false,
        reason: 'delete: denied to anonymous callers',
      });
      expect(await check({ operation: 'read', claims: { sub: { $ne: null } }, row: rows[0] })).to.include({ allowed: false });
      expect(await check({ operation: 'create', claims: { sub: 'ann' }, row: { owner: 'ann', email: 'e' } })).to.deep.equal({
        allowed: false,
        reason: 'fields.email.write: false denies every caller',
      });
    });

    it('denies everything on a collection without rules; 400 for a change out of place; 404 with no collection', async () => {
      const name = await collection();
      const check = (body: object) => client.post<Check & Problem>(`/v1/collections/${name}/rules/check`, body);
      expect((await check({ operation: 'read', claims: null, row: {} })).body).to.deep.equal({
        allowed: false,
        reason: 'read: false denies every caller',
      });
      expect((await check({ operation: 'read', claims: null, row: {}, change: {} })).status).to.equal(400);
      expect((await check({ operation: 'update', claims: null, row: {} })).status).to.equal(400);
      expect((await check({ operation: 'rede', claims: null, row: {} })).status).to.equal(400);
      expect((await client.post('/v1/collections/none/rules/check', { operation: 'read', claims: null, row: {} })).status).to.equal(404);
    });
  });
});
