// Row versions and conditional requests (openapi.yaml, ETag, If-Match, If-None-Match; RFC 9110 §13).
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Row = { id: number } & Record<string, unknown>;
type Problem = { code: string; errors?: { in: string; name: string }[] };

describeEachBackend('row versions and conditional requests', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;
  async function collectionWith(rows: object[] = []): Promise<string> {
    const name = `v${++collections}`;
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    if (rows.length > 0) expect((await client.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
    return name;
  }
  const etagOf = async (name: string, id: number) => {
    const read = await client.get(`/v1/collections/${name}/rows/${id}`);
    expect(read.status).to.equal(200);
    return read.headers.get('etag') as string;
  };
  /** The events of the collection `name`, as stored. */
  async function eventsOf(name: string) {
    const { id } = await server.store.knex('collections').where({ name }).first('id');
    return server.store.readEvents(Number(id), { after: 0, limit: 1000 });
  }

  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
  });
  after(() => server.stop());

  describe('ETag', () => {
    it('is answered by GET, by PATCH and by a POST of one row, and changes with every write of the row', async () => {
      const name = await collectionWith();
      const inserted = await client.post<Row[]>(`/v1/collections/${name}/rows`, [{ n: 1 }]);
      const first = inserted.headers.get('etag') as string;
      expect(first).to.match(/^"\d+\.\d+"$/);
      expect(await etagOf(name, 1)).to.equal(first);
      const patched = await client.patch(`/v1/collections/${name}/rows/1`, { n: 1 });
      const second = patched.headers.get('etag') as string;
      expect(second, 'a patch that sets the value the field had').to.not.equal(first);
      expect(await etagOf(name, 1)).to.equal(second);
      // Another row's write does not change this one's.
      await client.post(`/v1/collections/${name}/rows`, [{ n: 2 }]);
      await client.patch(`/v1/collections/${name}/rows/2`, { n: 3 });
      expect(await etagOf(name, 1)).to.equal(second);
    });

    it('of an imported row is the seq of its insert event, as an inserted row has', async () => {
      const name = await collectionWith([{ n: 1 }]);
      const { accountId } = (await server.store.findPrincipal(client.key as string))!;
      await server.store.importRows(
        accountId,
        name,
        [
          { id: 5, text: '{"n":5}' },
          { id: 7, text: '{"n":7}' },
        ],
        7,
      );
      const events = await eventsOf(name);
      const { id } = await server.store.knex('collections').where({ name }).first('id');
      for (const row of [5, 7]) {
        const seq = events.find((event) => event.row.id === row)?.seq;
        expect(await etagOf(name, row)).to.equal(`"${id}.${seq}"`);
      }
      expect(new Set([await etagOf(name, 1), await etagOf(name, 5), await etagOf(name, 7)]).size).to.equal(3);
    });

    it('is not answered by a POST of several rows', async () => {
      const name = await collectionWith();
      const inserted = await client.post(`/v1/collections/${name}/rows`, [{ n: 1 }, { n: 2 }]);
      expect(inserted.status).to.equal(201);
      expect(inserted.headers.get('etag')).to.equal(null);
    });

    it('is different for a row of a collection deleted and made again', async () => {
      const name = await collectionWith([{ n: 1 }]);
      const before = await etagOf(name, 1);
      expect((await client.delete(`/v1/collections/${name}`)).status).to.equal(204);
      expect((await client.post('/v1/collections', { name })).status).to.equal(201);
      await client.post(`/v1/collections/${name}/rows`, [{ n: 1 }]);
      expect(await etagOf(name, 1)).to.not.equal(before);
    });
  });

  describe('If-None-Match on GET', () => {
    it('answers 304 with the ETag and no body while the row is unchanged, 200 once it changed', async () => {
      const name = await collectionWith([{ n: 1 }]);
      const etag = await etagOf(name, 1);
      for (const held of [etag, `W/${etag}`, '*', `"0.0", ${etag}`]) {
        const unchanged = await client.get(`/v1/collections/${name}/rows/1`, { headers: { 'if-none-match': held } });
        expect(unchanged.status, held).to.equal(304);
        expect(unchanged.text).to.equal('');
        expect(unchanged.headers.get('etag')).to.equal(etag);
        const head = await client.request('HEAD', `/v1/collections/${name}/rows/1`, { headers: { 'if-none-match': held } });
        expect(head.status).to.equal(304);
      }
      await client.patch(`/v1/collections/${name}/rows/1`, { n: 2 });
      const changed = await client.get<Row>(`/v1/collections/${name}/rows/1`, { headers: { 'if-none-match': etag } });
      expect(changed.status).to.equal(200);
      expect(changed.body).to.deep.equal({ id: 1, n: 2 });
    });

    it('answers 404 for an absent row whatever it says', async () => {
      const name = await collectionWith();
      const absent = await client.get<Problem>(`/v1/collections/${name}/rows/1`, { headers: { 'if-none-match': '*' } });
      expect(absent.status).to.equal(404);
    });
  });

  describe('If-Match on PATCH and DELETE', () => {
    it('resolves a lost update between two clients with 412: one patch is stored, with one event', async () => {
      // Two clients of one account, each with a key of its own.
      const alice = await server.client('racers');
      const bob = await server.client('racers');
      const name = `race${++collections}`;
      await alice.post('/v1/collections', { name });
      await alice.post(`/v1/collections/${name}/rows`, [{ balance: 100 }]);
      // Both read the row, then write it back changed, each with the version it read.
      const [aliceRead, bobRead] = await Promise.all([alice, bob].map((who) => who.get<Row>(`/v1/collections/${name}/rows/1`)));
      const answers = await Promise.all([
        alice.patch<Row>(
          `/v1/collections/${name}/rows/1`,
          { balance: (aliceRead.body.balance as number) + 50 },
          {
            headers: { 'if-match': aliceRead.headers.get('etag') as string },
          },
        ),
        bob.patch<Row>(
          `/v1/collections/${name}/rows/1`,
          { balance: (bobRead.body.balance as number) - 50 },
          {
            headers: { 'if-match': bobRead.headers.get('etag') as string },
          },
        ),
      ]);
      expect(answers.map((answer) => answer.status).sort()).to.deep.equal([200, 412]);
      const winner = answers.find((answer) => answer.status === 200) as { body: Row; headers: Headers };
      const loser = answers.find((answer) => answer.status === 412) as unknown as { body: Problem };
      expect(loser.body.code).to.equal('precondition_failed');
      const stored = await alice.get<Row>(`/v1/collections/${name}/rows/1`);
      expect(stored.body).to.deep.equal(winner.body);
      expect(stored.headers.get('etag')).to.equal(winner.headers.get('etag'));
      const events = await eventsOf(name);
      expect(events.map((event) => event.type)).to.deep.equal(['insert', 'update']);
    });

    it('resolves many concurrent conditional patches of one version to exactly one', async () => {
      const name = await collectionWith([{ n: 0 }]);
      const etag = await etagOf(name, 1);
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, n) =>
          client.patch(`/v1/collections/${name}/rows/1`, { n: n + 1 }, { headers: { 'if-match': etag } }),
        ),
      );
      expect(answers.filter((answer) => answer.status === 200)).to.have.length(1);
      expect(answers.filter((answer) => answer.status === 412)).to.have.length(11);
      expect((await eventsOf(name)).filter((event) => event.type === 'update')).to.have.length(1);
    });

    it('patches and deletes when the version is one of those named, or for *', async () => {
      const name = await collectionWith([{ n: 1 }, { n: 2 }]);
      const etag = await etagOf(name, 1);
      const patched = await client.patch(`/v1/collections/${name}/rows/1`, { n: 3 }, { headers: { 'if-match': `"1.1", ${etag}` } });
      expect(patched.status).to.equal(200);
      const any = await client.patch(`/v1/collections/${name}/rows/1`, { n: 4 }, { headers: { 'if-match': '*' } });
      expect(any.status).to.equal(200);
      const deleted = await client.delete(`/v1/collections/${name}/rows/1`, { headers: { 'if-match': any.headers.get('etag') as string } });
      expect(deleted.status).to.equal(204);
      expect((await client.delete(`/v1/collections/${name}/rows/2`, { headers: { 'if-match': '*' } })).status).to.equal(204);
    });

    it('refuses a stale version with 412, writing nothing and sending no event', async () => {
      const name = await collectionWith([{ n: 1 }]);
      const stale = await etagOf(name, 1);
      await client.patch(`/v1/collections/${name}/rows/1`, { n: 2 });
      const before = await eventsOf(name);
      const patch = await client.patch<Problem>(`/v1/collections/${name}/rows/1`, { n: 3 }, { headers: { 'if-match': stale } });
      expect(patch.status).to.equal(412);
      expect(patch.body.code).to.equal('precondition_failed');
      const weak = await client.patch<Problem>(
        `/v1/collections/${name}/rows/1`,
        { n: 3 },
        { headers: { 'if-match': `W/${await etagOf(name, 1)}` } },
      );
      expect(weak.status, 'a weak tag never matches If-Match').to.equal(412);
      const remove = await client.delete<Problem>(`/v1/collections/${name}/rows/1`, { headers: { 'if-match': stale } });
      expect(remove.status).to.equal(412);
      expect((await client.get<Row>(`/v1/collections/${name}/rows/1`)).body).to.deep.equal({ id: 1, n: 2 });
      expect(await eventsOf(name)).to.deep.equal(before);
    });

    it('checks the version of a patch made from the stored row (many fields, or names no JSON path spells)', async () => {
      const name = await collectionWith([{ n: 1 }]);
      const stale = await etagOf(name, 1);
      const many = Object.fromEntries(Array.from({ length: 20 }, (_, n) => [`f${n}`, n]));
      const fresh = await client.patch(`/v1/collections/${name}/rows/1`, many, { headers: { 'if-match': stale } });
      expect(fresh.status).to.equal(200);
      const refused = await client.patch(`/v1/collections/${name}/rows/1`, { 'a"b': 1 }, { headers: { 'if-match': stale } });
      expect(refused.status).to.equal(412);
      const current = fresh.headers.get('etag') as string;
      const quoted = await client.patch<Row>(`/v1/collections/${name}/rows/1`, { 'a"b': 1 }, { headers: { 'if-match': current } });
      expect(quoted.status).to.equal(200);
      expect(quoted.body['a"b']).to.equal(1);
    });

    it('answers 404 for an absent row whatever it says', async () => {
      const name = await collectionWith();
      expect((await client.patch(`/v1/collections/${name}/rows/1`, { n: 1 }, { headers: { 'if-match': '*' } })).status).to.equal(404);
      expect((await client.delete(`/v1/collections/${name}/rows/1`, { headers: { 'if-match': '"1.1"' } })).status).to.equal(404);
    });
  });

  describe('malformed preconditions', () => {
    for (const [header, value] of [
      ['if-match', '3.7'],
      ['if-match', '"3.7'],
      ['if-match', '"a" "b"'],
      ['if-match', ','],
      ['if-none-match', 'W/3'],
      ['if-none-match', '"x"y'],
    ]) {
      it(`refuses ${header}: ${value} with 400 naming the header, writing nothing`, async () => {
        const name = await collectionWith([{ n: 1 }]);
        const method = header === 'if-match' ? 'PATCH' : 'GET';
        const answer = await client.request<Problem>(method, `/v1/collections/${name}/rows/1`, {
          json: method === 'PATCH' ? { n: 2 } : undefined,
          headers: { [header]: value },
        });
        expect(answer.status).to.equal(400);
        expect(answer.body.code).to.equal('validation_failed');
        expect(answer.body.errors).to.deep.equal([{ in: 'header', name: header, message: 'is not "*" or a list of entity-tags' }]);
        expect((await client.get<Row>(`/v1/collections/${name}/rows/1`)).body).to.deep.equal({ id: 1, n: 1 });
      });
    }
  });

  describe('GET …/versioned-rows', () => {
    it('answers each row of the page with its ETag, as GET of the row does, under the same query', async () => {
      const name = await collectionWith([
        { n: 3, t: 'a' },
        { n: 1, t: 'b' },
        { n: 2, t: 'c' },
      ]);
      await client.patch(`/v1/collections/${name}/rows/2`, { n: 0 });
      const page = await client.get<{ etag: string; row: Row }[]>(
        `/v1/collections/${name}/versioned-rows?order_by=n&limit=2&select=t&count=exact&filter=${encodeURIComponent('{"n":{"$lt":3}}')}`,
      );
      expect(page.status).to.equal(200);
      expect(page.headers.get('rowbase-total-count')).to.equal('2');
      expect(page.headers.get('rowbase-seq')).to.equal('4');
      expect(page.body).to.deep.equal([
        { etag: await etagOf(name, 2), row: { id: 2, t: 'b' } },
        { etag: await etagOf(name, 3), row: { id: 3, t: 'c' } },
      ]);
      const whole = await client.get<{ etag: string; row: Row }[]>(`/v1/collections/${name}/versioned-rows`);
      expect(whole.body.map(({ row }) => row)).to.deep.equal((await client.get(`/v1/collections/${name}/rows`)).body);
      // The ETag of a listed row is good for If-Match.
      const [first] = whole.body;
      const patched = await client.patch(`/v1/collections/${name}/rows/${first.row.id}`, { n: 9 }, { headers: { 'if-match': first.etag } });
      expect(patched.status).to.equal(200);
    });
  });
});
