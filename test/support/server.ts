// The real server, in this process, on an ephemeral port, over a fresh SQLite file in a temp folder.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Config, defaults } from '../../src/config.ts';
import { createLogger, type Logger } from '../../src/log.ts';
import { type RunningServer, type ServerHooks, startServer } from '../../src/server.ts';
import { Client } from './client.ts';

export interface TestServer extends RunningServer {
  dir: string;
  databaseUrl: string;
  /** A client with a new key of `account` (a new account unless one of that name exists). */
  client(account?: string): Promise<Client>;
  /** A client with no key. */
  anonymous(): Client;
  stop(): Promise<void>;
}

let accounts = 0;

export interface TestServerOptions {
  /** Default: silent. */
  log?: Logger;
  hooks?: ServerHooks;
}

export async function startTestServer(overrides: Partial<Config> = {}, options: TestServerOptions = {}): Promise<TestServer> {
  const dir = await mkdtemp(join(tmpdir(), 'rowbase-test-'));
  const databaseUrl = `sqlite:${join(dir, 'rowbase.sqlite')}`;
  const config = { ...defaults, port: 0, databaseUrl, logLevel: 'silent', ...overrides };
  const running = await startServer(config, options.log ?? createLogger('silent'), options.hooks);
  return {
    ...running,
    dir,
    databaseUrl,
    async client(account = `account-${++accounts}`) {
      const { key } = await running.store.createKey(account);
      return new Client(running.url, key);
    },
    anonymous: () => new Client(running.url),
    async stop() {
      await running.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
