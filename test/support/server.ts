// The real server, in this process, on an ephemeral port, over a fresh SQLite file in a temp folder.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Config, defaults } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { type RunningServer, type ServerOptions, startServer } from '../../src/server.ts';
import { Client } from './client.ts';

export interface TestServer extends RunningServer {
  dir: string;
  databaseUrl: string;
  /**
   * A client with a new key of `account` (a new account unless one of that name exists), on `plan`:
   * by default one with no rate limit and a quota no test reaches, so tests that fire many requests at
   * once are not refused for it. Usage tests make plans of their own.
   */
  client(account?: string, plan?: string): Promise<Client>;
  /** A client with no key. */
  anonymous(): Client;
  stop(): Promise<void>;
}

let accounts = 0;
export const TEST_PLAN = 'test-unlimited';

export async function startTestServer(overrides: Partial<Config> = {}, options: ServerOptions = {}): Promise<TestServer> {
  const dir = await mkdtemp(join(tmpdir(), 'rowbase-test-'));
  const databaseUrl = `sqlite:${join(dir, 'rowbase.sqlite')}`;
  const running = await startServer(
    { ...defaults, port: 0, databaseUrl, logLevel: 'silent', ...overrides },
    createLogger('silent'),
    options,
  );
  await running.store.setPlan({ name: TEST_PLAN, quota: 1_000_000_000, period: 'month', rate: null });
  return {
    ...running,
    dir,
    databaseUrl,
    async client(account = `account-${++accounts}`, plan = TEST_PLAN) {
      const { key } = await running.store.createKey(account, plan);
      return new Client(running.url, key);
    },
    anonymous: () => new Client(running.url),
    async stop() {
      await running.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
