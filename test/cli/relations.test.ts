// Relations carried by `rowbase export` and `rowbase import` as real processes, beside a real `rowbase
// serve` on the same database, on both backends (docs/relations.md, "Export, import and backup").
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { type BackendName, createDatabase, describeEachBackend, type TestDatabase } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { type Environment, type ServeProcess, Workspace } from '../support/process.ts';
import { watchHealth } from '../support/watchdog.ts';

describeEachBackend('rowbase export and import of relations', (backend: BackendName) => {
  let database: TestDatabase;
  let workspace: Workspace;
  let server: ServeProcess;
  let client: Client;
  let env: Environment;
  const rowbase = (...args: string[]) => workspace.run(args, env);
  const file = (name: string) => join(workspace.dir, name);

  before(async () => {
    database = await createDatabase(backend);
    workspace = await Workspace.create();
    env = { DATABASE_URL: database.url };
    server = await workspace.serve(env);
    const created = await rowbase('keys', 'create', '--account', 'acme', '--json');
    expect(created.code, created.stderr).to.equal(0);
    client = new Client(server.url, JSON.parse(created.stdout).key);
  });
  after(async () => {
    await workspace?.cleanUp();
    await database?.drop();
  });
  watchHealth(() => server);

  it('exports the relations declared of a collection, and the import declares them once the collection they name is there', async () => {
    expect((await client.post('/v1/collections', { name: 'people' })).status).to.equal(201);
    expect((await client.post('/v1/collections', { name: 'posts' })).status).to.equal(201);
    expect((await client.post('/v1/collections/people/rows', [{ name: 'Ada' }, { name: 'Bob' }, { boss_id: 1 }])).status).to.equal(201);
    expect((await client.post('/v1/collections/posts/rows', [{ author_id: 1 }, { author_id: 2 }, { author_id: null }])).status).to.equal(
      201,
    );
    const author = { field: 'author_id', collection: 'people', on_delete: 'cascade', reverse: 'posts' };
    const boss = { field: 'boss_id', collection: 'people', on_delete: 'set_null', reverse: null };
    expect((await client.put('/v1/collections/posts/relations/author', author)).status).to.equal(200);
    expect((await client.put('/v1/collections/people/relations/boss', boss)).status).to.equal(200);
    const before = {
      people: (await client.get('/v1/collections/people/relations')).body,
      posts: (await client.get('/v1/collections/posts/relations')).body,
    };
    for (const name of ['people', 'posts'])
      expect((await rowbase('export', '--account', 'acme', '--collection', name, '--out', file(`${name}.ndjson`))).code).to.equal(0);
    const header = JSON.parse((await readFile(file('posts.ndjson'), 'utf8')).split('\n')[0]);
    expect(header.relations).to.deep.equal([{ name: 'author', ...author }]);
    for (const name of ['posts', 'people']) expect((await client.delete(`/v1/collections/${name}`)).status).to.equal(204);

    // posts first: people is not there yet, and the relation is left out, said on stderr.
    const early = await rowbase('import', '--account', 'acme', '--collection', 'posts', file('posts.ndjson'));
    expect(early.code, early.stderr).to.equal(0);
    expect(early.stderr).to.include('relation author of posts names collection people, which is not there yet');
    expect((await client.get('/v1/collections/posts/relations')).body).to.deep.equal([]);
    const people = await rowbase('import', '--account', 'acme', '--collection', 'people', file('people.ndjson'));
    expect(people.code, people.stderr).to.equal(0);
    const again = await rowbase('import', '--account', 'acme', '--collection', 'posts', '--resume', file('posts.ndjson'));
    expect(again.code, again.stderr).to.equal(0);
    expect({
      people: (await client.get('/v1/collections/people/relations')).body,
      posts: (await client.get('/v1/collections/posts/relations')).body,
    }).to.deep.equal(before);
    // Held to them again: a missing author is 422, a delete cascades.
    expect((await client.post('/v1/collections/posts/rows', [{ author_id: 9 }])).status).to.equal(422);
    expect((await client.delete('/v1/collections/people/rows/1')).status).to.equal(204);
    expect((await client.get<{ id: number }[]>('/v1/collections/posts/rows')).body.map((row) => row.id)).to.deep.equal([2, 3]);
    expect((await client.get('/v1/collections/people/rows/3')).body).to.deep.equal({ id: 3, boss_id: null });
  });
});
