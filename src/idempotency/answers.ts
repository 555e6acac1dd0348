// Idempotency-Key (openapi.yaml, IdempotencyKey; the IETF httpapi draft): what a request sent with a key
// is answered with, as a handler makes it, as it is stored, and as a retry finds it; the data layer stores
// it (db/rows/idempotency.ts).
import { ApiError } from '../errors.ts';

/** An answer as stored and replayed: its status, its own headers (not the RateLimit-* of the request) and its body. */
export interface StoredAnswer {
  status: number;
  headers: Record<string, string>;
  /** JSON text; null for none. */
  body: string | null;
}

/** The stored answer to a key, with the hash of the request it answered. */
export interface FoundAnswer extends StoredAnswer {
  hash: string;
}

/** A write sent with an Idempotency-Key: the key, its request's hash, and how the write's result is answered. */
export interface Once<R> {
  key: string;
  hash: string;
  /** When the request came, and when its answer expires (ISO 8601). */
  at: string;
  expiresAt: string;
  /** The answer to the write's result, as the handler makes it (storedAnswer() makes it what is stored). */
  answer(result: R): Answer;
}

/**
 * 409 for a key whose first request is still running: on this instance (http/idempotency.ts), or on
 * another, which holds it (Dialect.holdOnce). The retry may be sent again once that request is answered.
 */
export const onceInProgress = () =>
  new ApiError('idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed; retry once it is answered.');

/**
 * Thrown from a write whose key's answer another request stored meanwhile (it committed between this
 * request's look for an answer and its own commit): this write rolls back, and the request is answered
 * with the stored answer instead (http/idempotency.ts). A 409 should it ever reach a client.
 */
export class OnceTaken extends ApiError {
  constructor() {
    super('idempotency_key_in_use', 'A request with this Idempotency-Key was answered meanwhile; retry to read its answer.');
  }
}

export type OnceRequest = Omit<Once<never>, 'answer'>;

/** An answer as a handler makes it (handlers/types.ts, Result): its body JSON text, or a value for JSON. */
export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

/**
 * The request's key (`once`, from the handler's input, when the request sent one) with how its write's
 * result is answered: what the write stores in its transaction, and what a retry is answered with.
 */
export function answerOnce<R>(once: OnceRequest, answer: (result: R) => Answer): Once<R> {
  // The handler's own function, made once: a function made here would be made, and named, per request.
  // Each member named: V8 copies an object spread member by member, several times slower.
  return { key: once.key, hash: once.hash, at: once.at, expiresAt: once.expiresAt, answer };
}

/** An answer as it is stored: its body as JSON text, or null for none. */
export const storedAnswer = ({ status, headers = {}, body }: Answer): StoredAnswer => ({
  status,
  headers,
  body: body === undefined ? null : typeof body === 'string' ? body : JSON.stringify(body),
});
