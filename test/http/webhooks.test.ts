// Managing webhooks over HTTP (openapi.yaml, the `webhooks` tag). Every webhook made here points at a
// port of this machine, and where the address rule is on, none is made but those it refuses: nothing
// is ever delivered anywhere but 127.0.0.1.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client, Response } from '../support/client.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

const URL_HERE = 'http://127.0.0.1:9/hook';
let limitedAccounts = 0;

interface Webhook {
  id: number;
  url: string;
  collections: string[] | null;
  events: string[];
  filter: unknown;
  description: string | null;
  enabled: boolean;
  disabled_reason: string | null;
  secret?: string;
  state: { pending: number; failing_since: string | null; dropped: number };
}

/** What `caller` is answered for each operation on the webhook at `path`: read, HEAD, change, rotate, its log, delete. */
const statusesOf = async (caller: Client, path: string) => [
  (await caller.get(path)).status,
  (await caller.request('HEAD', path)).status,
  (await caller.patch(path, { enabled: false })).status,
  (await caller.post(`${path}/rotate-secret`)).status,
  (await caller.get(`${path}/deliveries`)).status,
  (await caller.delete(path)).status,
];

describeEachBackend('managing webhooks', (backend) => {
  let server: TestServer;
  let client: Client;
  before(async () => {
    server = await startTestServer({ webhooksAllowPrivate: true, maxWebhooksPerAccount: 3 }, { backend });
  });
  after(() => server.stop());
  beforeEach(async () => {
    client = await server.client();
  });

  it('makes a webhook of every collection and kind by default, showing its secret only then', async () => {
    const made = await client.post<Webhook>('/v1/webhooks', { url: URL_HERE });
    expect(made.status).to.equal(201);
    expect(made.body).to.deep.include({
      url: URL_HERE,
      collections: null,
      events: ['insert', 'update', 'delete'],
      filter: null,
      description: null,
      enabled: true,
      disabled_reason: null,
    });
    expect(made.body.secret).to.match(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(made.body.state).to.deep.equal({ pending: 0, failing_since: null, dropped: 0 });
    const { secret: _, ...shown } = made.body;
    const listed = await client.get<Webhook[]>('/v1/webhooks');
    expect(listed.body).to.deep.equal([shown]);
    const one = await client.get<Webhook>(`/v1/webhooks/${made.body.id}`);
    expect(one.body).to.deep.equal(shown);
    expect(one.text).not.to.include(made.body.secret as string);
  });

  it('changes its settings, rotates its secret and deletes it', async () => {
    const { body: made } = await client.post<Webhook>('/v1/webhooks', { url: URL_HERE, events: ['delete', 'insert'] });
    expect(made.events).to.deep.equal(['insert', 'delete']);
    const changed = await client.patch<Webhook>(`/v1/webhooks/${made.id}`, {
      collections: ['notes'],
      filter: { n: { $gt: 1 } },
      description: 'notes',
      enabled: false,
    });
    expect(changed.status).to.equal(200);
    expect(changed.body).to.deep.include({
      collections: ['notes'],
      events: ['insert', 'delete'],
      filter: { n: { $gt: 1 } },
      description: 'notes',
      enabled: false,
      disabled_reason: 'disabled by its account',
    });
    const rotated = await client.post<{ secret: string }>(`/v1/webhooks/${made.id}/rotate-secret`);
    expect(rotated.status).to.equal(200);
    expect(rotated.body.secret)
      .to.match(/^whsec_/)
      .and.not.equal(made.secret);
    expect((await client.delete(`/v1/webhooks/${made.id}`)).status).to.equal(204);
    expect((await client.get(`/v1/webhooks/${made.id}`)).status).to.equal(404);
    expect((await client.delete(`/v1/webhooks/${made.id}`)).status).to.equal(404);
  });

  it('makes, rotates and deletes once for one Idempotency-Key, replaying the first answer', async () => {
    const send = (method: string, path: string, key: string, json?: unknown) =>
      client.request<Webhook>(method, path, { json, headers: { 'idempotency-key': key } });
    const first = await send('POST', '/v1/webhooks', 'make-1', { url: URL_HERE });
    const again = await send('POST', '/v1/webhooks', 'make-1', { url: URL_HERE });
    expect(first.status).to.equal(201);
    expect(again.status).to.equal(201);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.body).to.deep.equal(first.body);
    expect((await client.get<Webhook[]>('/v1/webhooks')).body.map(({ id }) => id)).to.deep.equal([first.body.id]);
    const path = `/v1/webhooks/${first.body.id}`;
    const rotated = await send('POST', `${path}/rotate-secret`, 'rotate-1');
    const rotatedAgain = await send('POST', `${path}/rotate-secret`, 'rotate-1');
    expect(rotatedAgain.body).to.deep.equal(rotated.body);
    expect(rotated.body.secret).not.to.equal(first.body.secret);
    expect((await send('DELETE', path, 'delete-1')).status).to.equal(204);
    const deletedAgain = await send('DELETE', path, 'delete-1');
    expect(deletedAgain.status).to.equal(204);
    expect(deletedAgain.headers.get('idempotent-replayed')).to.equal('true');
  });

  it("answers another account's webhook 404, whatever the operation", async () => {
    const { body: made } = await client.post<Webhook>('/v1/webhooks', { url: URL_HERE });
    const other = await server.client();
    const path = `/v1/webhooks/${made.id}`;
    expect(await statusesOf(other, path)).to.deep.equal([404, 404, 404, 404, 404, 404]);
    expect((await other.get<Webhook[]>('/v1/webhooks')).body).to.deep.equal([]);
    expect((await client.get<Webhook>(path)).body.enabled).to.equal(true);
  });

  // Past the 32 bits of PostgreSQL's webhooks.id, past 2^53 − 1, past a bigint: each an absent webhook, or attempt.
  for (const id of ['0', '2147483648', '9007199254740991', '9007199254740993', '9223372036854775808', '99999999999999999999']) {
    it(`answers a webhook or an attempt of id ${id} 404, whatever the operation`, async () => {
      const { body: made } = await client.post<Webhook>('/v1/webhooks', { url: URL_HERE });
      const path = `/v1/webhooks/${id}`;
      const statuses = [
        ...(await statusesOf(client, path)),
        (await client.post(`${path}/deliveries/1/retry`)).status,
        (await client.post(`/v1/webhooks/${made.id}/deliveries/${id}/retry`)).status,
      ];
      expect(statuses).to.deep.equal([404, 404, 404, 404, 404, 404, 404, 404]);
      expect((await client.delete(`/v1/webhooks/${made.id}`)).status).to.equal(204);
    });
  }

  it('takes the collections of a key limited to them by default, and no other, and shows it only webhooks of those', async () => {
    const account = `limited-${++limitedAccounts}`;
    const every = await server.client(account);
    const limited = await server.client(account, TEST_PLAN, { collections: ['a', 'b'] });
    const made = await limited.post<Webhook>('/v1/webhooks', { url: URL_HERE });
    expect(made.body.collections).to.deep.equal(['a', 'b']);
    expect((await limited.post('/v1/webhooks', { url: URL_HERE, collections: ['c'] })).status).to.equal(403);
    expect((await limited.post('/v1/webhooks', { url: URL_HERE, collections: null })).status).to.equal(403);
    const wider = await every.post<Webhook>('/v1/webhooks', { url: URL_HERE });
    expect((await limited.get<Webhook[]>('/v1/webhooks')).body.map(({ id }) => id)).to.deep.equal([made.body.id]);
    expect((await limited.get(`/v1/webhooks/${wider.body.id}`)).status).to.equal(404);
    expect((await limited.delete(`/v1/webhooks/${wider.body.id}`)).status).to.equal(404);
    expect((await every.get<Webhook[]>('/v1/webhooks')).body.map(({ id }) => id)).to.deep.equal([made.body.id, wider.body.id]);
  });

  it('holds at most ROWBASE_MAX_WEBHOOKS_PER_ACCOUNT webhooks an account: 409 past it', async () => {
    for (let n = 0; n < 3; n++) expect((await client.post('/v1/webhooks', { url: URL_HERE })).status).to.equal(201);
    const refused = await client.post<{ code: string }>('/v1/webhooks', { url: URL_HERE });
    expect(refused.status).to.equal(409);
    expect(refused.body.code).to.equal('conflict');
  });

  // biome-ignore format: a table
  const refusals: [string, unknown, string][] = [
    ['an ftp URL', { url: 'ftp://127.0.0.1/' }, '/url'],
    ['a URL with credentials', { url: 'http://user:secret@127.0.0.1:9/' }, '/url'],
    ['a URL over 2,048 characters', { url: `http://127.0.0.1:9/${'a'.repeat(2040)}` }, '/url'],
    ['a relative URL', { url: '/hook' }, '/url'],
    ['a filter that is none', { url: URL_HERE, filter: { n: { $near: 1 } } }, '/filter/n/$near'],
    ['an unknown kind', { url: URL_HERE, events: ['upsert'] }, '/events/0'],
    ['an unknown field', { url: URL_HERE, secret: 'whsec_mine' }, ''],
    ['a description holding U+0000', { url: URL_HERE, description: 'a\u0000b' }, '/description'],
    ['no URL', {}, ''],
  ];
  for (const [name, body, pointer] of refusals) {
    it(`refuses ${name}: 400`, async () => {
      const refused = await client.post<{ code: string; errors: { name: string }[] }>('/v1/webhooks', body);
      expect(refused.status, refused.text).to.equal(400);
      expect(refused.body.code).to.equal('validation_failed');
      if (pointer) expect(refused.body.errors.map(({ name }) => name)).to.include(pointer);
    });
  }
});

describeEachBackend('the address rule of webhooks', (backend) => {
  // No row is written on this server, and its one webhook points at a name of `.invalid`, which never
  // resolves (RFC 6761): a webhook it took could point anywhere.
  let server: TestServer;
  before(async () => {
    server = await startTestServer({}, { backend });
  });
  after(() => server.stop());

  // Loopback names (RFC 6761): `localhost` and the names under it, in any case, with trailing dots.
  const loopbackNames = [
    'http://localhost:9/hook',
    'http://localhost.:8080/',
    'http://LOCALHOST./hook',
    'http://localhost../hook',
    'http://sub.localhost/hook',
    'http://a.b.LocalHost./hook',
  ];
  const refused = [
    'http://127.0.0.1:9/hook',
    ...loopbackNames,
    'http://[::1]:9/hook',
    'http://10.0.0.1/hook',
    'http://192.168.0.10/hook',
    'http://169.254.169.254/latest/meta-data/',
    'http://100.64.0.1/hook',
    'http://[fd00::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://224.0.0.1/hook',
  ];
  const expectRefused = (answer: Response<{ errors: { name: string; message: string }[] }>) => {
    expect(answer.status, answer.text).to.equal(400);
    expect(answer.body.errors[0]).to.deep.include({ name: '/url' });
    expect(answer.body.errors[0].message).to.match(/private address/);
  };
  for (const url of refused) {
    it(`refuses ${url}: 400`, async () => {
      const client = await server.client();
      expectRefused(await client.post('/v1/webhooks', { url }));
      expect((await client.get('/v1/webhooks')).body).to.deep.equal([]);
    });
  }

  it('refuses a change of URL to a loopback name: 400, the URL kept', async () => {
    const client = await server.client();
    const url = 'https://hook.invalid/';
    const made = await client.post<Webhook>('/v1/webhooks', { url });
    expect(made.status, made.text).to.equal(201);
    for (const loopback of loopbackNames) expectRefused(await client.patch(`/v1/webhooks/${made.body.id}`, { url: loopback }));
    expect((await client.get<Webhook>(`/v1/webhooks/${made.body.id}`)).body.url).to.equal(url);
  });
});
