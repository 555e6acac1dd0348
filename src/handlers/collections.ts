import type { Handlers } from './types.ts';

export const collectionHandlers: Handlers<'listCollections' | 'createCollection' | 'getCollection' | 'deleteCollection'> = {
  async listCollections({ principal }, { store }) {
    return { status: 200, body: await store.listCollections(principal.accountId) };
  },

  async createCollection({ principal, body }, { store, config }) {
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
