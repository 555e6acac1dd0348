// A collection's schema and declared indexes (docs/schemas.md), as GET /v1/collections/{name} and
// GET …/indexes answer them: shown to any key, set, removed, declared and dropped by an admin key (the
// operations need the admin scope: openapi.yaml, x-rowbase-scope). A refusal is shown whole: a schema's
// 400 with each place in it that is wrong, a 409 schema_conflict with the stored rows that break it.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { Api, Index, Relation, RowSchema } from './api.ts';
import { JsonEditor, Problems, useChange } from './parts.ts';

/**
 * What types a collection: its schema (`null` for none), its declared indexes, its relations
 * (relations.ts) and the field of its time to live (`null` for none: expiry.ts).
 */
export interface Typing {
  schema: RowSchema | null;
  indexes: Index[];
  relations: Relation[];
  ttl: string | null;
}

export async function readTyping(api: Api, collection: string): Promise<Typing> {
  const [{ schema, relations, ttl }, indexes] = await Promise.all([api.collection(collection), api.indexes(collection)]);
  return { schema: schema ?? null, indexes, relations: relations ?? [], ttl: ttl?.field ?? null };
}

interface Props {
  api: Api;
  collection: string;
  /** Undefined until read. */
  typing: Typing | undefined;
  /** Whether the key may change them (an admin key); others see them only. */
  admin: boolean;
  /** After a change made here: the schema and indexes are read again. */
  onChanged: () => void;
}

export function SchemaPanel({ api, collection, typing, admin, onChanged }: Props) {
  const [editing, setEditing] = useState(false);
  const [removing, setRemoving] = useState(false);
  const { failure, setFailure, act } = useChange(() => {
    setRemoving(false);
    onChanged();
  });
  // The line takes its place at once, before the read: arriving later, it would push the controls
  // below it down under a pointer already on its way to one of them.
  if (!typing) {
    return html`<details class="typing" aria-busy="true"><summary>Schema and indexes</summary></details>`;
  }
  const { schema, indexes } = typing;

  const declare = (event: Event) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const data = new FormData(form);
    const fields = String(data.get('fields') ?? '')
      .split(',')
      .map((field) => field.trim())
      .filter((field) => field !== '');
    act(async () => {
      await api.createIndex(collection, fields, data.get('unique') === 'on');
      form.reset();
    });
  };

  return html`
    <details class="typing">
      <summary>Schema and indexes: ${summaryOf(typing)}</summary>
      <div class="typing-body">
        <section aria-labelledby="schema-title">
          <h3 id="schema-title">Schema</h3>
          ${
            schema
              ? html`<pre class="schema-json" tabindex="0" aria-labelledby="schema-title">${JSON.stringify(schema, null, 2)}</pre>`
              : html`<p class="empty">No schema: any JSON object is a row.</p>`
          }
          ${
            admin
              ? html`
                <div class="buttons">
                  <button type="button" onClick=${() => setEditing(true)}>${schema ? 'Edit schema…' : 'Set a schema…'}</button>
                  ${
                    schema && removing
                      ? html`<button type="button" class="danger" onClick=${() => act(() => api.deleteSchema(collection))}>Remove the schema</button>`
                      : schema
                        ? html`<button type="button" onClick=${() => setRemoving(true)}>Remove schema…</button>`
                        : null
                  }
                </div>
              `
              : null
          }
        </section>
        <section aria-labelledby="indexes-title">
          <h3 id="indexes-title">Indexes</h3>
          ${
            indexes.length === 0
              ? html`<p class="empty">No index declared.</p>`
              : html`
                <table class="indexes" aria-labelledby="indexes-title">
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Fields</th>
                      <th scope="col">Unique</th>
                      ${admin ? html`<th scope="col"><span class="visually-hidden">Actions</span></th>` : null}
                    </tr>
                  </thead>
                  <tbody>
                    ${indexes.map(
                      (index) => html`
                        <tr key=${index.name} data-index=${index.name}>
                          <td>${index.name}</td>
                          <td>${index.fields.join(', ')}</td>
                          <td>${index.unique ? 'unique' : 'no'}</td>
                          ${
                            admin
                              ? html`<td><button type="button" aria-label=${`Drop index ${index.name}`} onClick=${() => act(() => api.deleteIndex(collection, index.name))}>Drop</button></td>`
                              : null
                          }
                        </tr>
                      `,
                    )}
                  </tbody>
                </table>
              `
          }
          ${
            admin
              ? html`
                <form class="declare" onSubmit=${declare}>
                  <div class="field">
                    <label for="index-fields">Fields of a new index</label>
                    <input id="index-fields" name="fields" required placeholder="email; or last_name,first_name" spellcheck=${false} />
                  </div>
                  <label class="check"><input type="checkbox" name="unique" /> Unique</label>
                  <button type="submit">Declare index</button>
                </form>
              `
              : html`<p class="hint">An admin key sets the schema and declares indexes.</p>`
          }
        </section>
        <${Problems} failure=${failure} />
      </div>
      ${
        editing
          ? html`<${SchemaEditor}
              api=${api}
              collection=${collection}
              schema=${schema}
              close=${() => setEditing(false)}
              onSaved=${() => {
                setEditing(false);
                setFailure(undefined);
                onChanged();
              }}
            />`
          : null
      }
    </details>
  `;
}

/** The summary's words: the schema's top-level fields, and the indexes by name. */
function summaryOf({ schema, indexes }: Typing): string {
  const properties = schema?.properties;
  const fields = properties && typeof properties === 'object' ? Object.keys(properties) : [];
  const typed = schema ? `schema of ${fields.length > 0 ? fields.join(', ') : 'rows'}` : 'no schema';
  const declared = indexes.length === 0 ? 'no index' : indexes.map((index) => `${index.name}${index.unique ? ' (unique)' : ''}`).join(', ');
  return `${typed}; ${declared}`;
}

/** The schema as JSON, to set: PUT …/schema, refused whole (400, 409 schema_conflict) with why. */
function SchemaEditor({
  api,
  collection,
  schema,
  close,
  onSaved,
}: {
  api: Api;
  collection: string;
  schema: RowSchema | null;
  close: () => void;
  onSaved: () => void;
}) {
  const save = async (asked: unknown) => {
    await api.putSchema(collection, asked as RowSchema);
    onSaved();
  };
  return html`<${JsonEditor}
    title=${`Schema of ${collection}`}
    name="schema-text"
    label="The schema, as JSON (JSON Schema 2020-12, the keywords of docs/schemas.md)"
    value=${schema ?? { type: 'object', properties: {} }}
    hint="Every stored row is checked first: if any breaks it, nothing changes."
    saveLabel="Save schema"
    save=${save}
    close=${close}
  />`;
}
