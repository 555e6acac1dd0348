// `rowbase plan` and `rowbase apply` through a running server (--url and --key, or ROWBASE_URL and
// ROWBASE_KEY), as real processes beside a real server, on both backends (docs/declarations.md): the same
// output and exit statuses as against the database, refusals naming their places as there, and a
// webhook signing with the secret the CLI read from its environment.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { type BackendName, describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { APP_JWT_SECRET, declared } from '../support/declarations.ts';
import { Workspace } from '../support/process.ts';
import { Receiver, signatureOf } from '../support/receiver.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const HOOK_SECRET = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;

describeEachBackend('rowbase plan and apply through a server', (backend: BackendName) => {
  let server: TestServer;
  let workspace: Workspace;
  let client: Client;
  /** The CLI with the server's URL and an admin key in its environment, and no database of the server's. */
  const rowbase = (args: string[], environment: Record<string, string> = {}) =>
    workspace.run(args, { ROWBASE_URL: server.url, ROWBASE_KEY: client.key, APP_JWT_SECRET, ...environment });
  const file = (name: string) => join(workspace.dir, name);

  before(async () => {
    server = await startTestServer({ webhooksAllowPrivate: true }, { backend });
    workspace = await Workspace.create();
    client = await server.client();
    await writeFile(file('rowbase.yaml'), declared);
  });
  after(async () => {
    await workspace?.cleanUp();
    await server?.stop();
  });

  it('plans (exit 2), applies the plan file, then plans no change (exit 0); a breaking change exits 3', async function () {
    this.timeout(300_000);
    const plan = await rowbase(['plan', '-f', file('rowbase.yaml'), '-o', file('plan.json')]);
    expect(plan.code, plan.stderr).to.equal(2);
    expect(plan.stdout).to.include('+ create collection /collections/people');
    expect(plan.stdout).to.include('The contract');
    const stored = JSON.parse(await readFile(file('plan.json'), 'utf8'));
    expect(stored.changes).to.have.length(10);
    expect(JSON.stringify(stored)).not.to.include(APP_JWT_SECRET);

    // --url and --key given as options, the environment's left out.
    const applied = await workspace.run(['apply', file('plan.json'), '--url', server.url, '--key', client.key as string], {
      APP_JWT_SECRET,
    });
    expect(applied.code, applied.stderr).to.equal(0);
    expect(applied.stdout).to.include('Applied 10 changes.');
    expect((await client.get('/v1/collections/posts/relations/author')).body).to.include({ collection: 'people', on_delete: 'cascade' });

    const again = await rowbase(['plan', '-f', file('rowbase.yaml'), '--json']);
    expect(again.code, again.stderr).to.equal(0);
    expect(JSON.parse(again.stdout).changes).to.deep.equal([]);

    await writeFile(file('breaking.yaml'), declared.replace('      type: object\n', '      type: object\n      required: [email]\n'));
    const breaking = await rowbase(['plan', '-f', file('breaking.yaml'), '--fail-on-breaking']);
    expect(breaking.code, breaking.stderr).to.equal(3);
    expect(breaking.stdout).to.include('The contract would break its clients');
  });

  it('exits 1 naming what drifted, what the server refuses of the declaration, and a key that may not', async function () {
    this.timeout(300_000);
    const planned = await rowbase(['plan', '-f', file('rowbase.yaml'), '-o', file('stale.json')]);
    expect(planned.code, planned.stderr).to.equal(0);
    expect((await client.post('/v1/collections/people/indexes', { fields: ['age'] })).status).to.equal(201);
    const stale = await rowbase(['apply', file('stale.json')]);
    expect(stale.code).to.equal(1);
    expect(stale.stderr).to.include('409').and.to.include('/collections/people has changed since the plan was made');

    // What only the server can tell (the account's collections): named from the declaration's root, as locally.
    await writeFile(file('orphan.yaml'), 'collections:\n  posts:\n    relations:\n      author: {field: a, collection: nobody}\n');
    const orphan = await rowbase(['plan', '-f', file('orphan.yaml')]);
    expect(orphan.code).to.equal(1);
    expect(orphan.stderr).to.include('/collections/posts/relations/author/collection names no collection declared');

    const reader = await server.client(undefined, undefined, { scope: 'read' });
    const refused = await rowbase(['plan', '-f', file('rowbase.yaml')], { ROWBASE_KEY: reader.key as string });
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.include('403');

    const keyless = await workspace.run(['plan', '-f', file('rowbase.yaml'), '--url', server.url]);
    expect(keyless.code).to.equal(1);
    expect(keyless.stderr).to.include('--key');
  });

  it("signs a webhook's deliveries with the secret read from the CLI's environment", async function () {
    this.timeout(300_000);
    const receiver = await Receiver.start();
    try {
      const account = await server.client();
      await writeFile(
        file('hook.yaml'),
        `collections:\n  posts: {}\nwebhooks:\n  - url: ${receiver.url}\n    secret: {env: HOOK_SECRET}\n`,
      );
      const applied = await rowbase(['apply', '-f', file('hook.yaml')], { ROWBASE_KEY: account.key as string, HOOK_SECRET });
      expect(applied.code, applied.stderr).to.equal(0);
      expect((await account.post('/v1/collections/posts/rows', [{ title: 'signed' }])).status).to.equal(201);
      await receiver.waitFor(1);
      const [received] = receiver.received;
      expect(received.headers['webhook-signature']).to.equal(signatureOf(HOOK_SECRET, received));
    } finally {
      await receiver.stop();
    }
  });
});
