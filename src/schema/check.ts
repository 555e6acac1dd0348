// Whether a collection can have a schema: a JSON Schema 2020-12 of its rows' fields, small, of the
// keywords rowbase supports (keywords.ts), referring only to itself (refs.ts), that leaves `id` to the
// service, and that compiles. What each refusal means for a user is in docs/schemas.md.
import { createHash } from 'node:crypto';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { type FieldError, validationFailed } from '../errors.ts';
import { checkCompiles, type RowSchema } from './compile.ts';
import { escapePointer, issueOf } from './issues.ts';
import { isObject, type SchemaProblem, walkSchema } from './keywords.ts';
import { refProblems } from './refs.ts';

export type { RowSchema };

/** The most bytes of a schema, as compact JSON in UTF-8 (as it is stored): 64 KiB. */
export const maxSchemaBytes = 64 * 1024;

/** The most levels of objects and arrays in a schema, the schema itself the first. */
export const maxSchemaDepth = 32;

/** The most problems a refusal lists; its detail says how many there were. */
const maxProblems = 100;

/**
 * The schemas accepted lately, each by a digest of its JSON text, at most MAX_ACCEPTED (the first
 * accepted forgotten first). A schema is checked again, the same, within moments: by a declaration's
 * plan, then by its apply (which plans again in its transaction); compiling one (a new Ajv each, step 5)
 * was most of a plan of new collections. Its text decides the answer, so a text accepted once is again.
 */
const accepted = new Set<string>();
const MAX_ACCEPTED = 1000;

/** Validates schemas against JSON Schema 2020-12's meta-schema, compiled once: validating keeps nothing. */
const metaSchema = new Ajv2020({ allErrors: true, logger: false });

/**
 * The schema, if a collection can have it, else a 400 `validation_failed` whose errors name each
 * problem `{in: 'body', name, message}`, `name` the JSON Pointer of its place in the request's body:
 * `where` (the schema's own place in the body: '' for a body that is the schema) and the place in the
 * schema. In order, each step only if the ones before it passed:
 * 1. The schema is a JSON object. A boolean schema is valid JSON Schema, but `true` would declare no
 *    field, and `false` refuse every row: neither describes rows.
 * 2. It is nested at most maxSchemaDepth levels deep, and at most maxSchemaBytes long as JSON.
 * 3. Every keyword of every subschema is one rowbase supports, every `format` one it checks, every
 *    `pattern` one RE2 runs; every `$ref` names a subschema of the schema itself; and the root
 *    describes a row, `id` as the service has it (rootProblems).
 * 4. JSON Schema 2020-12's meta-schema accepts it.
 * 5. Ajv compiles it, in strict mode, as a validator is compiled (compile.ts, checkCompiles).
 */
export function checkRowSchema(schema: unknown, where: string): RowSchema {
  const { checked, digest } = checkRowSchemaBeforeCompiling(schema, where);
  if (digest !== undefined) compileToCheck(checked, digest, where);
  return checked;
}

/**
 * checkRowSchema's steps 1 to 4: the schema, and the digest of its text when it is still to be compiled
 * (step 5); none when a schema of the same text was accepted lately. One not compiled yet is not accepted
 * until compileToCheck() says so.
 */
export function checkRowSchemaBeforeCompiling(schema: unknown, where: string): { checked: RowSchema; digest?: string } {
  if (!isObject(schema)) throw refusal(where, [{ at: '', message: 'must be a JSON object: a row schema is an object schema' }]);
  const deep = tooDeep(schema, 1, '');
  if (deep !== undefined)
    throw refusal(where, [{ at: deep, message: `is nested deeper than the ${maxSchemaDepth} levels a schema may have` }]);
  const text = JSON.stringify(schema);
  const bytes = Buffer.byteLength(text);
  if (bytes > maxSchemaBytes) {
    throw refusal(where, [{ at: '', message: `is ${bytes} bytes as JSON, more than the ${maxSchemaBytes} (64 KiB) a schema may have` }]);
  }
  const digest = createHash('sha256').update(text).digest('base64');
  if (accepted.has(digest)) return { checked: schema as RowSchema };
  const parts = walkSchema(schema);
  const problems = [...parts.problems, ...refProblems(parts), ...rootProblems(schema)];
  if (problems.length > 0) throw refusal(where, problems);
  if (!metaSchema.validateSchema(schema)) throw refusal(where, metaProblems(metaSchema.errors ?? []));
  return { checked: schema as RowSchema, digest };
}

/**
 * checkRowSchema's step 5 of a schema its steps 1 to 4 passed (checkRowSchemaBeforeCompiling, which gave
 * the digest of its text): Ajv compiles it, and it is accepted.
 */
export function compileToCheck(schema: RowSchema, digest: string, where: string): void {
  try {
    checkCompiles(schema);
  } catch (error) {
    throw refusal(where, [{ at: '', message: `cannot be compiled: ${String((error as Error).message).slice(0, 200)}` }]);
  }
  if (accepted.size >= MAX_ACCEPTED) accepted.delete(accepted.values().next().value as string);
  accepted.add(digest);
}

/** The keywords the root may not have (rootProblems says why). */
const notAtRoot = ['$ref', 'enum', 'const'];

/** The keywords `properties.id` may have at the root, beside `type`. */
const idKeywords = new Set(['type', 'minimum', 'exclusiveMinimum', 'title', 'description', '$comment', 'examples']);

/**
 * What is wrong with the root as a row's schema. A row is an object, so the root's `type`, if any,
 * allows objects. The root must describe the fields itself, not by `$ref` (else `id` could be declared
 * where no rule finds it), and cannot hold `enum` or `const`: whole values, which a row would be
 * compared with without its `id`. `id` is the service's, a positive integer it gives each row: the schema may
 * declare it (`{"type": "integer"}`, with annotations and a `minimum` of at most 1) or require it, but
 * not otherwise.
 */
function rootProblems(schema: Record<string, unknown>): SchemaProblem[] {
  const problems: SchemaProblem[] = [];
  for (const keyword of notAtRoot) {
    if (Object.hasOwn(schema, keyword)) problems.push({ at: `/${keyword}`, message: 'is not allowed at the root, which describes a row' });
  }
  const { type } = schema;
  if (type !== undefined && type !== 'object' && !(Array.isArray(type) && type.includes('object'))) {
    problems.push({ at: '/type', message: 'must allow "object": a row is an object' });
  }
  if (isObject(schema.properties) && Object.hasOwn(schema.properties, 'id') && !declaresId(schema.properties.id)) {
    problems.push({
      at: '/properties/id',
      message:
        'must be {"type": "integer"} (with annotations, or a minimum of at most 1): id is the positive integer the service gives each row',
    });
  }
  return problems;
}

/** Whether `id` is declared as every id the service gives: an integer from 1 up. */
function declaresId(id: unknown): boolean {
  if (!isObject(id) || !Object.keys(id).every((keyword) => idKeywords.has(keyword))) return false;
  const integer = id.type === 'integer' || (Array.isArray(id.type) && id.type.length === 1 && id.type[0] === 'integer');
  const minimum = id.minimum === undefined || (typeof id.minimum === 'number' && id.minimum <= 1);
  const exclusiveMinimum = id.exclusiveMinimum === undefined || (typeof id.exclusiveMinimum === 'number' && id.exclusiveMinimum < 1);
  return integer && minimum && exclusiveMinimum;
}

/** The place of the first object or array nested deeper than maxSchemaDepth in `value`, which is at `depth`. */
function tooDeep(value: unknown, depth: number, at: string): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  if (depth > maxSchemaDepth) return at;
  for (const [name, member] of Object.entries(value)) {
    const found = tooDeep(member, depth + 1, `${at}/${escapePointer(name)}`);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * The meta-schema's errors as problems: the first at each place, and none at a place that holds another
 * (the meta-schema says several things of one bad value, one for each way it could have been right: a
 * `type` of "strin" is neither one of the types nor a list of them; in `["string", "string"]`, only
 * the second string is wrong).
 */
function metaProblems(errors: Parameters<typeof issueOf>[0][]): SchemaProblem[] {
  const problems = new Map<string, SchemaProblem>();
  const holders = new Set<string>();
  for (const error of errors) {
    const { pointer, message } = issueOf(error);
    if (!problems.has(pointer)) problems.set(pointer, { at: pointer, message });
    for (let end = pointer.lastIndexOf('/'); end > 0; end = pointer.lastIndexOf('/', end - 1)) holders.add(pointer.slice(0, end));
    if (pointer !== '') holders.add('');
  }
  return [...problems.values()].filter(({ at }) => !holders.has(at));
}

/** The 400 for `problems` of the schema at `where` in the body: its detail names the first, its errors each (up to maxProblems). */
function refusal(where: string, problems: SchemaProblem[]): Error {
  const [first] = problems;
  const subject = first.at === '' ? 'The schema' : `The schema's ${first.at}`;
  const others = problems.length - 1;
  const more = others > 0 ? ` (and ${others} more problem${others === 1 ? '' : 's'}: see errors)` : '';
  const errors: FieldError[] = problems.slice(0, maxProblems).map(({ at, message }) => ({ in: 'body', name: `${where}${at}`, message }));
  return validationFailed(`${subject} ${first.message}${more}.`, errors);
}
