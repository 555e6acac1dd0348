// openapi.yaml (OpenAPI 3.0.3) as an OpenAPI 3.2.0 document (`GET /openapi.yaml?version=3.2`, and the
// account's, `GET /v1/openapi.json?version=3.2`): the 3.1 document (openapi-31.ts; 3.2 reads 3.1 as it is), whose streams of changes type their items. 3.0 has no
// word for the item of a stream, so openapi.yaml gives it in `x-rowbase-item-schema` beside the stream's
// `schema`; 3.2 names it `itemSchema` (OpenAPI 3.2.0, "Media Type Object": server-sent events and JSON
// Lines), and the extension goes.
import { openApiTo31 } from './openapi-31.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const ITEM_EXTENSION = 'x-rowbase-item-schema';

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `document` (a parsed OpenAPI 3.0 document) as OpenAPI 3.2.0: a new document. */
export const openApiTo32 = (document: object): JsonObject => openApi31To32(openApiTo31(document));

/** An OpenAPI 3.1 document made of openapi.yaml (openapi-31.ts; the account's, account.ts) as OpenAPI 3.2.0: a new document. */
export function openApi31To32(document: object): JsonObject {
  return { ...(itemSchemas(document as JsonObject) as JsonObject), openapi: '3.2.0' };
}

/** `value` with every `x-rowbase-item-schema` of a media type renamed `itemSchema`; the 3.1 conversion left it as written, a 2020-12 schema already. */
function itemSchemas(value: Json): Json {
  if (Array.isArray(value)) return value.map(itemSchemas);
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [key, member] of Object.entries(value)) out[key === ITEM_EXTENSION ? 'itemSchema' : key] = itemSchemas(member);
  return out;
}
