// A collection's rows: a table whose columns are the fields present (or those selected), sorted by a
// click on a column, narrowed by a filter in the filter language (docs/api.md, "Filters") with its
// errors shown beside it, grouped (groups.ts), paged, counted; a row opened to edit or delete and rows inserted (editor.ts);
// and, live, the feed's changes applied in place (live.ts) with the last of them listed beside the table.
// Above the table, the collection's schema and indexes (schema.ts), its relations (relations.ts) and its
// rules, with the table's page previewed as a user would see it (rules.ts). A to-one relation's field
// links each row to the row it names (related.ts); the view opens at a route's filter and row (route.ts).
import { html } from 'htm/preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { SCORE } from '../query/order.ts';
import { type Api, ApiError, describe, type Relation, type Row, type RowsQuery, rowsFilter } from './api.ts';
import { type DialogContext, InsertRows, RowEditor } from './editor.ts';
import { RowExpiry, TtlLine } from './expiry.ts';
import { type Change, Feed, type FeedState } from './feed.ts';
import { GroupPanel } from './groups.ts';
import { applyChange, type ShownRow } from './live.ts';
import { Modal, Status } from './parts.ts';
import { rowLink } from './related.ts';
import { RelationsPanel } from './relations.ts';
import { routeHash } from './route.ts';
import { RulesPanel } from './rules.ts';
import { readTyping, SchemaPanel, type Typing } from './schema.ts';

const PAGE_SIZE = 25;
/** How many of the feed's last messages the panel lists. */
const PANEL_SIZE = 50;

interface Props {
  api: Api;
  collection: string;
  /** Whether the key is an admin key, which may change the collection's schema, indexes and relations. */
  admin: boolean;
  /** The account's collections, which a relation may name. */
  collections: string[];
  /** The filter the view opens with, and the row it opens (a route's: route.ts); `opened` moves each time the route is followed. */
  filter?: string;
  open?: number;
  opened?: number;
  /** After a change made here: the counts around the view are read again. */
  onChanged: () => void;
  onDeleted: () => void;
}

export function RowsView({ api, collection, admin, collections, filter, open, opened, onChanged, onDeleted }: Props) {
  const [query, setQuery] = useState<RowsQuery>({ order: 'asc', limit: PAGE_SIZE, filter });
  // The cursors of the pages before this one, for Previous: a cursor only leads forward.
  const [before, setBefore] = useState<(string | undefined)[]>([]);
  const [next, setNext] = useState<string>();
  // The rows on screen and how many match in all, moved together by live changes.
  const [view, setView] = useState<{ shown: ShownRow[]; total: number }>({ shown: [], total: 0 });
  // The page's snapshot: live changes follow from its seq, and start again with every read.
  const [page, setPage] = useState({ seq: 0, loads: 0 });
  const [filterError, setFilterError] = useState('');
  const [error, setError] = useState('');
  const [live, setLive] = useState(false);
  const [dialog, setDialog] = useState<'insert' | 'delete-collection' | Row>();
  // The collection's schema and indexes; none shown until read.
  const [typing, setTyping] = useState<Typing>();
  // Whether a page is being read (the last asked for, which is the one shown): the table is busy for a
  // screen reader meanwhile. An earlier page's answer that comes after it was asked for is dropped.
  const [reading, setReading] = useState(true);
  const reads = useRef(0);

  /** Reads the page `asked`; `pages` is the cursors of the pages before it. */
  const reload = async (asked: RowsQuery = query, pages = before) => {
    const asking = ++reads.current;
    setReading(true);
    try {
      const read = await api.rows(collection, asked);
      if (asking !== reads.current) return;
      setQuery(asked);
      setBefore(pages);
      setNext(read.next);
      setView({ shown: read.rows.map((row) => ({ row })), total: read.total });
      setPage((before) => ({ seq: read.seq, loads: before.loads + 1 }));
      setFilterError('');
      setError('');
    } catch (failure) {
      if (asking !== reads.current) return;
      const filterProblem = failure instanceof ApiError && failure.problem.errors?.some((item) => 'name' in item && item.name === 'filter');
      if (filterProblem) setFilterError(describe(failure));
      else setError(describe(failure));
    } finally {
      if (asking === reads.current) setReading(false);
    }
  };
  const retype = () =>
    readTyping(api, collection).then(
      (read) => {
        setTyping(read);
      },
      (failure) => setError(describe(failure)),
    );
  useEffect(() => {
    reload();
    retype();
  }, []);
  // A route naming a row opens it, each time it is followed, once the collection's schema and relations
  // are read (they say whether it opens in the form).
  const typed = typing !== undefined;
  useEffect(() => {
    if (open !== undefined && typed) setDialog({ id: open });
  }, [open, opened, typed]);

  const { feedState, changes } = useLiveChanges(api, collection, live, page, query, setView);

  const { shown, total } = view;
  // A collection with a search index has a search box.
  const searchable = typing?.indexes.some((index) => index.type === 'search') ?? false;
  const columns = useMemo(() => columnsOf(shown, query.select, typing?.ttl ?? undefined), [shown, query.select, typing]);

  const applyControls = (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const filter = String(form.get('filter') ?? '').trim();
    const select = String(form.get('select') ?? '').replace(/\s+/g, '');
    const search = String(form.get('search') ?? '').trim() || undefined;
    // A new search orders by relevance; none, nothing does.
    const orderBy = search ? (search === query.search ? query.orderBy : SCORE) : query.orderBy === SCORE ? undefined : query.orderBy;
    const order = orderBy === SCORE ? 'asc' : query.order;
    reload({ ...query, filter: filter || undefined, select: select || undefined, search, orderBy, order, after: undefined }, []);
  };

  const sortBy = (field: string) => {
    // Relevance has one direction: the most relevant first.
    const order = query.orderBy === field && query.order === 'asc' && field !== SCORE ? 'desc' : 'asc';
    reload({ ...query, orderBy: field, order, after: undefined }, []);
  };

  /**
   * Closes the dialog; one a route opened leaves the route for the view's (the address's row gone, with
   * no new entry in the history), so that following the row's link again opens it again.
   */
  const closeDialog = () => {
    setDialog(undefined);
    const viewed = routeHash({ collection, filter });
    if (open !== undefined && location.hash !== viewed) history.replaceState(null, '', viewed);
  };
  const afterChange = () => {
    closeDialog();
    onChanged();
    reload();
  };
  // Each to-one relation by the field that holds its ids: that column's ids link to the rows they name.
  const linked = useMemo(
    () => new Map((typing?.relations ?? []).filter((relation) => relation.kind === 'to_one').map((relation) => [relation.field, relation])),
    [typing],
  );

  const skipped = before.length * query.limit;
  const first = shown.length === 0 ? 0 : skipped + 1;
  const last = skipped + shown.length;

  return html`
    <section class="rows" aria-labelledby="collection-title">
      <header class="rows-head">
        <h2 id="collection-title">${collection}</h2>
        <button type="button" onClick=${() => setDialog('insert')}>Insert rows</button>
        <button type="button" class="danger" onClick=${() => setDialog('delete-collection')}>Delete collection</button>
      </header>
      <${SchemaPanel} api=${api} collection=${collection} typing=${typing} admin=${admin} onChanged=${() => {
        retype();
        onChanged();
      }} />
      <${RelationsPanel} api=${api} collection=${collection} relations=${typing?.relations} collections=${collections} admin=${admin} onChanged=${() => {
        retype();
        onChanged();
      }} />
      ${typing?.ttl ? html`<${TtlLine} field=${typing.ttl} />` : null}
      <${RulesPanel} api=${api} collection=${collection} query=${query} />
      <${Controls} query=${query} filterError=${filterError} searchable=${searchable} live=${live} feedState=${feedState}
        onApply=${applyControls} onLive=${setLive} />
      <${GroupPanel} api=${api} collection=${collection} filter=${rowsFilter(query)} />
      <${Status} error=${error} />
      <${RowsTable} query=${query} columns=${columns} shown=${shown} linked=${linked} ttl=${typing?.ttl ?? undefined} caption=${`Rows ${first}–${last} of ${total}${captionOf(query)}`} busy=${reading}
        changes=${live ? changes : undefined} onSort=${sortBy} onOpen=${(row: Row) => setDialog(row)} />
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled=${before.length === 0} onClick=${() => reload({ ...query, after: before.at(-1) }, before.slice(0, -1))}>Previous</button>
        <button type="button" disabled=${next === undefined || last >= total} onClick=${() => reload({ ...query, after: next }, [...before, query.after])}>Next</button>
      </nav>
      ${dialogFor(dialog, {
        api,
        collection,
        schema: typing?.schema ?? null,
        relations: typing?.relations ?? [],
        close: closeDialog,
        afterChange,
        onDeleted,
      })}
    </section>
  `;
}

/**
 * While `live`, the feed's changes from the page's own snapshot (`page.seq`, its Rowbase-Seq): no change
 * between the read and the feed is missed. Not before the first page is read: from seq 0 it would replay
 * every retained change of the collection. Each change moves the rows of `setView` in place, and the
 * last PANEL_SIZE are listed.
 */
function useLiveChanges(
  api: Api,
  collection: string,
  live: boolean,
  page: { seq: number; loads: number },
  query: RowsQuery,
  setView: (update: (view: { shown: ShownRow[]; total: number }) => { shown: ShownRow[]; total: number }) => void,
) {
  const [feedState, setFeedState] = useState<{ state: FeedState; reason?: string }>();
  const [changes, setChanges] = useState<Change[]>([]);
  useEffect(() => {
    if (!live || page.loads === 0) return;
    const feed = new Feed(api, collection, page.seq, rowsFilter(query), {
      change(change) {
        setView(({ shown, total }) => {
          const after = applyChange(shown, change);
          return { shown: after, total: total + after.length - shown.length };
        });
        setChanges((listed) => [change, ...listed].slice(0, PANEL_SIZE));
      },
      state(state, reason) {
        setFeedState({ state, reason });
      },
    });
    return () => feed.stop();
  }, [live, page.loads]);

  return { feedState, changes };
}

/** The controls above the table: its filter (and the filter's errors), search, fields, and whether it is live. */
function Controls({
  query,
  filterError,
  searchable,
  live,
  feedState,
  onApply,
  onLive,
}: {
  query: RowsQuery;
  filterError: string;
  /** Whether the collection has a search index: then a search box. */
  searchable: boolean;
  live: boolean;
  feedState?: { state: FeedState; reason?: string };
  onApply: (event: Event) => void;
  onLive: (live: boolean) => void;
}) {
  return html`
  <form class="controls" onSubmit=${onApply}>
    <div class="field">
      <label for="filter">Filter</label>
      <input id="filter" name="filter" defaultValue=${query.filter ?? ''} placeholder='{"done": false, "score": {"$gte": 3}}'
        aria-describedby="filter-error" aria-invalid=${filterError ? 'true' : 'false'} spellcheck=${false} />
      <p id="filter-error" class="error" role="alert">${filterError}</p>
    </div>
    ${
      searchable
        ? html`
          <div class="field">
            <label for="search">Search</label>
            <input id="search" name="search" type="search" defaultValue=${query.search ?? ''} placeholder="words; the most relevant first"
              title="Rows holding every word, the most relevant first: select _score to see each one's score" spellcheck=${false} />
          </div>
        `
        : null
    }
    <div class="field">
      <label for="select">Fields</label>
      <input id="select" name="select" defaultValue=${query.select ?? ''} placeholder="all; or text,done" spellcheck=${false} />
    </div>
    <button type="submit">Apply</button>
    <label class="toggle"><input type="checkbox" checked=${live} onChange=${(event: Event) => onLive((event.target as HTMLInputElement).checked)} /> Live</label>
    <span class="feed-state" role="status">${live && feedState ? feedLabel(feedState) : ''}</span>
  </form>
  `;
}

/** The page's rows, a column a field, sorted by a click on a column's head; beside them, live, the last changes. */
function RowsTable({
  query,
  columns,
  shown,
  linked,
  ttl,
  caption,
  busy,
  changes,
  onSort,
  onOpen,
}: {
  query: RowsQuery;
  columns: string[];
  shown: ShownRow[];
  /** Each to-one relation by the field that holds its ids. */
  linked: Map<string, Relation>;
  /** The field of the collection's time to live, whose cells say when each row expires; undefined for none. */
  ttl?: string;
  caption: string;
  /** Whether its page is being read. */
  busy: boolean;
  /** The feed's last changes, while the table is live. */
  changes?: Change[];
  onSort: (field: string) => void;
  onOpen: (row: Row) => void;
}) {
  return html`
  <div class="table-and-panel">
    <div class="table-scroll">
      <table aria-busy=${busy ? 'true' : 'false'}>
        <caption>${caption}</caption>
        <thead>
          <tr>
            ${columns.map(
              (field) => html`
                <th scope="col" key=${field} aria-sort=${sortState(query, field)}>
                  <button type="button" class="sort" onClick=${() => onSort(field)}>${field}${sortMark(query, field)}</button>
                </th>
              `,
            )}
            <th scope="col"><span class="visually-hidden">Actions</span></th>
          </tr>
        </thead>
        <tbody>
          ${shown.map(
            ({ row, fresh, seq }) => html`
              <tr key=${`${row.id}:${seq ?? ''}`} class=${fresh ?? ''} data-id=${row.id}>
                ${columns.map(
                  (field) =>
                    html`<td key=${field} class=${field in row ? '' : 'missing'}>${cell(row[field], linked.get(field))}${
                      field === ttl ? html` <${RowExpiry} value=${row[field]} />` : null
                    }</td>`,
                )}
                <td><button type="button" onClick=${() => onOpen(row)} aria-label=${`Open row ${row.id}`}>Open</button></td>
              </tr>
            `,
          )}
        </tbody>
      </table>
    </div>
    ${
      changes
        ? html`
          <aside aria-label="Live changes">
            <h3>Live changes</h3>
            <ol>
              ${changes.map((change) => html`<li key=${change.seq}><span class="seq">#${change.seq}</span> ${change.type} row ${change.row.id}</li>`)}
            </ol>
          </aside>
        `
        : null
    }
  </div>
  `;
}

function dialogFor(dialog: 'insert' | 'delete-collection' | Row | undefined, context: DialogContext) {
  if (dialog === undefined) return null;
  if (dialog === 'insert') return html`<${InsertRows} ...${context} />`;
  if (dialog === 'delete-collection') return html`<${DeleteCollection} ...${context} />`;
  return html`<${RowEditor} key=${dialog.id} row=${dialog} ...${context} />`;
}

function DeleteCollection({ api, collection, close, onDeleted }: DialogContext) {
  const [error, setError] = useState('');
  const remove = async () => {
    try {
      await api.deleteCollection(collection);
      onDeleted();
    } catch (failure) {
      setError(describe(failure));
    }
  };
  return html`
    <${Modal} title=${`Delete the collection ${collection}?`} onClose=${close}>
      <p>Every row of <strong>${collection}</strong> is deleted with it, and its feed's subscribers are told. This cannot be undone.</p>
      <${Status} error=${error} />
      <div class="buttons">
        <button type="button" class="danger" onClick=${remove}>${`Delete ${collection}`}</button>
        <button type="button" onClick=${close} autofocus>Cancel</button>
      </div>
    <//>
  `;
}

/**
 * The table's columns: `id`, then the selected fields, or every field the rows have, in the order first
 * met, and the field of the collection's time to live (`ttl`) even when no row has it: its cells say
 * when each row expires, or that it never does.
 */
function columnsOf(shown: ShownRow[], select: string | undefined, ttl: string | undefined): string[] {
  if (select) return ['id', ...select.split(',').filter((field) => field !== 'id')];
  const fields = new Set(['id']);
  for (const { row } of shown) for (const field of Object.keys(row)) fields.add(field);
  if (ttl && shown.length > 0) fields.add(ttl);
  return [...fields];
}

/** What the rows of the caption match: the search, the filter, or both. */
function captionOf({ filter, search }: RowsQuery): string {
  if (search) return filter ? ' matching the search and the filter' : ' matching the search';
  return filter ? ' matching the filter' : '';
}

/** A field's value in the table: a to-one relation's id as a link to the row it names. */
function cell(value: unknown, relation?: Relation) {
  if (value === undefined) return '';
  if (relation && typeof value === 'number' && Number.isSafeInteger(value) && value >= 1)
    return html`<a href=${rowLink(relation.collection, value)} aria-label=${`${relation.collection} row ${value}`}>${value}</a>`;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function sortState(query: RowsQuery, field: string): string | undefined {
  const by = query.orderBy ?? 'id';
  if (by !== field) return undefined;
  // By relevance: the highest score first.
  return query.order === 'asc' && by !== SCORE ? 'ascending' : 'descending';
}

function sortMark(query: RowsQuery, field: string): string {
  const state = sortState(query, field);
  return state === 'ascending' ? ' ▲' : state === 'descending' ? ' ▼' : '';
}

function feedLabel({ state, reason }: { state: FeedState; reason?: string }): string {
  if (state === 'ended') return `Live view ended: ${reason}`;
  return { connecting: 'Connecting…', live: 'Receiving changes', retrying: 'Reconnecting…' }[state];
}
