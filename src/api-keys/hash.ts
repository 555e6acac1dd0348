// API keys as the service keeps them: never the key itself, only its hash.
import { createHash } from 'node:crypto';

/** SHA-256 suits keys of 192 random bits: there is nothing to guess that a slow hash would protect. */
export const hashKey = (key: string) => createHash('sha256').update(key).digest('hex');
