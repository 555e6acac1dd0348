// The account's API keys (openapi.yaml, the keys tag; docs/access.md): the live keys the signed-in key
// could have made itself, each by its prefix with what limits it; a key made here, secret or publishable
// (its web origins and rate per end user), and shown this once with a way to copy it; a key revoked after
// a second button. Only an admin key may manage keys (x-rowbase-scope): another key's 403 is said in
// words, in place of the list; a key wider than the signed-in one is refused (403) in the dialog.
import { html } from 'htm/preact';
import { useRef, useState } from 'preact/hooks';
import { type Api, type CreatedKey, describe, type Explained, explain, type Key, type KeyKind, type NewKey } from './api.ts';
import { ColumnsWithActions, Modal, Problems, Refused, Status, useAdminList, When } from './parts.ts';

/** What each kind of key is called in the console, and what it is for. */
const KINDS: Record<KeyKind, string> = {
  secret: 'Secret: for a server, never inside an app',
  publishable: 'Publishable (rb_pub_…): ships inside a web app',
};

export function KeysView({ api }: { api: Api }) {
  const { list: keys, setList: setKeys, refused, error, setError, reload } = useAdminList(() => api.keys());
  const [note, setNote] = useState('');
  const [making, setMaking] = useState(false);
  const [made, setMade] = useState<CreatedKey>();
  // The key whose revocation waits for its second button.
  const [revoking, setRevoking] = useState<string>();
  const own = prefixOf(api.key);

  const revoke = async (prefix: string) => {
    try {
      await api.revokeKey(prefix);
      setRevoking(undefined);
      // Not read again: the list is the same less this key, and a console that revoked its own key could not read it.
      setKeys((listed) => listed?.filter((key) => key.prefix !== prefix));
      setNote(
        prefix === own
          ? `The key ${prefix} is revoked: it was this console's own, which the service now refuses. Sign out, and in with another key.`
          : `The key ${prefix} is revoked: the service refuses it from now on.`,
      );
      setError('');
    } catch (failure) {
      setNote('');
      setError(describe(failure));
    }
  };

  if (refused) {
    return html`
      <section class="keys" aria-labelledby="keys-title">
        <h2 id="keys-title">API keys</h2>
        <${Refused} sentence="Only an admin key may see and manage the account's keys, and this key is not one." detail=${refused} />
      </section>
    `;
  }
  return html`
    <section class="keys" aria-labelledby="keys-title">
      <header class="rows-head">
        <h2 id="keys-title">API keys</h2>
        <button type="button" onClick=${() => setMaking(true)}>New key…</button>
      </header>
      <p class="hint">The account's live keys that this key could have made itself, oldest first, each by its prefix: the service keeps only a hash of a key. A secret key is for a server; a publishable key ships inside an app, used from the web origins it lists, and its callers may do what the collections' rules let them.</p>
      <${Status} error=${error} note=${note} />
      ${
        keys === undefined
          ? null
          : html`
            <div class="table-scroll">
              <table class="key-table">
                <caption>${keys.length} live ${keys.length === 1 ? 'key' : 'keys'}, oldest first</caption>
                <thead><${ColumnsWithActions} columns=${['Key', 'Kind', 'Scope', 'Collections', 'Origins', 'Per end user', 'Expires', 'Made', 'Last used']} /></thead>
                <tbody>
                  ${keys.map(
                    (key) => html`<${KeyRow}
                      key=${key.prefix}
                      listed=${key}
                      own=${key.prefix === own}
                      revoking=${revoking === key.prefix}
                      onRevoke=${() => (revoking === key.prefix ? revoke(key.prefix) : setRevoking(key.prefix))}
                    />`,
                  )}
                </tbody>
              </table>
            </div>
          `
      }
      ${
        making
          ? html`<${KeyMaker}
              api=${api}
              maker=${keys?.find((key) => key.prefix === own)}
              close=${() => setMaking(false)}
              onMade=${(key: CreatedKey) => {
                setMaking(false);
                setMade(key);
                setNote(`The key ${key.prefix} is made.`);
                reload();
              }}
            />`
          : null
      }
      ${made ? html`<${MadeKey} made=${made} close=${() => setMade(undefined)} />` : null}
    </section>
  `;
}

/** A key's prefix (openapi.yaml, KeyPrefix): its start and the first 8 characters of its random part. */
function prefixOf(key: string): string {
  return key.slice(0, (key.startsWith('rb_pub_') ? 'rb_pub_' : 'rb_').length + 8);
}

interface RowProps {
  listed: Key;
  /** Whether it is the key the console is signed in with. */
  own: boolean;
  /** Whether its revocation waits for the second button. */
  revoking: boolean;
  onRevoke: () => void;
}

function KeyRow({ listed, own, revoking, onRevoke }: RowProps) {
  const { prefix, name, kind, scope, collections, origins, end_user_rate, expires_at, created_at, last_used_at } = listed;
  return html`
    <tr data-key=${prefix} class=${own ? 'own' : ''}>
      <td class="key-id">
        <code class="line prefix">${prefix}</code>
        ${name === null ? null : html`<span class="line name">${name}</span>`}
        ${own ? html`<span class="line hint own-key">this console's key</span>` : null}
      </td>
      <td class="kind">${kind}</td>
      <td class="scope">${scope}</td>
      <td class="collections">${collections === null ? 'all' : collections.join(', ')}</td>
      <td class="origins">${origins === null ? '—' : origins.map((origin) => html`<span class="line" key=${origin}>${origin}</span>`)}</td>
      <td class="rate">${kind === 'secret' ? '—' : end_user_rate === null ? 'no limit' : `${end_user_rate}/s`}</td>
      <td class="expires">${expires_at === null ? 'never' : html`<${When} at=${expires_at} />`}</td>
      <td class="created"><${When} at=${created_at} /></td>
      <td class="last-used"><${When} at=${last_used_at} /></td>
      <td>
        ${
          revoking
            ? html`<button type="button" class="danger" onClick=${onRevoke}>${own ? `Revoke key ${prefix}, this console's own` : `Revoke key ${prefix}`}</button>`
            : html`<button type="button" aria-label=${`Revoke key ${prefix}…`} onClick=${onRevoke}>Revoke…</button>`
        }
      </td>
    </tr>
  `;
}

/** The words of a form's field `name`, trimmed. */
const textOf = (data: FormData, name: string) => String(data.get(name) ?? '').trim();

/** The items of a list typed in a field, separated by commas or spaces; none for an empty field. */
const itemsOf = (data: FormData, name: string) =>
  textOf(data, name)
    .split(/[\s,]+/)
    .filter((item) => item !== '');

/**
 * The key the dialog's form asks for. A field left empty is left out: the collections and expiry are
 * then the signed-in key's, and a publishable key has no rate per end user of its own.
 */
function newKeyOf(data: FormData): NewKey {
  const kind = textOf(data, 'kind') as KeyKind;
  const asked: NewKey = { kind };
  const name = textOf(data, 'name');
  if (name) asked.name = name;
  if (kind === 'secret') asked.scope = textOf(data, 'scope') as NewKey['scope'];
  else {
    asked.origins = itemsOf(data, 'origins');
    const rate = textOf(data, 'end_user_rate');
    if (rate) asked.end_user_rate = Number(rate);
  }
  const collections = itemsOf(data, 'collections');
  if (collections.length > 0) asked.collections = collections;
  // A datetime-local input's value is in the person's own time: sent in UTC.
  const expires = textOf(data, 'expires_at');
  if (expires) asked.expires_at = new Date(expires).toISOString();
  return asked;
}

/**
 * The dialog that makes a key: its kind, name, scope (a secret key's; a publishable key's is write) or
 * origins and rate per end user (a publishable key's), collections and expiry, which left empty are those
 * of `maker`, the signed-in key. A refusal is listed in the dialog: a 400 with each place wrong, a 403
 * for a key wider than the signed-in one.
 */
function KeyMaker({
  api,
  maker,
  close,
  onMade,
}: {
  api: Api;
  maker: Key | undefined;
  close: () => void;
  onMade: (key: CreatedKey) => void;
}) {
  const [kind, setKind] = useState<KeyKind>('secret');
  const [failure, setFailure] = useState<Explained>();
  const make = async (event: Event) => {
    event.preventDefault();
    try {
      onMade(await api.createKey(newKeyOf(new FormData(event.target as HTMLFormElement))));
    } catch (error) {
      setFailure(explain(error));
    }
  };
  const collections = maker ? (maker.collections === null ? 'every collection' : maker.collections.join(', ')) : 'as this key';
  const expires = maker ? (maker.expires_at === null ? 'never' : new Date(maker.expires_at).toLocaleString()) : 'as this key';
  return html`
    <${Modal} title="New key" onClose=${close}>
      <form method="dialog" class="key-form" onSubmit=${make}>
        <fieldset class="kind-choice">
          <legend>Kind</legend>
          ${(Object.keys(KINDS) as KeyKind[]).map(
            (each) => html`
              <label key=${each} class="check">
                <input type="radio" name="kind" value=${each} checked=${kind === each} onChange=${() => setKind(each)} /> ${KINDS[each]}
              </label>
            `,
          )}
        </fieldset>
        <label for="key-name">Name</label>
        <input id="key-name" name="name" maxLength="100" placeholder="optional: what the key is for" />
        ${
          kind === 'secret'
            ? html`
              <label for="key-scope">Scope</label>
              <select id="key-scope" name="scope">
                <option value="read">read: every GET and the feed</option>
                <option value="write">write: also inserts, changes and deletes rows</option>
                <option value="admin">admin: also collections, rules, webhooks and keys</option>
              </select>
            `
            : html`
              <label for="key-origins">Web origins it may be used from, separated by commas or spaces</label>
              <input id="key-origins" name="origins" required placeholder="https://app.example" spellcheck=${false} aria-describedby="key-origins-hint" />
              <p class="hint" id="key-origins-hint">As a browser sends Origin: the scheme, the host and a port other than the scheme's, no path. Its scope is write; what its callers may do with a collection's rows, its rules say.</p>
              <label for="key-rate">Requests a second per end user</label>
              <input id="key-rate" name="end_user_rate" type="number" min="1" max="10000" step="1" placeholder="no limit of its own" />
            `
        }
        <label for="key-collections">Collections, separated by commas</label>
        <input id="key-collections" name="collections" placeholder=${`left empty: ${collections}, as this key`} spellcheck=${false} />
        <label for="key-expires">Expires, in your time</label>
        <input id="key-expires" name="expires_at" type="datetime-local" aria-describedby="key-expires-hint" />
        <p class="hint" id="key-expires-hint">Left empty: ${expires}, as this key. A key makes no key wider than itself: no wider scope, no other collection, no later expiry.</p>
        <${Problems} failure=${failure} />
        <div class="buttons">
          <button type="submit">Make key</button>
          <button type="button" onClick=${close}>Cancel</button>
        </div>
      </form>
    <//>
  `;
}

/** The key just made, which the service shows this once, with a button that copies it. */
function MadeKey({ made, close }: { made: CreatedKey; close: () => void }) {
  const field = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState('');
  const copy = async () => {
    try {
      // The Clipboard API is there only in a secure context (https, or this machine's own address).
      await navigator.clipboard.writeText(made.key);
      setCopied('Copied.');
    } catch {
      field.current?.select();
      setCopied('The browser would not let the console copy it: it is selected, copy it yourself.');
    }
  };
  return html`
    <${Modal} title="Key made: copy it now" onClose=${close}>
      <p class="shown-once"><strong>This is the only time the key is shown.</strong> The service keeps only a hash of it: once this dialog is closed, no one can read it again.</p>
      <p>${
        made.kind === 'publishable'
          ? `A publishable key: put it in the app served from ${made.origins?.join(', ')}.`
          : 'A secret key: keep it on a server, never in a browser or an app.'
      }</p>
      <label for="made-key">Key ${made.prefix}${made.name === null ? '' : ` (${made.name})`}</label>
      <input id="made-key" ref=${field} class="secret" readonly value=${made.key} onFocus=${(event: Event) => (event.target as HTMLInputElement).select()} />
      <p class="note" role="status">${copied}</p>
      <div class="buttons">
        <button type="button" onClick=${copy}>Copy key</button>
        <button type="button" onClick=${close} autofocus>I have copied it</button>
      </div>
    <//>
  `;
}
