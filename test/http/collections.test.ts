// The collections over HTTP: made, listed, read and deleted, on both backends.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

interface Collection {
  name: string;
  created_at: string;
  row_count: number;
  seq: number;
}

describeEachBackend('collections', (backend) => {
  let server: TestServer;
  let alice: Client;
  let bob: Client;
  before(async () => {
    server = await startTestServer({}, { backend });
    alice = await server.client('alice');
    bob = await server.client('bob');
  });
  after(() => server.stop());

  describe('POST /v1/collections', () => {
    it('creates a collection and answers 201 with it and its Location', async () => {
      const response = await alice.post<Collection>('/v1/collections', { name: 'notes' });
      expect(response.status).to.equal(201);
      expect(response.body).to.include({ name: 'notes', row_count: 0, seq: 0 });
      expect(Date.parse(response.body.created_at)).to.be.closeTo(Date.now(), 60_000);
      expect(response.headers.get('location')).to.equal('/v1/collections/notes');
    });

    it('refuses a name the account already has with 409 conflict', async () => {
      await alice.post('/v1/collections', { name: 'twice' });
      const response = await alice.post('/v1/collections', { name: 'twice' });
      expect(response.status).to.equal(409);
      expect(response.body).to.include({ code: 'conflict' });
    });

    it('lets two accounts use the same name', async () => {
      await alice.post('/v1/collections', { name: 'shared-name' });
      const response = await bob.post('/v1/collections', { name: 'shared-name' });
      expect(response.status).to.equal(201);
    });

    it('treats names as case-sensitive', async () => {
      await alice.post('/v1/collections', { name: 'Case' });
      expect((await alice.post('/v1/collections', { name: 'case' })).status).to.equal(201);
    });

    const names = [
      { name: 'a', status: 201 },
      { name: `a${'b'.repeat(62)}`, status: 201 },
      { name: `a${'b'.repeat(63)}`, status: 400 },
      { name: 'with_under-score9', status: 201 },
      { name: '9starts-with-digit', status: 400 },
      { name: '_underscore-first', status: 400 },
      { name: '', status: 400 },
      { name: 'has space', status: 400 },
      { name: 'ünïcode', status: 400 },
    ];
    for (const { name, status } of names) {
      it(`answers ${status} for the name ${JSON.stringify(name)}`, async () => {
        const response = await alice.post('/v1/collections', { name });
        expect(response.status).to.equal(status);
        if (status === 400) expect(response.body).to.include({ code: 'validation_failed' });
      });
    }
  });

  describe('names in paths', () => {
    before(async () => {
      for (const name of ['Abc', 'abc']) expect((await alice.post('/v1/collections', { name })).status).to.equal(201);
      expect((await alice.post('/v1/collections/abc/rows', [{ text: 'lower' }])).status).to.equal(201);
    });

    // biome-ignore format: a table
    const paths = [
      { name: 'a name as created', path: '/v1/collections/Abc', status: 200, read: 'Abc' },
      { name: 'the same name in another case, another collection', path: '/v1/collections/abc', status: 200, read: 'abc' },
      { name: 'a percent-encoded letter, decoded', path: '/v1/collections/%41bc', status: 200, read: 'Abc' },
      { name: 'a trailing slash, ignored', path: '/v1/collections/Abc/', status: 200, read: 'Abc' },
      { name: 'a name in a case no collection has', path: '/v1/collections/ABC', status: 404 },
      { name: 'an absent name of 63 characters', path: `/v1/collections/z${'y'.repeat(62)}`, status: 404 },
      { name: 'a name of 64 characters', path: `/v1/collections/a${'b'.repeat(63)}`, status: 400 },
      { name: 'a name of 2000 characters', path: `/v1/collections/a${'b'.repeat(1999)}`, status: 400 },
      { name: 'an encoded slash, part of the name', path: '/v1/collections/a%2Fb', status: 400 },
      { name: 'an encoded slash before rows', path: '/v1/collections/a%2Fb/rows', status: 400 },
      { name: 'an encoded space after the name', path: '/v1/collections/Abc%20', status: 400 },
      { name: 'broken percent-encoding', path: '/v1/collections/%zz', status: 400 },
      { name: 'an empty segment', path: '/v1//collections', status: 404 },
      { name: 'an empty segment before the name', path: '/v1/collections//Abc', status: 404 },
      { name: 'the prefix in another case', path: '/V1/collections', status: 404 },
    ];
    for (const { name, path, status, read } of paths) {
      it(`answers ${status} to ${name} (${path.length > 50 ? `${path.slice(0, 50)}…` : path})`, async () => {
        const response = await alice.get<Collection>(path);
        expect(response.status, response.text).to.equal(status);
        if (read) expect(response.body.name).to.equal(read);
        if (status === 400) expect(response.body).to.include({ code: 'validation_failed' });
        if (status === 404) expect(response.body).to.include({ code: 'not_found' });
      });
    }

    it('reads the rows of the collection the decoded name names', async () => {
      const [upper, lower] = [
        await alice.get<unknown[]>('/v1/collections/%41bc/rows'),
        await alice.get<unknown[]>('/v1/collections/%61bc/rows'),
      ];
      expect(upper.body).to.deep.equal([]);
      expect(lower.body).to.deep.equal([{ id: 1, text: 'lower' }]);
    });
  });

  describe('GET /v1/collections', () => {
    it("lists only the account's collections, sorted by name", async () => {
      const carol = await server.client('carol');
      for (const name of ['zeta', 'Alpha', 'beta', 'alpha']) await carol.post('/v1/collections', { name });
      const response = await carol.get<Collection[]>('/v1/collections');
      expect(response.status).to.equal(200);
      expect(response.body.map((c) => c.name)).to.deep.equal(['Alpha', 'alpha', 'beta', 'zeta']);
    });

    it('answers an empty array for an account with none', async () => {
      const response = await (await server.client('dave')).get('/v1/collections');
      expect(response.body).to.deep.equal([]);
    });

    it('counts rows as they come and go', async () => {
      await alice.post('/v1/collections', { name: 'counted' });
      await alice.post('/v1/collections/counted/rows', [{}, {}, {}]);
      await alice.delete('/v1/collections/counted/rows/2');
      const listed = (await alice.get<Collection[]>('/v1/collections')).body.find((c) => c.name === 'counted');
      expect(listed).to.include({ row_count: 2, seq: 4 });
    });
  });

  describe('GET /v1/collections/{name}', () => {
    it('answers the collection with its row count and its latest event seq', async () => {
      await alice.post('/v1/collections', { name: 'one' });
      await alice.post('/v1/collections/one/rows', [{ a: 1 }, { a: 2 }]);
      await alice.patch('/v1/collections/one/rows/1', { a: 3 });
      const response = await alice.get<Collection>('/v1/collections/one');
      expect(response.status).to.equal(200);
      expect(response.body).to.include({ name: 'one', row_count: 2, seq: 3 });
    });

    it("answers 404 for an unknown name and for another account's collection", async () => {
      await bob.post('/v1/collections', { name: 'bobs' });
      for (const path of ['/v1/collections/nothing-here', '/v1/collections/bobs']) {
        const response = await alice.get(path);
        expect(response.status, path).to.equal(404);
        expect(response.body).to.include({ code: 'not_found' });
      }
    });
  });

  describe('DELETE /v1/collections/{name}', () => {
    it('deletes the collection and its rows; a new one of the same name starts empty at id 1', async () => {
      await alice.post('/v1/collections', { name: 'doomed' });
      await alice.post('/v1/collections/doomed/rows', [{ a: 1 }, { a: 2 }]);
      expect((await alice.delete('/v1/collections/doomed')).status).to.equal(204);
      expect((await alice.get('/v1/collections/doomed')).status).to.equal(404);
      expect((await alice.get('/v1/collections/doomed/rows')).status).to.equal(404);
      await alice.post('/v1/collections', { name: 'doomed' });
      const rows = await alice.post<{ id: number }[]>('/v1/collections/doomed/rows', [{ b: 1 }]);
      expect(rows.body[0].id).to.equal(1);
      expect((await alice.get('/v1/collections/doomed/rows')).body).to.deep.equal([{ id: 1, b: 1 }]);
    });

    it("answers 404 for an unknown name and leaves another account's collection alone", async () => {
      await bob.post('/v1/collections', { name: 'keep' });
      expect((await alice.delete('/v1/collections/keep')).status).to.equal(404);
      expect((await bob.get('/v1/collections/keep')).status).to.equal(200);
    });
  });

  describe('collections per account', () => {
    let bounded: TestServer;
    before(async () => {
      bounded = await startTestServer({ maxCollectionsPerAccount: 3 }, { backend });
    });
    after(() => bounded.stop());

    it('holds maxCollectionsPerAccount at most, exactly however concurrent the creations, then 409 until one is deleted', async () => {
      const [carol, dave] = [await bounded.client(), await bounded.client()];
      const created = await Promise.all(Array.from({ length: 12 }, (_, i) => carol.post('/v1/collections', { name: `c${i}` })));
      expect(created.filter((response) => response.status === 201)).to.have.length(3);
      for (const refused of created.filter((response) => response.status !== 201)) {
        expect(refused.status).to.equal(409);
        expect(refused.body).to.include({
          code: 'conflict',
          detail: 'The account holds 3 collections, the most it may: delete one to make another.',
        });
      }
      const names = (await carol.get<Collection[]>('/v1/collections')).body.map((collection) => collection.name);
      expect(names).to.have.length(3);
      // Another account's bound is its own.
      for (const name of ['a', 'b', 'c']) expect((await dave.post('/v1/collections', { name })).status).to.equal(201);
      expect((await carol.delete(`/v1/collections/${names[0]}`)).status).to.equal(204);
      expect((await carol.post('/v1/collections', { name: 'again' })).status).to.equal(201);
      expect((await carol.post('/v1/collections', { name: 'more' })).status).to.equal(409);
    });
  });
});
