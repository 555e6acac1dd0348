// A benchmark's server on a free loopback port, telling run.ts its URL, closed by a signal.
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Listens on a free loopback port, prints `{"msg":"<name> is listening","url":…}` (the line run.ts
 * waits for, as it does for rowbase's), and closes on SIGTERM or SIGINT.
 */
export async function listen(server: Server, name: string, onClose: () => Promise<void> = async () => {}): Promise<void> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ msg: `${name} is listening`, url: `http://127.0.0.1:${port}` })}\n`);
  const stop = () => {
    server.closeAllConnections();
    server.close(() => void onClose().then(() => process.exit(0)));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
