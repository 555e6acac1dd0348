// The dialogs that write rows: a row opened to edit or delete, and rows inserted. A row of a collection
// with a schema or relations is edited in a form of inputs by type, its relations' fields picked from
// lists of the related rows (form.ts), or as JSON, the person's choice; any other as JSON. An opened row
// shows its related rows as links (related.ts). Each sends one request of openapi.yaml's and says plainly
// what the service refused: a 422 row_invalid's errors and a 409 unique_violation at the fields they are
// about.
import { html } from 'htm/preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { type Api, ApiError, type Expanded, type Explained, explain, type Relation, type Row, type RowSchema } from './api.ts';
import { formFields, placeErrors, withRelations } from './fields.ts';
import { RowForm, readForm } from './form.ts';
import { Modal, Problems } from './parts.ts';
import { RelatedRows } from './related.ts';

/** What a dialog over the rows is handed (rows.ts). */
export interface DialogContext {
  api: Api;
  collection: string;
  /** The collection's schema, `null` for none: a row of one with a schema is edited in a form too. */
  schema: RowSchema | null;
  /** The collection's relations: a to-one's field is picked from a list, and an opened row shows its related rows. */
  relations: Relation[];
  close: () => void;
  afterChange: () => void;
  onDeleted: () => void;
}

type View = 'form' | 'json';

/**
 * What both dialogs share: the schema's fields, which view is shown (the form when the schema declares
 * fields), and what is wrong, in the message area and at the fields; the first field found wrong takes
 * the focus.
 */
function useEditing(schema: RowSchema | null, relations: Relation[]) {
  const fields = useMemo(() => withRelations(formFields(schema), relations), [schema, relations]);
  const [view, setView] = useState<View>(fields.length > 0 ? 'form' : 'json');
  const [failure, setFailure] = useState<Explained>();
  const [atFields, setAtFields] = useState<Map<string, string[]>>(new Map());
  const form = useRef<HTMLFormElement>(null);
  useEffect(() => {
    if (atFields.size > 0) form.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
  }, [atFields]);

  /** Says `summary` in the message area, and, by field, what is wrong there. */
  const say = (summary: string, where: Map<string, string[]> = new Map(), lines: string[] = []) => {
    setAtFields(where);
    setFailure({ summary, lines });
  };
  /** Says why the service refused a write: in the form, at the fields the problem is about. */
  const refused = (error: unknown) => {
    const code = error instanceof ApiError ? error.problem.code : undefined;
    if (view === 'form' && error instanceof ApiError && (code === 'row_invalid' || code === 'unique_violation')) {
      const placed = placeErrors(
        error.problem,
        fields.map((field) => field.name),
      );
      say(error.problem.detail, placed.atFields, placed.elsewhere);
    } else {
      setAtFields(new Map());
      setFailure(explain(error));
    }
  };
  /** The form's row, from `draft`; undefined (and why, at each field) when an input holds no value. */
  const readRow = (draft: Record<string, unknown>, inserting: boolean) => {
    const { row, errors } = readForm(form.current as HTMLFormElement, fields, draft, inserting);
    if (errors.size === 0) return row;
    say('Some fields hold no value: see each.', errors);
  };
  /** The text of the form's textarea `name` (the JSON view's). */
  const textOf = (name: string) => (form.current?.elements.namedItem(name) as HTMLTextAreaElement | null)?.value ?? '';
  /** Shows `next`, what was said of the other view gone. */
  const show = (next: View) => {
    setView(next);
    setAtFields(new Map());
    setFailure(undefined);
  };
  return { fields, view, show, failure, atFields, form, say, refused, readRow, textOf };
}

/** Form or JSON, for a collection with a schema. */
function ViewSwitch({ view, onSwitch }: { view: View; onSwitch: (view: View) => void }) {
  return html`
    <div class="view-switch" role="group" aria-label="Edit as">
      <button type="button" aria-pressed=${view === 'form' ? 'true' : 'false'} onClick=${() => onSwitch('form')}>Form</button>
      <button type="button" aria-pressed=${view === 'json' ? 'true' : 'false'} onClick=${() => onSwitch('json')}>JSON</button>
    </div>
  `;
}

/**
 * Rows to insert: in the form, one; as JSON, a pasted array of objects (or one object). All or none
 * are inserted.
 */
export function InsertRows({ api, collection, schema, relations, close, afterChange }: DialogContext) {
  const editing = useEditing(schema, relations);
  const { fields, view, form, say, textOf } = editing;
  // The row of the form, kept across switches to JSON and back.
  const [draft, setDraft] = useState<Record<string, unknown>>({});

  /** The rows the view holds, or undefined when they are not rows (said). */
  const rows = (): Record<string, unknown>[] | undefined => {
    if (view === 'form') {
      const row = editing.readRow(draft, true);
      return row && [row];
    }
    const text = textOf('rows');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (failure) {
      say(`Not JSON: ${(failure as Error).message}`);
      return undefined;
    }
    return (Array.isArray(parsed) ? parsed : [parsed]) as Record<string, unknown>[];
  };

  const switchTo = (next: View) => {
    if (next === view) return;
    const empty = next === 'form' && textOf('rows').trim() === '';
    const held = empty ? [] : rows();
    if (!held) return;
    if (held.length > 1) return say(`The form holds one row, and these are ${held.length}: insert them as JSON.`);
    const [row = {}] = held;
    if (typeof row !== 'object' || row === null || Array.isArray(row)) return say('A row is a JSON object.');
    setDraft(row);
    editing.show(next);
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    const held = rows();
    if (!held) return;
    try {
      await api.insertRows(collection, held);
      afterChange();
    } catch (failure) {
      editing.refused(failure);
    }
  };
  const drafted = Object.keys(draft).length > 0 ? JSON.stringify([draft], null, 2) : '';
  return html`
    <${Modal} title=${`Insert rows into ${collection}`} onClose=${close}>
      <form method="dialog" ref=${form} onSubmit=${submit} noValidate>
        ${fields.length > 0 ? html`<${ViewSwitch} view=${view} onSwitch=${switchTo} />` : null}
        ${
          view === 'form'
            ? html`<${RowForm} key="form" api=${api} fields=${fields} draft=${draft} errors=${editing.atFields} schema=${schema !== null} />`
            : html`
              <label for="insert-rows">Rows, as a JSON array of objects</label>
              <textarea id="insert-rows" key="json" name="rows" rows="10" spellcheck=${false} placeholder='[{"text": "hello"}]' defaultValue=${drafted}></textarea>
            `
        }
        <${Problems} failure=${editing.failure} />
        <div class="buttons">
          <button type="submit">Insert</button>
          <button type="button" onClick=${close}>Cancel</button>
        </div>
      </form>
    <//>
  `;
}

/**
 * A row to edit, in the form or as JSON: Save sends the top-level fields that changed (PATCH replaces
 * each field given whole). A field cannot be removed by PATCH: the editor says so rather than send a
 * patch that would keep it.
 */
export function RowEditor({ api, collection, schema, relations, row: listed, close, afterChange }: DialogContext & { row: Row }) {
  const editing = useEditing(schema, relations);
  const { fields, view, form, say, textOf } = editing;
  // The row as it is now, whole (the table may show only some fields), with its version: saving and
  // deleting are refused (412) if someone else changed it since.
  const [current, setCurrent] = useState<{ row: Row; etag: string }>();
  // The row as edited so far, kept across switches between the form and JSON.
  const [draft, setDraft] = useState<Record<string, unknown>>();
  const [confirming, setConfirming] = useState(false);
  // The rows its relations name, once read (RelatedRows): their names in the form's lists.
  const [related, setRelated] = useState<Expanded>();
  useEffect(() => {
    api.row(collection, listed.id).then(
      (read) => {
        setCurrent(read);
        setDraft(read.row);
      },
      (failure) => editing.refused(failure),
    );
  }, []);
  const failed = (failure: unknown) => {
    const changed = failure instanceof ApiError && failure.problem.code === 'precondition_failed';
    if (!changed) return editing.refused(failure);
    say(
      `Row ${listed.id} was changed by someone else since it was opened here: nothing was saved. Close it and open it again to see the change.`,
    );
  };

  /** The row the view holds, or undefined when it is not one (said). */
  const edited = (): Record<string, unknown> | undefined => {
    if (!draft) return undefined;
    if (view === 'form') return editing.readRow(draft, false);
    const parsed = parseRow(textOf('row'));
    if (typeof parsed === 'string') return void say(parsed);
    return parsed;
  };

  const switchTo = (next: View) => {
    if (next === view) return;
    const row = edited();
    if (!row) return;
    setDraft(row);
    editing.show(next);
  };

  const save = async (event: Event) => {
    event.preventDefault();
    if (!current) return;
    const row = edited();
    if (!row) return;
    const changes = changesOf(row, current.row);
    if (typeof changes === 'string') return say(changes);
    try {
      await api.updateRow(collection, listed.id, changes, current.etag);
      afterChange();
    } catch (failure) {
      failed(failure);
    }
  };
  const remove = async () => {
    if (!current) return;
    try {
      await api.deleteRow(collection, listed.id, current.etag);
      afterChange();
    } catch (failure) {
      failed(failure);
    }
  };
  return html`
    <${Modal} title=${`Row ${listed.id}`} onClose=${close}>
      <form method="dialog" ref=${form} onSubmit=${save} noValidate>
        ${fields.length > 0 ? html`<${ViewSwitch} view=${view} onSwitch=${switchTo} />` : null}
        ${
          !draft
            ? html`<p role="status">Reading row ${listed.id}…</p>`
            : view === 'form'
              ? html`<${RowForm} key="form" api=${api} fields=${fields} draft=${draft} errors=${editing.atFields}
                  schema=${schema !== null} related=${related} />`
              : html`
                <label for="row-json">The row as JSON</label>
                <textarea id="row-json" key="json" name="row" rows="14" spellcheck=${false} defaultValue=${JSON.stringify(draft, null, 2)}></textarea>
              `
        }
        <${RelatedRows} api=${api} collection=${collection} id=${listed.id} relations=${relations} onRead=${setRelated} />
        <${Problems} failure=${editing.failure} />
        <div class="buttons">
          <button type="submit" disabled=${!current}>Save</button>
          ${
            confirming
              ? html`<button type="button" class="danger" onClick=${remove}>${`Delete row ${listed.id}`}</button>`
              : html`<button type="button" disabled=${!current} onClick=${() => setConfirming(true)}>Delete…</button>`
          }
          <button type="button" onClick=${close}>Cancel</button>
        </div>
      </form>
    <//>
  `;
}

/** The row `text` holds, or why it holds none. */
function parseRow(text: string): Record<string, unknown> | string {
  let edited: unknown;
  try {
    edited = JSON.parse(text);
  } catch (failure) {
    return `Not JSON: ${(failure as Error).message}`;
  }
  if (typeof edited !== 'object' || edited === null || Array.isArray(edited)) return 'A row is a JSON object.';
  return edited as Record<string, unknown>;
}

/** The fields of `edited` that differ from `row`'s, or why it cannot be saved. */
function changesOf(edited: Record<string, unknown>, row: Row): Record<string, unknown> | string {
  if (edited.id !== row.id) return 'The id cannot change.';
  const removed = Object.keys(row).filter((field) => !(field in edited));
  if (removed.length > 0) return `A field cannot be removed, only set (to null, say): ${removed.join(', ')}.`;
  const changed = Object.entries(edited).filter(([field, value]) => field !== 'id' && JSON.stringify(value) !== JSON.stringify(row[field]));
  if (changed.length === 0) return 'Nothing changed.';
  return Object.fromEntries(changed);
}
