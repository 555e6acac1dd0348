// Idempotency-Key on writes (openapi.yaml, IdempotencyKey): a retry is answered as the first request
// was, and the change is made once.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client, Response } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Row = { id: number } & Record<string, unknown>;
type Problem = { code: string; errors?: { in: string; name: string; message: string }[] };

let keys = 0;
const newKey = () => `key-${process.pid}-${++keys}`;

describeEachBackend('Idempotency-Key', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;
  async function collectionWith(rows: object[] = []): Promise<string> {
    const name = `i${++collections}`;
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    if (rows.length > 0) expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
    return name;
  }
  async function eventsOf(name: string) {
    const { id } = await server.store.knex('collections').where({ name }).first('id');
    return server.store.readEvents(Number(id), { after: 0, limit: 1000 });
  }
  const rowsOf = async (name: string) => (await client.get<Row[]>(`/v1/collections/${name}/rows`)).body;
  /** The answer as a client compares two: status, body, and the headers a replay repeats. */
  const alike = (answer: Response) => ({ status: answer.status, text: answer.text, etag: answer.headers.get('etag') });

  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
  });
  after(() => server.stop());

  it("is not answered to a key limited to other collections with another key's stored answer", async () => {
    const account = `limited-${process.pid}-${backend}`;
    const owner = await server.client(account);
    const limited = await server.client(account, undefined, { collections: ['elsewhere'] });
    expect((await owner.post('/v1/collections', { name: 'secret' })).status).to.equal(201);
    // Not hex: a problem's `instance` names the request by a random UUID, which could hold any digits.
    const pin = 'the-pin-is-xyzzy';
    expect((await owner.post('/v1/collections/secret/rows', [{ pin }])).status).to.equal(201);
    const key = newKey();
    const patch = (who: Client) =>
      who.request('PATCH', '/v1/collections/secret/rows/1', { json: { n: 1 }, headers: { 'idempotency-key': key } });
    const first = await patch(owner);
    expect(first.status).to.equal(200);
    const retried = await patch(limited);
    expect(retried.headers.get('idempotent-replayed')).to.equal(null);
    expect(retried.status).to.be.oneOf([404, 422]);
    expect(retried.text).to.not.include(pin);
  });

  describe('a retry after the answer', () => {
    const scenarios: { name: string; rows: object[]; method: string; path: (name: string) => string; json?: unknown; events: string[] }[] =
      [
        {
          name: 'an insert',
          rows: [],
          method: 'POST',
          path: (name) => `/v1/collections/${name}/rows`,
          json: [{ n: 1 }],
          events: ['insert'],
        },
        {
          name: 'a batch insert',
          rows: [],
          method: 'POST',
          path: (name) => `/v1/collections/${name}/rows`,
          json: [{ n: 1 }, { n: 2 }],
          events: ['insert', 'insert'],
        },
        {
          name: 'a patch',
          rows: [{ n: 1 }],
          method: 'PATCH',
          path: (name) => `/v1/collections/${name}/rows/1`,
          json: { n: 2 },
          events: ['insert', 'update'],
        },
        {
          name: 'a delete',
          rows: [{ n: 1 }],
          method: 'DELETE',
          path: (name) => `/v1/collections/${name}/rows/1`,
          events: ['insert', 'delete'],
        },
        {
          name: 'a patch by filter',
          rows: [{ n: 1 }, { n: 2 }],
          method: 'PATCH',
          path: (name) => `/v1/collections/${name}/rows?filter=%7B%7D&return=rows`,
          json: { done: true },
          events: ['insert', 'insert', 'update', 'update'],
        },
        {
          name: 'a delete by filter',
          rows: [{ n: 1 }, { n: 2 }],
          method: 'DELETE',
          path: (name) => `/v1/collections/${name}/rows?filter=%7B%7D`,
          events: ['insert', 'insert', 'delete', 'delete'],
        },
      ];
    for (const scenario of scenarios) {
      it(`is answered as the first request was, marked replayed, and changes nothing: ${scenario.name}`, async () => {
        const name = await collectionWith(scenario.rows);
        const key = newKey();
        const send = () =>
          client.request(scenario.method, scenario.path(name), { json: scenario.json, headers: { 'idempotency-key': key } });
        const first = await send();
        expect(first.status).to.be.within(200, 299);
        expect(first.headers.get('idempotent-replayed')).to.equal(null);
        const rows = await rowsOf(name);
        const retries = [await send(), await send()];
        for (const retry of retries) {
          expect(alike(retry)).to.deep.equal(alike(first));
          expect(retry.headers.get('idempotent-replayed')).to.equal('true');
        }
        expect(await rowsOf(name)).to.deep.equal(rows);
        expect((await eventsOf(name)).map((event) => event.type)).to.deep.equal(scenario.events);
      });
    }

    it('counts each replay toward the plan', async () => {
      const name = await collectionWith();
      const key = newKey();
      const first = await client.post(`/v1/collections/${name}/rows`, [{ n: 1 }], { headers: { 'idempotency-key': key } });
      const retry = await client.post(`/v1/collections/${name}/rows`, [{ n: 1 }], { headers: { 'idempotency-key': key } });
      expect(retry.headers.get('idempotent-replayed')).to.equal('true');
      expect(Number(retry.headers.get('ratelimit-remaining'))).to.equal(Number(first.headers.get('ratelimit-remaining')) - 1);
    });

    // An insert's retry is not looked up before its write: the write finds the answer, and stores nothing.
    it('of an insert, sent among other inserts of the collection, is the first answer, and the others are stored', async () => {
      const name = await collectionWith();
      const key = newKey();
      const first = await client.post(`/v1/collections/${name}/rows`, [{ n: 0 }], { headers: { 'idempotency-key': key } });
      const others = Array.from({ length: 8 }, (_, n) => ({ rows: [{ n: n + 1 }], key: n % 2 === 0 ? newKey() : undefined }));
      const [retry, ...answers] = await Promise.all([
        client.post(`/v1/collections/${name}/rows`, [{ n: 0 }], { headers: { 'idempotency-key': key } }),
        ...others.map(({ rows, key: otherKey }) =>
          client.post(`/v1/collections/${name}/rows`, rows, { headers: otherKey ? { 'idempotency-key': otherKey } : {} }),
        ),
      ]);
      expect(alike(retry)).to.deep.equal(alike(first));
      expect(retry.headers.get('idempotent-replayed')).to.equal('true');
      for (const [n, answer] of answers.entries()) {
        expect(answer.status).to.equal(201);
        expect(answer.headers.get('idempotent-replayed')).to.equal(null);
        const { rows, key: otherKey } = others[n];
        if (!otherKey) continue;
        const again = await client.post(`/v1/collections/${name}/rows`, rows, { headers: { 'idempotency-key': otherKey } });
        expect(alike(again), `the answer stored for ${otherKey}`).to.deep.equal(alike(answer));
      }
      expect((await rowsOf(name)).map((row) => row.n).sort()).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    });

    it('of an insert is the first answer even once its collection is gone', async () => {
      const name = await collectionWith();
      const key = newKey();
      const first = await client.post(`/v1/collections/${name}/rows`, [{ n: 1 }, { n: 2 }], { headers: { 'idempotency-key': key } });
      expect((await client.delete(`/v1/collections/${name}`)).status).to.equal(204);
      const retry = await client.post(`/v1/collections/${name}/rows`, [{ n: 1 }, { n: 2 }], { headers: { 'idempotency-key': key } });
      expect(alike(retry)).to.deep.equal(alike(first));
      expect(retry.headers.get('idempotent-replayed')).to.equal('true');
    });

    it('takes a key sent as a Structured Field String as the same key sent bare', async () => {
      const name = await collectionWith();
      const key = newKey();
      const first = await client.post(`/v1/collections/${name}/rows`, [{ n: 1 }], { headers: { 'idempotency-key': `"${key}"` } });
      const retry = await client.post(`/v1/collections/${name}/rows`, [{ n: 1 }], { headers: { 'idempotency-key': key } });
      expect(retry.headers.get('idempotent-replayed')).to.equal('true');
      expect(retry.text).to.equal(first.text);
    });
  });

  describe('the other writes', () => {
    it('create and delete a collection, make and revoke a key, each once', async () => {
      const key = newKey();
      const name = `once${++collections}`;
      const send = (method: string, path: string, json?: unknown, idempotencyKey = key) =>
        client.request(method, path, { json, headers: { 'idempotency-key': idempotencyKey } });
      const created = [await send('POST', '/v1/collections', { name }), await send('POST', '/v1/collections', { name })];
      expect(created.map((answer) => answer.status)).to.deep.equal([201, 201]);
      expect(created[1].text).to.equal(created[0].text);
      expect(created[1].headers.get('location')).to.equal(`/v1/collections/${name}`);
      expect(created[1].headers.get('idempotent-replayed')).to.equal('true');

      const madeKey = newKey();
      const made = [await send('POST', '/v1/keys', { scope: 'read' }, madeKey), await send('POST', '/v1/keys', { scope: 'read' }, madeKey)];
      expect(made[1].text, 'the key made, answered again').to.equal(made[0].text);
      const { prefix } = made[0].body as { prefix: string };
      expect((await client.get<{ prefix: string }[]>('/v1/keys')).body.filter((listed) => listed.prefix === prefix)).to.have.length(1);
      const revokeKey = newKey();
      const revoked = [
        await send('DELETE', `/v1/keys/${prefix}`, undefined, revokeKey),
        await send('DELETE', `/v1/keys/${prefix}`, undefined, revokeKey),
      ];
      expect(revoked.map((answer) => answer.status)).to.deep.equal([204, 204]);
      expect(revoked[1].headers.get('idempotent-replayed')).to.equal('true');

      const dropKey = newKey();
      const dropped = [
        await send('DELETE', `/v1/collections/${name}`, undefined, dropKey),
        await send('DELETE', `/v1/collections/${name}`, undefined, dropKey),
      ];
      expect(dropped.map((answer) => answer.status)).to.deep.equal([204, 204]);
      expect(dropped[1].headers.get('idempotent-replayed')).to.equal('true');
      expect((await client.get(`/v1/collections/${name}`)).status).to.equal(404);
    });
  });

  describe('concurrent retries', () => {
    it('make the change once: every answer but 409s is the first one', async () => {
      const name = await collectionWith();
      const key = newKey();
      const answers = await Promise.all(
        Array.from({ length: 10 }, () => client.post(`/v1/collections/${name}/rows`, [{ n: 1 }], { headers: { 'idempotency-key': key } })),
      );
      const done = answers.filter((answer) => answer.status === 201);
      const running = answers.filter((answer) => answer.status === 409);
      expect(done.length + running.length).to.equal(answers.length);
      expect(done.filter((answer) => answer.headers.get('idempotent-replayed') === null)).to.have.length(1);
      for (const answer of done) expect(alike(answer)).to.deep.equal(alike(done[0]));
      for (const answer of running) expect((answer.body as Problem).code).to.equal('idempotency_key_in_use');
      // Once the first is answered, every retry gets its answer.
      const late = await client.post(`/v1/collections/${name}/rows`, [{ n: 1 }], { headers: { 'idempotency-key': key } });
      expect(alike(late)).to.deep.equal(alike(done[0]));
      expect(await rowsOf(name)).to.deep.equal([{ id: 1, n: 1 }]);
      expect(await eventsOf(name)).to.have.length(1);
    });

    it('make a patch once among many writers of the collection', async () => {
      const name = await collectionWith([{ n: 0 }]);
      const key = newKey();
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, n) =>
          n % 2 === 0
            ? client.patch(`/v1/collections/${name}/rows/1`, { bumped: true }, { headers: { 'idempotency-key': key } })
            : client.post(`/v1/collections/${name}/rows`, [{ n }]),
        ),
      );
      const patches = answers.filter((_, n) => n % 2 === 0 && answers[n].status === 200);
      expect(patches.length).to.be.greaterThan(0);
      for (const answer of patches) expect(alike(answer)).to.deep.equal(alike(patches[0]));
      expect((await eventsOf(name)).filter((event) => event.type === 'update')).to.have.length(1);
    });
  });

  describe('across instances on one database', () => {
    let second: TestServer;
    before(async () => {
      second = await startTestServer({}, { backend, database: { url: server.databaseUrl, drop: async () => {} } });
    });
    after(() => second.stop());

    // SQLite has one writer at a time: another process's retry waits for the first request's commit.
    if (backend === 'postgres') {
      it('is 409 while another instance runs the first request (PostgreSQL: its transaction holds the key)', async () => {
        const name = await collectionWith();
        const key = newKey();
        const { accountId } = (await server.store.findPrincipal(client.key as string))!;
        // What the first request's transaction holds on its instance, held here instead.
        const running = await server.store.knex.transaction();
        try {
          await running.raw('select pg_advisory_xact_lock(?, hashtext(?))', [accountId, key]);
          const retry = await client.post<Problem>(`/v1/collections/${name}/rows`, [{ n: 1 }], { headers: { 'idempotency-key': key } });
          expect(retry.status).to.equal(409);
          expect(retry.body.code).to.equal('idempotency_key_in_use');
        } finally {
          await running.rollback();
        }
        expect(await rowsOf(name)).to.deep.equal([]);
        const after = await client.post(`/v1/collections/${name}/rows`, [{ n: 1 }], { headers: { 'idempotency-key': key } });
        expect(after.status).to.equal(201);
      });
    }

    it('make the change once, whichever instance each retry reaches', async () => {
      const name = await collectionWith();
      const key = newKey();
      const there = new (client.constructor as typeof Client)(second.url, client.key);
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, n) =>
          (n % 2 === 0 ? client : there).post(`/v1/collections/${name}/rows`, [{ n: 1 }], { headers: { 'idempotency-key': key } }),
        ),
      );
      const done = answers.filter((answer) => answer.status === 201);
      expect(done.length + answers.filter((answer) => answer.status === 409).length).to.equal(answers.length);
      expect(done.filter((answer) => answer.headers.get('idempotent-replayed') === null)).to.have.length(1);
      for (const answer of done) expect(alike(answer)).to.deep.equal(alike(done[0]));
      for (const instance of [client, there]) {
        const late = await instance.post(`/v1/collections/${name}/rows`, [{ n: 1 }], { headers: { 'idempotency-key': key } });
        expect(late.headers.get('idempotent-replayed')).to.equal('true');
        expect(late.text).to.equal((done[0] ?? late).text);
      }
      expect(await rowsOf(name)).to.deep.equal([{ id: 1, n: 1 }]);
    });
  });

  describe('a key sent with another request', () => {
    it('is 422, and writes nothing', async () => {
      const name = await collectionWith([{ n: 1 }]);
      const key = newKey();
      expect((await client.post(`/v1/collections/${name}/rows`, [{ n: 2 }], { headers: { 'idempotency-key': key } })).status).to.equal(201);
      const before = await eventsOf(name);
      for (const [method, path, json] of [
        ['POST', `/v1/collections/${name}/rows`, [{ n: 3 }]],
        ['PATCH', `/v1/collections/${name}/rows/1`, { n: 2 }],
        ['DELETE', `/v1/collections/${name}/rows/1`, undefined],
      ] as const) {
        const reused = await client.request<Problem>(method, path, { json, headers: { 'idempotency-key': key } });
        expect(reused.status, method).to.equal(422);
        expect(reused.body.code).to.equal('idempotency_key_reused');
      }
      expect(await eventsOf(name)).to.deep.equal(before);
    });

    it('is another key for another account', async () => {
      const name = await collectionWith();
      const key = newKey();
      expect((await client.post(`/v1/collections/${name}/rows`, [{ n: 1 }], { headers: { 'idempotency-key': key } })).status).to.equal(201);
      const other = await server.client();
      expect((await other.post('/v1/collections', { name }, { headers: { 'idempotency-key': key } })).status).to.equal(201);
      const theirs = await other.post(`/v1/collections/${name}/rows`, [{ n: 1 }], { headers: { 'idempotency-key': newKey() } });
      expect(theirs.headers.get('idempotent-replayed')).to.equal(null);
    });
  });

  describe('what is not stored', () => {
    it('a request that failed: its retry runs again', async () => {
      const name = `late${++collections}`;
      const key = newKey();
      const failed = await client.post(`/v1/collections/${name}/rows`, [{ n: 1 }], { headers: { 'idempotency-key': key } });
      expect(failed.status).to.equal(404);
      expect((await client.post('/v1/collections', { name })).status).to.equal(201);
      const retry = await client.post(`/v1/collections/${name}/rows`, [{ n: 1 }], { headers: { 'idempotency-key': key } });
      expect(retry.status).to.equal(201);
      expect(retry.headers.get('idempotent-replayed')).to.equal(null);
    });

    it('an answer past its retention: the key is free again, and pruned', async () => {
      const name = await collectionWith();
      const key = newKey();
      await client.post(`/v1/collections/${name}/rows`, [{ n: 1 }], { headers: { 'idempotency-key': key } });
      // As if a day had gone by.
      await server.store.knex('idempotency_keys').where({ key }).update({ expires_at: '2000-01-01T00:00:00.000Z' });
      const again = await client.post(`/v1/collections/${name}/rows`, [{ n: 2 }], { headers: { 'idempotency-key': key } });
      expect(again.status).to.equal(201);
      expect(again.headers.get('idempotent-replayed')).to.equal(null);
      expect(await rowsOf(name)).to.have.length(2);
      const other = newKey();
      await client.post(`/v1/collections/${name}/rows`, [{ n: 3 }], { headers: { 'idempotency-key': other } });
      await server.store.knex('idempotency_keys').where({ key: other }).update({ expires_at: '2000-01-01T00:00:00.000Z' });
      // The feed's pruner, which prunes events, prunes expired answers in the same pass.
      await server.feed.pruner.runOnce();
      expect(await server.store.knex('idempotency_keys').where({ key: other }).first()).to.equal(undefined);
      expect(await server.store.knex('idempotency_keys').where({ key }).first()).to.not.equal(undefined);
    });

    it('expired answers, batch after batch, past an older one that has not expired', async () => {
      // A database of its own: on SQLite a batch looks at the oldest answers only (sqlite/sql.ts, pruneOnceSql).
      const own = await startTestServer({}, { backend });
      try {
        const ownClient = await own.client();
        expect((await ownClient.post('/v1/collections', { name: 'notes' })).status).to.equal(201);
        const keys = Array.from({ length: 5 }, newKey);
        for (const key of keys) {
          const stored = await ownClient.post('/v1/collections/notes/rows', [{ n: 1 }], { headers: { 'idempotency-key': key } });
          expect(stored.status).to.equal(201);
        }
        // The first and the last are kept: the first stands for a key taken again once expired, which stays among the oldest.
        await own.store.knex('idempotency_keys').whereIn('key', keys.slice(1, 4)).update({ expires_at: '2000-01-01T00:00:00.000Z' });
        const now = new Date().toISOString();
        const batches: number[] = [];
        while (batches.at(-1) !== 0) batches.push(await own.store.pruneOnceBatch(now, 2));
        expect(batches.reduce((sum, batch) => sum + batch, 0)).to.equal(3);
        expect((await own.store.knex('idempotency_keys').pluck('key')).sort()).to.deep.equal([keys[0], keys[4]].sort());
      } finally {
        await own.stop();
      }
    });
  });

  describe('malformed keys', () => {
    for (const [sent, message] of [
      ['', 'is empty'],
      ['""', 'is empty'],
      ['k'.repeat(256), 'is longer than 255 characters'],
      ['caf\u00e9', 'holds a character that is not printable ASCII'],
    ]) {
      it(`refuses ${JSON.stringify(sent.slice(0, 12))} with 400 naming the header, writing nothing`, async () => {
        const name = await collectionWith();
        const refused = await client.post<Problem>(`/v1/collections/${name}/rows`, [{ n: 1 }], { headers: { 'idempotency-key': sent } });
        expect(refused.status).to.equal(400);
        expect(refused.body.errors).to.deep.equal([{ in: 'header', name: 'idempotency-key', message }]);
        expect(await rowsOf(name)).to.deep.equal([]);
      });
    }

    it('takes a key of 255 characters', async () => {
      const name = await collectionWith();
      const answer = await client.post(`/v1/collections/${name}/rows`, [{ n: 1 }], { headers: { 'idempotency-key': 'k'.repeat(255) } });
      expect(answer.status).to.equal(201);
    });
  });
});
