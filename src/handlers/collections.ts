import { forbidden } from '../errors.ts';
import type { Handlers } from './types.ts';

export const collectionHandlers: Handlers<'listCollections' | 'createCollection' | 'getCollection' | 'deleteCollection'> = {
  async listCollections({ principal }, { store }) {
    const listed = await store.listCollections(principal.accountId);
    // A key limited to named collections sees only those (operations.ts answers 404 for the others).
    const { collections } = principal;
    return { status: 200, body: collections ? listed.filter(({ name }) => collections.has(name)) : listed };
  },

  async createCollection({ principal, body }, { store, config }) {
    if (principal.collections && !principal.collections.has(body.name)) {
      throw forbidden(`The key is limited to collections it names, and ${body.name} is not one of them.`);
    }
    const collection = await store.createCollection(principal.accountId, body.name, config.maxCollectionsPerAccount);
    return { status: 201, body: collection, headers: { Location: `/v1/collections/${collection.name}` } };
  },

  async getCollection({ principal, path }, { store }) {
    return { status: 200, body: await store.getCollection(principal.accountId, path.collection_name) };
  },

  async deleteCollection({ principal, path }, { store }) {
    await store.deleteCollection(principal.accountId, path.collection_name);
    return { status: 204 };
  },
};
