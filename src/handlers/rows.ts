import { selectFields } from '../db/pages.ts';
import { validationFailed } from '../errors.ts';
import { parseFilterText } from '../query/filter.ts';
import type { Handlers } from './types.ts';

export const rowHandlers: Handlers<'listRows' | 'insertRows' | 'getRow' | 'updateRow' | 'deleteRow'> = {
  async listRows({ principal, path, query }, { store }) {
    const page = {
      limit: query.limit,
      offset: query.offset,
      orderBy: query.order_by,
      order: query.order,
      filter: query.filter === undefined ? undefined : parseFilterText(query.filter),
      count: query.count === 'exact',
    };
    const fields = query.select === undefined ? undefined : selectedFields(query.select);
    const { json, seq, total } = await store.listRows(principal.accountId, path.collection_name, page);
    // Where the feed resumes from this page with no change missed or repeated (openapi.yaml, Rowbase-Seq).
    const headers: Record<string, string> = { 'Rowbase-Seq': String(seq) };
    if (total !== undefined) headers['Rowbase-Total-Count'] = String(total);
    return { status: 200, body: fields ? selectFields(json, fields) : json, headers };
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

/** The fields a `select` names (openapi.yaml, SelectParameter), each once; 400 for an empty name. */
function selectedFields(select: string): string[] {
  const fields = select.split(',');
  if (fields.includes('')) {
    throw validationFailed('select names the fields to answer, separated by commas.', [
      { in: 'query', name: 'select', message: 'names an empty field' },
    ]);
  }
  return [...new Set(fields)].filter((field) => field !== 'id');
}
