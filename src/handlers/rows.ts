import { selectFields } from '../db/pages.ts';
import { validationFailed } from '../errors.ts';
import { etagOf, ifMatch, ifNoneMatch } from '../http/conditions.ts';
import { parseFilterText } from '../query/filter.ts';
import type { Deps, Handlers, Input, Result } from './types.ts';

export const rowHandlers: Handlers<
  'listRows' | 'listVersionedRows' | 'insertRows' | 'getRow' | 'updateRow' | 'deleteRow' | 'updateRows' | 'deleteRows'
> = {
  listRows: (input, deps) => pageOfRows(input, deps, false),

  listVersionedRows: (input, deps) => pageOfRows(input, deps, true),

  async insertRows({ principal, path, body }, { store, config }) {
    // The bound is the server's setting, so openapi.yaml states it in words, not as maxItems (see there).
    if (body.length > config.maxBatchRows) {
      throw validationFailed(`A batch holds at most ${config.maxBatchRows} rows; this one has ${body.length}.`, [
        { in: 'body', name: '', message: `must NOT have more than ${config.maxBatchRows} items` },
      ]);
    }
    const { json, versions } = await store.insertRows(principal.accountId, path.collection_name, body);
    // A batch of one row answers that row's ETag and where it is; a larger batch has no one ETag (openapi.yaml, insertRows).
    const headers = versions.length === 1 ? { ETag: etagOf(versions[0]) } : undefined;
    return { status: 201, body: json, headers };
  },

  async getRow({ principal, path, headers }, { store }) {
    const held = ifNoneMatch(headers);
    const { json, version } = await store.getRow(principal.accountId, path.collection_name, path.row_id);
    const etag = { ETag: etagOf(version) };
    // RFC 9110 §13.1.2: the client holds this version already.
    if (held(version)) return { status: 304, headers: etag };
    return { status: 200, body: json, headers: etag };
  },

  async updateRow({ principal, path, body, headers }, { store }) {
    const options = { ifMatch: ifMatch(headers) };
    const { json, version } = await store.updateRow(principal.accountId, path.collection_name, path.row_id, body, options);
    return { status: 200, body: json, headers: { ETag: etagOf(version) } };
  },

  async deleteRow({ principal, path, headers }, { store }) {
    await store.deleteRow(principal.accountId, path.collection_name, path.row_id, { ifMatch: ifMatch(headers) });
    return { status: 204 };
  },

  async updateRows({ principal, path, query, body }, { store, config }) {
    const filter = parseFilterText(query.filter);
    const { count, json } = await store.updateRowsWhere(principal.accountId, path.collection_name, filter, body, config.maxRowsByFilter);
    // The rows, as JSON text made by the data layer, only when asked for (openapi.yaml, ReturnParameter).
    return { status: 200, body: query.return === 'rows' ? `{"count":${count},"rows":${json}}` : { count } };
  },

  async deleteRows({ principal, path, query }, { store, config }) {
    const filter = parseFilterText(query.filter);
    const { count } = await store.deleteRowsWhere(principal.accountId, path.collection_name, filter, config.maxRowsByFilter);
    return { status: 200, body: { count } };
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

/** A page of rows (listRows), or of rows with their versions (listVersionedRows): both take the same query. */
async function pageOfRows({ principal, path, query }: Input<'listRows'>, { store }: Deps, versions: boolean): Promise<Result> {
  const page = {
    limit: query.limit,
    offset: query.offset,
    orderBy: query.order_by,
    order: query.order,
    filter: query.filter === undefined ? undefined : parseFilterText(query.filter),
    count: query.count === 'exact',
    versions,
  };
  const fields = query.select === undefined ? undefined : selectedFields(query.select);
  const { json, seq, total } = await store.listRows(principal.accountId, path.collection_name, page);
  // Where the feed resumes from this page with no change missed or repeated (openapi.yaml, Rowbase-Seq).
  const headers: Record<string, string> = { 'Rowbase-Seq': String(seq) };
  if (total !== undefined) headers['Rowbase-Total-Count'] = String(total);
  return { status: 200, body: fields ? selectFields(json, fields, versions) : json, headers };
}
