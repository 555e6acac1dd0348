// What the typed row form (form.ts) is made of, without the page: the input for each top-level property
// of a collection's schema (docs/schemas.md), by type, and for the field of each of its to-one relations
// (docs/relations.md) a list of the related collection's rows to pick from; what an input's content is as
// a field's value; and where the errors of a refused write go, by the first segment of their JSON Pointer
// (RFC 6901).
import type { Problem, Relation, RowSchema } from './api.ts';

/** The input a field is edited with. */
export type FieldKind = 'text' | 'date' | 'email' | 'url' | 'number' | 'integer' | 'boolean' | 'choice' | 'relation' | 'json';

/** A top-level property of the schema, as the form shows it. */
export interface FormField {
  name: string;
  kind: FieldKind;
  /** For `choice`: the values of `enum` (or the one of `const`), all strings, numbers, booleans or null. */
  choices: unknown[];
  required: boolean;
  /** What the field takes, in words: its type, its format, its bounds. */
  hint: string;
  /** For `relation`: the to-one relation the field holds the ids of, and the collection it names rows of. */
  relation?: { name: string; collection: string };
}

type Subschema = Record<string, unknown>;

/**
 * The fields of the form: each top-level property the schema declares, in its order, but `id` (the
 * service's). None without a schema, or for a schema that declares no properties.
 */
export function formFields(schema: RowSchema | null | undefined): FormField[] {
  const properties = schema?.properties;
  if (!schema || !isObject(properties)) return [];
  const required = Array.isArray(schema.required) ? schema.required : [];
  return Object.entries(properties)
    .filter(([name]) => name !== 'id')
    .map(([name, declared]) => fieldOf(name, resolve(declared, schema), required.includes(name)));
}

/**
 * The form's fields with the field of each to-one relation of `relations` picked from a list of its
 * related rows: a field the schema declares in its place (required as the schema says), any other after
 * them. None of a collection without to-one relations added.
 */
export function withRelations(fields: readonly FormField[], relations: readonly Relation[]): FormField[] {
  const toOne = relations.filter((relation) => relation.kind === 'to_one');
  const pickedOf = (field: FormField, relation: Relation): FormField => ({
    ...field,
    kind: 'relation',
    choices: [],
    hint: `the id of a row of ${relation.collection} (relation ${relation.name}), or none`,
    relation: { name: relation.name, collection: relation.collection },
  });
  const held = new Map(toOne.map((relation) => [relation.field, relation]));
  const shownFields = fields.map((field) => {
    const relation = held.get(field.name);
    return relation ? pickedOf(field, relation) : field;
  });
  const declared = new Set(fields.map((field) => field.name));
  const added = toOne
    .filter((relation) => !declared.has(relation.field))
    .map((relation) => pickedOf({ name: relation.field, kind: 'relation', choices: [], required: false, hint: '' }, relation));
  return [...shownFields, ...added];
}

function fieldOf(name: string, declared: unknown, required: boolean): FormField {
  const field = { name, required, choices: [] as unknown[] };
  if (!isObject(declared)) return { ...field, kind: 'json', hint: 'JSON' };
  const choices = Array.isArray(declared.enum) ? declared.enum : 'const' in declared ? [declared.const] : undefined;
  if (choices) {
    const kind = choices.every(isScalar) ? 'choice' : 'json';
    return { ...field, kind, choices: kind === 'choice' ? choices : [], hint: `one of ${choices.map(shown).join(', ')}` };
  }
  const types = typeof declared.type === 'string' ? [declared.type] : Array.isArray(declared.type) ? declared.type : [];
  const nullable = types.includes('null') ? ' or null' : '';
  const [type, ...others] = types.filter((type) => type !== 'null');
  if (type === undefined || others.length > 0)
    return { ...field, kind: 'json', hint: types.length > 0 ? `${types.join(', ')}, as JSON` : 'JSON' };
  if (type === 'string') {
    const format = typeof declared.format === 'string' ? declared.format : undefined;
    const kind = format === 'date' ? 'date' : format === 'email' ? 'email' : format === 'uri' ? 'url' : 'text';
    const example = format === 'date-time' ? ', as 2024-05-01T12:00:00Z' : '';
    return { ...field, kind, hint: `${format ? `string (${format}${example})` : 'string'}${nullable}${bounds(declared)}` };
  }
  if (type === 'number' || type === 'integer') return { ...field, kind: type, hint: `${type}${nullable}${bounds(declared)}` };
  if (type === 'boolean') return { ...field, kind: 'boolean', hint: `boolean${nullable}` };
  return { ...field, kind: 'json', hint: `${type}${nullable}, as JSON` };
}

/** The bounds a number or string is held to, in words ("", or ", from 0 to 150"). */
function bounds(declared: Subschema): string {
  const words: string[] = [];
  if (typeof declared.minimum === 'number') words.push(`at least ${declared.minimum}`);
  if (typeof declared.exclusiveMinimum === 'number') words.push(`over ${declared.exclusiveMinimum}`);
  if (typeof declared.maximum === 'number') words.push(`at most ${declared.maximum}`);
  if (typeof declared.exclusiveMaximum === 'number') words.push(`under ${declared.exclusiveMaximum}`);
  if (typeof declared.minLength === 'number') words.push(`at least ${characters(declared.minLength)}`);
  if (typeof declared.maxLength === 'number') words.push(`at most ${characters(declared.maxLength)}`);
  if (typeof declared.pattern === 'string') words.push(`matching ${declared.pattern}`);
  return words.length > 0 ? `, ${words.join(', ')}` : '';
}

const characters = (count: number) => `${count} ${count === 1 ? 'character' : 'characters'}`;

/**
 * The subschema `declared` refers to, when it is a `$ref` to a JSON Pointer of the schema (`#/$defs/a`),
 * followed a few times; else `declared` itself (an anchor's `$ref`, say: then it is edited as JSON).
 */
function resolve(declared: unknown, root: RowSchema): unknown {
  let current = declared;
  for (let hops = 0; hops < 8 && isObject(current) && typeof current.$ref === 'string'; hops++) {
    const reference: string = current.$ref;
    if (!reference.startsWith('#/') && reference !== '#') return undefined;
    let target: unknown = root;
    for (const segment of reference === '#' ? [] : reference.slice(2).split('/')) {
      const name = decodeURIComponent(segment).replaceAll('~1', '/').replaceAll('~0', '~');
      target = isObject(target) ? target[name] : undefined;
    }
    // A $ref beside other keywords adds them (2020-12): the form knows only the type, so those are left to the service.
    current = target;
  }
  return isObject(current) && typeof current.$ref === 'string' ? undefined : current;
}

/**
 * The input `field` is edited with when it holds `value`: its own, when that can show the value without
 * losing it (a date input shows only a full-date, a number input only a number), else a JSON textarea.
 * A field the row lacks, or holds null in, is shown in its own input, empty.
 */
export function inputKind(field: FormField, value: unknown): FieldKind {
  if (value === undefined || value === null) return field.kind;
  const fits = {
    text: typeof value === 'string',
    email: typeof value === 'string',
    url: typeof value === 'string',
    date: typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value),
    number: typeof value === 'number',
    integer: typeof value === 'number',
    boolean: typeof value === 'boolean',
    choice: true,
    relation: typeof value === 'number' && Number.isSafeInteger(value) && value >= 1,
    json: true,
  }[field.kind];
  return fits ? field.kind : 'json';
}

/** What an input holds, as the page reads it. */
export interface InputState {
  /** Its text: a text input's, a number input's (empty when the browser cannot read a number), a select's option, a textarea's. */
  value: string;
  /** A checkbox's. */
  checked: boolean;
  /** A number input holding text that is no number (the browser's validity.badInput). */
  badInput: boolean;
}

/** What an input says of its field: left as it was, set to a value, or not a value at all (and why). */
export type Reading = { keep: true } | { keep?: false; value: unknown } | { keep?: false; error: string };

/** The option of a select that keeps a field as it is (absent, or a value not among the choices). */
export const KEEP_CHOICE = '';

/** The option of a relation's list that names no row. */
export const NO_ROW = '';

/**
 * What `input`, `field`'s input, makes of the field, which held `before` (undefined when the row lacks
 * it, as every field of a row being inserted does). An input left empty keeps a field the row lacks or
 * holds null in; a number input emptied sets null (the schema says whether that is a value); a checkbox
 * never makes false of a field that held no boolean, but in a new row, where unchecked is false.
 */
export function readInput(field: FormField, input: InputState, before: unknown, inserting: boolean): Reading {
  const empty = before === undefined || before === null;
  switch (inputKind(field, before)) {
    case 'text':
    case 'date':
    case 'email':
    case 'url':
      return input.value === '' && empty ? { keep: true } : { value: input.value };
    case 'number':
    case 'integer':
      if (input.badInput) return { error: 'is not a number' };
      if (input.value === '') return empty ? { keep: true } : { value: null };
      return { value: Number(input.value) };
    case 'boolean':
      return input.checked || typeof before === 'boolean' || inserting ? { value: input.checked } : { keep: true };
    case 'choice':
      return input.value === KEEP_CHOICE ? { keep: true } : { value: field.choices[Number(input.value)] };
    case 'relation':
      // The list's value: a row's id, or none (NO_ROW), which makes null of a field that named a row.
      if (input.value === NO_ROW) return empty ? { keep: true } : { value: null };
      return { value: Number(input.value) };
    case 'json':
      if (input.value.trim() === '') return before === undefined ? { keep: true } : { error: 'cannot be removed, only set (to null, say)' };
      try {
        return { value: JSON.parse(input.value) };
      } catch (failure) {
        return { error: `is not JSON: ${(failure as Error).message}` };
      }
  }
}

/** The text a field's input starts with: its value, as the input shows it. */
export function inputText(field: FormField, value: unknown): string {
  if (value === undefined) return '';
  const kind = inputKind(field, value);
  if (kind === 'json') return JSON.stringify(value, null, 2);
  if (value === null) return '';
  if (kind === 'choice') {
    const at = field.choices.findIndex((choice) => JSON.stringify(choice) === JSON.stringify(value));
    return at === -1 ? KEEP_CHOICE : String(at);
  }
  return String(value);
}

/** Where a refused write's errors go: under a field of the form, or in the form's own message area. */
export interface Placed {
  /** By field name, what is wrong there, each said with its pointer when it is deeper than the field. */
  atFields: Map<string, string[]>;
  /** Errors at the row itself (pointer ""), or at a field the form does not show. */
  elsewhere: string[];
}

/**
 * The errors of `problem` placed on the form's `fields`: a 422 row_invalid's by the first segment of
 * each error's pointer (docs/schemas.md, "A row that fails"), a 409 unique_violation's at the index's
 * fields, naming the row that holds their values already.
 */
export function placeErrors(problem: Problem, fields: readonly string[]): Placed {
  const placed: Placed = { atFields: new Map(), elsewhere: [] };
  const at = (field: string, message: string) => placed.atFields.set(field, [...(placed.atFields.get(field) ?? []), message]);
  if (problem.code === 'row_invalid') {
    for (const error of problem.errors ?? []) {
      if (!('row' in error)) continue;
      const field = firstSegment(error.pointer);
      if (field === undefined) placed.elsewhere.push(error.message);
      else if (!fields.includes(field)) placed.elsewhere.push(`${error.pointer}: ${error.message}`);
      else at(field, error.pointer === `/${escapeSegment(field)}` ? error.message : `${error.pointer}: ${error.message}`);
    }
  }
  if (problem.code === 'unique_violation') {
    const index = (problem.fields ?? []).join(', ');
    const message =
      problem.existing_id === undefined
        ? `two rows of this write share this value of the unique index ${index}`
        : `row ${problem.existing_id} holds this value already (unique index ${index})`;
    for (const field of problem.fields ?? []) {
      if (fields.includes(field)) at(field, message);
      else placed.elsewhere.push(`${field}: ${message}`);
    }
  }
  return placed;
}

/** The top-level field a JSON Pointer points into (RFC 6901 §4), or undefined for the row itself. */
function firstSegment(pointer: string): string | undefined {
  if (!pointer.startsWith('/')) return undefined;
  const end = pointer.indexOf('/', 1);
  return (end === -1 ? pointer.slice(1) : pointer.slice(1, end)).replaceAll('~1', '/').replaceAll('~0', '~');
}

const escapeSegment = (name: string) => name.replaceAll('~', '~0').replaceAll('/', '~1');

const isObject = (value: unknown): value is Subschema => typeof value === 'object' && value !== null && !Array.isArray(value);

const isScalar = (value: unknown) => value === null || ['string', 'number', 'boolean'].includes(typeof value);

/** A choice as a person reads it: a string as itself, anything else as JSON. */
export const shown = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

/** The fields a row is named by in a list, when it has one of them: the first found. */
const NAMING_FIELDS = ['name', 'title', 'label', 'email', 'text'];

/**
 * The field the rows of a related collection are named by in a list (a relation's picker, its related
 * rows): the first of NAMING_FIELDS the schema declares a string, else its first string property; without
 * a schema, the first of NAMING_FIELDS the rows hold a string in, else the first string field of the first
 * row. None: the rows are named by their ids alone.
 */
export function labelFieldOf(schema: RowSchema | null | undefined, rows: readonly Record<string, unknown>[]): string | undefined {
  const properties = schema?.properties;
  if (isObject(properties)) {
    const strings = Object.entries(properties)
      .filter(
        ([, declared]) =>
          isObject(declared) && (declared.type === 'string' || (Array.isArray(declared.type) && declared.type.includes('string'))),
      )
      .map(([name]) => name);
    return NAMING_FIELDS.find((name) => strings.includes(name)) ?? strings[0];
  }
  const held = (name: string) => rows.some((row) => typeof row[name] === 'string');
  return NAMING_FIELDS.find(held) ?? Object.keys(rows[0] ?? {}).find((name) => typeof rows[0][name] === 'string');
}

/** A row as a list names it: its id and, when it holds one, its `labelField` (cut to 60 characters). */
export function rowLabel(row: Record<string, unknown>, labelField: string | undefined): string {
  const value = labelField === undefined ? undefined : row[labelField];
  if (typeof value !== 'string' || value === '') return `row ${row.id}`;
  return `${row.id} · ${value.length > 60 ? `${value.slice(0, 59)}…` : value}`;
}

/**
 * The filter a picker's search box asks for, in the filter language (docs/api.md): a filter as it is
 * typed (`{…}`), a row's id, or words (the collection's search index's, when it has one; else a prefix of
 * its rows' `labelField`); none for an empty box. An error when words cannot be searched for.
 */
export function pickerFilter(
  words: string,
  how: { searchable: boolean; labelField: string | undefined },
): { filter?: string } | { error: string } {
  const text = words.trim();
  if (text === '') return {};
  if (text.startsWith('{')) return { filter: text };
  if (/^[1-9]\d{0,15}$/.test(text)) return { filter: JSON.stringify({ id: Number(text) }) };
  if (how.searchable) return { filter: JSON.stringify({ $search: text }) };
  if (how.labelField !== undefined) return { filter: JSON.stringify({ [how.labelField]: { $prefix: text } }) };
  return { error: 'These rows have no field to find words in: type an id, or a filter ({"field": value}).' };
}
