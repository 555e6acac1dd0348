// The console's one way to the service: the public API under /v1 and the feed at /ws, on the origin that
// served the console, with the key the person signed in with. No private endpoint: what the console does,
// any client of openapi.yaml and asyncapi.yaml can do.
import type { components } from '../../generated/openapi.ts';

export type Collection = components['schemas']['Collection'];
export type Usage = components['schemas']['Usage'];
export type Problem = components['schemas']['Problem'];
export type Index = components['schemas']['Index'];
/** A relation of a collection, either direction (docs/relations.md). */
export type Relation = components['schemas']['Relation'];
export type RelationDeclaration = components['schemas']['RelationDeclaration'];
/** A collection's JSON Schema of its rows (docs/schemas.md), as it was set. */
export type RowSchema = components['schemas']['RowSchema'];
export type Row = { id: number; [field: string]: unknown };
/** A row's related rows, by relation: a to-one's row or null, a to-many's rows; `$cut` the to-many relations cut at their limit. */
export type Expanded = { $cut?: string[]; [relation: string]: Row | Row[] | null | string[] | undefined };
export type AggregateQuery = components['schemas']['AggregateQuery'];
export type AggregateAnswer = components['schemas']['AggregateAnswer'];
export type Webhook = components['schemas']['Webhook'];
export type NewWebhook = components['schemas']['NewWebhook'];
/** A webhook as it was made: with its secret, which the service shows this once. */
export type CreatedWebhook = components['schemas']['CreatedWebhook'];
export type WebhookDelivery = components['schemas']['WebhookDelivery'];
export type DeliveryPage = components['schemas']['WebhookDeliveryPage'];
/** What a publishable key's callers may do with a collection's rows (docs/access.md, "Rules"). */
export type Rules = components['schemas']['Rules'];
/** The claims of an end user's token; `null` for an anonymous caller. */
export type Claims = components['schemas']['Claims'];
/** A token issuer as the service shows it: never its secret (`key_source` says it has one). */
export type Issuer = components['schemas']['Issuer'];
export type IssuerInput = components['schemas']['IssuerInput'];
/** A key of the account as listed: by its prefix, never the key itself. */
export type Key = components['schemas']['Key'];
export type NewKey = components['schemas']['NewKey'];
/** `secret`, a server's, or `publishable`, safe inside an app (docs/access.md). */
export type KeyKind = components['schemas']['KeyKind'];
/** A key as it was made: with the key itself, which the service shows this once. */
export type CreatedKey = components['schemas']['CreatedKey'];
/** The account as a declaration: as JSON, and as the YAML `rowbase pull` writes (docs/declarations.md). */
export type PulledDeclaration = components['schemas']['PulledDeclaration'];

/** A 4xx or 5xx answer, with its problem (openapi.yaml, Problem). */
export class ApiError extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail);
  }
}

/** What a list asks for: GET …/rows's parameters, as the console's controls set them. */
export interface RowsQuery {
  filter?: string;
  /** Words to search the collection's search index for (docs/search.md), sent as a `$search` beside the filter. */
  search?: string;
  select?: string;
  orderBy?: string;
  order: 'asc' | 'desc';
  limit: number;
  /** The cursor of the place the page starts after (a Link rel="next" of the page before); the first page without. */
  after?: string;
}

/**
 * A page of rows, how many match in all, the collection's latest seq as of the page (Rowbase-Seq), and
 * the cursor of the next page when there may be one (its Link rel="next").
 */
export interface RowsPage {
  rows: Row[];
  total: number;
  seq: number;
  next?: string;
}

/**
 * The filter a page of `query` is read with, as its text: the filter, and its search as a `$search` at
 * the top level beside it (in `$and`), where it may rank the rows (`_score`).
 */
export function rowsFilter({ filter, search }: Pick<RowsQuery, 'filter' | 'search'>): string | undefined {
  if (!search) return filter;
  const searched = `{"$search":${JSON.stringify(search)}}`;
  return filter ? `{"$and":[${searched},${filter}]}` : searched;
}

/** What a request sends besides its method and path. */
interface Exchange {
  query?: Record<string, string>;
  body?: unknown;
  headers?: Record<string, string>;
}

export class Api {
  constructor(readonly key: string) {}

  usage(): Promise<Usage> {
    return this.call('GET', '/v1/usage');
  }

  collections(): Promise<Collection[]> {
    return this.call('GET', '/v1/collections');
  }

  createCollection(name: string): Promise<Collection> {
    return this.call('POST', '/v1/collections', { body: { name } });
  }

  deleteCollection(name: string): Promise<void> {
    return this.call('DELETE', collectionPath(name));
  }

  /** The collection, with its schema (`null` for none). */
  collection(name: string): Promise<Collection> {
    return this.call('GET', collectionPath(name));
  }

  /** Makes `schema` the collection's: 400 for a schema refused, 409 schema_conflict if stored rows break it. */
  putSchema(collection: string, schema: RowSchema): Promise<RowSchema> {
    return this.call('PUT', `${collectionPath(collection)}/schema`, { body: schema });
  }

  deleteSchema(collection: string): Promise<void> {
    return this.call('DELETE', `${collectionPath(collection)}/schema`);
  }

  indexes(collection: string): Promise<Index[]> {
    return this.call('GET', `${collectionPath(collection)}/indexes`);
  }

  /** Declares an index over `fields`: 409 unique_conflict if a unique one is broken by stored rows already. */
  createIndex(collection: string, fields: string[], unique: boolean): Promise<Index> {
    return this.call('POST', `${collectionPath(collection)}/indexes`, { body: { fields, unique } });
  }

  deleteIndex(collection: string, name: string): Promise<void> {
    return this.call('DELETE', `${collectionPath(collection)}/indexes/${encodeURIComponent(name)}`);
  }

  /** Declares the collection's to-one relation `name` (replacing one of that name): 400 naming the place, 409 schema_conflict listing the rows that name no row. */
  putRelation(collection: string, name: string, declaration: RelationDeclaration): Promise<Relation> {
    return this.call('PUT', relationPath(collection, name), { body: declaration });
  }

  /** Removes the collection's to-one relation `name` with its reverse (the values of its field stay). */
  deleteRelation(collection: string, name: string): Promise<void> {
    return this.call('DELETE', relationPath(collection, name));
  }

  /**
   * Whether the key is an `admin` key. The API says a key's scope only in the list of keys, which only
   * an admin key may read (listKeys): its 200 is the answer, its 403 forbidden says another scope.
   */
  async isAdmin(): Promise<boolean> {
    try {
      await this.keys();
      return true;
    } catch (failure) {
      if (failure instanceof ApiError && failure.problem.code === 'forbidden') return false;
      throw failure;
    }
  }

  async rows(collection: string, query: RowsQuery): Promise<RowsPage> {
    const parameters: Record<string, string> = { limit: String(query.limit), count: 'exact' };
    if (query.after) parameters.after = query.after;
    const filter = rowsFilter(query);
    if (filter) parameters.filter = filter;
    if (query.select) parameters.select = query.select;
    if (query.orderBy) Object.assign(parameters, { order_by: query.orderBy, order: query.order });
    const { body, headers } = await this.exchange<Row[]>('GET', `${collectionPath(collection)}/rows`, { query: parameters });
    return {
      rows: body,
      total: Number(headers.get('Rowbase-Total-Count')),
      seq: Number(headers.get('Rowbase-Seq')),
      next: nextCursor(headers.get('Link')),
    };
  }

  /** The groups of the rows `query` keeps (openapi.yaml, aggregateRows). */
  aggregate(collection: string, query: AggregateQuery): Promise<AggregateAnswer> {
    return this.call('POST', `${collectionPath(collection)}/aggregate`, { body: query });
  }

  insertRows(collection: string, rows: object[]): Promise<Row[]> {
    return this.call('POST', `${collectionPath(collection)}/rows`, { body: rows });
  }

  /** A row as it is now, and its version (its ETag), to change it only if no one else has since. */
  async row(collection: string, id: number): Promise<{ row: Row; etag: string }> {
    const { body, headers } = await this.exchange<Row>('GET', `${collectionPath(collection)}/rows/${id}`, {});
    return { row: body, etag: headers.get('ETag') ?? '*' };
  }

  /** The row with the rows its relations `expand` name in its member `_expand` (docs/relations.md). */
  related(collection: string, id: number, expand: string[]): Promise<Row & { _expand?: Expanded }> {
    return this.call('GET', `${collectionPath(collection)}/rows/${id}`, { query: { expand: expand.join(',') } });
  }

  /** Sets `fields` of a row whose version is still `etag`; 412 precondition_failed if it changed. */
  updateRow(collection: string, id: number, fields: object, etag: string): Promise<Row> {
    return this.call('PATCH', `${collectionPath(collection)}/rows/${id}`, { body: fields, headers: { 'If-Match': etag } });
  }

  /** Deletes a row whose version is still `etag`; 412 precondition_failed if it changed. */
  deleteRow(collection: string, id: number, etag: string): Promise<void> {
    return this.call('DELETE', `${collectionPath(collection)}/rows/${id}`, { headers: { 'If-Match': etag } });
  }

  /** The account's webhooks, oldest first, with their state; an admin key's only (403 forbidden for another). */
  webhooks(): Promise<Webhook[]> {
    return this.call('GET', '/v1/webhooks');
  }

  createWebhook(settings: NewWebhook): Promise<CreatedWebhook> {
    return this.call('POST', '/v1/webhooks', { body: settings });
  }

  /** Resumes a webhook's deliveries where they stopped, or stops them. */
  enableWebhook(id: number, enabled: boolean): Promise<Webhook> {
    return this.call('PATCH', webhookPath(id), { body: { enabled } });
  }

  /** A page of `limit` of the webhook's attempts, newest first, from `before` (a page's `next`); the newest without. */
  deliveries(id: number, limit: number, before?: number): Promise<DeliveryPage> {
    const query: Record<string, string> = { limit: String(limit) };
    if (before !== undefined) query.before = String(before);
    return this.call('GET', `${webhookPath(id)}/deliveries`, { query });
  }

  /** Makes the next attempt of a failed attempt's change due now; 409 conflict if the change was delivered since. */
  retryDelivery(id: number, delivery: number): Promise<void> {
    return this.call('POST', `${webhookPath(id)}/deliveries/${delivery}/retry`);
  }

  /** The collection's rules, as they were set; `null` when it has none (its 404). */
  async rules(collection: string): Promise<Rules | null> {
    try {
      return await this.call('GET', rulesPath(collection));
    } catch (failure) {
      if (failure instanceof ApiError && failure.problem.status === 404) return null;
      throw failure;
    }
  }

  /** Makes `rules` the collection's, whole: 400 with a JSON Pointer to each place that is wrong. */
  putRules(collection: string, rules: Rules): Promise<Rules> {
    return this.call('PUT', rulesPath(collection), { body: rules });
  }

  deleteRules(collection: string): Promise<void> {
    return this.call('DELETE', rulesPath(collection));
  }

  /** Whether the rules let a caller with `claims` (`null`: anonymous) read `row`, why, and the fields hidden from it. */
  checkRead(collection: string, claims: Claims, row: Row): Promise<components['schemas']['RulesCheckResult']> {
    return this.call('POST', `${rulesPath(collection)}/check`, { body: { operation: 'read', claims, row } });
  }

  /** The account as a declaration; an admin key of every collection's only (403 forbidden for another). */
  declaration(): Promise<PulledDeclaration> {
    return this.call('GET', '/v1/declaration');
  }

  /** The account's token issuers, by name; an admin key of every collection's only (403 forbidden for another). */
  issuers(): Promise<Issuer[]> {
    return this.call('GET', '/v1/auth/issuers');
  }

  /** Sets the issuer `name` to `settings`, whole; `made` when there was none of that name (its 201). */
  async putIssuer(name: string, settings: IssuerInput): Promise<{ issuer: Issuer; made: boolean }> {
    const { body, status } = await this.exchange<Issuer>('PUT', issuerPath(name), { body: settings });
    return { issuer: body, made: status === 201 };
  }

  deleteIssuer(name: string): Promise<void> {
    return this.call('DELETE', issuerPath(name));
  }

  /** The account's live keys the key asking could have made itself, oldest first; an admin key's only (403 forbidden for another). */
  keys(): Promise<Key[]> {
    return this.call('GET', '/v1/keys');
  }

  /** Makes a key no wider than this one (403 forbidden for a wider one), answered whole this once. */
  createKey(settings: NewKey): Promise<CreatedKey> {
    return this.call('POST', '/v1/keys', { body: settings });
  }

  /** Revokes the live key with `prefix`: it stops working at once (404 for none this key may see). */
  revokeKey(prefix: string): Promise<void> {
    return this.call('DELETE', `/v1/keys/${encodeURIComponent(prefix)}`);
  }

  /**
   * The feed's address for `collection`, resuming after `since`, of the rows `filter` keeps (all without
   * one). A browser's WebSocket sends no headers: the key goes in the query.
   */
  feedUrl(collection: string, since: number, filter?: string): string {
    const url = new URL('/ws', location.href);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    const parameters: Record<string, string> = { collection, since: String(since), api_key: this.key };
    if (filter) parameters.filter = filter;
    url.search = new URLSearchParams(parameters).toString();
    return url.href;
  }

  private async call<T>(method: string, path: string, options: Exchange = {}): Promise<T> {
    return (await this.exchange<T>(method, path, options)).body;
  }

  private async exchange<T>(
    method: string,
    path: string,
    { query, body, headers: extra }: Exchange,
  ): Promise<{ body: T; headers: Headers; status: number }> {
    const url = new URL(path, location.href);
    if (query) url.search = new URLSearchParams(query).toString();
    const headers: Record<string, string> = { ...extra, Authorization: `Bearer ${this.key}` };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    if (!response.ok) throw new ApiError(problemOf(response, text));
    return { body: (text ? JSON.parse(text) : undefined) as T, headers: response.headers, status: response.status };
  }
}

/** The answer's problem; one made of its status when it has none (a proxy's page, say). */
function problemOf(response: Response, text: string): Problem {
  try {
    const problem = JSON.parse(text) as Problem;
    if (typeof problem?.detail === 'string') return problem;
  } catch {
    // Not JSON: described below.
  }
  return {
    type: 'about:blank',
    title: response.statusText,
    status: response.status,
    code: 'internal',
    detail: `The service answered ${response.status}.`,
    // A proxy in front may have passed the service's X-Request-Id on; else the request is not known by an id.
    instance: `urn:rowbase:request:${response.headers.get('x-request-id') ?? 'unknown'}`,
  };
}

/** The `after` of a Link header's rel="next" (RFC 8288), the one link the service answers on a page. */
function nextCursor(link: string | null): string | undefined {
  const target = link?.match(/<([^>]*)>\s*;\s*rel="next"/)?.[1];
  return target === undefined ? undefined : (new URL(target, location.href).searchParams.get('after') ?? undefined);
}

const collectionPath = (name: string) => `/v1/collections/${encodeURIComponent(name)}`;
const relationPath = (collection: string, name: string) => `${collectionPath(collection)}/relations/${encodeURIComponent(name)}`;
const webhookPath = (id: number) => `/v1/webhooks/${id}`;
const rulesPath = (collection: string) => `${collectionPath(collection)}/rules`;
const issuerPath = (name: string) => `/v1/auth/issuers/${encodeURIComponent(name)}`;

/** A failure as a sentence and, when its problem lists places or rows, one line for each. */
export interface Explained {
  summary: string;
  lines: string[];
}

/**
 * What to show for a failure: the problem's detail, then where each error is (a validation problem's
 * places, a refused row's), the stored rows a schema would break (schema_conflict) or the rows that
 * share values a unique index would keep apart (unique_conflict).
 */
export function explain(error: unknown): Explained {
  if (!(error instanceof ApiError)) return { summary: error instanceof Error ? error.message : String(error), lines: [] };
  const { detail, errors, violations, total, duplicates } = error.problem;
  const lines = (errors ?? []).map((error) =>
    'row' in error
      ? `row ${error.row}${error.pointer ? ` at ${error.pointer}` : ''}: ${error.message}`
      : `${error.name}${error.pointer ? ` at ${error.pointer}` : ''}: ${error.message}`,
  );
  for (const { id, pointer, message } of violations ?? []) lines.push(`row ${id}${pointer ? ` at ${pointer}` : ''}: ${message}`);
  const unlisted = (total ?? 0) - (violations?.length ?? 0);
  if (violations && unlisted > 0) lines.push(`and ${unlisted} more ${unlisted === 1 ? 'row' : 'rows'}`);
  for (const { values, ids } of duplicates ?? []) {
    lines.push(`${values.map((value) => JSON.stringify(value)).join(', ')} in rows ${ids.join(', ')}`);
  }
  return { summary: detail, lines };
}

/** A failure in one line: explain()'s, joined. */
export function describe(error: unknown): string {
  const { summary, lines } = explain(error);
  return [summary, ...lines].join(' — ');
}
