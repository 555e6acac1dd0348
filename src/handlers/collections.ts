import type { Collection } from '../db/collections.ts';
import { answerOnce } from '../db/idempotency.ts';
import { forbidden } from '../errors.ts';
import type { Handlers, Result } from './types.ts';

export const collectionHandlers: Handlers<'listCollections' | 'createCollection' | 'getCollection' | 'deleteCollection'> = {
  async listCollections({ principal }, { store }) {
    const listed = await store.listCollections(principal.accountId);
    // A key limited to named collections sees only those (operations.ts answers 404 for the others).
    const { collections } = principal;
    return { status: 200, body: collections ? listed.filter(({ name }) => collections.has(name)) : listed };
  },

  async createCollection(input, { store, config }) {
    const { principal, body } = input;
    if (principal.collections && !principal.collections.has(body.name)) {
      throw forbidden(`The key is limited to collections it names, and ${body.name} is not one of them.`);
    }
    const once = input.once && answerOnce(input.once, answerCreated);
    return answerCreated(await store.createCollection(principal.accountId, body.name, config.maxCollectionsPerAccount, undefined, once));
  },

  async getCollection({ principal, path }, { store }) {
    return { status: 200, body: await store.getCollection(principal.accountId, path.collection_name) };
  },

  async deleteCollection({ principal, path, once }, { store }) {
    await store.deleteCollection(principal.accountId, path.collection_name, once && answerOnce(once, answerDeleted));
    return answerDeleted();
  },
};

// The answers of the writes, each made by one function, which a write sent with an Idempotency-Key also
// hands the store, to keep the answer it makes (http/request.ts).

function answerCreated(collection: Collection): Result {
  return { status: 201, body: collection, headers: { Location: `/v1/collections/${collection.name}` } };
}

function answerDeleted(): Result {
  return { status: 204 };
}
