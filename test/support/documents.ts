// Contract documents as the tests read them: their `$ref`s, where each points, and their operations.

type Json = Record<string, unknown>;

/** The value a local `$ref` (`#/…`) points at in `document`, or undefined. */
export function resolve(document: unknown, ref: string): unknown {
  let node = document;
  for (const token of ref.slice(2).split('/')) {
    const key = decodeURIComponent(token).replaceAll('~1', '/').replaceAll('~0', '~');
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, key)) return undefined;
    node = (node as Json)[key];
  }
  return node;
}

/** Every `$ref` string of `node`. */
export function refsOf(node: unknown): string[] {
  if (Array.isArray(node)) return node.flatMap(refsOf);
  if (typeof node !== 'object' || node === null) return [];
  return Object.entries(node).flatMap(([key, value]) => (key === '$ref' && typeof value === 'string' ? [value] : refsOf(value)));
}

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A JSON Pointer as the fragment of a URI (RFC 6901 §6): each token escaped, then percent-encoded. */
const pointerOf = (tokens: readonly string[]): string =>
  `#/${tokens.map((token) => encodeURIComponent(token.replaceAll('~', '~0').replaceAll('/', '~1'))).join('/')}`;

/** An example of a document, and the schema it must match: both where they are, as pointers (pointerOf). */
export interface ExampleAt {
  where: string;
  value: unknown;
  schema: string;
}

/** Keywords whose value is a schema, an array of schemas, or names mapped to schemas (JSON Schema 2020-12; 3.0's are among them). */
const SUBSCHEMA = [
  'items',
  'additionalProperties',
  'not',
  'contains',
  'propertyNames',
  'if',
  'then',
  'else',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contentSchema',
];
const SUBSCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const SUBSCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
/** Where a parameter, a header or a media type holds a schema: 3.2's `itemSchema`, and openapi.yaml's name for it in 3.0. */
const SCHEMA_MEMBERS = ['schema', 'itemSchema', 'x-rowbase-item-schema'];
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace', 'query'];

/**
 * Every example of an OpenAPI document (3.0, 3.1 or 3.2), with the schema it sits beside: a schema's
 * `example` (3.0) or each of its `examples` (JSON Schema), against that schema; a parameter's, a header's
 * or a media type's `example`, or the `value` of each of its `examples` (a `$ref` to the components'
 * followed), against its `schema`. Read where the document writes them: the paths' operations and the
 * components; a `$ref` to another part is read there, once.
 */
export function examplesOf(document: unknown): ExampleAt[] {
  const found: ExampleAt[] = [];
  const schemaAt = (node: unknown, at: string[]): void => {
    if (!isObject(node)) return;
    const schema = pointerOf(at);
    if ('example' in node) found.push({ where: pointerOf([...at, 'example']), value: node.example, schema });
    if (Array.isArray(node.examples)) {
      for (const [index, value] of node.examples.entries())
        found.push({ where: pointerOf([...at, 'examples', String(index)]), value, schema });
    }
    for (const keyword of SUBSCHEMA) if (keyword in node) schemaAt(node[keyword], [...at, keyword]);
    for (const keyword of SUBSCHEMA_LISTS) {
      const list = node[keyword];
      if (Array.isArray(list)) for (const [index, each] of list.entries()) schemaAt(each, [...at, keyword, String(index)]);
    }
    for (const keyword of SUBSCHEMA_MAPS) {
      const map = node[keyword];
      if (isObject(map)) for (const [name, each] of Object.entries(map)) schemaAt(each, [...at, keyword, name]);
    }
  };
  // A parameter, a header, a media type, a request body or a response: what holds schemas, and examples of them.
  const holderAt = (node: unknown, at: string[]): void => {
    if (!isObject(node) || '$ref' in node) return;
    for (const member of SCHEMA_MEMBERS) if (member in node) schemaAt(node[member], [...at, member]);
    if ('schema' in node) {
      const schema = pointerOf([...at, 'schema']);
      if ('example' in node) found.push({ where: pointerOf([...at, 'example']), value: node.example, schema });
      if (isObject(node.examples)) {
        for (const [name, example] of Object.entries(node.examples)) {
          const named = isObject(example) && typeof example.$ref === 'string' ? resolve(document, example.$ref) : example;
          if (isObject(named) && 'value' in named) found.push({ where: pointerOf([...at, 'examples', name]), value: named.value, schema });
        }
      }
    }
    for (const member of ['content', 'headers']) {
      const map = node[member];
      if (isObject(map)) for (const [name, each] of Object.entries(map)) holderAt(each, [...at, member, name]);
    }
  };
  const root = document as Json;
  for (const [path, item] of Object.entries((root.paths ?? {}) as Json)) {
    if (!isObject(item)) continue;
    const listed = (parameters: unknown, at: string[]) => {
      if (!Array.isArray(parameters)) return;
      for (const [index, parameter] of parameters.entries()) holderAt(parameter, [...at, 'parameters', String(index)]);
    };
    listed(item.parameters, ['paths', path]);
    for (const method of METHODS) {
      const operation = item[method];
      if (!isObject(operation)) continue;
      const at = ['paths', path, method];
      listed(operation.parameters, at);
      holderAt(operation.requestBody, [...at, 'requestBody']);
      for (const [status, response] of Object.entries((operation.responses ?? {}) as Json))
        holderAt(response, [...at, 'responses', status]);
    }
  }
  const components = (root.components ?? {}) as Json;
  for (const [name, schema] of Object.entries((components.schemas ?? {}) as Json)) schemaAt(schema, ['components', 'schemas', name]);
  for (const kind of ['parameters', 'headers', 'responses', 'requestBodies']) {
    for (const [name, holder] of Object.entries((components[kind] ?? {}) as Json)) holderAt(holder, ['components', kind, name]);
  }
  return found;
}
