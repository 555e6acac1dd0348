import type { Principal } from '../db/accounts/keys.ts';
import type { Store } from '../db/engine/store.ts';
import type { AggregateResult } from '../db/reads/aggregates.ts';
import type { Page, RowsPage } from '../db/reads/pages.ts';
import type { ChangedRows, InsertedRows, VersionedRow } from '../db/rows/rows.ts';
import type { Upserted } from '../db/rows/upserts.ts';
import { validationFailed } from '../errors.ts';
import { etagOf, ifMatch, ifNoneMatch } from '../http/conditional.ts';
import { answerOnce } from '../idempotency/answers.ts';
import { ACCEPT_PATCH, patchFormatOf, readPatch } from '../patches/index.ts';
import { aggregateParameters, parseAggregateQuery } from '../query/aggregate.ts';
import { type CursorScope, lastRow, makeCursor, readCursor } from '../query/cursor.ts';
import { FILTER_PARAMETER, filterJson, parseFilter, parseFilterText } from '../query/filter.ts';
import { orderFromBody, orderFromParameters } from '../query/order.ts';
import { selectFields } from '../query/select.ts';
import type { Handlers, Result } from './types.ts';

export const rowHandlers: Handlers<
  | 'listRows'
  | 'listVersionedRows'
  | 'queryRows'
  | 'aggregateRows'
  | 'getAggregates'
  | 'insertRows'
  | 'getRow'
  | 'updateRow'
  | 'deleteRow'
  | 'updateRows'
  | 'deleteRows'
> = {
  async listRows({ principal, path, query }, { store }) {
    const order = orderFromParameters(query.order_by, query.order);
    if (query.after !== undefined && query.offset !== undefined) {
      throw validationFailed('A page follows a cursor or skips rows, not both.', [
        { in: 'query', name: 'offset', message: 'must not be given with after' },
      ]);
    }
    // The filter's JSON value scopes the cursor, as queryRows' body does (../query/cursor.ts).
    const filterValue = query.filter === undefined ? undefined : filterJson(query.filter, FILTER_PARAMETER);
    const filter = filterValue === undefined ? undefined : parseFilter(filterValue, FILTER_PARAMETER);
    const select = query.select === undefined ? undefined : selectedFields(query.select);
    const scope: CursorScope = {
      accountId: principal.accountId,
      collection: path.collection_name,
      filter: filterValue,
      order,
      select,
    };
    const page: Page = {
      limit: query.limit,
      offset: query.offset ?? 0,
      order,
      filter,
      count: query.count === 'exact',
      after: query.after === undefined ? undefined : readCursor(query.after, scope),
    };
    const { json, seq, total, next } = await readRows(store, principal, scope, page);
    // Where the feed resumes from this page with no change missed or repeated (openapi.yaml, Rowbase-Seq).
    const headers: Record<string, string> = { 'Rowbase-Seq': String(seq) };
    if (total !== undefined) headers['Rowbase-Total-Count'] = String(total);
    if (next !== null) headers.Link = `<${nextPage(path.collection_name, query, next)}>; rel="next"`;
    return { status: 200, body: json, headers };
  },

  /** The page listRows answers for the same query (but a cursor), each row with its ETag beside it. */
  async listVersionedRows({ principal, path, query }, { store }) {
    const page: Page = {
      limit: query.limit,
      offset: query.offset ?? 0,
      order: orderFromParameters(query.order_by, query.order),
      filter: query.filter === undefined ? undefined : parseFilterText(query.filter, FILTER_PARAMETER),
      count: query.count === 'exact',
      versions: true,
    };
    const { json, seq, total } = await store.listRows(principal.accountId, path.collection_name, page);
    const headers: Record<string, string> = { 'Rowbase-Seq': String(seq) };
    if (total !== undefined) headers['Rowbase-Total-Count'] = String(total);
    return { status: 200, body: query.select === undefined ? json : selectFields(json, selectedFields(query.select), true), headers };
  },

  async queryRows({ principal, path, body }, { store }) {
    const order = orderFromBody(body.order);
    const filter = body.filter === undefined ? undefined : parseFilter(body.filter, { in: 'body', name: '/filter' });
    const select = body.select === undefined ? undefined : [...new Set(body.select)].filter((field) => field !== 'id');
    const scope: CursorScope = { accountId: principal.accountId, collection: path.collection_name, filter: body.filter, order, select };
    const page: Page = {
      limit: body.limit ?? DEFAULT_LIMIT,
      offset: 0,
      order,
      filter,
      count: body.count === 'exact',
      after: body.after === undefined ? undefined : readCursor(body.after, scope, { in: 'body', name: '/after' }),
    };
    const { json, seq, total, next } = await readRows(store, principal, scope, page);
    const totalMember = total === undefined ? '' : `,"total":${total}`;
    return {
      status: 200,
      // The page's rows are JSON text already: placed in the answer as they are.
      body: `{"rows":${json},"next":${JSON.stringify(next)}${totalMember}}`,
      contentType: 'application/json',
      headers: { 'Rowbase-Seq': String(seq) },
    };
  },

  async aggregateRows({ principal, path, body }, { store, config }) {
    const query = parseAggregateQuery(body, 'body', config.maxGroups);
    const place = { in: 'body', name: '/group_by', message: `makes more than ${config.maxGroups * GROUPS_READ} groups` } as const;
    return answerAggregates(
      await store.aggregateRows(principal.accountId, path.collection_name, query, config.maxGroups * GROUPS_READ, place),
    );
  },

  /** aggregateRows' query in the URL: JSON texts, and group_by a comma list (openapi.yaml, getAggregates). */
  async getAggregates({ principal, path, query }, { store, config }) {
    const read = parseAggregateQuery(aggregateParameters(query), 'query', config.maxGroups);
    const place = { in: 'query', name: 'group_by', message: `makes more than ${config.maxGroups * GROUPS_READ} groups` } as const;
    return answerAggregates(
      await store.aggregateRows(principal.accountId, path.collection_name, read, config.maxGroups * GROUPS_READ, place),
    );
  },

  async insertRows({ principal, path, query, body, once }, { store, config }) {
    // The bound is the server's setting, so openapi.yaml states it in words, not as maxItems (see there).
    if (body.length > config.maxBatchRows) {
      throw validationFailed(`A batch holds at most ${config.maxBatchRows} rows; this one has ${body.length}.`, [
        { in: 'body', name: '', message: `must NOT have more than ${config.maxBatchRows} items` },
      ]);
    }
    if (query.on_conflict !== undefined) {
      const onConflict = query.on_conflict.split(',');
      const options = { once: once && answerOnce(once, answerUpserted) };
      return answerUpserted(await store.upsertRows(principal.accountId, path.collection_name, body, onConflict, options));
    }
    // The insert's statement stores its answer, made in SQL as answerInserted() makes it.
    return answerInserted(await store.insertRows(principal.accountId, path.collection_name, body, { once }));
  },

  async getRow({ principal, path, headers }, { store }) {
    const held = ifNoneMatch(headers);
    const { json, version } = await store.getRow(principal.accountId, path.collection_name, path.row_id);
    const etag = { ETag: etagOf(version), 'Accept-Patch': ACCEPT_PATCH };
    // RFC 9110 §13.1.2: the client holds this version already.
    if (held(version)) return { status: 304, headers: etag };
    return { status: 200, body: json, headers: etag };
  },

  async updateRow({ principal, path, body, mediaType, headers, once }, { store }) {
    const patch = readPatch(patchFormatOf[mediaType], body);
    const options = { ifMatch: ifMatch(headers), once: once && answerOnce(once, answerPatched) };
    return answerPatched(await store.updateRow(principal.accountId, path.collection_name, path.row_id, patch, options));
  },

  async deleteRow({ principal, path, headers, once }, { store }) {
    const options = { ifMatch: ifMatch(headers), once: once && answerOnce(once, answerDeleted) };
    await store.deleteRow(principal.accountId, path.collection_name, path.row_id, options);
    return answerDeleted();
  },

  async updateRows({ principal, path, query, body, mediaType, once }, { store, config }) {
    const filter = parseFilterText(query.filter, FILTER_PARAMETER);
    const patch = readPatch(patchFormatOf[mediaType], body);
    // The rows only when asked for (openapi.yaml, ReturnParameter).
    const answer = query.return === 'rows' ? answerChangedRows : answerChangedCount;
    const options = { once: once && answerOnce(once, answer) };
    return answer(await store.updateRowsWhere(principal.accountId, path.collection_name, filter, patch, config.maxRowsByFilter, options));
  },

  async deleteRows({ principal, path, query, once }, { store, config }) {
    const filter = parseFilterText(query.filter, FILTER_PARAMETER);
    const options = { once: once && answerOnce(once, answerChangedCount) };
    return answerChangedCount(
      await store.deleteRowsWhere(principal.accountId, path.collection_name, filter, config.maxRowsByFilter, options),
    );
  },
};

// The answers of the writes, from what the store answers: each made by one function, declared once,
// that a write sent with an Idempotency-Key also hands the store, which keeps the answer it makes (an
// insert's statement makes its own, alike: test/http/idempotency.test.ts compares a replay with the first).

/** A batch of one row answers that row's ETag; a larger batch has no one ETag (openapi.yaml, insertRows). */
function answerInserted({ json, versions }: InsertedRows): Result {
  return { status: 201, body: json, headers: versions.length === 1 ? { ETag: etagOf(versions[0]) } : undefined };
}

/** An upsert's rows, as JSON text made by the data layer. */
function answerUpserted({ json }: Upserted): Result {
  return { status: 200, body: json };
}

function answerPatched({ json, version }: VersionedRow): Result {
  return { status: 200, body: json, headers: { ETag: etagOf(version), 'Accept-Patch': ACCEPT_PATCH } };
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

/** The groups an aggregate may find, per group it may answer, before it is refused (openapi.yaml, aggregateRows). */
const GROUPS_READ = 100;

/** An aggregate's answer, its seq also in `Rowbase-Seq`, as a page's. */
function answerAggregates({ groups, seq, truncated }: AggregateResult): Result {
  return { status: 200, body: { groups, seq, truncated }, headers: { 'Rowbase-Seq': String(seq) } };
}

/** A page's rows when a query leaves `limit` out (openapi.yaml, Limit and RowQuery). */
const DEFAULT_LIMIT = 100;

/**
 * A page of rows as `scope` and `page` ask, with only the selected fields, and the cursor of the next
 * page when its rows fill the limit (null otherwise): the place after its last row.
 */
async function readRows(
  store: Store,
  principal: Principal,
  scope: CursorScope,
  page: Page,
): Promise<Omit<RowsPage, 'n'> & { next: string | null }> {
  const { json, n, seq, total } = await store.listRows(principal.accountId, scope.collection, page);
  const next = n > 0 && n === page.limit ? makeCursor(scope, lastRow(json)) : null;
  return { json: scope.select ? selectFields(json, scope.select) : json, seq, total, next };
}

/**
 * The path and query of the page after a list's page (RFC 8288 `rel="next"`): the same parameters, but
 * `after` the cursor, and no `offset`. Relative to the service, as a reference in a Link header may be.
 */
function nextPage(collection: string, query: { [name: string]: unknown }, after: string): string {
  const parameters = new URLSearchParams();
  for (const name of ['limit', 'order_by', 'order', 'filter', 'select', 'count'] as const) {
    const value = query[name];
    if (value !== undefined && !(name === 'order_by' && value === 'id') && !(name === 'order' && value === 'asc')) {
      parameters.set(name, String(value));
    }
  }
  parameters.set('after', after);
  return `/v1/collections/${encodeURIComponent(collection)}/rows?${parameters}`;
}

/** The fields a `select` names (openapi.yaml, SelectParameter), each once, but `id`; 400 for an empty name. */
function selectedFields(select: string): string[] {
  const fields = select.split(',');
  if (fields.includes('')) {
    throw validationFailed('select names the fields to answer, separated by commas.', [
      { in: 'query', name: 'select', message: 'names an empty field' },
    ]);
  }
  return [...new Set(fields)].filter((field) => field !== 'id');
}
