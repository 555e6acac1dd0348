// idle-server and idle-server-postgres (issue 63: at most 100 MB resident): the service as an operator
// starts it, `bin/rowbase serve` with none of the bench's settings, on a database of its own holding only
// a key (made by the CLI) and one collection (made over HTTP), then `idleServerSeconds` of nothing. Its
// resident memory is read then (VmRSS), with its peak since it started (VmHWM: the start's own).
import { createKey } from './key.ts';
import { type IdleServerMeasured, type Measured, monotonicUs } from './measure.ts';
import { memoryKb, startServer, stop } from './processes.ts';
import { createCollections } from './seed.ts';
import type { Settings } from './settings.ts';

/** One idle server on `databaseUrl` (empty, or made for it), from its start to its stop. */
export async function measureIdleServer(databaseUrl: string, settings: Settings): Promise<{ measured: Measured; peakRssKb: number }> {
  const key = await createKey(databaseUrl);
  const started = monotonicUs();
  const server = await startServer('bin/rowbase', ['serve'], 'rowbase is listening', {
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
  });
  try {
    await createCollections(server.url, key, ['idle']);
    await new Promise((resolve) => setTimeout(resolve, settings.idleServerSeconds * 1000));
    const ended = monotonicUs();
    const idle: IdleServerMeasured = {
      seconds: settings.idleServerSeconds,
      rssKb: memoryKb(server.pid, 'VmRSS'),
      hwmKb: memoryKb(server.pid, 'VmHWM'),
    };
    const measured: Measured = {
      requests: 1,
      rows: 0,
      seconds: (ended - started) / 1e6,
      p50Ms: Number.NaN,
      p99Ms: Number.NaN,
      failures: 0,
      statusCodes: { 201: 1 },
      windowUs: [started, ended],
      idle,
    };
    return { measured, peakRssKb: idle.hwmKb };
  } finally {
    await stop(server.child, settings.stopGraceMs);
  }
}
