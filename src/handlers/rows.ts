import { answerOnce } from '../db/idempotency.ts';
import { selectFields } from '../db/pages.ts';
import type { ChangedRows, InsertedRows, VersionedRow } from '../db/rows.ts';
import { validationFailed } from '../errors.ts';
import { etagOf, ifMatch, ifNoneMatch } from '../http/conditions.ts';
import { parseFilterText } from '../query/filter.ts';
import type { Deps, Handlers, Input, Result } from './types.ts';

export const rowHandlers: Handlers<
  'listRows' | 'listVersionedRows' | 'insertRows' | 'getRow' | 'updateRow' | 'deleteRow' | 'updateRows' | 'deleteRows'
> = {
  listRows: (input, deps) => pageOfRows(input, deps, false),

  listVersionedRows: (input, deps) => pageOfRows(input, deps, true),

  async insertRows({ principal, path, body, once }, { store, config }) {
    // The bound is the server's setting, so openapi.yaml states it in words, not as maxItems (see there).
    if (body.length > config.maxBatchRows) {
      throw validationFailed(`A batch holds at most ${config.maxBatchRows} rows; this one has ${body.length}.`, [
        { in: 'body', name: '', message: `must NOT have more than ${config.maxBatchRows} items` },
      ]);
    }
    const options = { once: answerOnce(once, answerInserted) };
    return answerInserted(await store.insertRows(principal.accountId, path.collection_name, body, options));
  },

  async getRow({ principal, path, headers }, { store }) {
    const held = ifNoneMatch(headers);
    const { json, version } = await store.getRow(principal.accountId, path.collection_name, path.row_id);
    const etag = { ETag: etagOf(version) };
    // RFC 9110 §13.1.2: the client holds this version already.
    if (held(version)) return { status: 304, headers: etag };
    return { status: 200, body: json, headers: etag };
  },

  async updateRow({ principal, path, body, headers, once }, { store }) {
    const options = { ifMatch: ifMatch(headers), once: answerOnce(once, answerPatched) };
    return answerPatched(await store.updateRow(principal.accountId, path.collection_name, path.row_id, body, options));
  },

  async deleteRow({ principal, path, headers, once }, { store }) {
    const options = { ifMatch: ifMatch(headers), once: answerOnce(once, answerDeleted) };
    await store.deleteRow(principal.accountId, path.collection_name, path.row_id, options);
    return answerDeleted();
  },

  async updateRows({ principal, path, query, body, once }, { store, config }) {
    const filter = parseFilterText(query.filter);
    // The rows only when asked for (openapi.yaml, ReturnParameter).
    const answer = query.return === 'rows' ? answerChangedRows : answerChangedCount;
    const options = { once: answerOnce(once, answer) };
    return answer(await store.updateRowsWhere(principal.accountId, path.collection_name, filter, body, config.maxRowsByFilter, options));
  },

  async deleteRows({ principal, path, query, once }, { store, config }) {
    const filter = parseFilterText(query.filter);
    const options = { once: answerOnce(once, answerChangedCount) };
    return answerChangedCount(
      await store.deleteRowsWhere(principal.accountId, path.collection_name, filter, config.maxRowsByFilter, options),
    );
  },
};

// The answers of the writes, from what the store answers: each made by one function, declared once,
// that a write sent with an Idempotency-Key also hands the store, which keeps the answer it makes.

/** A batch of one row answers that row's ETag; a larger batch has no one ETag (openapi.yaml, insertRows). */
function answerInserted({ json, versions }: InsertedRows): Result {
  return { status: 201, body: json, headers: versions.length === 1 ? { ETag: etagOf(versions[0]) } : undefined };
}

function answerPatched({ json, version }: VersionedRow): Result {
  return { status: 200, body: json, headers: { ETag: etagOf(version) } };
}

function answerDeleted(): Result {
  return { status: 204 };
}

function answerChangedCount({ count }: ChangedRows): Result {
  return { status: 200, body: { count } };
}

/** The rows as JSON text made by the data layer, never parsed. */
function answerChangedRows({ count, json }: ChangedRows): Result {
  return { status: 200, body: `{"count":${count},"rows":${json}}` };
}

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
