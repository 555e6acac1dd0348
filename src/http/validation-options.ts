// Ajv's options for request validation, shared by `npm run generate` and the tests.
import type { Options } from 'ajv';

/**
 * Ajv options for request validation, shared by `npm run generate` (which compiles the validators) and
 * the server (which loads them). Formats are not checked on requests: every bound we rely on is a
 * pattern, a length or a minimum and maximum.
 */
export const requestAjvOptions: Options = {
  allErrors: true,
  useDefaults: true,
  validateFormats: false,
  strict: false,
};
