// Usage counts survive restarts: all of them through SIGTERM, all but the last second's through SIGKILL
// (contract.md, "Plans and usage"). Real `rowbase serve` processes over one SQLite file.
import { expect } from 'chai';
import { openStore } from '../../src/db/open-store.ts';
import { Client } from '../support/client.ts';
import { pollUntil, Workspace } from '../support/process.ts';

describe('usage counts across restarts', () => {
  let workspace: Workspace;
  beforeEach(async () => {
    workspace = await Workspace.create();
  });
  afterEach(() => workspace.cleanUp());

  /** A key of a new account on a plan with room to spare and no rate limit. */
  async function meteredKey(): Promise<string> {
    const plan = await workspace.run(['plans', 'set', 'metered', '--quota', '1000', '--period', 'month', '--no-rate']);
    expect(plan.code, plan.stderr).to.equal(0);
    const created = await workspace.run(['keys', 'create', '--account', 'counted', '--plan', 'metered', '--json']);
    expect(created.code, created.stderr).to.equal(0);
    return JSON.parse(created.stdout).key;
  }

  async function usedAfterRestart(key: string): Promise<number> {
    const restarted = await workspace.serve();
    const usage = await new Client(restarted.url, key).get<{ used: number }>('/v1/usage');
    expect(usage.status).to.equal(200);
    return usage.body.used;
  }

  it('keeps every count through SIGTERM', async () => {
    const key = await meteredKey();
    const server = await workspace.serve();
    const client = new Client(server.url, key);
    for (let i = 0; i < 7; i++) expect((await client.get('/v1/collections')).status).to.equal(200);
    server.signal('SIGTERM');
    expect(await server.exited).to.deep.equal({ code: 0, signal: null });
    expect(await usedAfterRestart(key)).to.equal(8, 'the 7 requests before SIGTERM and the one that asks');
  });

  it('writes counts within about a second, so SIGKILL after that loses none', async () => {
    const key = await meteredKey();
    const server = await workspace.serve();
    const client = new Client(server.url, key);
    for (let i = 0; i < 5; i++) expect((await client.get('/v1/collections')).status).to.equal(200);
    const store = await openStore(workspace.databaseUrl);
    try {
      // The server adds its counts to the database every second: seen there within three, on a loaded host.
      await pollUntil(async () => Number((await store.knex('usage_counts').sum({ total: 'count' }).first())?.total) === 5, 3000);
    } finally {
      await store.close();
    }
    server.signal('SIGKILL');
    expect((await server.exited).signal).to.equal('SIGKILL');
    expect(await usedAfterRestart(key)).to.equal(6);
  });
});
