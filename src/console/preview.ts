// The collection as one of the app's users would see it through a publishable key: the admin gives the
// claims of that user's token, or chooses an anonymous caller, and the page the rows' table shows (its
// filter, order and cursor) is read again, whole, with the admin's key, and each of its rows checked
// with POST …/rules/check (operation `read`; docs/access.md, "Checking rules"). Only the rows the rules
// let that user read are listed, without the fields hidden from them, each with the rule that decided
// (on hover, and expanded); the rows kept from the user are named apart, with why. A page at a time: one
// check per row shown.
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { type Api, type Claims, type Explained, explain, type Row, type RowsQuery, type Rules } from './api.ts';
import { shown } from './fields.ts';
import { Problems } from './parts.ts';

interface Props {
  api: Api;
  collection: string;
  /** The page the rows' table shows; the preview reads it again when it moves. */
  query: RowsQuery;
  /** The collection's rules, `null` for none; the preview is made again when they change. */
  rules: Rules | null;
}

/** A row of the page and what the rules decide of reading it. */
interface Checked {
  row: Row;
  allowed: boolean;
  reason: string;
  /** The fields hidden from the user, which the preview leaves out of the row. */
  hidden: string[];
}

export function PreviewAs({ api, collection, query, rules }: Props) {
  const [anonymous, setAnonymous] = useState(false);
  // The claims asked for, a new object on every *Preview*; undefined until the first.
  const [asked, setAsked] = useState<{ claims: Claims }>();
  const [checked, setChecked] = useState<Checked[]>();
  const [failure, setFailure] = useState<Explained>();
  const [busy, setBusy] = useState(false);
  // Which preview is the latest: an answer to an earlier one, arriving late, is dropped.
  const latest = useRef(0);

  useEffect(() => {
    if (!asked) return;
    const run = ++latest.current;
    setBusy(true);
    checkPage(api, collection, query, asked.claims).then(
      (answer) => {
        if (run !== latest.current) return;
        setChecked(answer);
        setFailure(undefined);
        setBusy(false);
      },
      (error) => {
        if (run !== latest.current) return;
        setChecked(undefined);
        setFailure(explain(error));
        setBusy(false);
      },
    );
  }, [asked, query, rules]);

  const preview = (event: Event) => {
    event.preventDefault();
    if (anonymous) return setAsked({ claims: null });
    const text = String(new FormData(event.target as HTMLFormElement).get('claims') ?? '');
    let claims: unknown;
    try {
      claims = JSON.parse(text);
    } catch (error) {
      return setFailure({ summary: `The claims are not JSON: ${(error as Error).message}`, lines: [] });
    }
    if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) {
      return setFailure({ summary: 'The claims are a JSON object, as a token carries them: {"sub": "user-1"}.', lines: [] });
    }
    setAsked({ claims: claims as Claims });
  };

  return html`
    <section class="preview" aria-labelledby="preview-title" aria-busy=${busy ? 'true' : 'false'}>
      <h3 id="preview-title">Preview as a user</h3>
      ${
        rules === null
          ? html`<p class="empty">Without rules, a publishable key reads no row of this collection, whoever the user.</p>`
          : html`
            <p class="hint">The rows of the table's page that a caller with these claims would read through a publishable key, without the fields hidden from them.</p>
            <form class="preview-form" onSubmit=${preview}>
              <fieldset class="caller-choice">
                <legend>Caller</legend>
                <label class="check"><input type="radio" name="caller" value="token" checked=${!anonymous} onChange=${() => setAnonymous(false)} /> An end user with a token</label>
                <label class="check"><input type="radio" name="caller" value="anonymous" checked=${anonymous} onChange=${() => setAnonymous(true)} /> Anonymous (no token)</label>
              </fieldset>
              <label for="preview-claims">The token's claims, as JSON</label>
              <textarea id="preview-claims" name="claims" rows="3" spellcheck=${false} disabled=${anonymous} placeholder='{"sub": "user-1"}'></textarea>
              <div class="buttons"><button type="submit">Preview</button></div>
            </form>
            <${Problems} failure=${failure} />
            ${checked && asked ? html`<${Previewed} checked=${checked} anonymous=${asked.claims === null} />` : null}
          `
      }
    </section>
  `;
}

/** The page `query` reads, whole (every field: a rule may name one the table leaves out), each row checked for `claims`. */
async function checkPage(api: Api, collection: string, query: RowsQuery, claims: Claims): Promise<Checked[]> {
  const { rows } = await api.rows(collection, { ...query, select: undefined });
  const answers = await Promise.all(rows.map((row) => api.checkRead(collection, claims, row)));
  return rows.map((row, at) => {
    const { allowed, reason, hidden = [] } = answers[at];
    return { row, allowed, reason, hidden };
  });
}

function Previewed({ checked, anonymous }: { checked: Checked[]; anonymous: boolean }) {
  const who = anonymous ? 'an anonymous caller' : 'this user';
  const seen = checked.filter(({ allowed }) => allowed).map((each) => ({ ...each, row: without(each.row, each.hidden) }));
  const kept = checked.filter(({ allowed }) => !allowed);
  const columns = [...new Set(['id', ...seen.flatMap(({ row }) => Object.keys(row))])];
  return html`
    ${
      seen.length === 0
        ? html`<p class="empty previewed">None of the ${checked.length} rows of the table's page is read by ${who}.</p>`
        : html`
          <div class="table-scroll">
            <table class="preview-table">
              <caption>As ${who}: ${seen.length} of the ${checked.length} rows of the table's page</caption>
              <thead>
                <tr>
                  ${columns.map((field) => html`<th scope="col" key=${field}>${field}</th>`)}
                  <th scope="col">Hidden fields</th>
                  <th scope="col">Why</th>
                </tr>
              </thead>
              <tbody>
                ${seen.map(
                  ({ row, hidden, reason }) => html`
                    <tr key=${row.id} data-id=${row.id} title=${reason}>
                      ${columns.map((field) => html`<td key=${field} class=${field in row ? '' : 'missing'}>${field in row ? shown(row[field]) : ''}</td>`)}
                      <td class="hidden-fields">${hidden.length > 0 ? hidden.join(', ') : '—'}</td>
                      <td class="reason"><details><summary>Why</summary><span>${reason}</span></details></td>
                    </tr>
                  `,
                )}
              </tbody>
            </table>
          </div>
        `
    }
    ${
      kept.length === 0
        ? null
        : html`
          <details class="kept">
            <summary>${kept.length} ${kept.length === 1 ? 'row' : 'rows'} of the page kept from ${who}</summary>
            <ul>${kept.map(({ row, reason }) => html`<li key=${row.id} data-id=${row.id}>Row ${row.id}: ${reason}</li>`)}</ul>
          </details>
        `
    }
  `;
}

/** `row` without the fields `hidden`. */
function without(row: Row, hidden: string[]): Row {
  const kept = { ...row };
  for (const field of hidden) delete kept[field];
  return kept;
}
