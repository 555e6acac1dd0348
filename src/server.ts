import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app.ts';
import type { Config } from './config.ts';
import { openStore, type Store } from './db/store.ts';
import { createLogger, type Logger } from './log.ts';
import { createFeed, type Feed, type FeedOptions } from './ws/feed.ts';

export interface RunningServer {
  /** Base URL, e.g. http://127.0.0.1:8080 */
  url: string;
  port: number;
  server: Server;
  store: Store;
  /** The real-time feed on `GET /ws`. */
  feed: Feed;
  /**
   * Stops accepting, closes feed sockets with 1001, lets requests under way finish (each step up to
   * `graceMs`), then closes the database.
   */
  close(graceMs?: number): Promise<void>;
}

/** Hooks for what other parts of the service plug in; see FeedOptions.admit. */
export interface ServerHooks {
  admitFeed?: FeedOptions['admit'];
}

export async function startServer(
  config: Config,
  log: Logger = createLogger(config.logLevel),
  hooks: ServerHooks = {},
): Promise<RunningServer> {
  const store = await openStore(config.databaseUrl);
  const [openapi, asyncapi] = await Promise.all(
    ['openapi.yaml', 'asyncapi.yaml'].map((name) => readFile(new URL(`../${name}`, import.meta.url), 'utf8')),
  );
  const app = await createApp({ store, config, documents: { openapi, asyncapi } }, log);
  const server = createServer(app.callback());
  const feed = createFeed({ store, config, log, admit: hooks.admitFeed });
  server.on('upgrade', feed.handleUpgrade);
  server.listen(config.port, config.host);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  let closing: Promise<void> | undefined;
  const close = (graceMs = 10_000) => {
    closing ??= (async () => {
      const drained = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // Feed sockets are connections of the server too: drained waits for them.
      await feed.close(graceMs);
      const timer = setTimeout(() => server.closeAllConnections(), graceMs);
      await drained;
      clearTimeout(timer);
      await store.close();
    })();
    return closing;
  };
  return { url: `http://${config.host}:${port}`, port, server, store, feed, close };
}
