// The account's declaration (docs/declarations.md): its collections, token issuers and webhooks as the
// `rowbase.yaml` that `rowbase pull` writes (GET /v1/declaration), shown read-only, with a link that
// downloads it, to keep in git and plan and apply with `rowbase plan` and `rowbase apply`. It holds no
// secret. Only an admin key of every collection may read it (x-rowbase-scope): another key's 403 is said
// in words, in place of the file.
import { html } from 'htm/preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { type Api, ApiError, describe, type PulledDeclaration } from './api.ts';
import { Refused, Status } from './parts.ts';

/** The name the download is saved under. */
const FILE_NAME = 'rowbase.yaml';

export function DeclarationView({ api }: { api: Api }) {
  const [pulled, setPulled] = useState<PulledDeclaration>();
  const [refused, setRefused] = useState('');
  const [error, setError] = useState('');
  useEffect(() => {
    api.declaration().then(setPulled, (failure) => {
      if (failure instanceof ApiError && failure.problem.status === 403) setRefused(failure.problem.detail);
      else setError(describe(failure));
    });
  }, [api]);
  // The file as a blob's URL, for the download link, made in the render that shows the file (the link
  // and the file appear together); released when the text changes or the view goes.
  const href = useMemo(
    () => (pulled === undefined ? undefined : URL.createObjectURL(new Blob([pulled.yaml], { type: 'application/yaml' }))),
    [pulled],
  );
  useEffect(
    () => () => {
      if (href !== undefined) URL.revokeObjectURL(href);
    },
    [href],
  );

  if (refused) {
    return html`
      <section class="declaration" aria-labelledby="declaration-title">
        <h2 id="declaration-title">Declaration</h2>
        <${Refused}
          sentence="Only an admin key of every collection may read the account's declaration, and this key is not one."
          detail=${refused}
        />
      </section>
    `;
  }
  return html`
    <section class="declaration" aria-labelledby="declaration-title">
      <header class="rows-head">
        <h2 id="declaration-title">Declaration</h2>
        ${href === undefined ? null : html`<a class="download" href=${href} download=${FILE_NAME}>Download ${FILE_NAME}</a>`}
      </header>
      <p class="hint">
        The account's collections, token issuers and webhooks as code, read-only: keep the file in git beside your app, change it
        there, and plan and apply it with rowbase plan and rowbase apply. It holds no secret: each is named by the environment
        variable that holds it.
      </p>
      <${Status} error=${error} />
      ${pulled === undefined ? null : html`<pre class="declaration-yaml" tabindex="0" aria-label=${FILE_NAME}>${pulled.yaml}</pre>`}
    </section>
  `;
}
