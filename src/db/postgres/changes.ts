// PostgreSQL: changes announced to every instance on the database. Each change is a `pg_notify` inside
// its transaction (PostgreSQL delivers it on commit, never on rollback), which every instance LISTENs
// for on a connection of its own; this process hears its own changes in-process already (changes.ts).
import pg from 'pg';
import type { Logger } from '../../log.ts';
import type { Changes } from '../changes.ts';

/** The channel of the NOTIFYs; the payload is `<instance> <collection id>`. */
export const CHANNEL = 'rowbase_changes';

/**
 * Listens for other instances' changes on a connection of its own (LISTEN does not mix with a pool),
 * and comes back after losing it: then everything is announced as changed, so readers catch up from the
 * events table. Returns a function that stops listening.
 */
export function listenForChanges(url: string, changes: Changes, log?: Logger): () => Promise<void> {
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let attempt = 0;

  const connect = async () => {
    const connection = new pg.Client({ connectionString: url });
    client = connection;
    connection.on('notification', ({ payload = '' }) => {
      const [instance, collectionId] = payload.split(' ');
      if (instance !== changes.instance) changes.emit('change', Number(collectionId));
    });
    connection.on('error', (error) => log?.warn({ err: error }, 'change listener lost its connection'));
    connection.on('end', () => {
      if (client === connection && !stopped) reconnect();
    });
    try {
      await connection.connect();
      await connection.query(`listen ${CHANNEL}`);
      attempt = 0;
      changes.emit('all');
    } catch (error) {
      log?.warn({ err: error }, 'change listener could not connect');
      await connection.end().catch(() => {});
      if (client === connection && !stopped) reconnect();
    }
  };
  const reconnect = () => {
    client = undefined;
    clearTimeout(retry);
    retry = setTimeout(connect, Math.min(5000, 100 * 2 ** attempt++));
    retry.unref();
  };

  void connect();
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await client?.end().catch(() => {});
  };
}
