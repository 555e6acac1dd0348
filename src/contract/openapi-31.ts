// openapi.yaml (OpenAPI 3.0.3) as an OpenAPI 3.1.0 document, whose schemas are JSON Schema 2020-12, so
// that a collection's schema, written in 2020-12, can sit among them unchanged. What 3.0 says otherwise
// is rewritten (OpenAPI 3.1.0, "Schema Object"; the 3.0 → 3.1 upgrade notes of the OpenAPI Initiative):
//
// - `nullable: true` is no keyword of 2020-12: the `type` becomes an array with `"null"` (and an `enum`
//   takes `null` too); a schema with no `type` becomes `anyOf` of itself and `{type: "null"}`.
// - `exclusiveMinimum: true` / `exclusiveMaximum: true` beside `minimum` / `maximum` become the bound
//   itself (`exclusiveMinimum: 0`), as 2020-12 spells it.
// - `example` of a Schema Object is deprecated in 3.1: it becomes `examples: [example]`. (`example` of a
//   parameter, header or media type stays: those are no schemas.)
//
// - `x-rowbase-item-schema`, the item of a changes stream, which 3.2 names `itemSchema` (openapi-32.ts),
//   goes, and so do the schemas only it named: linters (Redocly) read no `$ref` inside an extension, and
//   would call them unused. (Where it is named `itemSchema` already, for 3.2, its schema is converted as a
//   `schema` is.)
//
// Everything else of openapi.yaml reads the same in 3.1.

import { mapValues } from './status-maps.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** Where openapi.yaml gives the item of a stream (openapi-32.ts). */
export const ITEM_EXTENSION = 'x-rowbase-item-schema';

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Keywords whose value is a schema. */
const SCHEMA_KEYWORDS = ['items', 'additionalProperties', 'not', 'contains', 'propertyNames', 'if', 'then', 'else'];
/** Keywords whose value is an array of schemas. */
const SCHEMA_ARRAY_KEYWORDS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
/** Keywords whose value maps names to schemas. */
const SCHEMA_MAP_KEYWORDS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];

/** A 3.0 Schema Object as 2020-12 says it (a new object; `schema` is not changed). */
function schemaTo31(schema: Json): Json {
  if (!isObject(schema)) return schema;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) {
    if (SCHEMA_KEYWORDS.includes(key)) out[key] = schemaTo31(value);
    else if (SCHEMA_ARRAY_KEYWORDS.includes(key) && Array.isArray(value)) out[key] = value.map(schemaTo31);
    else if (SCHEMA_MAP_KEYWORDS.includes(key) && isObject(value)) out[key] = mapValues(value, schemaTo31);
    else out[key] = value;
  }
  for (const [flag, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (typeof out[flag] !== 'boolean') continue;
    if (out[flag] && typeof out[bound] === 'number') {
      out[flag] = out[bound];
      delete out[bound];
    } else delete out[flag];
  }
  if ('example' in out) {
    if (!('examples' in out)) out.examples = [out.example];
    delete out.example;
  }
  if (out.nullable === true) {
    delete out.nullable;
    if (typeof out.type === 'string') {
      out.type = [out.type, 'null'];
      if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    } else return { anyOf: [out, { type: 'null' }] };
  } else delete out.nullable;
  return out;
}

/** Converts every `schema` member of a parameter, header or media type map, in place of a copy. */
function withSchemas(container: Json): Json {
  if (!isObject(container)) return container;
  const out: JsonObject = { ...container };
  delete out[ITEM_EXTENSION];
  if ('schema' in out) out.schema = schemaTo31(out.schema);
  if ('itemSchema' in out) out.itemSchema = schemaTo31(out.itemSchema);
  if (isObject(out.content)) out.content = mapValues(out.content, withSchemas);
  if (isObject(out.headers)) out.headers = mapValues(out.headers, withSchemas);
  return out;
}

/** An operation: its parameters, body and responses, each schema converted. */
function operationTo31(operation: Json): Json {
  if (!isObject(operation)) return operation;
  const out: JsonObject = { ...operation };
  if (Array.isArray(out.parameters)) out.parameters = out.parameters.map(withSchemas);
  if (isObject(out.requestBody)) out.requestBody = withSchemas(out.requestBody);
  if (isObject(out.responses)) out.responses = mapValues(out.responses, withSchemas);
  return out;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/**
 * An OpenAPI 3.0 document (openapi.yaml, parsed) as OpenAPI 3.1.0: a new document, which shares with
 * `document` the parts it does not rewrite (neither is to be changed: the account's documents share
 * theirs with it in turn, account.ts). Only the constructs this file's first comment lists are rewritten.
 */
export function openApiTo31(document: object): JsonObject {
  const source = document as JsonObject;
  const paths = isObject(source.paths) ? source.paths : {};
  const components = isObject(source.components) ? source.components : {};
  const converted: JsonObject = {
    ...source,
    openapi: '3.1.0',
    paths: mapValues(paths, (item) => {
      if (!isObject(item)) return item;
      const out: JsonObject = { ...item };
      if (Array.isArray(out.parameters)) out.parameters = out.parameters.map(withSchemas);
      for (const method of METHODS) if (method in out) out[method] = operationTo31(out[method]);
      return out;
    }),
    components: {
      ...components,
      ...(isObject(components.schemas) && { schemas: mapValues(components.schemas, schemaTo31) }),
      ...(isObject(components.parameters) && { parameters: mapValues(components.parameters, withSchemas) }),
      ...(isObject(components.headers) && { headers: mapValues(components.headers, withSchemas) }),
      ...(isObject(components.responses) && { responses: mapValues(components.responses, withSchemas) }),
      ...(isObject(components.requestBodies) && { requestBodies: mapValues(components.requestBodies, withSchemas) }),
    },
  };
  return withoutItemOnly(converted, source);
}

/**
 * `converted` without the schemas that only `x-rowbase-item-schema` of `source` named, directly or
 * through others: those the extension reaches that nothing else does (the paths, or another schema).
 */
function withoutItemOnly(converted: JsonObject, source: JsonObject): JsonObject {
  const schemas = (converted.components as JsonObject).schemas;
  if (!isObject(schemas)) return converted;
  const reached = (from: Json[]): Set<string> => {
    const names = new Set<string>();
    const visit = (node: Json): void => {
      if (Array.isArray(node)) for (const item of node) visit(item);
      if (!isObject(node)) return;
      for (const [key, value] of Object.entries(node)) {
        const name = key === '$ref' && typeof value === 'string' ? /^#\/components\/schemas\/(.+)$/.exec(value)?.[1] : undefined;
        if (name === undefined) {
          if (key !== ITEM_EXTENSION) visit(value);
        } else if (!names.has(name)) {
          names.add(name);
          visit(schemas[name] ?? null);
        }
      }
    };
    for (const node of from) visit(node);
    return names;
  };
  const items: Json[] = [];
  const collect = (node: Json): void => {
    if (Array.isArray(node)) for (const item of node) collect(item);
    if (!isObject(node)) return;
    for (const [key, value] of Object.entries(node)) key === ITEM_EXTENSION ? items.push(value) : collect(value);
  };
  collect(source);
  const candidates = reached(items);
  const { components, ...outside } = converted;
  const others = Object.entries(schemas)
    .filter(([name]) => !candidates.has(name))
    .map(([, schema]) => schema);
  const used = reached([outside as JsonObject, { ...(components as JsonObject), schemas: null }, ...others]);
  const gone = [...candidates].filter((name) => !used.has(name));
  if (gone.length === 0) return converted;
  const kept = Object.fromEntries(Object.entries(schemas).filter(([name]) => !gone.includes(name)));
  return { ...converted, components: { ...(components as JsonObject), schemas: kept } };
}
