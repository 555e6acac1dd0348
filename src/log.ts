import { pino } from 'pino';

/** One JSON logger for the process; keys never appear in it (see redact). */
export function createLogger(level: string) {
  return pino({
    level,
    base: { service: 'rowbase' },
    redact: ['req.headers.authorization', 'req.headers["x-api-key"]', 'apiKey'],
  });
}

export type Logger = ReturnType<typeof createLogger>;
