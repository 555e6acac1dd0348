// The handlers of the `expiry` tag: a collection's time to live, read, set and removed (docs/expiry.md).
import { ttlNotFound } from '../errors.ts';
import type { Ttl } from '../expiry/ttl.ts';
import { answerOnce } from '../idempotency/answers.ts';
import type { Handlers, Result } from './types.ts';

export const expiryHandlers: Handlers<'getCollectionTtl' | 'putCollectionTtl' | 'deleteCollectionTtl'> = {
  async getCollectionTtl({ principal, path }, { store }) {
    const ttl = await store.getTtl(principal.accountId, path.collection_name);
    if (!ttl) throw ttlNotFound(path.collection_name);
    return answerTtl(ttl);
  },

  async putCollectionTtl({ principal, path, body, once }, { store }) {
    return answerTtl(
      await store.putTtl(principal.accountId, path.collection_name, { field: body.field }, once && answerOnce(once, answerTtl)),
    );
  },

  async deleteCollectionTtl({ principal, path, once }, { store }) {
    await store.deleteTtl(principal.accountId, path.collection_name, once && answerOnce(once, answerDeleted));
    return answerDeleted();
  },
};

function answerTtl(ttl: Ttl): Result {
  return { status: 200, body: ttl };
}

function answerDeleted(): Result {
  return { status: 204 };
}
