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
  /** Largest request body in bytes. `ROWBASE_MAX_BODY_BYTES`, default 1 MiB. */
  maxBodyBytes: number;
  /** Deepest nesting of a JSON body. `ROWBASE_MAX_JSON_DEPTH`, default 64. */
  maxJsonDepth: number;
  /** Count and limit requests by plan. `ROWBASE_METERING=off` turns it off (for benchmarks); default on. */
  metering: boolean;
}

export const defaults: Config = {
  port: 8080,
  host: '127.0.0.1',
  databaseUrl: 'sqlite:./data/rowbase.sqlite',
  logLevel: 'info',
  maxBodyBytes: 1024 * 1024,
  maxJsonDepth: 64,
  metering: true,
};

export class ConfigError extends Error {}

export function configFromEnv(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    port: integer(env, 'PORT', defaults.port, 0, 65535),
    host: env.HOST || defaults.host,
    databaseUrl: env.DATABASE_URL || defaults.databaseUrl,
    logLevel: env.LOG_LEVEL || defaults.logLevel,
    maxBodyBytes: integer(env, 'ROWBASE_MAX_BODY_BYTES', defaults.maxBodyBytes, 1, 2 ** 31),
    maxJsonDepth: integer(env, 'ROWBASE_MAX_JSON_DEPTH', defaults.maxJsonDepth, 1, 10_000),
    metering: onOff(env, 'ROWBASE_METERING', defaults.metering),
  };
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) {
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
