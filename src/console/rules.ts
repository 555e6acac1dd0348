// A collection's rules (docs/access.md, "Rules"): what a caller holding a publishable key may do with its
// rows. Read when the panel is first opened (GET …/rules, a 404 for none), shown as JSON, set as JSON in
// a dialog (PUT, refused whole with a JSON Pointer to each place that is wrong) and removed (DELETE); and
// the collection previewed as a user would see it (preview.ts). They are an admin key's only
// (x-rowbase-scope): another key's 403 is said in words, in place of the rules.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { type Api, ApiError, type Explained, explain, type RowsQuery, type Rules } from './api.ts';
import { JsonEditor, Problems, Refused } from './parts.ts';
import { PreviewAs } from './preview.ts';

interface Props {
  api: Api;
  collection: string;
  /** The page the rows' table shows, which the preview reads again. */
  query: RowsQuery;
}

/** The rules a collection starts from in the editor when it has none: each operation denied to every caller. */
const NONE: Rules = { read: false, create: false, update: false, delete: false, fields: {} };

export function RulesPanel({ api, collection, query }: Props) {
  // `null` for none; undefined until read, which waits for the panel to be opened.
  const [rules, setRules] = useState<Rules | null>();
  // The service's reason when the key may not read rules at all.
  const [refused, setRefused] = useState('');
  const [failure, setFailure] = useState<Explained>();
  const [editing, setEditing] = useState(false);
  const [removing, setRemoving] = useState(false);

  const read = async () => {
    try {
      setRules(await api.rules(collection));
      setFailure(undefined);
    } catch (error) {
      if (error instanceof ApiError && error.problem.status === 403) setRefused(error.problem.detail);
      else setFailure(explain(error));
    }
  };
  const toggled = (event: Event) => {
    if ((event.target as HTMLDetailsElement).open && rules === undefined && !refused) read();
  };
  const remove = async () => {
    try {
      await api.deleteRules(collection);
      setRemoving(false);
      setRules(null);
      setFailure(undefined);
    } catch (error) {
      setFailure(explain(error));
    }
  };

  return html`
    <details class="rules" onToggle=${toggled}>
      <summary>Rules and preview${rules === undefined ? '' : `: ${summaryOf(rules)}`}</summary>
      ${
        refused
          ? html`<${Refused} sentence="Only an admin key may see and change the collection's rules, and this key is not one." detail=${refused} />`
          : rules === undefined
            ? html`<${Problems} failure=${failure} />`
            : html`
              <div class="rules-body">
                <section aria-labelledby="rules-title">
                  <h3 id="rules-title">Rules</h3>
                  <p class="hint">What a caller holding a publishable key may read and write of ${collection}, with or without an end user's token. A secret key is never subject to them.</p>
                  ${
                    rules
                      ? html`<pre class="rules-json" tabindex="0" aria-labelledby="rules-title">${JSON.stringify(rules, null, 2)}</pre>`
                      : html`<p class="empty">No rules: a publishable key may do nothing with this collection.</p>`
                  }
                  <div class="buttons">
                    <button type="button" onClick=${() => setEditing(true)}>${rules ? 'Edit rules…' : 'Set rules…'}</button>
                    ${
                      rules && removing
                        ? html`<button type="button" class="danger" onClick=${remove}>Remove the rules</button>`
                        : rules
                          ? html`<button type="button" onClick=${() => setRemoving(true)}>Remove rules…</button>`
                          : null
                    }
                  </div>
                  <${Problems} failure=${failure} />
                </section>
                <${PreviewAs} api=${api} collection=${collection} query=${query} rules=${rules} />
              </div>
            `
      }
      ${
        editing
          ? html`<${RulesEditor}
              api=${api}
              collection=${collection}
              rules=${rules ?? NONE}
              close=${() => setEditing(false)}
              onSaved=${(saved: Rules) => {
                setEditing(false);
                setRules(saved);
                setFailure(undefined);
              }}
            />`
          : null
      }
    </details>
  `;
}

/** The summary's words: who each operation is allowed to, and the fields with rules of their own. */
function summaryOf(rules: Rules | null): string {
  if (!rules) return 'none';
  const operations = (['read', 'create', 'update', 'delete'] as const).map((operation) => `${operation} ${whom(rules[operation])}`);
  const fields = Object.keys(rules.fields ?? {});
  return `${operations.join(', ')}${fields.length > 0 ? `; fields ${fields.join(', ')}` : ''}`;
}

/** Whom one operation's rule allows, in a word. */
function whom(rule: Rules['read']): string {
  if (rule === true) return 'anyone';
  if (rule === 'authenticated') return 'authenticated';
  if (rule === false || rule === undefined) return 'no one';
  return 'by filter';
}

/** The rules as JSON, to set: PUT …/rules, refused whole (400) with each place that is wrong. */
function RulesEditor({
  api,
  collection,
  rules,
  close,
  onSaved,
}: {
  api: Api;
  collection: string;
  rules: Rules;
  close: () => void;
  onSaved: (rules: Rules) => void;
}) {
  const save = async (asked: unknown) => onSaved(await api.putRules(collection, asked as Rules));
  return html`<${JsonEditor}
    title=${`Rules of ${collection}`}
    name="rules-text"
    label="The rules, as JSON"
    value=${rules}
    hint=${html`Each of read, create, update and delete is false (no one), true (anyone holding the publishable key),
      "authenticated" (any end user with a token) or a filter whose values may name a claim of the token,
      ${'{"owner": {"$auth": "sub"}}'}; fields gives a top-level field rules of its own, ${'{"read": …, "write": …}'}.`}
    saveLabel="Save rules"
    save=${save}
    close=${close}
  />`;
}
