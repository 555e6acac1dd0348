// Small parts the console's views share: a line that says what went wrong or what happened, read out by
// screen readers, a failure said with the places or rows its problem lists, a modal dialog, a table's
// header of columns and buttons, and a time.
import { html } from 'htm/preact';
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import type { Explained } from './api.ts';

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
