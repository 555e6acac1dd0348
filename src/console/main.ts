// The web console (GET /console): sign in with a key, the account's collections, a collection's rows
// (rows.ts), relations (relations.ts) and rules (rules.ts), the account's webhooks (webhooks.ts), token
// issuers (issuers.ts), keys (keys.ts) and declaration (declaration.ts), and the plan's usage. Where it is, is the address's fragment
// (route.ts): links between related rows are links. Rendered by Preact with htm's
// tagged templates (no build step of its own beyond the bundle: src/console/files.ts); every request is
// one of openapi.yaml's (api.ts).
import { html } from 'htm/preact';
import { render } from 'preact';
import { useCallback, useEffect, useLayoutEffect, useState } from 'preact/hooks';
import { Api, type Collection, describe, type Usage } from './api.ts';
import { DeclarationView } from './declaration.ts';
import { IssuersView } from './issuers.ts';
import { KeysView } from './keys.ts';
import { Status } from './parts.ts';
import { type AccountPage, parseRoute, type Route, routeHash } from './route.ts';
import { RowsView } from './rows.ts';
import { WebhooksView } from './webhooks.ts';

/** The account's pages, by their route: each one's name in the navigation (in this order) and its view. */
const ACCOUNT_PAGES: Record<AccountPage, { title: string; View: (props: { api: Api }) => unknown }> = {
  webhooks: { title: 'Webhooks', View: WebhooksView },
  issuers: { title: 'Token issuers', View: IssuersView },
  keys: { title: 'API keys', View: KeysView },
  declaration: { title: 'Declaration', View: DeclarationView },
};

/** Where the key is kept: this tab's session only, gone when the tab closes or the person signs out. */
const KEY_ITEM = 'rowbase.key';

function App() {
  const [api, setApi] = useState(() => {
    const key = sessionStorage.getItem(KEY_ITEM);
    return key ? new Api(key) : undefined;
  });
  const signIn = (key: string) => {
    sessionStorage.setItem(KEY_ITEM, key);
    setApi(new Api(key));
  };
  const signOut = () => {
    sessionStorage.removeItem(KEY_ITEM);
    setApi(undefined);
  };
  return api ? html`<${Console} api=${api} onSignOut=${signOut} />` : html`<${SignIn} onSignIn=${signIn} />`;
}

function SignIn({ onSignIn }: { onSignIn: (key: string) => void }) {
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const key = String(new FormData(event.target as HTMLFormElement).get('key') ?? '').trim();
    setBusy(true);
    try {
      // Any request of the key's tells whether the service takes it; usage needs the narrowest scope.
      await new Api(key).usage();
      onSignIn(key);
    } catch (failure) {
      setError(`This key was refused: ${describe(failure)}`);
      setBusy(false);
    }
  };
  return html`
    <main class="sign-in">
      <h1>rowbase console</h1>
      <form class="sign-in-form" onSubmit=${submit}>
        <label for="key">API key</label>
        <input id="key" name="key" type="password" autocomplete="off" required placeholder="rb_…" />
        <p class="hint">Kept for this tab only, and sent only to this service.</p>
        <button type="submit" disabled=${busy}>Sign in</button>
        <${Status} error=${error} />
      </form>
    </main>
  `;
}

function Console({ api, onSignOut }: { api: Api; onSignOut: () => void }) {
  const [collections, setCollections] = useState<Collection[]>([]);
  // Where the console is: the address's fragment, and how many times a route was followed (a link to
  // the row already open opens it again).
  const [{ view, followed }, setRoute] = useState(() => ({ view: parseRoute(location.hash), followed: 0 }));
  const chosen = typeof view === 'object' ? view.collection : undefined;
  // Listened for as the console is first drawn (a layout effect, run before anything drawn can be clicked),
  // not after it is painted: a link followed in between was not heard, and its view never shown.
  useLayoutEffect(() => {
    const follow = () => setRoute(({ followed }) => ({ view: parseRoute(location.hash), followed: followed + 1 }));
    addEventListener('hashchange', follow);
    return () => removeEventListener('hashchange', follow);
  }, []);
  /** Goes to `route`: the address says it (the browser's history keeps it), and the view follows. */
  const setView = (route: Route) => {
    const hash = routeHash(route);
    if (location.hash === hash || (hash === '#' && location.hash === ''))
      setRoute(({ followed }) => ({ view: route, followed: followed + 1 }));
    else location.hash = hash;
  };
  const [error, setError] = useState('');
  // Whether the key may change schemas and indexes; until known, it may not (the service would refuse).
  const [admin, setAdmin] = useState(false);
  // Moved on by every change the person makes, so that counts and usage are read again.
  const [version, setVersion] = useState(0);
  const changed = useCallback(() => setVersion((value) => value + 1), []);

  useEffect(() => {
    api.collections().then(setCollections, (failure) => setError(describe(failure)));
  }, [api, version]);
  useEffect(() => {
    api.isAdmin().then(setAdmin, () => setAdmin(false));
  }, [api]);

  const create = async (event: Event) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const name = String(new FormData(form).get('name') ?? '').trim();
    try {
      await api.createCollection(name);
      form.reset();
      setError('');
      setView({ collection: name });
      changed();
    } catch (failure) {
      setError(describe(failure));
    }
  };

  return html`
    <header class="top">
      <h1>rowbase console</h1>
      <${UsageMeter} api=${api} version=${version} />
      <button type="button" onClick=${onSignOut}>Sign out</button>
    </header>
    <div class="layout">
      <nav class="side" aria-label="Console">
        <h2>Collections</h2>
        <ul>
          ${collections.map(
            ({ name, row_count }) => html`
              <li key=${name}>
                <button type="button" aria-current=${name === chosen ? 'page' : undefined} onClick=${() => setView({ collection: name })}>
                  <span>${name}</span> <span class="count" aria-label=${`${row_count} rows`}>${row_count}</span>
                </button>
              </li>
            `,
          )}
        </ul>
        <form class="create" onSubmit=${create}>
          <label for="new-collection">New collection</label>
          <input id="new-collection" name="name" required pattern="[A-Za-z][A-Za-z0-9_\\-]{0,62}" placeholder="notes" />
          <button type="submit">Create</button>
        </form>
        <${Status} error=${error} />
        <h2>Account</h2>
        <ul>
          ${(Object.keys(ACCOUNT_PAGES) as AccountPage[]).map(
            (page) => html`
              <li key=${page}>
                <button type="button" aria-current=${view === page ? 'page' : undefined} onClick=${() => setView(page)}>${ACCOUNT_PAGES[page].title}</button>
              </li>
            `,
          )}
        </ul>
      </nav>
      <main>
        ${
          typeof view === 'string'
            ? html`<${ACCOUNT_PAGES[view].View} api=${api} />`
            : chosen
              ? html`<${RowsView}
                key=${routeHash({ collection: chosen, filter: typeof view === 'object' ? view.filter : undefined })}
                api=${api}
                collection=${chosen}
                admin=${admin}
                collections=${collections.map((collection) => collection.name)}
                filter=${typeof view === 'object' ? view.filter : undefined}
                open=${typeof view === 'object' ? view.open : undefined}
                opened=${followed}
                onChanged=${changed}
                onDeleted=${() => {
                  setView(undefined);
                  changed();
                }}
              />`
              : html`<p class="empty">Choose a collection, or create one.</p>`
        }
      </main>
    </div>
  `;
}

/** The plan's quota for this period: used and remaining, as a bar. */
function UsageMeter({ api, version }: { api: Api; version: number }) {
  const [usage, setUsage] = useState<Usage>();
  useEffect(() => {
    api.usage().then(setUsage, () => setUsage(undefined));
  }, [api, version]);
  if (!usage) return html`<div class="usage"></div>`;
  const share = usage.quota === 0 ? 1 : Math.min(usage.used / usage.quota, 1);
  const summary = `${usage.used.toLocaleString()} of ${usage.quota.toLocaleString()} requests used this ${usage.period}, ${usage.remaining.toLocaleString()} left (plan ${usage.plan})`;
  return html`
    <figure class="usage" aria-label="Usage">
      <svg width="160" height="12" viewBox="0 0 160 12" role="img" aria-label=${summary}>
        <rect class="quota" x="0" y="0" width="160" height="12" rx="3" />
        <rect class="used" x="0" y="0" width=${Math.max(160 * share, share > 0 ? 2 : 0)} height="12" rx="3" />
      </svg>
      <figcaption>${usage.plan}: ${usage.used.toLocaleString()} / ${usage.quota.toLocaleString()} this ${usage.period}, ${usage.remaining.toLocaleString()} left</figcaption>
    </figure>
  `;
}

render(html`<${App} />`, document.getElementById('console') as HTMLElement);
