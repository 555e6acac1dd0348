// Where the console is, as the address's fragment: so that a row's related rows are links (a to-one's id,
// a to-many's rows and its collection filtered to them) that the browser follows, opens in a tab of their
// own and goes back from. Kept apart from the page, so that it is tested without a browser.
//
//   #/collections/posts                        a collection's rows
//   #/collections/comments?filter={"post_id":7} its rows under a filter (the filter language, docs/api.md)
//   #/collections/people/rows/7                its rows, with row 7 open
//   #/webhooks, #/issuers, #/keys              the account's webhooks, its token issuers, its keys
//   #/declaration                              the account as a declaration (rowbase.yaml)

/** The account's pages, each at `#/<name>`: its webhooks, its token issuers, its keys, its declaration. */
const ACCOUNT_PAGES = ['webhooks', 'issuers', 'keys', 'declaration'] as const;
export type AccountPage = (typeof ACCOUNT_PAGES)[number];

/** What the main part of the console shows: a collection's rows (under a filter, a row open), one of the account's pages, or none yet. */
export type Route = { collection: string; filter?: string; open?: number } | AccountPage | undefined;

const COLLECTION = /^#\/collections\/([^/?]+)(?:\/rows\/([1-9]\d{0,15}))?(?:\?(.*))?$/;

/** The route a fragment names (`location.hash`); none for one the console does not know. */
export function parseRoute(hash: string): Route {
  const page = ACCOUNT_PAGES.find((name) => hash === `#/${name}`);
  if (page) return page;
  const match = COLLECTION.exec(hash);
  if (!match) return undefined;
  let collection: string;
  try {
    collection = decodeURIComponent(match[1]);
  } catch {
    return undefined;
  }
  const route: Route = { collection };
  if (match[2] !== undefined && Number.isSafeInteger(Number(match[2]))) route.open = Number(match[2]);
  const filter = new URLSearchParams(match[3] ?? '').get('filter');
  if (filter) route.filter = filter;
  return route;
}

/** The fragment of a route, as a link's `href`: parseRoute's inverse. */
export function routeHash(route: Route): string {
  if (route === undefined) return '#';
  if (typeof route === 'string') return `#/${route}`;
  const rows = route.open === undefined ? '' : `/rows/${route.open}`;
  const query = route.filter ? `?${new URLSearchParams({ filter: route.filter })}` : '';
  return `#/collections/${encodeURIComponent(route.collection)}${rows}${query}`;
}
