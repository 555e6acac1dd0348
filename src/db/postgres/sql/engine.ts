// PostgreSQL's SQL of the engine: the announcement of a change to every instance.

/** Announces a change to every instance on commit (rows.ts, listenForChanges): the channel, then `<instance> <collection id>`. */
export const notifySql = 'select pg_notify(?, ?)';

/** The channel of the NOTIFYs; the payload is `<instance> <collection id>`. */
export const CHANNEL = 'rowbase_changes';
