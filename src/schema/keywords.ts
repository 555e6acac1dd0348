// The keywords a row schema may use (docs/schemas.md), and a walk over every subschema of a schema
// that finds any other: a keyword Ajv does not support fails its compile, but one it does and we do
// not (`not`, `if`, `$dynamicRef`, …) would be used, and one rowbase gives no meaning to must not be
// taken for a rule that holds. Section numbers are JSON Schema 2020-12's, Core and Validation.
import { draft202012, rowFormats, rowPattern } from './ajv.ts';
import { escapePointer } from './issues.ts';

/** What a keyword's value is: one subschema, a map of names to subschemas, a list of subschemas, or no subschema. */
type Holds = 'schema' | 'map' | 'list' | 'value';

/** Every keyword a row schema may use, and what it holds. A Map, so that no name is looked up on a prototype. */
const keywords = new Map<string, Holds>([
  // Core §8: identifiers, references, comments. `$id`, `$dynamicRef`, `$dynamicAnchor`, `$vocabulary` are not.
  ['$schema', 'value'],
  ['$ref', 'value'],
  ['$anchor', 'value'],
  ['$defs', 'map'],
  ['$comment', 'value'],
  // Core §10.3: applicators to an object's members and an array's items. The in-place ones (§10.2:
  // allOf, anyOf, oneOf, not, if/then/else, dependentSchemas) and §11's unevaluated* are not.
  ['properties', 'map'],
  ['patternProperties', 'map'],
  ['additionalProperties', 'schema'],
  ['prefixItems', 'list'],
  ['items', 'schema'],
  // Validation §6.
  ['type', 'value'],
  ['enum', 'value'],
  ['const', 'value'],
  ['multipleOf', 'value'],
  ['minimum', 'value'],
  ['maximum', 'value'],
  ['exclusiveMinimum', 'value'],
  ['exclusiveMaximum', 'value'],
  ['minLength', 'value'],
  ['maxLength', 'value'],
  ['pattern', 'value'],
  ['minItems', 'value'],
  ['maxItems', 'value'],
  ['uniqueItems', 'value'],
  ['required', 'value'],
  // Validation §7: format, as an assertion of the formats in rowFormats.
  ['format', 'value'],
  // Validation §9: annotations, which validate nothing (`default` is not written into rows).
  ['title', 'value'],
  ['description', 'value'],
  ['default', 'value'],
  ['examples', 'value'],
]);

/** A place in the schema (a JSON Pointer into it) and what is wrong there. */
export interface SchemaProblem {
  at: string;
  message: string;
}

/** What walkSchema found: every subschema's place, the `$ref`s and `$anchor`s, and the problems. */
export interface SchemaParts {
  /** The place of every subschema, the root's being ''. */
  subschemas: Set<string>;
  /** Each `$ref` of a string, by the place of its subschema. */
  refs: Map<string, string>;
  /** The place of the subschema of each `$anchor`. */
  anchors: Map<string, string>;
  /** How many patterns there are (`pattern`s and names of `patternProperties`), and the RE2 instructions they compile to. */
  patterns: { count: number; instructions: number };
  problems: SchemaProblem[];
}

/**
 * The most patterns in a schema, and the most RE2 instructions they compile to in all. Compiling an RE2
 * program takes time in its instructions, and a schema's patterns are compiled when it is checked and
 * for its validator: a schema of large ones would hold the service for seconds (docs/performance.md,
 * "Compiling a schema's patterns").
 */
const maxPatterns = 100;
const maxPatternInstructions = 5_000;

/** Walks the schema and every subschema in it, keyword by keyword. Values of the wrong type are left for the meta-schema to name. */
export function walkSchema(schema: Record<string, unknown>): SchemaParts {
  const parts: SchemaParts = {
    subschemas: new Set(),
    refs: new Map(),
    anchors: new Map(),
    patterns: { count: 0, instructions: 0 },
    problems: [],
  };
  walk(schema, '', parts);
  return parts;
}

function walk(schema: unknown, at: string, parts: SchemaParts): void {
  if (typeof schema === 'boolean') return void parts.subschemas.add(at);
  if (!isObject(schema)) return;
  parts.subschemas.add(at);
  for (const [keyword, value] of Object.entries(schema)) {
    const here = `${at}/${escapePointer(keyword)}`;
    const holds = keywords.get(keyword);
    if (holds === undefined) parts.problems.push({ at: here, message: 'is not a keyword rowbase supports' });
    else if (holds === 'schema') walk(value, here, parts);
    else if (holds === 'map' && isObject(value)) {
      for (const [name, subschema] of Object.entries(value)) walk(subschema, `${here}/${escapePointer(name)}`, parts);
      // Ajv leaves a member named __proto__ out of `properties` and `patternProperties`, unchecked.
      if (keyword !== '$defs' && Object.hasOwn(value, '__proto__')) {
        parts.problems.push({ at: `${here}/__proto__`, message: 'is a name rowbase cannot check' });
      }
    } else if (holds === 'list' && Array.isArray(value)) {
      for (const [i, subschema] of value.entries()) walk(subschema, `${here}/${i}`, parts);
    } else if (holds === 'value') {
      const message = valueProblem(keyword, value, at);
      if (message) parts.problems.push({ at: here, message });
    }
  }
  if (typeof schema.pattern === 'string') checkPattern(schema.pattern, `${at}/pattern`, parts);
  if (isObject(schema.patternProperties)) {
    for (const pattern of Object.keys(schema.patternProperties))
      checkPattern(pattern, `${at}/patternProperties/${escapePointer(pattern)}`, parts);
  }
  if (typeof schema.$ref === 'string') parts.refs.set(at, schema.$ref);
  if (typeof schema.$anchor === 'string') {
    if (parts.anchors.has(schema.$anchor)) parts.problems.push({ at: `${at}/$anchor`, message: 'names an anchor the schema has already' });
    else parts.anchors.set(schema.$anchor, at);
  }
}

/** What is wrong with the value of a keyword that holds no subschema, beyond what the meta-schema says. */
function valueProblem(keyword: string, value: unknown, at: string): string | undefined {
  if (keyword === 'format' && typeof value === 'string' && !(rowFormats as readonly string[]).includes(value)) {
    return `is not a format rowbase checks (${rowFormats.join(', ')})`;
  }
  // The meta-schema compares every pair of a list of types for uniqueItems: the list is kept short first.
  if (keyword === 'type' && Array.isArray(value) && value.length > jsonTypes) return `lists more than the ${jsonTypes} types there are`;
  if (keyword === '$schema' && at !== '') return 'is allowed at the root of the schema only';
  if (keyword === '$schema' && value !== draft202012) return `must be ${draft202012}, the one dialect rowbase reads`;
  return undefined;
}

/** How many types a `type` may list (Validation §6.1.1): null, boolean, object, array, number, string, integer. */
const jsonTypes = 7;

/** The longest message of a regular expression engine quoted. */
const maxEngineMessage = 200;

/**
 * Checks the pattern at `at` (patternInstructions), and counts it against the schema's budget of
 * patterns. Past the budget, patterns are not compiled: compiling is what the budget bounds.
 */
function checkPattern(pattern: string, at: string, parts: SchemaParts): void {
  const budget = parts.patterns;
  budget.count += 1;
  if (budget.count > maxPatterns || budget.instructions > maxPatternInstructions) {
    if (budget.count === maxPatterns + 1)
      parts.problems.push({ at, message: `is one pattern more than the ${maxPatterns} a schema may have` });
    return;
  }
  const instructions = patternInstructions(pattern);
  if (typeof instructions === 'string') {
    parts.problems.push({ at, message: instructions });
    return;
  }
  budget.instructions += instructions;
  if (budget.instructions > maxPatternInstructions) {
    const message = `takes the schema's patterns past the ${maxPatternInstructions} RE2 instructions they may compile to (this one is ${instructions})`;
    parts.problems.push({ at, message });
  }
}

/**
 * The size of the pattern's RE2 program, or why it cannot be a pattern: it must be an ECMA-262 regular
 * expression, as JSON Schema has them (Core §6.4), that the RE2 engine can run (ajv.ts, rowPattern).
 */
function patternInstructions(pattern: string): number | string {
  try {
    new RegExp(pattern, 'u');
  } catch {
    return 'is not an ECMA-262 regular expression';
  }
  try {
    return rowPattern(pattern).instructions;
  } catch (error) {
    const reason = String((error as Error).message).slice(0, maxEngineMessage);
    return `is not a regular expression RE2 runs (it has no backreferences nor lookaround): ${reason}`;
  }
}

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
