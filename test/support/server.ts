// The real server, in this process, on an ephemeral port, over a fresh database of its own: a SQLite
// file in a temp folder, or a new PostgreSQL database (see backends.ts).
import { type Config, defaults } from '../../src/config.ts';
import type { NewKey } from '../../src/db/accounts/keys.ts';
import { createLogger, type Logger } from '../../src/log.ts';
import { type RunningServer, type ServerOptions, startServer } from '../../src/server.ts';
import { type BackendName, createDatabase, type TestDatabase } from './backends.ts';
import { Client } from './client.ts';

export interface TestServer extends RunningServer {
  backend: BackendName;
  databaseUrl: string;
  /**
   * A client with a new key of `account` (a new account unless one of that name exists), on `plan`:
   * by default one with no rate limit and a quota no test reaches, so tests that fire many requests at
   * once are not refused for it. Usage tests make plans of their own. The key has `limits` (default:
   * an admin key of every collection that never expires).
   */
  client(account?: string, plan?: string, limits?: NewKey): Promise<Client>;
  /** A client with no key. */
  anonymous(): Client;
  stop(): Promise<void>;
}

let accounts = 0;
export const TEST_PLAN = 'test-unlimited';

export interface TestServerOptions extends ServerOptions {
  /** Default sqlite. */
  backend?: BackendName;
  /** Default: silent. */
  log?: Logger;
  /** The database to serve, of `backend`, dropped by stop(); by default a new one, migrated already (createDatabase()). */
  database?: TestDatabase;
}

export async function startTestServer(overrides: Partial<Config> = {}, options: TestServerOptions = {}): Promise<TestServer> {
  const backend = options.backend ?? 'sqlite';
  const database = options.database ?? (await createDatabase(backend, { migrated: true }));
  const config = { ...defaults, port: 0, databaseUrl: database.url, logLevel: 'silent', ...overrides };
  const running = await startServer(config, options.log ?? createLogger('silent'), options);
  // The tests' requests and this server share one event loop. A test that holds it longer than Node's
  // keepAliveTimeout (5 s: a large body built on a loaded host) sends its next request on a kept-alive
  // connection that the server's timer, due meanwhile, closes right after, unread: ECONNRESET (seen once
  // in CI, in costly-requests). A client's loop is never the server's but here.
  running.server.keepAliveTimeout = 60_000;
  await running.store.setPlan({ name: TEST_PLAN, quota: 1_000_000_000, period: 'month', rate: null });
  return {
    ...running,
    backend,
    databaseUrl: database.url,
    async client(account = `account-${++accounts}`, plan = TEST_PLAN, limits = {}) {
      const { key } = await running.store.createKey(account, plan, limits);
      return new Client(running.url, key);
    },
    anonymous: () => new Client(running.url),
    async stop() {
      await running.close();
      await database.drop();
    },
  };
}

/**
 * Runs `test` with a test server of its own (startTestServer's `overrides` and `options`), stopped
 * after it, whatever it did: what it answers.
 */
export async function withTestServer<T>(
  overrides: Partial<Config>,
  options: TestServerOptions,
  test: (server: TestServer) => Promise<T>,
): Promise<T> {
  const server = await startTestServer(overrides, options);
  try {
    return await test(server);
  } finally {
    await server.stop();
  }
}

/**
 * A `read` key of the account `expiring` that expires `inMs` (default 2.5 s) from now, time enough to
 * subscribe on a loaded host, and `owner`, another key of the account, which made the collection `notes`.
 */
export async function expiringKey(server: TestServer, inMs = 2500): Promise<{ owner: Client; key: string; expiresAt: number }> {
  const owner = await server.client('expiring');
  await owner.post('/v1/collections', { name: 'notes' });
  const expiresAt = Date.now() + inMs;
  const { key } = await server.store.createKey('expiring', TEST_PLAN, { scope: 'read', expires_at: new Date(expiresAt).toISOString() });
  return { owner, key, expiresAt };
}
