// The Ajv (https://ajv.js.org) a collection's schema is compiled with, and what it is allowed to do:
// the formats it knows, the regular expression engine its patterns run on, and how it compares values.
import { Ajv2020, type ErrorObject, type Options } from 'ajv/dist/2020.js';
import type { DataValidateFunction, RegExpEngine, SchemaValidateFunction } from 'ajv/dist/types/index.js';
import addFormats from 'ajv-formats';
import { RE2JS } from 're2js';
import { isDateTime } from './date-time.ts';

/** The one dialect a schema may name in `$schema`: JSON Schema 2020-12. */
export const draft202012 = 'https://json-schema.org/draft/2020-12/schema';

/**
 * The values of `format` that are checked (JSON Schema Validation 2020-12 §7.3), each as ajv-formats'
 * full mode checks it: `date-time` and `date` as RFC 3339 §5.6 writes them (a date-time with its
 * offset), `email` as RFC 5321's mailbox, `uri` as RFC 3986's absolute URI, `uuid` as RFC 9562's.
 */
export const rowFormats = ['date-time', 'date', 'email', 'uri', 'uuid'] as const;

/**
 * A pattern as the RE2 engine (re2js) runs it: in time linear in the string, whatever the pattern,
 * where JavaScript's backtracking engine can take exponential time (`^(a+)+$` on many `a`s and a `!`).
 * JSON Schema patterns are ECMA-262 regular expressions (JSON Schema Core 2020-12 §6.4): re2js
 * translates their escapes (`\u00e9`, `(?<name>…)`) to RE2's syntax. Throws what re2js throws for a
 * pattern RE2 cannot run (a backreference, lookaround). Unanchored, as JSON Schema's `pattern` is;
 * `instructions` is the size of its RE2 program, which its compile took time in.
 */
export function rowPattern(pattern: string): { test(text: string): boolean; toString(): string; instructions: number } {
  const re2 = compiledPattern(pattern);
  // Ajv keys the patterns of a validator by their toString(): each pattern must give its own.
  return { test: (text) => re2.test(text), toString: () => pattern, instructions: re2.programSize() };
}

/**
 * The patterns compiled last, shared: a schema's patterns are compiled when it is checked, when Ajv
 * compiles it there, and again when the caller compiles its validator, and an RE2 program takes time to
 * compile (keywords.ts, maxPatternInstructions). A compiled pattern holds no state a test can see.
 */
const recentPatterns = new Map<string, RE2JS>();
const maxRecentPatterns = 200;

function compiledPattern(pattern: string): RE2JS {
  let re2 = recentPatterns.get(pattern);
  if (re2) recentPatterns.delete(pattern);
  else {
    const found = backreference(pattern);
    if (found) throw new Error(`error parsing regexp: backreference: \`${found}\``);
    re2 = RE2JS.compile(RE2JS.translateRegExp(pattern));
    if (recentPatterns.size >= maxRecentPatterns) recentPatterns.delete(recentPatterns.keys().next().value as string);
  }
  recentPatterns.set(pattern, re2);
  return re2;
}

/**
 * The first backreference in `pattern` (`\1` to `\9`, `\k<name>`), which re2js's translation would
 * turn into the character it escapes rather than refuse. In an ECMA-262 pattern of unicode mode, as
 * keywords.ts makes sure they are, these escapes are backreferences and nothing else (ECMA-262 §22.2.1).
 */
function backreference(pattern: string): string | undefined {
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] !== '\\') continue;
    const next = pattern[++i];
    if (next === 'k' || (next >= '1' && next <= '9')) return `\\${next}`;
  }
  return undefined;
}

/** rowPattern as Ajv's engine for `pattern` and `patternProperties`; `code` would name it in standalone code, which we never write. */
const patternEngine: RegExpEngine = Object.assign((pattern: string) => rowPattern(pattern), { code: 'rowPattern' });

/**
 * The options of every Ajv that compiles a row schema:
 * - `allErrors`: a row's every error is reported, not only the first (the caller caps them).
 * - `strictSchema`: a keyword Ajv does not know, or would ignore, fails the compile; `strictTypes`,
 *   `strictTuples` and `strictRequired` are off, as they refuse schemas that are valid and mean what
 *   they say (`properties` without `type: "object"`, `required` of a field not under `properties`).
 * - `ownProperties`: only a row's own fields count, so `required: ["constructor"]` is not met by the
 *   prototype of every object.
 * - `multipleOfPrecision: 9`: `multipleOf` holds when the quotient is within 1e-9 of an integer, so
 *   that 19.99 is a multiple of 0.01 though 19.99 / 0.01 is 1998.9999999999998 in binary floating point.
 * - `meta: false`, `validateSchema: false`: the schema was checked against 2020-12's meta-schema once,
 *   by checkRowSchema; compiling that meta-schema into every validator would cost each one its code.
 */
const options: Options = {
  allErrors: true,
  strictSchema: true,
  strictNumbers: true,
  strictTypes: false,
  strictTuples: false,
  strictRequired: false,
  ownProperties: true,
  multipleOfPrecision: 9,
  meta: false,
  validateSchema: false,
  logger: false,
  code: { regExp: patternEngine },
};

/**
 * The options of an Ajv that compiles a row schema only to see that it compiles (check.ts, the last step
 * of a schema's checks), whose code never runs: `options`, but the code Ajv writes is not optimized
 * (`code.optimize`: its passes over the code once written, which remove unused names and fold
 * constants), and its errors carry no `message`. Ajv walks the schema and writes each keyword's code as
 * it does with `options`, and refuses what they refuse (strict mode, a format or pattern it cannot
 * run): neither option bears on that. About a third of a compile's time.
 */
const checkOptions: Options = { ...options, messages: false, code: { ...options.code, optimize: false } };

/**
 * A new Ajv for one row schema; with `check`, for a compile that only checks that it compiles
 * (checkOptions). Not shared: an Ajv keeps, for as long as it lives, every schema it compiled and every
 * value the compiled code refers to, and a compiled validator refers to its Ajv. One Ajv per validator is
 * freed with it, when the collection drops the validator.
 */
export function rowAjv(check = false): Ajv2020 {
  const ajv = new Ajv2020(check ? checkOptions : options);
  addFormats.default(ajv, [...rowFormats]);
  // The same answers as ajv-formats' `date-time`, without its garbage on every typed insert (date-time.ts).
  ajv.addFormat('date-time', isDateTime);
  // Ajv resolves a `$ref` to an `$anchor` (JSON Schema Core 2020-12 §8.2.2), but does not know the
  // keyword itself, which strict mode then refuses.
  ajv.addKeyword({ keyword: '$anchor', schemaType: 'string' });
  // Ajv compares values with fast-deep-equal, which reads a row's members named constructor, valueOf
  // and toString as if they were the object's own methods: {"toString": null} throws, and
  // {"constructor": [1]} equals no other object. Its uniqueItems compares every pair of items unless
  // their type is a scalar one: quadratic in the length of an array a row can make as long as its
  // body allows. `enum`, `const` and `uniqueItems` compare canonical JSON instead, in one pass.
  for (const keyword of ['enum', 'const', 'uniqueItems']) ajv.removeKeyword(keyword);
  ajv.addKeyword({ keyword: 'enum', schemaType: 'array', errors: true, compile: (values: unknown[]) => oneOf('enum', values) });
  ajv.addKeyword({ keyword: 'const', errors: true, compile: (value: unknown) => oneOf('const', [value]) });
  ajv.addKeyword({ keyword: 'uniqueItems', type: 'array', schemaType: 'boolean', errors: true, validate: uniqueItems });
  return ajv;
}

/** `enum` or `const` (JSON Schema Validation 2020-12 §6.1.2, §6.1.3) of `values`, with the params of Ajv's own errors. */
function oneOf(keyword: 'enum' | 'const', values: unknown[]): DataValidateFunction {
  const allowed = new Set(values.map(canonicalJson));
  const params = keyword === 'enum' ? { allowedValues: values } : { allowedValue: values[0] };
  const validate: DataValidateFunction = (data: unknown) => {
    if (allowed.has(canonicalJson(data))) return true;
    validate.errors = [{ keyword, params }];
    return false;
  };
  return validate;
}

/** `uniqueItems` (JSON Schema Validation 2020-12 §6.4.3): its error's `i` is the later of two equal items, `j` the earlier. */
const uniqueItems: SchemaValidateFunction = (unique: boolean, items: unknown[]) => {
  if (!unique) return true;
  const seen = new Map<string, number>();
  for (let i = 0; i < items.length; i++) {
    const key = canonicalJson(items[i]);
    const j = seen.get(key);
    if (j !== undefined) {
      const error: Partial<ErrorObject> = { keyword: 'uniqueItems', params: { i, j }, message: `must not repeat item ${j}` };
      uniqueItems.errors = [error];
      return false;
    }
    seen.set(key, i);
  }
  return true;
};

/**
 * JSON text that two values share exactly when JSON Schema holds them equal (JSON Schema Core 2020-12
 * §4.2.2): members in the order of their names, numbers by value (1 and 1.0 are one number once parsed).
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const names = Object.keys(value).sort();
  return `{${names.map((name) => `${JSON.stringify(name)}:${canonicalJson((value as Record<string, unknown>)[name])}`).join(',')}}`;
}
