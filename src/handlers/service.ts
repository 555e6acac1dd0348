// The handlers of the `service` tag: the service's health and readiness (docs/operations.md).
import { ApiError, unavailable } from '../errors.ts';
import type { Handlers } from './types.ts';

/** How long readiness waits for the database's answer before it answers 503 (openapi.yaml, getReadiness). */
const READY_WAIT_MS = 2000;

const up = { status: 200, body: { ok: true, service: 'rowbase' } } as const;

export const serviceHandlers: Handlers<'getHealth' | 'getReadiness'> = {
  // Liveness: the process answers, with no query (openapi.yaml, getHealth).
  async getHealth(_input, { store }) {
    if (!store.isOpen()) throw unavailable('The service is shutting down.');
    return up;
  },

  // Readiness: a query through the writer's queue or the pool, bounded in time (openapi.yaml, getReadiness).
  async getReadiness(_input, { store }) {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(unavailable(`The database did not answer within ${READY_WAIT_MS / 1000} seconds.`)), READY_WAIT_MS);
    });
    try {
      await Promise.race([store.ping(), late]);
    } catch (error) {
      throw error instanceof ApiError && error.code === 'unavailable' ? error : unavailable();
    } finally {
      clearTimeout(timer);
    }
    return up;
  },
};
