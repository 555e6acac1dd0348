import { unavailable } from '../errors.ts';
import type { Handlers } from './types.ts';

export const serviceHandlers: Handlers<'getHealth'> = {
  async getHealth(_input, { store }) {
    try {
      await store.ping();
    } catch {
      throw unavailable();
    }
    return { status: 200, body: { ok: true, service: 'rowbase' } };
  },
};
