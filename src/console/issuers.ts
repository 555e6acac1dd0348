// The account's token issuers (docs/access.md, "Token issuers"): the identity providers, or the app's own
// backend, whose tokens of end users the account accepts beside a publishable key. Listed by name, each
// with the `iss` and audiences its tokens must carry and where its key comes from; made or replaced whole
// in a dialog (PUT, `201` made, `200` replaced) with one of a key set's URL, a discovery document's URL or
// a shared secret; deleted after a second button. A secret is never shown back: the service answers
// `key_source`, and replacing an issuer of a secret takes the secret again. Only an admin key of every
// collection may manage them (x-rowbase-scope): another key's 403 is said in words, in place of the list.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { type Api, describe, type Explained, explain, type Issuer, type IssuerInput } from './api.ts';
import { ColumnsWithActions, Modal, Problems, Refused, Status, useAdminList, When } from './parts.ts';

type KeySource = Issuer['key_source'];

/** What each source of an issuer's key is called in the console. */
const SOURCES: Record<KeySource, string> = {
  jwks_uri: 'JSON Web Key Set URL (RS256, PS256, ES256, EdDSA)',
  discovery_url: 'OpenID discovery URL',
  secret: 'Shared secret (HS256)',
};

export function IssuersView({ api }: { api: Api }) {
  const { list: issuers, refused, error, setError, reload } = useAdminList(() => api.issuers());
  const [note, setNote] = useState('');
  // The issuer in the dialog: one of the list, or 'new'.
  const [editing, setEditing] = useState<Issuer | 'new'>();
  // The issuer whose deletion waits for its second button.
  const [deleting, setDeleting] = useState<string>();

  const remove = async (name: string) => {
    try {
      await api.deleteIssuer(name);
      setDeleting(undefined);
      setNote(`The issuer ${name} is deleted: its tokens are refused from now on.`);
      setError('');
      reload();
    } catch (failure) {
      setNote('');
      setError(describe(failure));
    }
  };

  if (refused) {
    return html`
      <section class="issuers" aria-labelledby="issuers-title">
        <h2 id="issuers-title">Token issuers</h2>
        <${Refused}
          sentence="Only an admin key of every collection may see and manage the account's token issuers, and this key is not one."
          detail=${refused}
        />
      </section>
    `;
  }
  return html`
    <section class="issuers" aria-labelledby="issuers-title">
      <header class="rows-head">
        <h2 id="issuers-title">Token issuers</h2>
        <button type="button" onClick=${() => setEditing('new')}>Add an issuer…</button>
      </header>
      <p class="hint">A request with a publishable key may carry an end user's token (a JWT): it is accepted when its iss is an issuer's, its aud one of the issuer's audiences, and it is signed with the issuer's key.</p>
      <${Status} error=${error} note=${note} />
      ${
        issuers === undefined
          ? null
          : issuers.length === 0
            ? html`<p class="empty">No issuer yet: every caller with a publishable key is anonymous.</p>`
            : html`
              <div class="table-scroll">
                <table class="issuer-table">
                  <caption>${issuers.length} ${issuers.length === 1 ? 'issuer' : 'issuers'}, by name</caption>
                  <thead><${ColumnsWithActions} columns=${['Name', 'Issuer (iss)', 'Audiences', 'Key', 'Changed']} /></thead>
                  <tbody>
                    ${issuers.map(
                      (issuer) => html`
                        <tr key=${issuer.name} data-issuer=${issuer.name}>
                          <td class="name">${issuer.name}</td>
                          <td class="iss">${issuer.issuer}</td>
                          <td class="audiences">${issuer.audiences.join(', ')}</td>
                          <td class="key">${keyOf(issuer)}</td>
                          <td class="changed"><${When} at=${issuer.updated_at} /></td>
                          <td>
                            <div class="buttons">
                              <button type="button" aria-label=${`Edit issuer ${issuer.name}`} onClick=${() => setEditing(issuer)}>Edit…</button>
                              ${
                                deleting === issuer.name
                                  ? html`<button type="button" class="danger" onClick=${() => remove(issuer.name)}>${`Delete issuer ${issuer.name}`}</button>`
                                  : html`<button type="button" aria-label=${`Delete issuer ${issuer.name}…`} onClick=${() => setDeleting(issuer.name)}>Delete…</button>`
                              }
                            </div>
                          </td>
                        </tr>
                      `,
                    )}
                  </tbody>
                </table>
              </div>
            `
      }
      ${
        editing
          ? html`<${IssuerEditor}
              api=${api}
              issuer=${editing === 'new' ? undefined : editing}
              close=${() => setEditing(undefined)}
              onSaved=${(issuer: Issuer, made: boolean) => {
                setEditing(undefined);
                setNote(`The issuer ${issuer.name} is ${made ? 'made' : 'replaced'}.`);
                setError('');
                reload();
              }}
            />`
          : null
      }
    </section>
  `;
}

/** Where an issuer's key comes from, in words: its URL, or that it has a secret (never shown). */
function keyOf({ key_source, jwks_uri, discovery_url }: Issuer): string {
  if (key_source === 'jwks_uri') return `key set at ${jwks_uri}`;
  if (key_source === 'discovery_url') return `discovery at ${discovery_url}`;
  return 'a shared secret (HS256), not shown';
}

/**
 * The dialog that makes an issuer, or replaces `issuer` (named as it is): its `iss`, its audiences
 * separated by commas, and one source of its key. Sent whole (PUT), so an issuer of a secret needs it
 * typed again: the service never shows it.
 */
function IssuerEditor({
  api,
  issuer,
  close,
  onSaved,
}: {
  api: Api;
  issuer: Issuer | undefined;
  close: () => void;
  onSaved: (issuer: Issuer, made: boolean) => void;
}) {
  const [source, setSource] = useState<KeySource>(issuer?.key_source ?? 'jwks_uri');
  const [failure, setFailure] = useState<Explained>();
  const save = async (event: Event) => {
    event.preventDefault();
    const data = new FormData(event.target as HTMLFormElement);
    const name = issuer?.name ?? String(data.get('name') ?? '').trim();
    const settings: IssuerInput = {
      issuer: String(data.get('issuer') ?? '').trim(),
      audiences: String(data.get('audiences') ?? '')
        .split(',')
        .map((audience) => audience.trim())
        .filter((audience) => audience !== ''),
      // The secret as typed: its spaces are part of the key.
      [source]: source === 'secret' ? String(data.get('key') ?? '') : String(data.get('key') ?? '').trim(),
    };
    try {
      const { issuer: saved, made } = await api.putIssuer(name, settings);
      onSaved(saved, made);
    } catch (error) {
      setFailure(explain(error));
    }
  };
  const kept = issuer && source === issuer.key_source && source !== 'secret' ? (issuer[source] ?? '') : '';
  return html`
    <${Modal} title=${issuer ? `Issuer ${issuer.name}` : 'New token issuer'} onClose=${close}>
      <form method="dialog" class="issuer-form" onSubmit=${save}>
        ${
          issuer
            ? null
            : html`
              <label for="issuer-name">Name</label>
              <input id="issuer-name" name="name" required pattern="[A-Za-z][A-Za-z0-9_\\-]{0,62}" placeholder="auth0" spellcheck=${false} />
            `
        }
        <label for="issuer-iss">Issuer: the iss of its tokens, exactly</label>
        <input id="issuer-iss" name="issuer" required defaultValue=${issuer?.issuer ?? ''} placeholder="https://auth.example.com/" spellcheck=${false} />
        <label for="issuer-audiences">Audiences, separated by commas: a token's aud names one</label>
        <input id="issuer-audiences" name="audiences" required defaultValue=${issuer?.audiences.join(', ') ?? ''} placeholder="notes-app" spellcheck=${false} />
        <fieldset class="key-choice">
          <legend>Key</legend>
          ${(Object.keys(SOURCES) as KeySource[]).map(
            (each) => html`
              <label key=${each} class="check">
                <input type="radio" name="source" value=${each} checked=${source === each} onChange=${() => setSource(each)} /> ${SOURCES[each]}
              </label>
            `,
          )}
        </fieldset>
        ${
          source === 'secret'
            ? html`
              <label for="issuer-key">Secret: at least 32 characters, never shown again</label>
              <input id="issuer-key" key="secret" name="key" type="password" required minLength="32" autocomplete="new-password" spellcheck=${false} />
              ${issuer?.key_source === 'secret' ? html`<p class="hint">The service keeps the secret and never shows it: type it again, or a new one.</p>` : null}
            `
            : html`
              <label for="issuer-key">${source === 'jwks_uri' ? 'Key set URL' : 'Discovery URL'}</label>
              <input id="issuer-key" key=${source} name="key" type="url" required defaultValue=${kept}
                placeholder=${source === 'jwks_uri' ? 'https://auth.example.com/.well-known/jwks.json' : 'https://auth.example.com/.well-known/openid-configuration'} spellcheck=${false} />
            `
        }
        <${Problems} failure=${failure} />
        <div class="buttons">
          <button type="submit">${issuer ? 'Replace issuer' : 'Add issuer'}</button>
          <button type="button" onClick=${close}>Cancel</button>
        </div>
      </form>
    <//>
  `;
}
