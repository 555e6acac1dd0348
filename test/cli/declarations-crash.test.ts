// `rowbase apply` killed with SIGKILL while its transaction is under way (docs/declarations.md, "rowbase
// apply"), on both backends: the account is then as before the apply, wholly, or as after it, never between.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type { Knex } from 'knex';
import { parseDeclaration } from '../../src/declarations/format.ts';
import { makePlan } from '../../src/declarations/plan.ts';
import { type BackendName, describeEachBackend, knexOf } from '../support/backends.ts';
import { Workspace } from '../support/process.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const rowbaseExecutable = fileURLToPath(new URL('../../bin/rowbase', import.meta.url));
const options = { maxCollections: 10_000, maxWebhooks: 20 };

/** Rows of the collection whose new schema the apply checks them all against: what keeps its transaction open a while. */
const ROWS = 60_000;
const NEW_COLLECTIONS = 30;

/** Whether a write transaction of another connection is under way: it holds the collections' table (PostgreSQL) or the file's write lock (SQLite). */
async function writing(backend: BackendName, knex: Knex): Promise<boolean> {
  if (backend === 'postgres') {
    const { rows } = await knex.raw(
      "select count(*)::int as held from pg_locks where relation = 'collections'::regclass and mode = 'RowExclusiveLock' and pid <> pg_backend_pid()" +
        ' and database = (select oid from pg_database where datname = current_database())',
    );
    return rows[0].held > 0;
  }
  try {
    // At once: never wait for the lock, as the writer of `rowbase serve` does (busy_timeout).
    await knex.raw('pragma busy_timeout = 0');
    await knex.raw('begin immediate');
  } catch {
    return true;
  }
  await knex.raw('rollback');
  return false;
}

describeEachBackend('rowbase apply through SIGKILL', (backend: BackendName) => {
  let server: TestServer;
  let workspace: Workspace;
  let knex: Knex;
  before(async () => {
    server = await startTestServer({}, { backend });
    workspace = await Workspace.create();
    knex = knexOf(backend, server.databaseUrl);
  });
  after(async () => {
    await knex?.destroy();
    await workspace?.cleanUp();
    await server?.stop();
  });

  it('leaves the account as before the apply or as after it, never between', async () => {
    const client = await server.client('crashing');
    const accountId = (await server.store.findPrincipal(client.key as string))?.accountId as number;
    expect((await client.post('/v1/collections', { name: 'big' })).status).to.equal(201);
    for (let from = 0; from < ROWS; from += 5000) {
      await server.store.insertRows(
        accountId,
        'big',
        Array.from({ length: 5000 }, (_, n) => ({ n: from + n })),
      );
    }
    const collections = Array.from({ length: NEW_COLLECTIONS }, (_, n) => `  c${n}:\n    indexes: [{fields: [k], unique: true}]\n`).join(
      '',
    );
    const text = `collections:\n  big:\n    schema: {type: object, properties: {n: {type: integer}}}\n${collections}`;
    await writeFile(join(workspace.dir, 'rowbase.yaml'), text);
    const declared = parseDeclaration(text);
    const before = (await makePlan(server.store, accountId, declared, () => undefined, options)).changes;
    expect(before).to.have.length(1 + 2 * NEW_COLLECTIONS);

    const apply = spawn(rowbaseExecutable, ['apply', '-f', join(workspace.dir, 'rowbase.yaml'), '--account', 'crashing'], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: server.databaseUrl, LOG_LEVEL: 'silent' },
      stdio: 'ignore',
    });
    const exited = once(apply, 'exit');
    let ended = false;
    void exited.then(() => {
      ended = true;
    });
    // Killed once its transaction holds what it writes: polled, as the database shows nothing else of it.
    let during = false;
    while (!ended) {
      during = await writing(backend, knex);
      if (during) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    apply.kill('SIGKILL');
    await exited;

    const after = (await makePlan(server.store, accountId, declared, () => undefined, options)).changes;
    expect([before.length, 0], `killed ${during ? 'during' : 'after'} its transaction`).to.include(after.length);
    if (after.length > 0) expect(after).to.deep.equal(before);
    expect(during, 'the apply was killed while its transaction was under way').to.equal(true);
  });
});
