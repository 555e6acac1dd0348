// The service's settings, read from the environment, each with a default that works on a fresh machine.
import { resolve } from 'node:path';

/** Settings read from the environment; every one has a default that works on a fresh machine. */
export interface Config {
  /** TCP port to listen on. `PORT`, default 8080; 0 picks a free port. */
  port: number;
  /** Address to listen on. `HOST`, default 127.0.0.1. */
  host: string;
  /** `sqlite:<file>` or `postgres://…`. `DATABASE_URL`, default `sqlite:./data/rowbase.sqlite`. */
  databaseUrl: string;
  /** pino level. `LOG_LEVEL`, default `info`. */
  logLevel: string;
  /**
   * One JSON line per request in the log, at `info` (docs/operations.md, "The access log"). `LOG_REQUESTS=on`;
   * default off.
   */
  logRequests: boolean;
  /**
   * Port of the Prometheus metrics listener (`GET /metrics`, docs/operations.md), a server of its own
   * beside the API's. `METRICS_PORT`; default none: no metrics are kept or served. 0 picks a free port.
   */
  metricsPort: number | undefined;
  /** Address of the metrics listener. `METRICS_HOST`, default `HOST`'s. */
  metricsHost: string;
  /** Largest request body in bytes. `ROWBASE_MAX_BODY_BYTES`, default 1 MiB. */
  maxBodyBytes: number;
  /**
   * Bytes of request bodies worked on at once: past it, requests wait, their bodies read but not yet
   * parsed, until those before them are answered (http/body-budget.ts, BodyBudget); a larger body runs alone.
   * `ROWBASE_MAX_BODY_BYTES_AT_ONCE`, default 1 MiB.
   */
  maxBodyBytesAtOnce: number;
  /** Deepest nesting of a JSON body. `ROWBASE_MAX_JSON_DEPTH`, default 64. */
  maxJsonDepth: number;
  /**
   * Most rows in one insert (openapi.yaml, insertRows: 1 to 1000 unless the server is configured with
   * another bound); a larger batch is 400. `ROWBASE_MAX_BATCH_ROWS`, default 1000, at least 1.
   */
  maxBatchRows: number;
  /**
   * Most operations in one batch (openapi.yaml, writeBatch); a larger batch is 400, before anything is
   * written. `ROWBASE_MAX_BATCH_OPERATIONS`, default 100, at least 1.
   */
  maxBatchOperations: number;
  /**
   * Most rows one change by filter may change (openapi.yaml, updateRows and deleteRows); a filter that
   * matches more is 400, before anything is written. `ROWBASE_MAX_ROWS_BY_FILTER`, default 10000, at least 1.
   */
  maxRowsByFilter: number;
  /**
   * How long the answer to a request sent with an Idempotency-Key is kept for its retries (openapi.yaml,
   * IdempotencyKey), then pruned. `ROWBASE_IDEMPOTENCY_KEY_SECONDS` × 1000, default one day.
   */
  idempotencyKeyMs: number;
  /** Count and limit requests by plan. `ROWBASE_METERING=off` turns it off (for benchmarks); default on. */
  metering: boolean;
  /**
   * Proxies in front of the service that each append the address they were reached from to
   * `X-Forwarded-For`: the client's address (which the rate per end user of a publishable key tells
   * anonymous callers apart by; docs/access.md) is read there, this many entries from its end, rather
   * than from the connection. `ROWBASE_TRUSTED_PROXIES`, default 0: the connection's address, and
   * `X-Forwarded-For` is not read, as any client may send one.
   */
  trustedProxies: number;
  /** Events each collection keeps for feed clients to resume from. `ROWBASE_EVENTS_RETAIN_COUNT`, default 10000. */
  eventsRetainCount: number;
  /** Events older than this are pruned. `ROWBASE_EVENTS_RETAIN_SECONDS` × 1000, default one day. */
  eventsRetainMs: number;
  /** How often old events are pruned. `ROWBASE_EVENTS_PRUNE_SECONDS` × 1000, default one minute. */
  eventsPruneIntervalMs: number;
  /**
   * How often expired rows are swept (docs/expiry.md): each is gone from reads at its expiry, and
   * deleted, with its event, by the next sweep. `ROWBASE_EXPIRY_SWEEP_MS`, default 10 s, 10 ms to one hour.
   */
  expirySweepIntervalMs: number;
  /** How often the feed pings each client; one that missed the last pong is dropped. `ROWBASE_FEED_PING_SECONDS` × 1000, default 30 s. */
  feedPingIntervalMs: number;
  /** Bytes a feed client may fall behind by before it is closed with 4008. `ROWBASE_FEED_MAX_BUFFER_BYTES`, default 4 MiB. */
  feedMaxBufferBytes: number;
  /**
   * Feed sockets, changes streams and waiting long polls one account may hold on one instance; more
   * upgrades and streams are refused with 429 `too_many_connections` until one closes, and a long poll
   * answers without waiting. `ROWBASE_FEED_MAX_SOCKETS_PER_ACCOUNT`, default 1000.
   */
  feedMaxSocketsPerAccount: number;
  /**
   * A collection gets a sort index for a field the first time a page is ordered by it, or filtered by
   * it (docs/api.md, "Filters and indexes"), once the collection holds this many rows; smaller ones are
   * sorted whole. `ROWBASE_SORT_INDEX_MIN_ROWS`, default 1000; 0 indexes every field ordered or filtered by.
   */
  sortIndexMinRows: number;
  /**
   * Collections one account may hold; creating another is 409 `conflict` until one is deleted. Bounds
   * what one account costs the database and what GET /v1/collections answers (the whole list, unpaged).
   * `ROWBASE_MAX_COLLECTIONS_PER_ACCOUNT`, default 10000.
   */
  maxCollectionsPerAccount: number;
  /**
   * Live keys (neither revoked nor expired) one account may hold for a key to make another over HTTP
   * (`POST /v1/keys`: 409 `conflict` past it; the CLI is not bound). Bounds what GET /v1/keys answers,
   * unpaged. `ROWBASE_MAX_KEYS_PER_ACCOUNT`, default 1000.
   */
  maxKeysPerAccount: number;
  /** Sort indexes a collection may have; ordering by any other field sorts it whole. `ROWBASE_SORT_INDEX_MAX`, default 16; 0 makes none. */
  sortIndexMax: number;
  /**
   * How long a page that sorts or filters a collection (rather than reading an index) may hold the
   * database, in ms: past it the read is stopped and answered 503 `query_timeout` (openapi.yaml).
   * `ROWBASE_QUERY_TIMEOUT_MS`, default 5000.
   */
  queryTimeoutMs: number;
  /**
   * Groups an aggregate answers at most (openapi.yaml, aggregateRows: `limit`, default and bound); the
   * database may find 100 times as many before the query is refused. `ROWBASE_MAX_GROUPS`, default 1000.
   */
  maxGroups: number;
  /**
   * How long a webhook's receiver has to answer a delivery, connecting included, in ms: past it the
   * attempt has failed and is retried (docs/webhooks.md). `ROWBASE_WEBHOOK_TIMEOUT_MS`, default 10000.
   */
  webhookTimeoutMs: number;
  /**
   * Whether a webhook may point at loopback, private, link-local, CGNAT, multicast and unique-local
   * addresses (cloud metadata included), for private deployments and tests. `ROWBASE_WEBHOOKS_ALLOW_PRIVATE`, default off.
   */
  webhooksAllowPrivate: boolean;
  /**
   * How long after each failed attempt of a webhook's delivery the next is made, in ms, before jitter
   * (docs/webhooks.md, "Retries"): past the last, the webhook is disabled. Default 5 s, 5 min, 30 min,
   * 2 h, 5 h, 10 h and 10 h: about a day and a quarter. Not read from the environment.
   */
  webhookRetryDelaysMs: readonly number[];
  /** Webhooks one account may hold; making another is 409 `conflict`. `ROWBASE_MAX_WEBHOOKS_PER_ACCOUNT`, default 20. */
  maxWebhooksPerAccount: number;
}

export const defaults: Config = {
  port: 8080,
  host: '127.0.0.1',
  databaseUrl: 'sqlite:./data/rowbase.sqlite',
  logLevel: 'info',
  logRequests: false,
  metricsPort: undefined,
  metricsHost: '127.0.0.1',
  maxBodyBytes: 1024 * 1024,
  maxBodyBytesAtOnce: 1024 * 1024,
  maxJsonDepth: 64,
  maxBatchRows: 1000,
  maxBatchOperations: 100,
  maxRowsByFilter: 10_000,
  idempotencyKeyMs: 24 * 60 * 60 * 1000,
  metering: true,
  trustedProxies: 0,
  eventsRetainCount: 10_000,
  eventsRetainMs: 24 * 60 * 60 * 1000,
  eventsPruneIntervalMs: 60 * 1000,
  expirySweepIntervalMs: 10 * 1000,
  feedPingIntervalMs: 30 * 1000,
  feedMaxBufferBytes: 4 * 1024 * 1024,
  feedMaxSocketsPerAccount: 1000,
  sortIndexMinRows: 1000,
  sortIndexMax: 16,
  maxCollectionsPerAccount: 10_000,
  maxKeysPerAccount: 1000,
  queryTimeoutMs: 5000,
  maxGroups: 1000,
  webhookTimeoutMs: 10_000,
  webhooksAllowPrivate: false,
  webhookRetryDelaysMs: [5, 300, 1800, 7200, 18_000, 36_000, 36_000].map((seconds) => seconds * 1000),
  maxWebhooksPerAccount: 20,
};

export class ConfigError extends Error {}

export function configFromEnv(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    port: integer(env, 'PORT', defaults.port, 0, 65535),
    host: env.HOST || defaults.host,
    databaseUrl: databaseUrl(env.DATABASE_URL || defaults.databaseUrl),
    logLevel: oneOf(env, 'LOG_LEVEL', defaults.logLevel, logLevels),
    logRequests: onOff(env, 'LOG_REQUESTS', defaults.logRequests),
    metricsPort: env.METRICS_PORT ? integer(env, 'METRICS_PORT', 0, 0, 65535) : undefined,
    metricsHost: env.METRICS_HOST || env.HOST || defaults.host,
    maxBodyBytes: integer(env, 'ROWBASE_MAX_BODY_BYTES', defaults.maxBodyBytes, 1, 2 ** 31),
    maxBodyBytesAtOnce: integer(env, 'ROWBASE_MAX_BODY_BYTES_AT_ONCE', defaults.maxBodyBytesAtOnce, 1, 2 ** 31),
    maxJsonDepth: integer(env, 'ROWBASE_MAX_JSON_DEPTH', defaults.maxJsonDepth, 1, 10_000),
    maxBatchRows: integer(env, 'ROWBASE_MAX_BATCH_ROWS', defaults.maxBatchRows, 1, 2 ** 31),
    maxBatchOperations: integer(env, 'ROWBASE_MAX_BATCH_OPERATIONS', defaults.maxBatchOperations, 1, 100_000),
    maxRowsByFilter: integer(env, 'ROWBASE_MAX_ROWS_BY_FILTER', defaults.maxRowsByFilter, 1, 2 ** 31),
    idempotencyKeyMs: seconds(env, 'ROWBASE_IDEMPOTENCY_KEY_SECONDS', defaults.idempotencyKeyMs, 1, 365 * DAY),
    metering: onOff(env, 'ROWBASE_METERING', defaults.metering),
    trustedProxies: integer(env, 'ROWBASE_TRUSTED_PROXIES', defaults.trustedProxies, 0, 100),
    eventsRetainCount: integer(env, 'ROWBASE_EVENTS_RETAIN_COUNT', defaults.eventsRetainCount, 1, 2 ** 31),
    eventsRetainMs: seconds(env, 'ROWBASE_EVENTS_RETAIN_SECONDS', defaults.eventsRetainMs, 1, 10 * 365 * DAY),
    eventsPruneIntervalMs: seconds(env, 'ROWBASE_EVENTS_PRUNE_SECONDS', defaults.eventsPruneIntervalMs, 1, DAY),
    expirySweepIntervalMs: integer(env, 'ROWBASE_EXPIRY_SWEEP_MS', defaults.expirySweepIntervalMs, 10, 3_600_000),
    feedPingIntervalMs: seconds(env, 'ROWBASE_FEED_PING_SECONDS', defaults.feedPingIntervalMs, 1, DAY),
    feedMaxBufferBytes: integer(env, 'ROWBASE_FEED_MAX_BUFFER_BYTES', defaults.feedMaxBufferBytes, 1024, 2 ** 31),
    feedMaxSocketsPerAccount: integer(env, 'ROWBASE_FEED_MAX_SOCKETS_PER_ACCOUNT', defaults.feedMaxSocketsPerAccount, 1, 2 ** 31),
    sortIndexMinRows: integer(env, 'ROWBASE_SORT_INDEX_MIN_ROWS', defaults.sortIndexMinRows, 0, 2 ** 31),
    sortIndexMax: integer(env, 'ROWBASE_SORT_INDEX_MAX', defaults.sortIndexMax, 0, 64),
    maxCollectionsPerAccount: integer(env, 'ROWBASE_MAX_COLLECTIONS_PER_ACCOUNT', defaults.maxCollectionsPerAccount, 1, 2 ** 31),
    maxKeysPerAccount: integer(env, 'ROWBASE_MAX_KEYS_PER_ACCOUNT', defaults.maxKeysPerAccount, 1, 2 ** 31),
    queryTimeoutMs: integer(env, 'ROWBASE_QUERY_TIMEOUT_MS', defaults.queryTimeoutMs, 1, 3_600_000),
    maxGroups: integer(env, 'ROWBASE_MAX_GROUPS', defaults.maxGroups, 1, 1_000_000),
    webhookTimeoutMs: integer(env, 'ROWBASE_WEBHOOK_TIMEOUT_MS', defaults.webhookTimeoutMs, 1, 3_600_000),
    webhooksAllowPrivate: onOff(env, 'ROWBASE_WEBHOOKS_ALLOW_PRIVATE', defaults.webhooksAllowPrivate),
    webhookRetryDelaysMs: defaults.webhookRetryDelaysMs,
    maxWebhooksPerAccount: integer(env, 'ROWBASE_MAX_WEBHOOKS_PER_ACCOUNT', defaults.maxWebhooksPerAccount, 1, 100_000),
  };
}

const DAY = 24 * 60 * 60;

/** A whole number of seconds from `min` to `max` in the environment, as milliseconds. */
const seconds = (env: NodeJS.ProcessEnv, name: string, fallbackMs: number, min: number, max: number) =>
  integer(env, name, fallbackMs / 1000, min, max) * 1000;

/** pino's levels, and `silent`. */
const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Connections to PostgreSQL per instance: `?pool_max=N` on its URL, default 10. */
export function postgresPoolMax(url: string): number {
  // Not `new URL`: pg takes URLs it refuses, such as postgresql://me@/db?host=/run/postgresql.
  const text = new URLSearchParams(url.split('?')[1] ?? '').get('pool_max');
  return text === null ? 10 : integer({ 'DATABASE_URL pool_max': text }, 'DATABASE_URL pool_max', 10, 1, 10_000);
}

/** `sqlite:<file>` or `postgres://…`; anything else is refused before a connection is tried. */
function databaseUrl(url: string): string {
  if (url.startsWith('sqlite:')) {
    if (url === 'sqlite:') throw new ConfigError('DATABASE_URL sqlite: needs the path of a file, as in sqlite:./data/rowbase.sqlite');
    return url;
  }
  if (!/^postgres(ql)?:\/\//.test(url)) {
    throw new ConfigError(`DATABASE_URL must start with sqlite: or postgres://, not ${JSON.stringify(url.split(':')[0])}`);
  }
  postgresPoolMax(url);
  return url;
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, fallback: T, allowed: readonly T[]): T {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  if (!(allowed as readonly string[]).includes(text))
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, not ${JSON.stringify(text)}`);
  return text as T;
}

/** Decimal digits only: `PORT=" "`, `0x10` or `1e3` are mistakes to report, not numbers to guess at. */
function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!/^-?\d+$/.test(text) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(text)}`);
  }
  return value;
}

function onOff(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  if (text === 'on') return true;
  if (text === 'off') return false;
  throw new ConfigError(`${name} must be on or off, not ${JSON.stringify(text)}`);
}

/** A database URL as shown to people: a SQLite file by its absolute path, a PostgreSQL URL without its password. */
export function withoutPassword(url: string): string {
  if (url.startsWith('sqlite:')) return `sqlite:${resolve(url.slice('sqlite:'.length))}`;
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.href;
  } catch {
    return 'postgres://…';
  }
}
