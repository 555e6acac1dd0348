// The typed row form: one input per top-level property of the collection's schema, by type (fields.ts),
// and a list of the related rows to pick from for the field of each of its to-one relations (related.ts),
// each with what it takes and, after a refused write, what is wrong with it, and the fields of the row
// the form does not show named, to edit as JSON. Its inputs start from the row and are read when it is
// saved: readForm().
import { html } from 'htm/preact';
import type { Api, Expanded, Row } from './api.ts';
import { type FormField, inputKind, inputText, KEEP_CHOICE, readInput, shown } from './fields.ts';
import { RelationPicker } from './related.ts';

interface Props {
  api: Api;
  fields: FormField[];
  /** The row as edited so far: each input starts from its field's value. */
  draft: Record<string, unknown>;
  /** What is wrong, by field name. */
  errors: Map<string, string[]>;
  /** Whether the collection has a schema: the fields the form does not show are then those it does not declare. */
  schema: boolean;
  /** The rows the row's to-one relations name, when they were read: their names in the pickers. */
  related?: Expanded;
}

const inputId = (at: number) => `row-field-${at}`;

export function RowForm({ api, fields, draft, errors, schema, related }: Props) {
  const declared = new Set(fields.map((field) => field.name));
  const others = Object.keys(draft).filter((name) => name !== 'id' && !declared.has(name));
  const othersSaid = schema ? 'Not in the schema, to edit as JSON' : 'Other fields, to edit as JSON';
  return html`
    <div class="row-form">
      ${fields.map(
        (field, at) =>
          html`<${FieldInput} key=${field.name} api=${api} field=${field} at=${at} value=${draft[field.name]} errors=${errors.get(field.name) ?? []}
            current=${field.relation ? (related?.[field.relation.name] as Row | null | undefined) : undefined} />`,
      )}
      ${others.length > 0 ? html`<p class="hint">${othersSaid}: ${others.join(', ')}.</p>` : null}
    </div>
  `;
}

function FieldInput({
  api,
  field,
  at,
  value,
  errors,
  current,
}: {
  api: Api;
  field: FormField;
  at: number;
  value: unknown;
  errors: string[];
  current?: Row | null;
}) {
  const id = inputId(at);
  const kind = inputKind(field, value);
  const text = inputText(field, value);
  const attributes = {
    id,
    name: field.name,
    'aria-describedby': `${id}-hint ${id}-error`,
    'aria-invalid': errors.length > 0 ? 'true' : 'false',
    'aria-required': field.required ? 'true' : undefined,
  };
  const label = html`<label for=${id}>${field.name}</label>`;
  const hint = `${field.hint}${field.required ? '; required' : ''}`;
  let input: unknown;
  if (kind === 'relation') {
    input = html`${label}<${RelationPicker} api=${api} field=${field} attributes=${attributes} value=${value} current=${current} />`;
  } else if (kind === 'boolean') {
    input = html`<label class="check"><input type="checkbox" ...${attributes} defaultChecked=${value === true} /> ${field.name}</label>`;
  } else if (kind === 'choice') {
    // A field the row lacks, or holds a value that is not a choice (never, under the schema), keeps it;
    // the option is chosen by `selected`: a select's own value is set before its options are there.
    const keeping = text === KEEP_CHOICE;
    input = html`
      ${label}
      <select ...${attributes}>
        ${keeping ? html`<option value=${KEEP_CHOICE} selected>${value === undefined ? '(not set)' : `(as it is: ${shown(value)})`}</option>` : null}
        ${field.choices.map(
          (choice, index) => html`<option key=${index} value=${String(index)} selected=${String(index) === text}>${shown(choice)}</option>`,
        )}
      </select>
    `;
  } else if (kind === 'json') {
    input = html`${label}<textarea ...${attributes} rows="3" spellcheck=${false} defaultValue=${text}></textarea>`;
  } else {
    const type = { text: 'text', date: 'date', email: 'email', url: 'url', number: 'number', integer: 'number' }[kind];
    const step = kind === 'integer' ? '1' : kind === 'number' ? 'any' : undefined;
    input = html`${label}<input type=${type} step=${step} ...${attributes} defaultValue=${text} spellcheck=${false} />`;
  }
  return html`
    <div class=${`form-field ${kind}`}>
      ${input}
      <p class="hint" id=${`${id}-hint`}>${hint}</p>
      <p class="error" id=${`${id}-error`}>${errors.join('; ')}</p>
    </div>
  `;
}

/**
 * What the form's inputs, under `container`, make of `draft`: the row with every field set that an
 * input sets, or what is wrong with the inputs that hold no value, by field name.
 */
export function readForm(
  container: HTMLElement,
  fields: FormField[],
  draft: Record<string, unknown>,
  inserting: boolean,
): { row: Record<string, unknown>; errors: Map<string, string[]> } {
  const row = { ...draft };
  const errors = new Map<string, string[]>();
  fields.forEach((field, at) => {
    const input = container.querySelector<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>(`#${inputId(at)}`);
    if (!input) return;
    const state = {
      value: input.value,
      checked: input instanceof HTMLInputElement && input.checked,
      badInput: input.validity.badInput,
    };
    const reading = readInput(field, state, draft[field.name], inserting);
    if ('error' in reading) errors.set(field.name, [reading.error]);
    else if (!reading.keep) row[field.name] = reading.value;
  });
  return { row, errors };
}
