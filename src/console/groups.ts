// The "group by" panel beside a collection's filter: the rows the filter keeps, grouped by the fields
// named, each group counted and, when a field is named to sum, that field's sum, average, minimum and
// maximum (openapi.yaml, aggregateRows; docs/aggregates.md). A query the service refuses is shown with
// the place in it that is wrong.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { type AggregateAnswer, type AggregateQuery, type Api, describe } from './api.ts';

/** Groups the panel shows at most. */
const GROUPS_SHOWN = 100;

interface Props {
  api: Api;
  collection: string;
  /** The filter of the rows on screen, as its text; every row without one. */
  filter: string | undefined;
}

export function GroupPanel({ api, collection, filter }: Props) {
  const [answer, setAnswer] = useState<{ answer: AggregateAnswer; columns: string[] }>();
  const [error, setError] = useState('');

  const group = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const groupBy = String(form.get('group-by') ?? '')
      .split(',')
      .map((field) => field.trim())
      .filter((field) => field !== '');
    const field = String(form.get('measure') ?? '').trim();
    const aggregates: NonNullable<AggregateQuery['aggregates']> = { rows: { count: {} } };
    if (field) Object.assign(aggregates, { sum: { sum: field }, avg: { avg: field }, min: { min: field }, max: { max: field } });
    const query: AggregateQuery = { group_by: groupBy, aggregates, order: [{ field: 'rows', direction: 'desc' }], limit: GROUPS_SHOWN };
    try {
      // The filter applied to the rows on screen, which the service read already.
      if (filter) query.filter = JSON.parse(filter);
      setAnswer({ answer: await api.aggregate(collection, query), columns: [...groupBy, ...Object.keys(aggregates)] });
      setError('');
    } catch (failure) {
      setAnswer(undefined);
      setError(describe(failure));
    }
  };

  return html`
    <section class="groups" aria-labelledby="groups-title">
      <h3 id="groups-title">Group by</h3>
      <form class="controls" onSubmit=${group}>
        <div class="field">
          <label for="group-by">Fields</label>
          <input id="group-by" name="group-by" placeholder="none; or status,owner" spellcheck=${false} aria-describedby="groups-error" />
        </div>
        <div class="field">
          <label for="measure">Sum of</label>
          <input id="measure" name="measure" placeholder="a number field, or none" spellcheck=${false} />
        </div>
        <button type="submit">Group</button>
      </form>
      <p id="groups-error" class="error" role="alert">${error}</p>
      ${
        answer
          ? html`
            <table class="group-table">
              <caption>${answer.answer.groups.length} ${answer.answer.groups.length === 1 ? 'group' : 'groups'}${
                answer.answer.truncated ? `, the first ${GROUPS_SHOWN} by rows` : ''
              }${filter ? ' of the rows matching the filter' : ''}</caption>
              <thead><tr>${answer.columns.map((column) => html`<th scope="col" key=${column}>${column}</th>`)}</tr></thead>
              <tbody>
                ${answer.answer.groups.map(
                  (group, index) =>
                    html`<tr key=${index}>${answer.columns.map((column) => html`<td key=${column}>${cell(group[column])}</td>`)}</tr>`,
                )}
              </tbody>
            </table>
          `
          : null
      }
    </section>
  `;
}

function cell(value: unknown): string {
  if (value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}
