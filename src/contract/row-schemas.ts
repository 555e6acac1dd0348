// A collection's JSON Schema (2020-12, of its rows' fields) as the named schemas of a contract document:
// the row as stored (`<prefix>Row`, with `id`), the row to insert (`<prefix>Insert`, the schema as given)
// and the fields of a patch (`<prefix>Patch`, none required). The schema's `$defs` (and draft-07's
// `definitions`) become schemas of their own beside them (`defName`), and every `$ref` of the schema is
// rewritten to point where its target now is, so that `{"$ref": "#/$defs/address"}` still resolves inside
// the document. See docs/contract.md, "A collection's schema in the documents".
import { collectionPrefix, defSuffix, rowTypeName } from './names.ts';

export type JsonObject = { [key: string]: unknown };

/** Whether `value` is a JSON object (not an array, not null). */
export const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

const COMPONENT = '#/components/schemas/';

/** The keywords a patch keeps of the schema's top level: what says which fields there are, and what they hold. */
const PATCH_KEYWORDS = ['properties', 'patternProperties', 'additionalProperties', 'propertyNames', 'unevaluatedProperties'];

/**
 * Keywords of the schema's top level that have no place in a component: its identity and anchors (the
 * references to them are rewritten), its definitions (relocated), and its title, which a generator may
 * take for a type's name (it joins the description).
 */
const DROPPED_KEYWORDS = ['$schema', '$id', '$anchor', '$dynamicAnchor', '$defs', 'definitions', '$comment', 'title'];

/** Keywords whose value is a value, not a schema. */
const VALUE_KEYWORDS = ['const', 'enum', 'default', 'examples', 'example'];

/** Keywords whose value maps names to schemas. */
const SCHEMA_MAP_KEYWORDS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];

/**
 * The name of a schema of a collection's `$defs`: `<prefix>Alt<number>` (the prefix as `names.ts` makes
 * it, with `Alt0` added to a plain one), the definition's name, and `Def`. A definition named in camelCase
 * of words of two letters or more (`address`, `postalAddress`), not starting `esc`, is named after it
 * (`NotesAlt0AddressDef`); any other is `Esc` and its UTF-8 bytes, each as two letters `a`–`p` (a hex digit
 * each). Read from the end, the name splits one way only: the definition's part holds no digit, and the
 * prefix's ends with one; so no two collections' definitions meet, nor a definition and a row type.
 */
export function defName(collection: string, definition: string): string {
  const prefix = collectionPrefix(collection);
  const escaped = /Alt[0-9]+$/.test(prefix) ? prefix : `${prefix}Alt0`;
  const readable = /^[a-z]{2,}([A-Z][a-z]+)*$/.test(definition) && !/^esc/.test(definition);
  const spelled = readable
    ? definition.charAt(0).toUpperCase() + definition.slice(1)
    : `Esc${[...Buffer.from(definition, 'utf8')].map((byte) => String.fromCharCode(97 + (byte >> 4), 97 + (byte & 15))).join('')}`;
  return `${escaped}${spelled}${defSuffix}`;
}

/** Decodes one JSON Pointer token (RFC 6901 §4). */
const unescapeToken = (token: string) => decodeURIComponent(token).replaceAll('~1', '/').replaceAll('~0', '~');

export interface RowSchemas {
  /** The named schemas, by name: the row types and the relocated definitions, in that order. */
  schemas: Record<string, JsonObject>;
}

export interface RowSchemaOptions {
  /** The schema of `id` in the row type (openapi.yaml's `RowId`, or asyncapi.yaml's inline integer). */
  id: JsonObject;
  /** Which types to make: the feed needs the row alone. Default: all three. */
  kinds?: readonly ('row' | 'insert' | 'patch')[];
  /** Top-level fields left out of every type: those hidden from the caller the document is for. Default: none. */
  hidden?: readonly string[];
  /** Top-level fields left out of the row to insert and the patch: those the caller may not set. Default: none. */
  unwritable?: readonly string[];
  /** Top-level fields not required in the row to insert: those the rules fill from the caller's token. Default: none. */
  filled?: readonly string[];
}

/**
 * The named schemas of a collection with a JSON Schema `schema`: `<prefix>Row`, `<prefix>Insert`,
 * `<prefix>Patch` (or those of `kinds`) and one for each definition of `$defs`. `schema` is not changed.
 * A `$ref` that points nowhere in the schema, or outside it (another document, a URL), is replaced by `{}`
 * (any value): the document must resolve offline, and such a reference cannot.
 */
export function rowSchemas(collection: string, schema: JsonObject, options: RowSchemaOptions): RowSchemas {
  const insertName = rowTypeName(collection, 'insert');
  // A reference to the root, or into it, points into the row to insert, which is the schema as given (a
  // tree's children have no `id`): that type is made whenever the schema refers to itself.
  const root = insertName;
  let rootUsed = false;
  const definitions = new Map<string, string>();
  const anchors = new Map<string, string>();
  for (const keyword of ['$defs', 'definitions']) {
    const defs = schema[keyword];
    if (!isObject(defs)) continue;
    for (const [name, definition] of Object.entries(defs)) {
      // draft-07's `definitions` are named apart from `$defs`, by their path.
      const component = defName(collection, keyword === '$defs' ? name : `definitions/${name}`);
      definitions.set(`${keyword}/${name}`, component);
      if (isObject(definition) && typeof definition.$anchor === 'string') anchors.set(definition.$anchor, component);
    }
  }
  if (typeof schema.$anchor === 'string') anchors.set(schema.$anchor, root);

  const target = (ref: string): string | undefined => {
    if (ref === '#') {
      rootUsed = true;
      return COMPONENT + root;
    }
    if (/^#[A-Za-z_][A-Za-z0-9_.-]*$/.test(ref)) {
      const anchored = anchors.get(ref.slice(1));
      if (anchored === root) rootUsed = true;
      return anchored && COMPONENT + anchored;
    }
    if (!ref.startsWith('#/')) return undefined;
    const tokens = ref.slice(2).split('/').map(unescapeToken);
    if ((tokens[0] === '$defs' || tokens[0] === 'definitions') && tokens.length >= 2) {
      const component = definitions.get(`${tokens[0]}/${tokens[1]}`);
      if (!component) return undefined;
      const rest = ref.slice(2).split('/').slice(2);
      return [COMPONENT + component, ...rest].join('/');
    }
    if (!resolves(schema, tokens)) return undefined;
    rootUsed = true;
    return `${COMPONENT}${root}/${ref.slice(2)}`;
  };

  // A schema's members are schemas, maps of schemas, arrays of schemas or values; only schemas hold `$ref`s
  // to rewrite (a `$ref` member of an `enum` value is data).
  const rewrite = (node: unknown): unknown => {
    if (!isObject(node)) return node;
    const out: JsonObject = {};
    for (const [key, value] of Object.entries(node)) {
      if (VALUE_KEYWORDS.includes(key)) out[key] = value;
      else if (key === '$ref' && typeof value === 'string') {
        const resolved = target(value);
        if (resolved === undefined) return {};
        out[key] = resolved;
      } else if (SCHEMA_MAP_KEYWORDS.includes(key) && isObject(value))
        out[key] = Object.fromEntries(Object.entries(value).map(([name, member]) => [name, rewrite(member)]));
      else if (Array.isArray(value)) out[key] = value.map(rewrite);
      else out[key] = rewrite(value);
    }
    return out;
  };

  const rewritten = rewrite(Object.fromEntries(Object.entries(schema).filter(([key]) => !DROPPED_KEYWORDS.includes(key)))) as JsonObject;
  const hidden = options.hidden ?? [];
  // What the caller reads, and what it writes: a field it may not see it may not set either.
  const given = withoutFields(rewritten, hidden);
  const written = withoutFields(rewritten, [...hidden, ...(options.unwritable ?? [])]);
  const properties = propertiesOf(given);
  const required = requiredOf(given);
  const notAccepted = (why: string) => ({ description: `Not accepted; ${why}.`, not: {} });
  // The schema's own title and description follow what each type is.
  const told = [schema.title, schema.description].filter((text) => typeof text === 'string' && text).join('\n\n');
  const describe = (what: string) => (told ? `${what}\n\n${told}` : what);
  // Examples of the schema are rows to insert: not rows as stored (no id), nor patches.
  const { examples: _examples, example: _example, ...described } = given;

  const relocated: Record<string, JsonObject> = {};
  for (const [key, component] of definitions) {
    const [keyword, name] = [key.slice(0, key.indexOf('/')), key.slice(key.indexOf('/') + 1)];
    const definition = (schema[keyword] as JsonObject)[name];
    if (!isObject(definition)) relocated[component] = definition === false ? { not: {} } : {};
    else {
      const { $anchor: _anchor, $dynamicAnchor: _dynamic, $id: _id, $schema: _schema, ...kept } = definition;
      relocated[component] = rewrite(kept) as JsonObject;
    }
  }
  const kinds = new Set(options.kinds ?? ['row', 'insert', 'patch']);
  if (rootUsed) kinds.add('insert');

  const schemas: Record<string, JsonObject> = {};
  if (kinds.has('row')) {
    schemas[rowTypeName(collection, 'row')] = {
      ...described,
      type: 'object',
      description: describe(`A row of \`${collection}\` as stored: its \`id\` and its fields, as the collection's schema says.`),
      required: ['id', ...required],
      properties: { id: options.id, ...properties },
    };
  }
  if (kinds.has('insert')) {
    const { required: _required, ...rest } = written;
    // A field the service fills from the caller's token is the caller's to leave out (its top-level `required`).
    const writtenRequired = requiredOf(written).filter((name) => !options.filled?.includes(name as string));
    schemas[insertName] = {
      // A row is an object: a schema that does not say so (`{}`, or of properties alone) still types one.
      ...(rest.type === undefined && { type: 'object' }),
      ...rest,
      description: describe(`A row to insert into \`${collection}\`: the collection's schema; the service assigns \`id\`.`),
      ...(writtenRequired.length > 0 && { required: writtenRequired }),
      properties: { id: notAccepted('the service assigns ids'), ...propertiesOf(written) },
    };
  }
  if (kinds.has('patch')) {
    const kept = Object.fromEntries(PATCH_KEYWORDS.filter((key) => key in written).map((key) => [key, written[key]]));
    schemas[rowTypeName(collection, 'patch')] = {
      ...kept,
      type: 'object',
      description: describe(`The fields of a row of \`${collection}\` to change, none required (a top-level merge); at least one.`),
      minProperties: 1,
      properties: { id: notAccepted('ids never change'), ...propertiesOf(written) },
    };
  }
  return { schemas: { ...schemas, ...relocated } };
}

/** The top-level `properties` of a schema, without `id`, which the service's own takes the place of. */
function propertiesOf(schema: JsonObject): JsonObject {
  const properties = isObject(schema.properties) ? { ...schema.properties } : {};
  delete properties.id;
  return properties;
}

/** The top-level `required` of a schema, without `id`. */
const requiredOf = (schema: JsonObject): unknown[] =>
  Array.isArray(schema.required) ? schema.required.filter((name) => name !== 'id') : [];

/** The keywords whose schemas apply to the row itself, as the top level does: where a top-level field is named too. */
const IN_PLACE_KEYWORDS = ['allOf', 'anyOf', 'oneOf', 'if', 'then', 'else'];

/**
 * `schema` (a schema of the row, rewritten) without the top-level fields `names`, a new value: out of its
 * `properties`, `required`, `dependentRequired` and `dependentSchemas`, and those of the schemas that apply
 * to the row in place (`allOf`, `if`, …), and out of its examples, so that no type of the document names
 * them. A field the caller may not see is never named to it (docs/access.md, "The contract follows the caller").
 */
function withoutFields(schema: JsonObject, names: readonly string[]): JsonObject {
  if (names.length === 0) return schema;
  const left = new Set(names);
  const without = (map: unknown) => (isObject(map) ? Object.fromEntries(Object.entries(map).filter(([name]) => !left.has(name))) : map);
  const out: JsonObject = { ...schema };
  const named = (list: unknown) => (Array.isArray(list) ? list.filter((name) => !left.has(name as string)) : list);
  for (const keyword of ['properties', 'dependentSchemas']) if (keyword in out) out[keyword] = without(out[keyword]);
  if (isObject(out.dependentRequired))
    out.dependentRequired = Object.fromEntries(
      Object.entries(without(out.dependentRequired) as JsonObject).map(([name, list]) => [name, named(list)]),
    );
  if ('required' in out) out.required = named(out.required);
  if (Array.isArray(out.examples)) out.examples = out.examples.map(without);
  if ('example' in out) out.example = without(out.example);
  for (const keyword of IN_PLACE_KEYWORDS) {
    const value = out[keyword];
    if (Array.isArray(value)) out[keyword] = value.map((each) => (isObject(each) ? withoutFields(each, names) : each));
    else if (isObject(value)) out[keyword] = withoutFields(value, names);
  }
  return out;
}

/** Whether the JSON Pointer `tokens` names a member of `node`. */
function resolves(node: unknown, tokens: readonly string[]): boolean {
  let current = node;
  for (const token of tokens) {
    if (Array.isArray(current) && /^(0|[1-9][0-9]*)$/.test(token) && Number(token) < current.length) current = current[Number(token)];
    else if (isObject(current) && Object.hasOwn(current, token)) current = current[token];
    else return false;
  }
  return true;
}

/** The prefix of every `$ref` to a named schema. */
export const componentRef = (name: string) => COMPONENT + name;
