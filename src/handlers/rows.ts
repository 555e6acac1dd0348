// The handlers of the `rows` tag: rows read, inserted, upserted, patched, deleted, queried and aggregated.
import type { Principal } from '../db/accounts/keys.ts';
import type { Store } from '../db/open-store.ts';
import type { AggregateResult } from '../db/reads/aggregates.ts';
import type { Expansion } from '../db/reads/expand.ts';
import type { ListedPage } from '../db/reads/pages.ts';
import type { ChangedRows, InsertedRows, VersionedRow } from '../db/rows/rows.ts';
import type { Upserted } from '../db/rows/upserts.ts';
import { rowNotFound, validationFailed } from '../errors.ts';
import { etagOf, ifMatch, ifNoneMatch } from '../http/conditional.ts';
import { answerOnce } from '../idempotency/answers.ts';
import { ACCEPT_PATCH, patchFormatOf, readPatch } from '../patches/index.ts';
import { type AggregateQuery, aggregateParameters, parseAggregateQuery } from '../query/aggregate.ts';
import { type CursorScope, lastRow, makeCursor, readCursor } from '../query/cursor.ts';
import { FILTER_PARAMETER, type Filter, filterJson, holdsRelated, parseFilter, parseFilterText } from '../query/filter.ts';
import { HIGHLIGHT, orderFromBody, orderFromParameters, ordersRelated, readsRelevance, SCORE, type SortKey } from '../query/order.ts';
import type { Page } from '../query/page.ts';
import { selectFields } from '../query/select.ts';
import { EXPANDED, jsonText, type Row } from '../rows.ts';
import { type FieldUse, filterFields, type Grant, patchUses } from '../rules/access.ts';
import { expandParameter, expansionsOf } from './expand.ts';
import { grantIn } from './grants.ts';
import { type FilterPlace, relatedFilter, relatedOrder } from './related.ts';
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
  async listRows({ principal, path, query, claims }, { store }) {
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
    const scored = readsRelevance({ order, select, filter }, 'query');
    const grant = await grantIn(store, principal, claims, path.collection_name);
    const reader: Reader = { store, principal, claims, collection: path.collection_name, grant };
    const scope: CursorScope = {
      accountId: principal.accountId,
      collection: path.collection_name,
      filter: filterValue,
      order,
      select,
    };
    const ordered = await orderThroughRelations(reader, order, 'query');
    const page: Page = {
      limit: query.limit,
      offset: query.offset ?? 0,
      order: ordered,
      filter: await scopedRead(reader, { filter, order: ordered, select }, 'query'),
      count: query.count === 'exact',
      after: query.after === undefined ? undefined : readCursor(query.after, scope),
      scored,
    };
    const expansions =
      query.expand === undefined
        ? undefined
        : await expansionsOf(store, principal, claims, path.collection_name, expandParameter(query.expand), { in: 'query' });
    const { json, seq, total, next } = await readRows(store, principal, scope, page, grant, expansions);
    // Where the feed resumes from this page with no change missed or repeated (openapi.yaml, Rowbase-Seq).
    const headers: Record<string, string> = { 'Rowbase-Seq': String(seq) };
    if (total !== undefined) headers['Rowbase-Total-Count'] = String(total);
    if (next !== null) headers.Link = `<${nextPage(path.collection_name, query, next)}>; rel="next"`;
    return { status: 200, body: json, headers };
  },

  /** The page listRows answers for the same query (but a cursor), each row with its ETag beside it. */
  async listVersionedRows({ principal, path, query, claims }, { store }) {
    const order = orderFromParameters(query.order_by, query.order);
    const filter = query.filter === undefined ? undefined : parseFilterText(query.filter, FILTER_PARAMETER);
    const select = query.select === undefined ? undefined : selectedFields(query.select);
    const scored = readsRelevance({ order, select, filter }, 'query');
    const grant = await grantIn(store, principal, claims, path.collection_name);
    const reader: Reader = { store, principal, claims, collection: path.collection_name, grant };
    const ordered = await orderThroughRelations(reader, order, 'query');
    const page: Page = {
      limit: query.limit,
      offset: query.offset ?? 0,
      order: ordered,
      filter: await scopedRead(reader, { filter, order: ordered, select }, 'query'),
      count: query.count === 'exact',
      versions: true,
      scored,
    };
    const read = await store.listRows(principal.accountId, path.collection_name, page);
    const rows = jsonText(read.json);
    const json = grant ? grant.maskVersionedRows(rows) : rows;
    const headers: Record<string, string> = { 'Rowbase-Seq': String(read.seq) };
    if (read.total !== undefined) headers['Rowbase-Total-Count'] = String(read.total);
    return { status: 200, body: select === undefined ? json : selectFields(json, select, true, read), headers };
  },

  async queryRows({ principal, path, body, claims }, { store }) {
    const order = orderFromBody(body.order);
    const filter = body.filter === undefined ? undefined : parseFilter(body.filter, { in: 'body', name: '/filter' });
    const select = body.select === undefined ? undefined : [...new Set(body.select)].filter((field) => field !== 'id');
    const scored = readsRelevance({ order, select, filter }, 'body');
    const grant = await grantIn(store, principal, claims, path.collection_name);
    const reader: Reader = { store, principal, claims, collection: path.collection_name, grant };
    const scope: CursorScope = { accountId: principal.accountId, collection: path.collection_name, filter: body.filter, order, select };
    const ordered = await orderThroughRelations(reader, order, 'body');
    const page: Page = {
      limit: body.limit ?? DEFAULT_LIMIT,
      offset: 0,
      order: ordered,
      filter: await scopedRead(reader, { filter, order: ordered, select }, 'body'),
      count: body.count === 'exact',
      after: body.after === undefined ? undefined : readCursor(body.after, scope, { in: 'body', name: '/after' }),
      scored,
    };
    const expansions =
      body.expand === undefined
        ? undefined
        : await expansionsOf(store, principal, claims, path.collection_name, body.expand, { in: 'body', pointer: '/expand' });
    const { json, seq, total, next } = await readRows(store, principal, scope, page, grant, expansions);
    const totalMember = total === undefined ? '' : `,"total":${total}`;
    return {
      status: 200,
      // The page's rows are JSON text (or its bytes) already: placed in the answer as they are.
      body: rowsAnswer(json, `,"next":${JSON.stringify(next)}${totalMember}}`),
      contentType: 'application/json',
      headers: { 'Rowbase-Seq': String(seq) },
    };
  },

  async aggregateRows({ principal, path, body, claims }, { store, config }) {
    const grant = await grantIn(store, principal, claims, path.collection_name);
    const reader: Reader = { store, principal, claims, collection: path.collection_name, grant };
    const query = await scopedAggregate(reader, parseAggregateQuery(body, 'body', config.maxGroups), 'body');
    const place = { in: 'body', name: '/group_by', message: `makes more than ${config.maxGroups * GROUPS_READ} groups` } as const;
    return answerAggregates(
      await store.aggregateRows(principal.accountId, path.collection_name, query, config.maxGroups * GROUPS_READ, place),
    );
  },

  /** aggregateRows' query in the URL: JSON texts, and group_by a comma list (openapi.yaml, getAggregates). */
  async getAggregates({ principal, path, query, claims }, { store, config }) {
    const grant = await grantIn(store, principal, claims, path.collection_name);
    const reader: Reader = { store, principal, claims, collection: path.collection_name, grant };
    const read = await scopedAggregate(reader, parseAggregateQuery(aggregateParameters(query), 'query', config.maxGroups), 'query');
    const place = { in: 'query', name: 'group_by', message: `makes more than ${config.maxGroups * GROUPS_READ} groups` } as const;
    return answerAggregates(
      await store.aggregateRows(principal.accountId, path.collection_name, read, config.maxGroups * GROUPS_READ, place),
    );
  },

  async insertRows({ principal, path, query, body, once, claims }, { store, config }) {
    // The bound is the server's setting, so openapi.yaml states it in words, not as maxItems (see there).
    if (body.length > config.maxBatchRows) {
      throw validationFailed(`A batch holds at most ${config.maxBatchRows} rows; this one has ${body.length}.`, [
        { in: 'body', name: '', message: `must NOT have more than ${config.maxBatchRows} items` },
      ]);
    }
    const grant = await grantIn(store, principal, claims, path.collection_name);
    // The fields the rules fill from the caller's token, in every row it sends, before any check.
    const rows = grant ? body.map((fields) => grant.filled(fields)) : body;
    if (query.on_conflict !== undefined) {
      const onConflict = query.on_conflict.split(',');
      // Which row an upsert patches tells the values of its fields: they must be the caller's to see.
      grant?.checkReadable(uses(onConflict, 'query', 'on_conflict'));
      // An upsert's answer holds the stored fields of the rows it patched: masked.
      const answer = (upserted: Upserted) => answerUpserted(grant ? { ...upserted, json: grant.maskRows(upserted.json) } : upserted);
      const options = { once: once && answerOnce(once, answer), guard: grant };
      return answer(await store.upsertRows(principal.accountId, path.collection_name, rows, onConflict, options));
    }
    // New rows hold what the caller sent, the fields its token filled and their ids: answered as they are.
    if (grant) for (const fields of rows) grant.creating(fields);
    // The insert's statement stores its answer, made in SQL as answerInserted() makes it. The rows are the
    // request's, handed over: the store empties the array once they are written as text (db/rows/inserts.ts).
    return answerInserted(await store.insertRows(principal.accountId, path.collection_name, rows, { once, handOver: true }));
  },

  async getRow({ principal, path, query, headers, claims }, { store }) {
    const held = ifNoneMatch(headers);
    const grant = await grantIn(store, principal, claims, path.collection_name);
    if (query.expand !== undefined) return expandedRow(store, principal, claims, path.collection_name, path.row_id, query.expand, grant);
    // A row the caller may not read is none, its rule tested in the row's statement: its 404 comes
    // before any answer to If-None-Match.
    const row = await store.getRow(principal.accountId, path.collection_name, path.row_id, grant?.rowCondition);
    // Answered as stored unless the rules took a field out of it.
    const json = grant ? grant.readableRow(row.json) : row.json;
    const { version } = row;
    const etag = { ETag: etagOf(version), 'Accept-Patch': ACCEPT_PATCH };
    // RFC 9110 §13.1.2: the client holds this version already.
    if (held(version)) return { status: 304, headers: etag };
    return { status: 200, body: json, headers: etag };
  },

  async updateRow({ principal, path, body, mediaType, headers, once, claims }, { store }) {
    const patch = readPatch(patchFormatOf[mediaType], body);
    const grant = await grantIn(store, principal, claims, path.collection_name);
    grant?.checkReadable(patchUses(patch, { in: 'body', name: '' }, grant.hideable));
    const answer = (row: VersionedRow) => answerPatched(grant ? { ...row, json: grant.maskRow(row.json) } : row);
    const options = { ifMatch: ifMatch(headers), once: once && answerOnce(once, answer), guard: grant };
    return answer(await store.updateRow(principal.accountId, path.collection_name, path.row_id, patch, options));
  },

  async deleteRow({ principal, path, headers, once, claims }, { store }) {
    const guard = await grantIn(store, principal, claims, path.collection_name);
    const options = { ifMatch: ifMatch(headers), once: once && answerOnce(once, answerDeleted), guard };
    await store.deleteRow(principal.accountId, path.collection_name, path.row_id, options);
    return answerDeleted();
  },

  async updateRows({ principal, path, query, body, mediaType, once, claims }, { store, config }) {
    const grant = await grantIn(store, principal, claims, path.collection_name);
    const filter = await changeFilter({ store, principal, claims, collection: path.collection_name, grant }, query.filter);
    const patch = readPatch(patchFormatOf[mediaType], body);
    grant?.checkReadable([...uses(filterFields(filter), 'query', 'filter'), ...patchUses(patch, { in: 'body', name: '' }, grant.hideable)]);
    // The rows only when asked for (openapi.yaml, ReturnParameter).
    const answerRows = (changed: ChangedRows) => answerChangedRows(grant ? { ...changed, json: grant.maskRows(changed.json) } : changed);
    const answer = query.return === 'rows' ? answerRows : answerChangedCount;
    const options = { once: once && answerOnce(once, answer), guard: grant };
    const scoped = grant ? grant.scope(filter, 'update') : filter;
    return answer(await store.updateRowsWhere(principal.accountId, path.collection_name, scoped, patch, config.maxRowsByFilter, options));
  },

  async deleteRows({ principal, path, query, once, claims }, { store, config }) {
    const grant = await grantIn(store, principal, claims, path.collection_name);
    const filter = await changeFilter({ store, principal, claims, collection: path.collection_name, grant }, query.filter);
    grant?.checkReadable(uses(filterFields(filter), 'query', 'filter'));
    const options = { once: once && answerOnce(once, answerChangedCount) };
    const scoped = grant ? grant.scope(filter, 'delete') : filter;
    return answerChangedCount(
      await store.deleteRowsWhere(principal.accountId, path.collection_name, scoped, config.maxRowsByFilter, options),
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

/**
 * The row with the rows related to it (`expand`), read in one snapshot, as a page of it alone; its ETag
 * the row's version. A row the caller may not read is none (404), as without `expand`.
 */
async function expandedRow(
  store: Store,
  principal: Principal,
  claims: Parameters<typeof grantIn>[2],
  collection: string,
  rowId: number,
  expand: string,
  grant: Grant | undefined,
): Promise<Result> {
  const expansions = await expansionsOf(store, principal, claims, collection, expandParameter(expand), { in: 'query' });
  const byId: Filter = { kind: 'field', path: ['id'], op: '$eq', operand: rowId };
  const page: Page = {
    limit: 1,
    offset: 0,
    order: [{ field: 'id', direction: 'asc' }],
    filter: grant ? grant.scope(byId, 'read') : byId,
    versions: true,
  };
  const [found] = JSON.parse(jsonText((await store.listRows(principal.accountId, collection, page, expansions)).json)) as {
    etag: string;
    row: Row;
  }[];
  // None: the 404 of the row, or of its collection.
  if (!found) await store.getRow(principal.accountId, collection, rowId);
  if (!found) throw rowNotFound(collection, rowId);
  const row = grant ? JSON.parse(grant.maskRow(JSON.stringify(found.row))) : found.row;
  return { status: 200, body: JSON.stringify(row), headers: { ETag: found.etag, 'Accept-Patch': ACCEPT_PATCH } };
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

/** queryRows's answer: `{"rows":` a page's rows (their text or their bytes), then `rest`. */
function rowsAnswer(json: ListedPage['json'], rest: string): string | Buffer {
  return typeof json === 'string' ? `{"rows":${json}${rest}` : Buffer.concat([ROWS_MEMBER, json, Buffer.from(rest)]);
}

const ROWS_MEMBER = Buffer.from('{"rows":');

/**
 * A page of rows as `scope` and `page` ask, with only the selected fields, and the cursor of the next
 * page when its rows fill the limit (null otherwise): the place after its last row.
 */
async function readRows(
  store: Store,
  principal: Principal,
  scope: CursorScope,
  page: Page,
  grant: Grant | undefined,
  expansions?: readonly Expansion[],
): Promise<Omit<ListedPage, 'n'> & { next: string | null }> {
  const read = await store.listRows(principal.accountId, scope.collection, page, expansions);
  const { n, seq, total } = read;
  const next =
    n > 0 && n === page.limit
      ? makeCursor(scope, placeOf(read.last === undefined ? lastRow(jsonText(read.json)) : JSON.parse(read.last), read, page.order))
      : null;
  // The expanded rows stay whatever fields are selected.
  const select = scope.select && expansions ? [...scope.select, EXPANDED] : scope.select;
  // A page's bytes (ListedPage) are answered as they are; a mask or a selection reads its text.
  if (!grant && !select) return { json: read.json, seq, total, next };
  const text = jsonText(read.json);
  const json = grant ? grant.maskRows(text) : text;
  return { json: select ? selectFields(json, select, false, read) : json, seq, total, next };
}

/**
 * A page's last row as its cursor's place: with its score as `_score` (SCORE) in a scored page, and with
 * its values of the order's keys through relations (`author.name`; RowsPage.related) under the keys'
 * names, none where it has none.
 */
function placeOf(row: Record<string, unknown>, { scores, related }: ListedPage, order: readonly SortKey[]): Record<string, unknown> {
  const place = scores ? { ...row, [SCORE]: scores.at(-1) } : row;
  if (!ordersRelated(order)) return place;
  const values = { ...place };
  for (const { field, related: through } of order) {
    if (!through) continue;
    if (related && Object.hasOwn(related, field)) values[field] = related[field];
    else delete values[field];
  }
  return values;
}

/** Who reads which collection, held to which rules (undefined for a secret key): what a read's relations are resolved with. */
interface Reader {
  store: Store;
  principal: Principal;
  claims: Parameters<typeof grantIn>[2];
  collection: string;
  grant: Grant | undefined;
}

/**
 * A read's filter, its conditions through relations resolved as the caller may use them (./related.ts)
 * and bound by the store in the read's own snapshot; for a caller held to rules, 403 for a hidden field
 * it names, and the read rule ANDed in.
 */
async function scopedRead(
  reader: Reader,
  read: { filter?: Filter; order: readonly SortKey[]; select?: readonly string[] },
  where: 'query' | 'body',
): Promise<Filter | undefined> {
  const { grant } = reader;
  const at = where === 'query' ? { filter: 'filter', select: 'select' } : { filter: '/filter', select: '/select' };
  const filter = await throughRelations(reader, read.filter, { in: where, name: at.filter });
  if (!grant) return filter;
  grant.checkReadable([
    ...uses(filterFields(filter), where, at.filter),
    ...orderUses(read.order, where),
    ...uses(
      read.select?.filter((field) => field !== SCORE && field !== HIGHLIGHT),
      where,
      at.select,
    ),
  ]);
  return grant.scope(filter, 'read');
}

/** `filter` with its conditions through relations resolved as the reader may use them (./related.ts). */
const throughRelations = <F extends Filter | undefined>(
  { store, principal, claims, collection, grant }: Reader,
  filter: F,
  at: FilterPlace,
) => relatedFilter(store, principal, claims, collection, filter, grant, at);

/** Each of `fields` (top-level names) as used at one place of the request. */
function uses(fields: readonly string[] | undefined, where: 'query' | 'body', name: string): FieldUse[] {
  return (fields ?? []).map((field) => ({ field, at: { in: where, name } }));
}

/** The fields of an order, each at its place (orderPlace()); a key through a relation is checked where it is resolved (./related.ts). */
function orderUses(order: readonly SortKey[], where: 'query' | 'body'): FieldUse[] {
  return order
    .map(({ field, related }, index) => ({ field, related, at: orderPlace(where)(index) }))
    .filter(({ field, related }) => field !== 'id' && field !== SCORE && !related)
    .map(({ field, at }) => ({ field, at }));
}

/** Where the request names the key `index` of its order: `order_by`, or the body's `/order/<index>/field`. */
const orderPlace = (where: 'query' | 'body') => (index: number) =>
  where === 'query' ? { in: where, name: 'order_by' } : { in: where, name: `/order/${index}/field` };

/** The order of a read, its keys through relations resolved as the reader may use them (./related.ts). */
const orderThroughRelations = ({ store, principal, claims, collection, grant }: Reader, order: SortKey[], where: 'query' | 'body') =>
  relatedOrder(store, principal, claims, collection, order, grant, orderPlace(where));

/**
 * A change's filter (the parameter's `text`), its conditions through relations resolved as the reader may
 * use them and replaced by the ids they find, read just before the change.
 */
async function changeFilter(reader: Reader, text: string): Promise<Filter> {
  const filter = await throughRelations(reader, parseFilterText(text, FILTER_PARAMETER), FILTER_PARAMETER);
  if (!holdsRelated(filter)) return filter;
  return (await reader.store.bindRelations(reader.principal.accountId, reader.collection, filter)) as Filter;
}

/** An aggregate's query, its filter's conditions through relations resolved; for a caller held to rules, its filter scoped, and 403 for a hidden field it reads. */
async function scopedAggregate(reader: Reader, asked: AggregateQuery, where: 'query' | 'body'): Promise<AggregateQuery> {
  const { grant } = reader;
  const place = (name: string) => (where === 'query' ? name : `/${name}`);
  const query = { ...asked, filter: await throughRelations(reader, asked.filter, { in: where, name: place('filter') }) };
  if (!grant) return query;
  grant.checkReadable([
    ...uses(filterFields(query.filter), where, place('filter')),
    ...uses(query.groupBy, where, place('group_by')),
    ...uses(
      query.aggregates.flatMap((aggregate) => ('field' in aggregate ? [aggregate.field] : [])),
      where,
      place('aggregates'),
    ),
  ]);
  return { ...query, filter: grant.scope(query.filter, 'read') };
}

/**
 * The path and query of the page after a list's page (RFC 8288 `rel="next"`): the same parameters, but
 * `after` the cursor, and no `offset`. Relative to the service, as a reference in a Link header may be.
 */
function nextPage(collection: string, query: { [name: string]: unknown }, after: string): string {
  const parameters = new URLSearchParams();
  for (const name of ['limit', 'order_by', 'order', 'filter', 'select', 'count', 'expand'] as const) {
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
