// `rowbase plan`, `apply` and `pull` as real processes, beside a real server on the same database,
// on both backends (docs/declarations.md): the exit statuses, the plan file, a pulled account planning as
// no change, and refusals said in one line naming the place.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { type BackendName, describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { APP_JWT_SECRET, declared } from '../support/declarations.ts';
import { Workspace } from '../support/process.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describeEachBackend('rowbase plan, apply and pull', (backend: BackendName) => {
  let server: TestServer;
  let workspace: Workspace;
  let client: Client;
  const rowbase = (...args: string[]) =>
    workspace.run(args, { DATABASE_URL: server.databaseUrl, APP_JWT_SECRET, ROWBASE_WEBHOOKS_ALLOW_PRIVATE: 'on' });
  const file = (name: string) => join(workspace.dir, name);

  before(async () => {
    server = await startTestServer({ webhooksAllowPrivate: true }, { backend });
    workspace = await Workspace.create();
    client = await server.client('acme');
    await writeFile(file('rowbase.yaml'), declared);
  });
  after(async () => {
    await workspace?.cleanUp();
    await server?.stop();
  });

  it('plans (exit 2), applies the plan file, then plans no change (exit 0); a pulled declaration plans no change; a breaking one exits 3', async function () {
    // Seven processes of the CLI, each a few seconds on a loaded host.
    this.timeout(300_000);
    const plan = await rowbase('plan', '-f', file('rowbase.yaml'), '--account', 'acme', '-o', file('plan.json'));
    expect(plan.code, plan.stderr).to.equal(2);
    expect(plan.stdout).to.include('+ create collection /collections/people');
    const stored = JSON.parse(await readFile(file('plan.json'), 'utf8'));
    expect(stored.changes).to.have.length(10);
    // The plan names the secret's variable, never its value.
    expect(JSON.stringify(stored)).not.to.include(APP_JWT_SECRET);

    const applied = await rowbase('apply', file('plan.json'));
    expect(applied.code, applied.stderr).to.equal(0);
    expect((await client.get('/v1/collections/posts/relations/author')).body).to.include({ collection: 'people', on_delete: 'cascade' });
    const again = await rowbase('plan', '-f', file('rowbase.yaml'), '--account', 'acme', '--json');
    expect(again.code, again.stderr).to.equal(0);
    expect(JSON.parse(again.stdout).changes).to.deep.equal([]);

    const pulled = await rowbase('pull', '--account', 'acme', '-o', file('pulled.yaml'));
    expect(pulled.code, pulled.stderr).to.equal(0);
    const fromPull = await rowbase('plan', '-f', file('pulled.yaml'), '--account', 'acme');
    expect(fromPull.code, fromPull.stderr + fromPull.stdout).to.equal(0);

    // A field made required: a change (2), which breaks the contract's clients (3 with --fail-on-breaking).
    await writeFile(file('breaking.yaml'), declared.replace('      type: object\n', '      type: object\n      required: [email]\n'));
    const breaking = await rowbase('plan', '-f', file('breaking.yaml'), '--account', 'acme', '--fail-on-breaking');
    expect(breaking.code, breaking.stderr).to.equal(3);
    expect(breaking.stdout).to.include('The contract would break its clients');
  });

  it('refuses a stale plan file (exit 1, naming what drifted) and bad declarations (exit 1, naming the place)', async function () {
    this.timeout(300_000);
    const planned = await rowbase('plan', '-f', file('rowbase.yaml'), '--account', 'acme', '-o', file('stale.json'));
    expect(planned.code, planned.stderr).to.equal(0);
    expect((await client.post('/v1/collections/people/indexes', { fields: ['age'] })).status).to.equal(201);
    const stale = await rowbase('apply', file('stale.json'));
    expect(stale.code).to.equal(1);
    expect(stale.stderr).to.include('/collections/people');

    await writeFile(file('bad.yaml'), 'collections:\n  people:\n    indexes: [{fields: [email], uniq: true}]\n');
    const bad = await rowbase('plan', '-f', file('bad.yaml'), '--account', 'acme');
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.include('/collections/people/indexes/0/uniq is no member the declaration knows');
    await writeFile(file('inline.yaml'), declared.replace('{env: APP_JWT_SECRET}', APP_JWT_SECRET));
    const inline = await rowbase('plan', '-f', file('inline.yaml'), '--account', 'acme');
    expect(inline.code).to.equal(1);
    expect(inline.stderr).to.include('/issuers/app/secret is a secret written inline');
  });
});
