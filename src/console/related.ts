// A row's related rows (docs/relations.md): in the row's dialog, each relation's rows as links (a to-one's
// row, a to-many's rows and its collection filtered to the rows naming this one), read with `expand`; and,
// in the form, the field of a to-one relation picked from a list of the related collection's rows, found
// by an id, words or a filter, a page at a time (GET …/rows with a cursor), not typed as an id.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { type Api, ApiError, describe, type Expanded, type Relation, type Row } from './api.ts';
import { type FormField, inputText, labelFieldOf, NO_ROW, pickerFilter, rowLabel } from './fields.ts';
import { routeHash } from './route.ts';
import { readTyping } from './schema.ts';

/** Rows a picker lists at a time. */
const PICKER_PAGE = 8;

/** The link to row `id` of `collection`: the console opens it there. */
export const rowLink = (collection: string, id: number) => routeHash({ collection, open: id });

interface PickerProps {
  api: Api;
  field: FormField;
  /** The list's own attributes: its id and name (the form reads it by them), what describes it. */
  attributes: Record<string, string | undefined>;
  /** The field's value in the row as edited so far. */
  value: unknown;
  /** The related row the field names, when it was read (the row's related rows): its name in the list. */
  current?: Row | null;
}

/**
 * The field of a to-one relation: a list of the related collection's rows to pick one from (or none),
 * the row it names first when it is not on the page shown. A search box finds rows by id, words or a
 * filter; Previous and Next page through them.
 */
export function RelationPicker({ api, field, attributes, value, current }: PickerProps) {
  const target = field.relation?.collection as string;
  const id = attributes.id as string;
  const held = inputText(field, value);
  const [picked, setPicked] = useState(held);
  // The search asked for and the page of it shown: its cursor, and the cursors of the pages before it.
  const [asked, setAsked] = useState<{ filter?: string; after?: string; before: (string | undefined)[] }>({ before: [] });
  // The page shown, how many rows of its search come before it, and whether it is of a search.
  const [page, setPage] = useState<{ rows: Row[]; total: number; next?: string; skipped: number; found: boolean }>();
  const [how, setHow] = useState<{ searchable: boolean; labelField?: string }>({ searchable: false });
  const [error, setError] = useState('');
  const [words, setWords] = useState('');

  useEffect(() => {
    readTyping(api, target).then(
      (typing) =>
        setHow({ searchable: typing.indexes.some((index) => index.type === 'search'), labelField: labelFieldOf(typing.schema, []) }),
      // Without its schema the rows still list, named by a field they hold.
      () => {},
    );
  }, []);
  useEffect(() => {
    api.rows(target, { filter: asked.filter, after: asked.after, order: 'asc', limit: PICKER_PAGE }).then(
      (read) => {
        setPage({ rows: read.rows, total: read.total, next: read.next, skipped: asked.before.length * PICKER_PAGE, found: !!asked.filter });
        setError('');
      },
      (failure) => setError(failure instanceof ApiError ? failure.problem.detail : describe(failure)),
    );
  }, [asked]);

  const labelField = how.labelField ?? labelFieldOf(null, page?.rows ?? []);
  const find = () => {
    const made = pickerFilter(words, { searchable: how.searchable, labelField });
    if ('error' in made) return setError(made.error);
    setAsked({ filter: made.filter, before: [] });
  };
  const rows = page?.rows ?? [];
  const listed = new Set(rows.map((row) => String(row.id)));
  const skipped = page?.skipped ?? 0;
  const first = skipped + (rows.length > 0 ? 1 : 0);
  const last = skipped + rows.length;
  const currentLabel = current && String(current.id) === held ? rowLabel(current, labelField) : held && `row ${held}`;
  return html`
    <div class="picker" role="group" aria-label=${`${field.name}: a row of ${target}`}>
      <div class="picker-search">
        <input type="search" id=${`${id}-search`} aria-label=${`Find a row of ${target}`} placeholder="an id, words, or a filter"
          value=${words} spellcheck=${false}
          onInput=${(event: Event) => setWords((event.target as HTMLInputElement).value)}
          onKeyDown=${(event: KeyboardEvent) => {
            // Enter finds; it does not save the row.
            if (event.key !== 'Enter') return;
            event.preventDefault();
            find();
          }} />
        <button type="button" onClick=${find}>Find</button>
      </div>
      <select ...${attributes} size="6" onChange=${(event: Event) => setPicked((event.target as HTMLSelectElement).value)}>
        <option value=${NO_ROW} selected=${picked === NO_ROW}>(none)</option>
        ${held && !listed.has(held) ? html`<option value=${held} selected=${picked === held}>${currentLabel} (as it is)</option>` : null}
        ${rows.map(
          (row) =>
            html`<option key=${row.id} value=${String(row.id)} selected=${picked === String(row.id)}>${rowLabel(row, labelField)}</option>`,
        )}
      </select>
      <div class="picker-pages">
        <span class="hint" role="status">${
          page ? `${target} rows ${first}–${last} of ${page.total.toLocaleString()}${page.found ? ' found' : ''}` : `Reading ${target}…`
        }</span>
        <button type="button" disabled=${asked.before.length === 0}
          onClick=${() => setAsked({ ...asked, after: asked.before.at(-1), before: asked.before.slice(0, -1) })}>Previous</button>
        <button type="button" disabled=${!page?.next || last >= (page?.total ?? 0)}
          onClick=${() => setAsked({ ...asked, after: page?.next, before: [...asked.before, asked.after] })}>Next</button>
        ${picked !== NO_ROW ? html`<a href=${rowLink(target, Number(picked))}>Open ${target} row ${picked}</a>` : null}
      </div>
      ${error ? html`<p class="error" role="alert">${error}</p>` : null}
    </div>
  `;
}

/**
 * The rows related to row `id` of `collection` by each of its `relations`, read with `expand` (one
 * request): a to-one's row as a link to it, a to-many's rows each as a link, and a link to the related
 * collection filtered to the rows naming this one. Nothing for a collection without relations.
 */
export function RelatedRows({
  api,
  collection,
  id,
  relations,
  onRead,
}: {
  api: Api;
  collection: string;
  id: number;
  relations: Relation[];
  /** Told the related rows once read, by relation. */
  onRead?: (expanded: Expanded) => void;
}) {
  const [row, setRow] = useState<Row & { _expand?: Expanded }>();
  const [error, setError] = useState('');
  useEffect(() => {
    if (relations.length === 0) return;
    api.related(collection, id, [...new Set(relations.map((relation) => relation.name))]).then(
      (read) => {
        setRow(read);
        if (read._expand) onRead?.(read._expand);
      },
      (failure) => setError(describe(failure)),
    );
  }, []);
  if (relations.length === 0) return null;
  const expanded = row?._expand ?? {};
  const cut = new Set(expanded.$cut ?? []);
  return html`
    <section class="related" aria-labelledby="related-title">
      <h3 id="related-title">Related rows</h3>
      ${error ? html`<p class="error" role="alert">${error}</p>` : null}
      ${
        row
          ? html`
            <dl>
              ${relations.map((relation) => {
                const rows = expanded[relation.name];
                return html`
                  <dt key=${`${relation.name}-name`}>
                    ${relation.name}
                    <span class="hint relation-kind">${
                      relation.kind === 'to_one'
                        ? `to one: ${relation.field} names a row of ${relation.collection}`
                        : `to many: the rows of ${relation.collection} whose ${relation.field} names this one`
                    }</span>
                  </dt>
                  <dd key=${`${relation.name}-rows`} data-relation=${relation.name}>${
                    relation.kind === 'to_one'
                      ? toOne(relation, row[relation.field], rows as Row | null | undefined)
                      : toMany(relation, id, (rows as Row[] | undefined) ?? [], cut.has(relation.name))
                  }</dd>
                `;
              })}
            </dl>
          `
          : error
            ? null
            : html`<p role="status">Reading the related rows…</p>`
      }
    </section>
  `;
}

/** A to-one relation's row: a link to it, or why there is none. */
function toOne(relation: Relation, named: unknown, related: Row | null | undefined) {
  if (named === undefined || named === null) return html`<span class="empty">none</span>`;
  if (!related) return html`<span class="empty">row ${String(named)} of ${relation.collection}, which this key may not read</span>`;
  return html`<a href=${rowLink(relation.collection, related.id)}>${relation.collection} row ${related.id}</a>${nameOf(related)}`;
}

/** A to-many relation's rows, each a link, and the related collection filtered to the rows naming this one. */
function toMany(relation: Relation, id: number, rows: Row[], cut: boolean) {
  const all = routeHash({ collection: relation.collection, filter: JSON.stringify({ [relation.field]: id }) });
  return html`
    ${
      rows.length === 0
        ? html`<span class="empty">none</span>`
        : html`<ul>${rows.map((row) => html`<li key=${row.id}><a href=${rowLink(relation.collection, row.id)}>${relation.collection} row ${row.id}</a>${nameOf(row)}</li>`)}</ul>`
    }
    <a class="all" href=${all}>${cut ? `All the rows of ${relation.collection} naming this one (the first ${rows.length} shown)` : `These rows in ${relation.collection}`}</a>
  `;
}

/** A related row's name beside its link: the field a list names it by, when it holds one. */
function nameOf(row: Row) {
  const label = rowLabel(row, labelFieldOf(null, [row]));
  return label.startsWith('row ') ? null : html` <span class="row-name">${label.slice(label.indexOf('·') + 2)}</span>`;
}
