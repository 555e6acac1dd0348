import { validationFailed } from '../errors.ts';
import type { Handlers } from './types.ts';

export const rowHandlers: Handlers<'listRows' | 'insertRows' | 'getRow' | 'updateRow' | 'deleteRow'> = {
  async listRows({ principal, path, query }, { store }) {
    const page = { limit: query.limit, offset: query.offset, orderBy: query.order_by, order: query.order };
    const { json, seq } = await store.listRows(principal.accountId, path.collection_name, page);
    // Where the feed resumes from this page with no change missed or repeated (openapi.yaml, Rowbase-Seq).
    return { status: 200, body: json, headers: { 'Rowbase-Seq': String(seq) } };
  },

  async insertRows({ principal, path, body }, { store, config }) {
    // The bound is the server's setting, so openapi.yaml states it in words, not as maxItems (see there).
    if (body.length > config.maxBatchRows) {
      throw validationFailed(`A batch holds at most ${config.maxBatchRows} rows; this one has ${body.length}.`, [
        { in: 'body', name: '', message: `must NOT have more than ${config.maxBatchRows} items` },
      ]);
    }
    return { status: 201, body: await store.insertRows(principal.accountId, path.collection_name, body) };
  },

  async getRow({ principal, path }, { store }) {
    return { status: 200, body: await store.getRow(principal.accountId, path.collection_name, path.row_id) };
  },

  async updateRow({ principal, path, body }, { store }) {
    return { status: 200, body: await store.updateRow(principal.accountId, path.collection_name, path.row_id, body) };
  },

  async deleteRow({ principal, path }, { store }) {
    await store.deleteRow(principal.accountId, path.collection_name, path.row_id);
    return { status: 204 };
  },
};
