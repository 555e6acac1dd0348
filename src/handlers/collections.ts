// The handlers of the `collections` tag: collections, their schemas and indexes.
import type { Collection } from '../db/collections/collections.ts';
import type { Index } from '../db/collections/indexes.ts';
import type { RowSchema } from '../db/collections/schemas.ts';
import { forbidden, validationFailed } from '../errors.ts';
import { answerOnce } from '../idempotency/answers.ts';
import { checkRowSchema } from '../schema/check.ts';
import type { Handlers, Result } from './types.ts';

export const collectionHandlers: Handlers<
  | 'listCollections'
  | 'createCollection'
  | 'getCollection'
  | 'deleteCollection'
  | 'getCollectionSchema'
  | 'putCollectionSchema'
  | 'deleteCollectionSchema'
  | 'listIndexes'
  | 'createIndex'
  | 'deleteIndex'
> = {
  async listCollections({ principal }, { store }) {
    const listed = await store.listCollections(principal.accountId);
    // A key limited to named collections sees only those (http/handle.ts answers 404 for the others).
    const { collections } = principal;
    return { status: 200, body: collections ? listed.filter(({ name }) => collections.has(name)) : listed };
  },

  async createCollection(input, { store, config }) {
    const { principal, body } = input;
    if (principal.collections && !principal.collections.has(body.name)) {
      throw forbidden(`The key is limited to collections it names, and ${body.name} is not one of them.`);
    }
    const schema = body.schema === undefined ? undefined : checkRowSchema(body.schema, '/schema');
    const once = input.once && answerOnce(input.once, answerCreated);
    return answerCreated(
      await store.createCollection(principal.accountId, body.name, config.maxCollectionsPerAccount, undefined, once, schema),
    );
  },

  async getCollection({ principal, path }, { store }) {
    return { status: 200, body: await store.getCollection(principal.accountId, path.collection_name) };
  },

  async deleteCollection({ principal, path, once }, { store }) {
    await store.deleteCollection(principal.accountId, path.collection_name, once && answerOnce(once, answerDeleted));
    return answerDeleted();
  },

  async getCollectionSchema({ principal, path }, { store }) {
    return { status: 200, body: await store.getSchema(principal.accountId, path.collection_name) };
  },

  async putCollectionSchema({ principal, path, body, once }, { store }) {
    const schema = checkRowSchema(body, '');
    return answerSchema(await store.putSchema(principal.accountId, path.collection_name, schema, once && answerOnce(once, answerSchema)));
  },

  async deleteCollectionSchema({ principal, path, once }, { store }) {
    await store.deleteSchema(principal.accountId, path.collection_name, once && answerOnce(once, answerDeleted));
    return answerDeleted();
  },

  async listIndexes({ principal, path }, { store }) {
    return { status: 200, body: await store.listIndexes(principal.accountId, path.collection_name) };
  },

  async createIndex({ principal, path, body, once }, { store }) {
    const collection = path.collection_name;
    const answer = (index: Index) => answerIndexCreated(collection, index);
    const search = body.type === 'search';
    if (search && body.unique) {
      throw validationFailed('A search index is not unique.', [
        { in: 'body', name: '/unique', message: 'must not be true for a search index: declare an index of values for that' },
      ]);
    }
    const index = await store.createIndex(
      principal.accountId,
      collection,
      body.fields,
      body.unique ?? false,
      once && answerOnce(once, answer),
      search,
    );
    // Pages ordered or filtered by an index of values' fields are read through sort indexes from now on
    // (and of two fields or more, by the first's equality in the order of the second: slotsOfIndex).
    if (!search) await store.sortByIndex(principal.accountId, collection, index.fields);
    return answer(index);
  },

  async deleteIndex({ principal, path, once }, { store }) {
    await store.deleteIndex(principal.accountId, path.collection_name, path.index_name, once && answerOnce(once, answerDeleted));
    return answerDeleted();
  },
};

// The answers of the writes, each made by one function, which a write sent with an Idempotency-Key also
// hands the store, to keep the answer it makes (http/idempotency.ts).

function answerCreated(collection: Collection): Result {
  return { status: 201, body: collection, headers: { Location: `/v1/collections/${collection.name}` } };
}

function answerDeleted(): Result {
  return { status: 204 };
}

function answerIndexCreated(collection: string, index: Index): Result {
  return { status: 201, body: index, headers: { Location: `/v1/collections/${collection}/indexes/${index.name}` } };
}

function answerSchema(schema: RowSchema): Result {
  return { status: 200, body: schema };
}
