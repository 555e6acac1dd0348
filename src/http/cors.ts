// CORS, for browsers (the Fetch standard, "CORS protocol"; openapi.yaml, `info`, "CORS"; docs/api.md,
// "HTTP"; docs/access.md): what a page may send and read, and whose pages a publishable key serves. Three
// stages of app.ts use it, each in its own file: preflight.ts answers a browser's preflight under /v1,
// before any key is asked for (a preflight carries none) or counted; readable-refusals.ts lets a page read
// why its key, token or origin was refused; allow-origin.ts, once the key is known, lets a page of one of
// a publishable key's origins read the answer, and refuses the others.
// A secret key never gets CORS headers: a browser then cannot read its answers, and a secret key does
// not belong in a page.
import type { ServerResponse } from 'node:http';
import type { Principal } from '../db/accounts/keys.ts';
import { ApiError } from '../errors.ts';

/**
 * Every request header the API reads (openapi.yaml's header parameters, the key's two headers, a body's
 * type and encoding, and the request's id), which a page may then send. `prefer` is none of them yet,
 * and allowed so that a page sending it keeps working when one is.
 */
export const ALLOWED_HEADERS = [
  'authorization',
  'x-api-key',
  'content-type',
  'content-encoding',
  'if-match',
  'if-none-match',
  'idempotency-key',
  'prefer',
  'x-request-id',
  'last-event-id',
].join(', ');

/** Every response header of openapi.yaml that a page may read, besides those the Fetch standard lets it read always. */
const EXPOSED_HEADERS = [
  'ETag',
  'Link',
  'Location',
  'Rowbase-Seq',
  'Rowbase-Total-Count',
  'Accept-Patch',
  'Allow',
  'WWW-Authenticate',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'Retry-After',
  'X-Request-Id',
  'Idempotent-Replayed',
  'Rowbase-Wait-Skipped',
].join(', ');

/** The methods of the API, allowed in a preflight to a path it does not have (whose request then answers 404). */
export const API_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE';

/** How long a browser may keep a preflight's answer, in seconds. */
export const MAX_AGE = '600';

/** Lets a page of `origin` read the answer `response` is to be: its body and the headers of EXPOSED_HEADERS. */
export function readableBy(response: ServerResponse, origin: string): void {
  response.setHeader('Access-Control-Allow-Origin', origin);
  response.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
  response.setHeader('Vary', 'Origin');
}

/** Whether a page of `origin` may use the publishable key of `principal`: the key lists it. The feed's upgrade asks too (feed/upgrade.ts). */
export const allows = (principal: Principal, origin: string) => principal.origins?.has(origin) === true;

export const originNotAllowed = (origin: string) =>
  new ApiError('origin_not_allowed', `The key is not for pages of ${origin}: it lists the origins it may be used from.`, {
    headers: { Vary: 'Origin' },
  });
