// What Ajv's errors say, in the API's words: where (an RFC 6901 JSON Pointer), which keyword, and a
// sentence fragment about the value there. Used for a row against its collection's schema
// (compile.ts), and for a schema against JSON Schema's meta-schema (check.ts).
import type { ErrorObject } from 'ajv/dist/2020.js';

/** What is wrong with a row: at `pointer` (RFC 6901, into the row's fields), the JSON Schema `keyword` that fails, and why. */
export interface RowIssue {
  pointer: string;
  keyword: string;
  message: string;
}

/** The longest value (as JSON) quoted in a message: past it the message names the keyword's value without repeating it. */
const maxQuoted = 100;

/**
 * An Ajv error as an issue. `required` points at the missing member, `additionalProperties` at the
 * member not allowed, `uniqueItems` at the later of two equal items, every other keyword at the value
 * that fails it. A `false` subschema (JSON Schema Core 2020-12 §4.3.2) fails as the keyword `false`.
 */
export function issueOf({ keyword, instancePath, params, message }: ErrorObject): RowIssue {
  switch (keyword) {
    case 'required':
      return { pointer: `${instancePath}/${escapePointer(params.missingProperty)}`, keyword, message: 'is required' };
    case 'additionalProperties':
      return { pointer: `${instancePath}/${escapePointer(params.additionalProperty)}`, keyword, message: 'is not allowed by the schema' };
    case 'uniqueItems': {
      // Ajv names the two items `i` and `j`, either way round.
      const [earlier, later] = [params.i, params.j].sort((a, b) => a - b);
      return { pointer: `${instancePath}/${later}`, keyword, message: `is equal to item ${earlier}` };
    }
    case 'false schema':
      return { pointer: instancePath, keyword: 'false', message: 'is not allowed by the schema' };
    default:
      return { pointer: instancePath, keyword, message: describe(keyword, params) ?? message ?? `fails ${keyword}` };
  }
}

const comparisons: Record<string, string> = { '>=': 'at least', '<=': 'at most', '>': 'greater than', '<': 'less than' };

const formatMessages: Record<string, string> = {
  'date-time': 'must be a date and time as RFC 3339 writes them, such as 2024-05-01T12:00:00Z',
  date: 'must be a date as RFC 3339 writes it, such as 2024-05-01',
  email: 'must be an email address',
  uri: 'must be an absolute URI, such as https://example.com/a',
  uuid: 'must be a UUID',
};

/** What a keyword's failure says, from its error's params (Ajv's lib/vocabularies: each keyword's `params`). */
function describe(keyword: string, params: Record<string, unknown>): string | undefined {
  switch (keyword) {
    case 'type':
      return `must be ${[params.type].flat().map(typeName).join(' or ')}`;
    case 'enum':
      return quoted(params.allowedValues, (values) => `must be one of ${values}`) ?? 'must be one of the values the schema lists';
    case 'const':
      return quoted(params.allowedValue, (value) => `must be ${value}`) ?? 'must be the value the schema gives';
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return `must be ${comparisons[params.comparison as string]} ${params.limit}`;
    case 'minLength':
      return `must be at least ${counted(params.limit, 'character')} long`;
    case 'maxLength':
      return `must be at most ${counted(params.limit, 'character')} long`;
    case 'minItems':
      return `must have at least ${counted(params.limit, 'item')}`;
    case 'maxItems':
    case 'items':
      return `must have at most ${counted(params.limit, 'item')}`;
    case 'multipleOf':
      return `must be a multiple of ${params.multipleOf}`;
    case 'pattern':
      // As the schema writes it, not as JSON, which would double its backslashes.
      return String(params.pattern).length <= maxQuoted
        ? `must match the pattern ${params.pattern}`
        : 'must match the pattern the schema gives';
    case 'format':
      return formatMessages[params.format as string];
    default:
      return undefined;
  }
}

const typeNames: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  integer: 'an integer',
  boolean: 'a boolean',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

const typeName = (type: unknown) => typeNames[type as string] ?? String(type);

const counted = (n: unknown, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** `say` of the value as JSON (a list of values as JSON joined by commas), if that is short enough to quote. */
function quoted(value: unknown, say: (text: string) => string): string | undefined {
  const text = Array.isArray(value) ? value.map((item) => JSON.stringify(item)).join(', ') : JSON.stringify(value);
  return text.length <= maxQuoted ? say(text) : undefined;
}

/** A member's name as a JSON Pointer's reference token (RFC 6901 §3: `~` as `~0`, `/` as `~1`). */
export const escapePointer = (name: unknown) => String(name).replaceAll('~', '~0').replaceAll('/', '~1');
