// The handlers of the `relations` tag: a collection's relations, declared, read and removed.
import type { Relation } from '../db/relations/links.ts';
import { answerOnce } from '../idempotency/answers.ts';
import type { Handlers, Result } from './types.ts';

export const relationHandlers: Handlers<'listRelations' | 'getRelation' | 'putRelation' | 'deleteRelation'> = {
  async listRelations({ principal, path }, { store }) {
    return { status: 200, body: await store.listRelations(principal.accountId, path.collection_name) };
  },

  async getRelation({ principal, path }, { store }) {
    return { status: 200, body: await store.getRelation(principal.accountId, path.collection_name, path.relation_name) };
  },

  async putRelation({ principal, path, body, once }, { store }) {
    const collection = path.collection_name;
    const relation = await store.putRelation(
      principal.accountId,
      collection,
      path.relation_name,
      body,
      once && answerOnce(once, answerRelation),
    );
    // The rows naming a row are found through the field's sort index (docs/relations.md).
    await store.sortBy(principal.accountId, collection, body.field);
    return answerRelation(relation);
  },

  async deleteRelation({ principal, path, once }, { store }) {
    await store.deleteRelation(principal.accountId, path.collection_name, path.relation_name, once && answerOnce(once, answerDeleted));
    return answerDeleted();
  },
};

function answerRelation(relation: Relation): Result {
  return { status: 200, body: relation };
}

function answerDeleted(): Result {
  return { status: 204 };
}
