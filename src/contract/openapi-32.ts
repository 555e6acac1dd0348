// openapi.yaml (OpenAPI 3.0.3) as an OpenAPI 3.2.0 document (`GET /openapi.yaml?version=3.2`, and the base
// of the account's, `GET /v1/openapi.json?version=3.2`, account.ts): the 3.1 document (openapi-31.ts; 3.2 reads 3.1 as it
// is), whose streams of changes type their items. 3.0 has no word for the item of a stream, so
// openapi.yaml gives it in `x-rowbase-item-schema` beside the stream's `schema`; 3.2 names it `itemSchema`
// (OpenAPI 3.2.0, "Media Type Object": server-sent events and JSON Lines). The 3.1 documents leave it out
// (openapi-31.ts), with the schemas only it names.
import { ITEM_EXTENSION, openApiTo31 } from './openapi-31.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `document` (a parsed OpenAPI 3.0 document) as OpenAPI 3.2.0: a new document. */
export const openApiTo32 = (document: object): JsonObject => ({ ...openApiTo31(withItemSchemas(document)), openapi: '3.2.0' });

/** `document` (parsed openapi.yaml) with each `x-rowbase-item-schema` renamed `itemSchema`: still 3.0 otherwise. */
function withItemSchemas(document: object): JsonObject {
  const renamed = (value: Json): Json => {
    if (Array.isArray(value)) return value.map(renamed);
    if (!isObject(value)) return value;
    const out: JsonObject = {};
    for (const [key, member] of Object.entries(value)) out[key === ITEM_EXTENSION ? 'itemSchema' : key] = renamed(member);
    return out;
  };
  return renamed(document as JsonObject) as JsonObject;
}
