// The account's AsyncAPI document for a caller holding a publishable key (docs/access.md, "The contract
// follows the caller"): the feed of the collections the caller may read, as caller.ts makes the OpenAPI
// document of what it may use.
import { grantsOf, preamble, type ViewedCollection } from './caller.ts';
import { isObject, type JsonObject } from './row-schemas.ts';
import { withoutUnused } from './unused.ts';

const HOLDS =
  "It holds the feed, if it takes a publishable key, of the collections whose rules let this caller read some rows at least, their rows without the fields hidden from this caller. The key goes in `api_key` (or `x-api-key`), the end user's token in `access_token` (or `Authorization: Bearer`).";

/** The security schemes of the AsyncAPI document for a publishable key, as the feed takes it. */
const ASYNCAPI_SCHEMES: Record<string, JsonObject> = {
  publishableQueryKey: {
    type: 'httpApiKey',
    in: 'query',
    name: 'api_key',
    description:
      "The publishable key (`rb_pub_…`) in the `api_key` query parameter, as browsers cannot set headers on a WebSocket; the end user's token beside it in `access_token` (`FeedQuery`), none for an anonymous caller.",
  },
  publishableKey: {
    type: 'httpApiKey',
    in: 'header',
    name: 'x-api-key',
    description: "The publishable key in an `x-api-key` header; the end user's token beside it in `Authorization: Bearer` (`FeedHeaders`).",
  },
};

/**
 * `document` (the account's AsyncAPI document, built for `collections`, those the caller may read, and their
 * views; not changed) as a publishable key's caller may use it: the feed, if it takes a publishable key
 * (`feed`) and a collection grants `read`, with the messages of those collections alone, `collection`
 * naming only them; not the webhooks, which are the account's backend's. Components no channel left uses go.
 */
export function publishableAsyncApi(document: JsonObject, collections: readonly ViewedCollection[], feed: boolean): JsonObject {
  const readable = grantsOf(collections)('read');
  const components = document.components as JsonObject;
  const info = { ...(document.info as JsonObject), description: preamble(HOLDS) + String((document.info as JsonObject).description ?? '') };
  const local = (document.servers as JsonObject).local as JsonObject;
  const security = Object.keys(ASYNCAPI_SCHEMES).map((name) => ({ $ref: `#/components/securitySchemes/${name}` }));
  // The server stays without the feed: a document lists one at least.
  const servers = { local: { ...local, security } };
  if (!feed || readable.length === 0) {
    const emptied = { ...components, securitySchemes: ASYNCAPI_SCHEMES };
    return withoutUnused({ ...document, info, servers, channels: {}, operations: {}, components: emptied });
  }
  const channel = (document.channels as JsonObject).feed as JsonObject;
  const generic = new Set(['insert', 'update', 'delete']);
  const messages = Object.fromEntries(Object.entries(channel.messages as JsonObject).filter(([name]) => !generic.has(name)));
  const operations = Object.fromEntries(
    Object.entries(document.operations as JsonObject).filter(
      ([name, operation]) =>
        name !== 'sendRowChanges' && isObject(operation) && (operation.channel as JsonObject).$ref === '#/channels/feed',
    ),
  );
  const schemas = components.schemas as JsonObject;
  const query = schemas.FeedQuery as JsonObject;
  const headers = schemas.FeedHeaders as JsonObject;
  return withoutUnused({
    ...document,
    info,
    servers,
    channels: { feed: { ...channel, messages } },
    operations,
    components: {
      ...components,
      securitySchemes: ASYNCAPI_SCHEMES,
      schemas: {
        ...schemas,
        FeedQuery: {
          ...query,
          properties: {
            ...(query.properties as JsonObject),
            collection: {
              type: 'string',
              enum: readable,
              description: 'A collection whose rules let this caller read some rows at least.',
            },
          },
        },
        FeedHeaders: {
          ...headers,
          description: "Headers of the upgrade request that may carry the publishable key, and the end user's token.",
          properties: {
            Authorization: { type: 'string', description: "`Bearer <jwt>`: the end user's token." },
            'x-api-key': { type: 'string', description: 'The publishable key.' },
          },
        },
      },
    },
  });
}
