import { unavailable } from '../errors.ts';
import type { Handlers } from './types.ts';

export const serviceHandlers: Handlers<'getHealth' | 'getOpenApiDocument' | 'getAsyncApiDocument'> = {
  async getHealth(_input, { store }) {
    try {
      await store.ping();
    } catch {
      throw unavailable();
    }
    return { status: 200, body: { ok: true, service: 'rowbase' } };
  },

  getOpenApiDocument(_input, { documents }) {
    return { status: 200, body: documents.openapi, contentType: 'application/yaml; charset=utf-8' };
  },

  getAsyncApiDocument(_input, { documents }) {
    return { status: 200, body: documents.asyncapi, contentType: 'application/yaml; charset=utf-8' };
  },
};
