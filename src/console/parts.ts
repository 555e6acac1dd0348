// Small parts the console's views share: a line that says what went wrong or what happened, read out by
// screen readers, a failure said with the places or rows its problem lists, a modal dialog, a value
// edited as JSON in one, a table's header of columns and buttons, a time, and the list an admin key's
// view reads, with the sentence that takes its place for a key that may not read it.
import { html } from 'htm/preact';
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, describe, type Explained, explain } from './api.ts';

/** An error (announced at once) or a note (announced politely); nothing when both are empty. */
export function Status({ error, note }: { error?: string; note?: string }) {
  return html`
    <p class="error" role="alert">${error ?? ''}</p>
    ${note === undefined ? null : html`<p class="note" role="status">${note}</p>`}
  `;
}

/** A failure (announced at once): its summary, then each place or row it lists; nothing without one. */
export function Problems({ failure }: { failure?: Explained }) {
  return html`
    <div class="error problems" role="alert">
      ${failure ? html`<p>${failure.summary}</p>` : null}
      ${failure?.lines.length ? html`<ul>${failure.lines.map((line, index) => html`<li key=${index}>${line}</li>`)}</ul>` : null}
    </div>
  `;
}

/**
 * A change an admin key's panel makes (a schema's, an index's, a relation's): `act(change)` runs it, then
 * `done()`; a failure is kept, explained, for Problems to list, until the next change goes through.
 */
export function useChange(done: () => void) {
  const [failure, setFailure] = useState<Explained>();
  const act = async (change: () => Promise<unknown>) => {
    try {
      await change();
      setFailure(undefined);
      done();
    } catch (error) {
      setFailure(explain(error));
    }
  };
  return { failure, setFailure, act };
}

/**
 * A dialog shown modal (the browser keeps focus in it, Escape closes it), titled `title`; `onClose` is
 * called however it closes.
 */
export function Modal({ title, onClose, children }: { title: string; onClose: () => void; children: ComponentChildren }) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  return html`
    <dialog ref=${dialog} aria-label=${title} onClose=${onClose}>
      <h2>${title}</h2>
      ${children}
    </dialog>
  `;
}

interface JsonEditorProps {
  title: string;
  /** The textarea's id and name. */
  name: string;
  /** The textarea's label. */
  label: string;
  /** What the text starts as. */
  value: unknown;
  /** Said under the text. */
  hint: ComponentChildren;
  /** The save button's words. */
  saveLabel: string;
  /** Sends the value the text holds; a failure is listed under the text, and the dialog stays open. */
  save: (value: unknown) => Promise<void>;
  close: () => void;
}

/**
 * A value edited as JSON in a modal dialog: text that is no JSON is said before anything is sent, and
 * the service's refusal is listed beside the text, each place it names on a line of its own.
 */
export function JsonEditor({ title, name, label, value, hint, saveLabel, save, close }: JsonEditorProps) {
  const [failure, setFailure] = useState<Explained>();
  const submit = async (event: Event) => {
    event.preventDefault();
    const text = String(new FormData(event.target as HTMLFormElement).get(name) ?? '');
    let asked: unknown;
    try {
      asked = JSON.parse(text);
    } catch (error) {
      return setFailure({ summary: `Not JSON: ${(error as Error).message}`, lines: [] });
    }
    try {
      await save(asked);
    } catch (error) {
      setFailure(explain(error));
    }
  };
  return html`
    <${Modal} title=${title} onClose=${close}>
      <form method="dialog" onSubmit=${submit}>
        <label for=${name}>${label}</label>
        <textarea id=${name} name=${name} rows="14" spellcheck=${false} aria-describedby=${`${name}-hint ${name}-problems`}
          aria-invalid=${failure ? 'true' : 'false'} defaultValue=${JSON.stringify(value, null, 2)}></textarea>
        <p class="hint" id=${`${name}-hint`}>${hint}</p>
        <div id=${`${name}-problems`}><${Problems} failure=${failure} /></div>
        <div class="buttons">
          <button type="submit">${saveLabel}</button>
          <button type="button" onClick=${close}>Cancel</button>
        </div>
      </form>
    <//>
  `;
}

/** A table's header row: a column for each of `columns`, then one, named for screen readers, for each row's buttons. */
export function ColumnsWithActions({ columns }: { columns: string[] }) {
  return html`
    <tr>
      ${columns.map((column) => html`<th scope="col" key=${column}>${column}</th>`)}
      <th scope="col"><span class="visually-hidden">Actions</span></th>
    </tr>
  `;
}

/** A date-time of the service's (RFC 3339), in the person's own time and words; `null` as a dash. */
export function When({ at }: { at: string | null | undefined }) {
  if (!at) return '—';
  return html`<time datetime=${at} title=${at}>${new Date(at).toLocaleString()}</time>`;
}

/**
 * The list an admin key's view shows, read by `read` (again by `reload`): undefined until read.
 * `refused` is the service's reason when the key may not read it at all (its 403, said in place of the
 * view: Refused), `error` another failure, described.
 */
export function useAdminList<T>(read: () => Promise<T[]>) {
  const [list, setList] = useState<T[]>();
  const [refused, setRefused] = useState('');
  const [error, setError] = useState('');
  /** Reads the list again; whether it was read. */
  const reload = async (): Promise<boolean> => {
    try {
      setList(await read());
      setError('');
      return true;
    } catch (failure) {
      if (failure instanceof ApiError && failure.problem.status === 403) setRefused(failure.problem.detail);
      else setError(describe(failure));
      return false;
    }
  };
  useEffect(() => {
    reload();
  }, []);
  return { list, setList, refused, error, setError, reload };
}

/** In place of what a key may not see: `sentence`, which says whose it is, and the service's reason (`detail`, its 403's). */
export function Refused({ sentence, detail }: { sentence: string; detail: string }) {
  return html`
    <p class="error refused" role="alert">${sentence}</p>
    <p class="hint">The service answered 403: ${detail}</p>
  `;
}
