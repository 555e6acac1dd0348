// Fields the token fills (docs/access.md, "Fields the token fills"): a field whose rules name a default,
// `{"$auth": "sub"}`, takes the caller's claim in every row it inserts or upserts without it, alone, in
// batches and in upserts, so that an owner field is the server's to set and `write: false` cannot be
// forged; a secret key writes rows as sent; a default that is none is a 400 naming its place. And what a
// caller whose token is missing (403) or wrong (401) gets: never an empty page.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { appKey, EndUser, tokenOf } from '../support/end-users.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Problem = { code: string; detail: string; errors?: { in: string; name: string; message: string }[]; operation?: number };
type Row = { id: number; owner?: unknown; text?: string; slug?: string; org?: unknown };

const mine = { owner: { $auth: 'sub' } };
/** A notes app: each user reads and writes their own rows, the owner set by the server. */
const RULES = { read: mine, create: mine, update: mine, delete: mine, fields: { owner: { default: { $auth: 'sub' }, write: false } } };

describeEachBackend('fields the token fills', (backend) => {
  let server: TestServer;
  let admin: Client;
  let key: string;
  let ada: EndUser;
  let bob: EndUser;
  let collections = 0;
  /** A new collection with `rules` (RULES unless told), and a unique index on slug; its name. */
  async function notes(rules: object = RULES): Promise<string> {
    const name = `notes${++collections}`;
    expect((await admin.post('/v1/collections', { name })).status).to.equal(201);
    expect((await admin.put(`/v1/collections/${name}/rules`, rules)).status).to.equal(200);
    expect((await admin.post(`/v1/collections/${name}/indexes`, { fields: ['slug'], unique: true })).status).to.equal(201);
    return name;
  }
  const all = async (name: string) => (await admin.get<Row[]>(`/v1/collections/${name}/rows?limit=1000`)).body;

  before(async () => {
    server = await startTestServer({}, { backend });
    admin = await server.client();
    key = await appKey(admin);
    ada = new EndUser(server.url, key, await tokenOf('ada', { claims: { app_metadata: { org: 'acme' } } }));
    bob = new EndUser(server.url, key, await tokenOf('bob'));
  });
  after(() => server.stop());

  it('sets the owner of a row inserted without one: create holds for the row as stored, answered with it', async () => {
    const name = await notes();

    const made = await ada.post<Row[]>(`/v1/collections/${name}/rows`, [{ text: 'one' }, { text: 'two' }]);

    expect(made.status, made.text).to.equal(201);
    expect(made.body.map(({ owner, text }) => ({ owner, text }))).to.deep.equal([
      { owner: 'ada', text: 'one' },
      { owner: 'ada', text: 'two' },
    ]);
    expect((await all(name)).map(({ owner, text }) => ({ owner, text }))).to.deep.equal([
      { owner: 'ada', text: 'one' },
      { owner: 'ada', text: 'two' },
    ]);
    expect((await ada.get<Row[]>(`/v1/collections/${name}/rows`)).body).to.have.length(2);
    expect((await bob.get<Row[]>(`/v1/collections/${name}/rows`)).body).to.deep.equal([]);
  });

  it('refuses a row that sends another owner while write is false, 403 naming the rule, and takes one that sends the token’s own', async () => {
    const name = await notes();
    const open = await notes({ ...RULES, create: 'authenticated' });

    const forged = await ada.post<Problem>(`/v1/collections/${name}/rows`, [{ text: 'fine' }, { owner: 'bob', text: 'forged' }]);
    const forgedWhereAnyoneCreates = await ada.post<Problem>(`/v1/collections/${open}/rows`, [{ owner: 'bob', text: 'forged' }]);
    const own = await ada.post<Row[]>(`/v1/collections/${name}/rows`, [{ owner: 'ada', text: 'said so' }]);

    // The row's rule comes first (docs/access.md, "Checking rules"), then the field's.
    expect(forged.status).to.equal(403);
    expect(forged.body.detail).to.equal(
      `The rules of collection ${name} refuse this: create: the row does not match ${JSON.stringify(mine)} for these claims.`,
    );
    expect(forgedWhereAnyoneCreates.status).to.equal(403);
    expect(forgedWhereAnyoneCreates.body.detail).to.equal(
      `The rules of collection ${open} refuse this: fields.owner.write: false denies every caller.`,
    );
    expect(await all(open)).to.deep.equal([]);
    expect(own.status).to.equal(201);
    expect((await all(name)).map((row) => row.text)).to.deep.equal(['said so']);
    const patched = await ada.patch<Problem>(`/v1/collections/${name}/rows/${own.body[0].id}`, { owner: 'bob' });
    expect(patched.status).to.equal(403);
    expect(patched.body.detail).to.include('update: the row after the change does not match');
  });

  it('fills upserted rows: a new one is the caller’s, the caller’s own is patched with its owner as it was', async () => {
    const name = await notes();

    const first = await ada.post<Row[]>(`/v1/collections/${name}/rows?on_conflict=slug`, [{ slug: 'a', text: 'first' }]);
    const again = await ada.post<Row[]>(`/v1/collections/${name}/rows?on_conflict=slug`, [{ slug: 'a', text: 'again' }]);
    const theirs = await bob.post<Problem>(`/v1/collections/${name}/rows?on_conflict=slug`, [{ slug: 'a', text: 'taken' }]);

    expect(first.status, first.text).to.equal(200);
    expect(first.body[0]).to.deep.include({ slug: 'a', owner: 'ada', text: 'first' });
    expect(again.status, again.text).to.equal(200);
    expect(again.body[0]).to.deep.include({ id: first.body[0].id, owner: 'ada', text: 'again' });
    // bob's upsert matches ada's row, which he may not read.
    expect(theirs.status).to.equal(404);
    expect(await all(name)).to.deep.equal([{ id: first.body[0].id, slug: 'a', owner: 'ada', text: 'again' }]);
  });

  it('fills the rows of a batch’s inserts and upserts, and rolls a batch back whole for a forged owner', async () => {
    const name = await notes();

    const batch = await ada.post<{ results: { status: number; body: Row[] }[] }>('/v1/batch', {
      operations: [
        { op: 'insert', collection: name, rows: [{ text: 'inserted' }] },
        { op: 'upsert', collection: name, on_conflict: ['slug'], rows: [{ slug: 'u', text: 'upserted' }] },
      ],
    });
    const forged = await ada.post<Problem>('/v1/batch', {
      operations: [
        { op: 'insert', collection: name, rows: [{ text: 'lost' }] },
        { op: 'insert', collection: name, rows: [{ owner: 'bob', text: 'forged' }] },
      ],
    });

    expect(batch.status, batch.text).to.equal(200);
    expect(batch.body.results.map(({ body }) => body[0].owner)).to.deep.equal(['ada', 'ada']);
    expect(forged.status).to.equal(403);
    expect(forged.body.operation).to.equal(1);
    expect(forged.body.detail).to.include('create: the row does not match');
    expect((await all(name)).map(({ owner, text }) => ({ owner, text }))).to.deep.equal([
      { owner: 'ada', text: 'inserted' },
      { owner: 'ada', text: 'upserted' },
    ]);
  });

  it('fills a field from a dotted path into the claims', async () => {
    const name = await notes({ read: true, create: true, fields: { org: { default: { $auth: 'app_metadata.org' } } } });

    const made = await ada.post<Row[]>(`/v1/collections/${name}/rows`, [{ text: 'x' }]);

    expect(made.status, made.text).to.equal(201);
    expect(made.body[0].org).to.equal('acme');
  });

  it('refuses a row the token cannot fill, 403 naming fields.<name>.default: no such claim, or no token', async () => {
    const name = await notes({ read: true, create: true, fields: { org: { default: { $auth: 'app_metadata.org' } } } });
    const anonymous = new EndUser(server.url, key);

    const lacking = await bob.post<Problem>(`/v1/collections/${name}/rows`, [{ text: 'x' }]);
    const tokenless = await anonymous.post<Problem>(`/v1/collections/${name}/rows`, [{ text: 'x' }]);
    const given = await anonymous.post<Row[]>(`/v1/collections/${name}/rows`, [{ text: 'x', org: 'mine' }]);

    expect(lacking.status).to.equal(403);
    expect(lacking.body.detail).to.equal(
      `The rules of collection ${name} refuse this: fields.org.default: the token has no claim app_metadata.org, so the field cannot be filled.`,
    );
    expect(tokenless.status).to.equal(403);
    expect(tokenless.body.detail).to.include('fields.org.default: names the claim app_metadata.org, and the caller has no token');
    // No write rule of its own: a value sent is the caller's to choose.
    expect(given.status).to.equal(201);
    expect((await all(name)).map((row) => row.org)).to.deep.equal(['mine']);
  });

  it('fills a field the schema requires, which the caller’s contract then does not require in a row to insert', async () => {
    const name = `typed${++collections}`;
    const schema = { type: 'object', required: ['owner', 'text'], properties: { owner: { type: 'string' }, text: { type: 'string' } } };
    expect((await admin.post('/v1/collections', { name, schema })).status).to.equal(201);
    const rules = { read: mine, create: mine, fields: { owner: { default: { $auth: 'sub' } } } };
    expect((await admin.put(`/v1/collections/${name}/rules`, rules)).status).to.equal(200);

    const document = await ada.get<{ components: { schemas: Record<string, { required?: string[] }> } }>('/v1/openapi.json');
    const made = await ada.post<Row[]>(`/v1/collections/${name}/rows`, [{ text: 'x' }]);

    expect(document.status).to.equal(200);
    const insert = Object.entries(document.body.components.schemas).find(([type]) => type.toLowerCase() === `${name}insert`);
    expect(insert?.[1].required).to.deep.equal(['text']);
    expect(made.status, made.text).to.equal(201);
    expect(made.body[0]).to.deep.include({ owner: 'ada', text: 'x' });
  });

  it('leaves a secret key’s rows as sent', async () => {
    const name = await notes();

    const made = await admin.post<Row[]>(`/v1/collections/${name}/rows`, [{ text: 'no owner' }, { owner: 'bob', text: 'bob’s' }]);

    expect(made.status).to.equal(201);
    expect((await all(name)).map(({ owner, text }) => ({ owner, text }))).to.deep.equal([
      { owner: undefined, text: 'no owner' },
      { owner: 'bob', text: 'bob’s' },
    ]);
  });

  it('answers GET of the rules with the default as set, and checks a create with it filled', async () => {
    const name = await notes();

    const rules = await admin.get<typeof RULES>(`/v1/collections/${name}/rules`);
    const check = (claims: object | null, row: object) =>
      admin.post<{ allowed: boolean; reason: string }>(`/v1/collections/${name}/rules/check`, { operation: 'create', claims, row });

    expect(rules.body.fields).to.deep.equal(RULES.fields);
    expect((await check({ sub: 'ada' }, { text: 'x' })).body).to.deep.equal({
      allowed: true,
      reason: `create: the row matches ${JSON.stringify(mine)} for these claims`,
    });
    expect((await check({ sub: 'ada' }, { text: 'x', owner: 'ada' })).body.allowed).to.equal(true);
    expect((await check({ sub: 'ada' }, { text: 'x', owner: 'bob' })).body).to.deep.equal({
      allowed: false,
      reason: `create: the row does not match ${JSON.stringify(mine)} for these claims`,
    });
    expect((await check(null, { text: 'x' })).body).to.deep.equal({
      allowed: false,
      reason: 'fields.owner.default: names the claim sub, and the caller has no token, so the field cannot be filled',
    });
  });

  describe('a default that is none', () => {
    const refusals = [
      { default: 'sub', at: '/fields/owner/default' },
      { default: { $auth: '' }, at: '/fields/owner/default/$auth' },
      { default: { $auth: 'a..b' }, at: '/fields/owner/default/$auth' },
      { default: { $auth: 'sub', also: 1 }, at: '/fields/owner/default/also' },
      { default: { sub: true }, at: '/fields/owner/default/$auth' },
      { default: { $auth: 'sub' }, on: 'id', at: '/fields/id' },
    ];
    for (const { default: value, on = 'owner', at } of refusals as { default: unknown; on?: string; at: string }[]) {
      it(`refuses ${JSON.stringify(value)} of field ${on}: 400 naming ${at}`, async () => {
        const name = await notes();
        const put = await admin.put<Problem>(`/v1/collections/${name}/rules`, { create: true, fields: { [on]: { default: value } } });
        expect(put.status).to.equal(400);
        expect(put.body.code).to.equal('validation_failed');
        expect(put.body.errors?.map((error) => error.name)).to.include(at);
        expect((await admin.get<typeof RULES>(`/v1/collections/${name}/rules`)).body).to.deep.equal({ ...RULES });
      });
    }
  });

  describe('a token that is missing or wrong', () => {
    it('answers a missing token 403 naming the rule and the claim it needs, never an empty page', async () => {
      const name = await notes();
      const anonymous = new EndUser(server.url, key);

      const page = await anonymous.get<Problem>(`/v1/collections/${name}/rows`);
      const insert = await anonymous.post<Problem>(`/v1/collections/${name}/rows`, [{ owner: 'ada', text: 'x' }]);

      expect(page.status).to.equal(403);
      expect(page.body.detail).to.equal(
        `The rules of collection ${name} refuse this: read: denied to anonymous callers: it names the claim sub, and the caller has no token.`,
      );
      expect(insert.status).to.equal(403);
      expect(insert.body.detail).to.include('create: denied to anonymous callers: it names the claim sub');
    });

    it('answers a wrong token 401 invalid_token, saying why, never an empty page', async () => {
      const name = await notes();
      const wrong = [
        { token: 'not-a-jwt', why: 'The token is no JWT.' },
        { token: await tokenOf('ada', { audience: 'elsewhere' }), why: 'The token is for another audience.' },
        { token: await tokenOf('ada', { seconds: -3600 }), why: 'The token has expired.' },
      ];
      for (const { token, why } of wrong) {
        const page = await new EndUser(server.url, key, token).get<Problem>(`/v1/collections/${name}/rows`);
        expect(page.status, token).to.equal(401);
        expect(page.body.code).to.equal('invalid_token');
        expect(page.body.detail).to.equal(why);
        expect(page.headers.get('www-authenticate')).to.include('error="invalid_token"');
      }
    });
  });
});
