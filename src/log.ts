// The process's one JSON logger (pino), which never writes a key.
import { type DestinationStream, pino } from 'pino';

/** One JSON logger for the process, to stdout unless given a `destination`; keys never appear in it (see redact). */
export function createLogger(level: string, destination?: DestinationStream) {
  const options = {
    level,
    base: { service: 'rowbase' },
    // `err.input`: what a URL that did not parse was given, perhaps a request target with its `api_key`.
    redact: ['req.headers.authorization', 'req.headers["x-api-key"]', 'apiKey', 'err.input'],
  };
  return destination ? pino(options, destination) : pino(options);
}

export type Logger = ReturnType<typeof createLogger>;
