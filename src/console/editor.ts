// The dialogs that write rows: a row opened to edit as JSON or delete, and rows inserted from a pasted
// JSON array. Each sends one request of openapi.yaml's and says plainly what the service refused.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, describe, type Row } from './api.ts';
import { Modal, Status } from './parts.ts';
import type { DialogContext } from './rows.ts';

export function InsertRows({ api, collection, close, afterChange }: DialogContext) {
  const [error, setError] = useState('');
  const submit = async (event: Event) => {
    event.preventDefault();
    const text = String(new FormData(event.target as HTMLFormElement).get('rows') ?? '');
    let rows: unknown;
    try {
      rows = JSON.parse(text);
    } catch (failure) {
      return setError(`Not JSON: ${(failure as Error).message}`);
    }
    if (!Array.isArray(rows)) rows = [rows];
    try {
      await api.insertRows(collection, rows as object[]);
      afterChange();
    } catch (failure) {
      setError(describe(failure));
    }
  };
  return html`
    <${Modal} title=${`Insert rows into ${collection}`} onClose=${close}>
      <form method="dialog" onSubmit=${submit}>
        <label for="insert-rows">Rows, as a JSON array of objects</label>
        <textarea id="insert-rows" name="rows" rows="10" spellcheck=${false} placeholder='[{"text": "hello"}]'></textarea>
        <${Status} error=${error} />
        <div class="buttons">
          <button type="submit">Insert</button>
          <button type="button" onClick=${close}>Cancel</button>
        </div>
      </form>
    <//>
  `;
}

/**
 * A row as JSON, to edit: Save sends the top-level fields that changed (PATCH replaces each field
 * given whole). A field cannot be removed by PATCH: the editor says so rather than send a patch that
 * would keep it.
 */
export function RowEditor({ api, collection, row: listed, close, afterChange }: DialogContext & { row: Row }) {
  // The row as it is now, whole (the table may show only some fields), with its version: saving and
  // deleting are refused (412) if someone else changed it since.
  const [current, setCurrent] = useState<{ row: Row; etag: string }>();
  const [error, setError] = useState('');
  const [confirming, setConfirming] = useState(false);
  useEffect(() => {
    api.row(collection, listed.id).then(setCurrent, (failure) => setError(describe(failure)));
  }, []);
  const failed = (failure: unknown) => {
    const changed = failure instanceof ApiError && failure.problem.code === 'precondition_failed';
    setError(
      changed
        ? `Row ${listed.id} was changed by someone else since it was opened here: nothing was saved. Close it and open it again to see the change.`
        : describe(failure),
    );
  };
  const save = async (event: Event) => {
    event.preventDefault();
    if (!current) return;
    const text = String(new FormData(event.target as HTMLFormElement).get('row') ?? '');
    const edited = parseEdit(text, current.row);
    if (typeof edited === 'string') return setError(edited);
    try {
      await api.updateRow(collection, listed.id, edited, current.etag);
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
      <form method="dialog" onSubmit=${save}>
        <label for="row-json">The row as JSON</label>
        ${
          current
            ? html`<textarea id="row-json" name="row" rows="14" spellcheck=${false} defaultValue=${JSON.stringify(current.row, null, 2)}></textarea>`
            : html`<p role="status">Reading row ${listed.id}…</p>`
        }
        <${Status} error=${error} />
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

/** The fields of `text` that differ from `row`'s, or why it cannot be saved. */
export function parseEdit(text: string, row: Row): Record<string, unknown> | string {
  let edited: unknown;
  try {
    edited = JSON.parse(text);
  } catch (failure) {
    return `Not JSON: ${(failure as Error).message}`;
  }
  if (typeof edited !== 'object' || edited === null || Array.isArray(edited)) return 'A row is a JSON object.';
  const fields = edited as Record<string, unknown>;
  if (fields.id !== row.id) return 'The id cannot change.';
  const removed = Object.keys(row).filter((field) => !(field in fields));
  if (removed.length > 0) return `A field cannot be removed, only set (to null, say): ${removed.join(', ')}.`;
  const changed = Object.entries(fields).filter(([field, value]) => field !== 'id' && JSON.stringify(value) !== JSON.stringify(row[field]));
  if (changed.length === 0) return 'Nothing changed.';
  return Object.fromEntries(changed);
}
