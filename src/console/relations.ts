// A collection's relations (docs/relations.md), both directions, as GET /v1/collections/{name} answers
// them: its to-one relations (its field holds ids of another collection's rows) and the to-many reverses
// others declared naming it, each with what deleting a named row does (`on_delete`). An admin key also
// declares a to-one relation (PUT …/relations/{name}) and deletes one with its reverse (DELETE, of the
// collection that declared it), as it declares and drops indexes (schema.ts). A refusal is shown whole: a
// 400 with each place that is wrong, a 409 schema_conflict with the stored rows that name no row.
import { html } from 'htm/preact';
import type { Api, Relation } from './api.ts';
import { Problems, useChange } from './parts.ts';
import { routeHash } from './route.ts';

interface Props {
  api: Api;
  collection: string;
  /** Undefined until read (with the schema and indexes: schema.ts, readTyping). */
  relations: Relation[] | undefined;
  /** The account's collections, the ones a relation may name. */
  collections: string[];
  /** Whether the key may declare and delete them (an admin key); others see them only. */
  admin: boolean;
  /** After a change made here: the relations are read again. */
  onChanged: () => void;
}

const ON_DELETE = ['restrict', 'cascade', 'set_null'] as const;

export function RelationsPanel({ api, collection, relations, collections, admin, onChanged }: Props) {
  const { failure, act } = useChange(onChanged);
  // The line takes its place at once, before the read, as the schema's does.
  if (!relations) return html`<details class="relations" aria-busy="true"><summary>Relations</summary></details>`;

  const declare = (event: Event) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const data = new FormData(form);
    const text = (name: string) => String(data.get(name) ?? '').trim();
    act(async () => {
      await api.putRelation(collection, text('name'), {
        field: text('field'),
        collection: text('collection'),
        on_delete: text('on_delete') as Relation['on_delete'],
        reverse: text('reverse') || null,
      });
      form.reset();
    });
  };

  // A to-many relation is deleted as the to-one relation of the other collection that it reverses.
  const remove = (relation: Relation) =>
    relation.kind === 'to_one'
      ? act(() => api.deleteRelation(collection, relation.name))
      : act(() => api.deleteRelation(relation.collection, relation.reverse as string));

  return html`
    <details class="relations">
      <summary>Relations: ${summaryOf(relations)}</summary>
      <div class="relations-body">
        ${
          relations.length === 0
            ? html`<p class="empty">No relation: no field of ${collection} names rows of another collection, and none names its rows.</p>`
            : html`
              <div class="table-scroll">
                <table class="relations-table" aria-label=${`Relations of ${collection}`}>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Kind</th>
                      <th scope="col">Related collection</th>
                      <th scope="col">Field</th>
                      <th scope="col">On delete</th>
                      <th scope="col">Reverse</th>
                      ${admin ? html`<th scope="col"><span class="visually-hidden">Actions</span></th>` : null}
                    </tr>
                  </thead>
                  <tbody>
                    ${relations.map(
                      (relation) => html`
                        <tr key=${`${relation.kind}:${relation.name}`} data-relation=${relation.name}>
                          <td>${relation.name}</td>
                          <td>${relation.kind === 'to_one' ? 'to one' : 'to many'}</td>
                          <td><a href=${routeHash({ collection: relation.collection })}>${relation.collection}</a></td>
                          <td>${relation.kind === 'to_one' ? relation.field : `${relation.field} of ${relation.collection}`}</td>
                          <td title=${onDeleteMeaning(relation, collection)}>${relation.on_delete}</td>
                          <td>${reverseOf(relation)}</td>
                          ${
                            admin
                              ? html`<td><button type="button" aria-label=${`Delete relation ${relation.name}`} onClick=${() => remove(relation)}>Delete</button></td>`
                              : null
                          }
                        </tr>
                      `,
                    )}
                  </tbody>
                </table>
              </div>
            `
        }
        ${
          admin
            ? html`
              <form class="declare declare-relation" onSubmit=${declare}>
                <div class="field">
                  <label for="relation-name">Name</label>
                  <input id="relation-name" name="name" required placeholder="author" spellcheck=${false} />
                </div>
                <div class="field">
                  <label for="relation-field">Field</label>
                  <input id="relation-field" name="field" required placeholder="author_id" spellcheck=${false} />
                </div>
                <div class="field">
                  <label for="relation-collection">Names rows of</label>
                  <select id="relation-collection" name="collection" required>
                    ${collections.map((name) => html`<option key=${name} value=${name}>${name}</option>`)}
                  </select>
                </div>
                <div class="field">
                  <label for="relation-on-delete">On delete</label>
                  <select id="relation-on-delete" name="on_delete">
                    ${ON_DELETE.map((choice) => html`<option key=${choice} value=${choice}>${choice}</option>`)}
                  </select>
                </div>
                <div class="field">
                  <label for="relation-reverse">Reverse (optional)</label>
                  <input id="relation-reverse" name="reverse" placeholder="posts" spellcheck=${false} />
                </div>
                <button type="submit">Declare relation</button>
                <p class="hint">
                  The field holds the id of a row of the collection it names, or null. Every stored row is checked first: if any names a
                  row that does not exist, nothing changes. The field gets a sort index.
                </p>
              </form>
            `
            : html`<p class="hint">An admin key declares and deletes relations.</p>`
        }
        <${Problems} failure=${failure} />
      </div>
    </details>
  `;
}

/** The summary's words: each relation, its kind and the collection it relates to. */
function summaryOf(relations: Relation[]): string {
  if (relations.length === 0) return 'none';
  return relations.map((r) => `${r.name} (to ${r.kind === 'to_one' ? 'one' : 'many'} ${r.collection})`).join(', ');
}

/** A to-one's reverse, or the to-one relation a to-many reverses, in words. */
function reverseOf(relation: Relation): string {
  if (relation.kind === 'to_many') return `${relation.reverse} of ${relation.collection}`;
  return relation.reverse ?? '—';
}

/** What deleting a named row does, in a sentence; `collection` is the one whose relations these are. */
function onDeleteMeaning({ kind, on_delete, collection: other, field }: Relation, collection: string): string {
  const [named, naming] = kind === 'to_one' ? [other, collection] : [collection, other];
  if (on_delete === 'restrict') return `A row of ${named} that rows of ${naming} name cannot be deleted.`;
  if (on_delete === 'cascade') return `Deleting a row of ${named} deletes the rows of ${naming} that name it.`;
  return `Deleting a row of ${named} sets ${field} of the rows of ${naming} that name it to null.`;
}
