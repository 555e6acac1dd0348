// How PostgreSQL reads a row's JSON text as jsonb: its strings escaped so that they hold what jsonb
// cannot and order by code point, and read back (escapeString, jsonbOf, unescapedJson).
import type { JsonValue } from '../../query/filter.ts';
import { setMember } from '../../rows.ts';
import { raw } from '../engine/sql/template.ts';

/**
 * PostgreSQL's text, and so its jsonb, cannot hold U+0000, which a JSON string may; nor can its jsonb
 * hold a lone surrogate (U+D800..U+DFFF not paired), which a JSON string may too, and which
 * JSON.stringify writes as the escape `\udXYZ`. Where PostgreSQL reads a row as jsonb, to order by a
 * field or to key a sort index, every string (field names too) is escaped, one character at a time:
 *
 *   U+0000                  → U+0001 U+0001
 *   U+0001                  → U+0001 U+0002
 *   U+D7FF                  → U+D7FF U+0002
 *   U+DXYZ (X in 8..F, lone) → U+D7FF U+0XYZ   (U+0800..U+0FFF: the same hex digits)
 *   every other character   → itself
 *
 * Why escaped strings compare by code point exactly as the strings do (openapi.yaml, listRows:
 * "strings by Unicode code point", on both backends alike), and two names are equal escaped only when
 * they are equal:
 * - The escape is prefix-free: the characters that stand for themselves are never U+0001 or U+D7FF,
 *   every code that starts with U+0001 or U+D7FF is two characters long, and no two codes are equal
 *   (the second characters of the U+D7FF codes, U+0002 and U+0800..U+0FFF, differ). So an escaped
 *   string reads back one code at a time, and the first characters that differ in two strings are
 *   escaped into the first codes that differ in the escaped ones, neither a prefix of the other.
 * - The escape keeps the order of characters: U+0000 < U+0001 < U+0002 go to 0001 0001 < 0001 0002 <
 *   0002; U+D7FE < U+D7FF < U+D800 < … < U+DFFF < U+E000 go to D7FE < D7FF 0002 < D7FF 0800 < … <
 *   D7FF 0FFF < E000. Any other two characters stand for themselves. (A paired surrogate, an astral
 *   character, stands for itself, above U+E000, as its code point is.)
 * So the first codes that differ order the escaped strings as the first characters that differ order
 * the strings; and a string that is a prefix of another is escaped into a prefix of the other's escape.
 * The second character of a code is never escaped again (nothing reads it as U+0001 or U+D7FF: the
 * escape maps the string's characters, not its output). For ordering only: rows are returned as stored.
 */
export const escapeString = (text: string) => text.replace(escaped, escapeOne);

// In a `u` regular expression a surrogate pair is one code point (above U+FFFF), so only lone surrogates
// fall in U+D800..U+DFFF.
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 and U+0001 are what it escapes.
const escaped = /[\u0000\u0001\ud7ff-\udfff]/gu;

const escapeOne = (c: string) =>
  c === '\u0000'
    ? '\u0001\u0001'
    : c === '\u0001'
      ? '\u0001\u0002'
      : c === '\ud7ff'
        ? '\ud7ff\u0002'
        : `\ud7ff${String.fromCharCode(c.charCodeAt(0) - 0xd000)}`;

/** A string escaped by escapeString(), as it was. */
const unescapeString = (text: string) => text.replace(unescaped, unescapeOne);

// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0001 and U+0002 are what escapeString() writes.
const unescaped = /\u0001[\u0001\u0002]|\ud7ff[\u0002\u0800-\u0fff]/g;

const unescapeOne = (code: string) =>
  code === '\u0001\u0001'
    ? '\u0000'
    : code === '\u0001\u0002'
      ? '\u0001'
      : code === '\ud7ff\u0002'
        ? '\ud7ff'
        : String.fromCharCode(code.charCodeAt(1) + 0xd000);

/** A JSON text PostgreSQL made of escaped jsonb (aggregateSql), its strings and names read back. */
export function unescapedJson(text: string): JsonValue {
  const read = (value: JsonValue): JsonValue => {
    if (typeof value === 'string') return unescapeString(value);
    if (value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) return value.map(read);
    const object: { [key: string]: JsonValue } = {};
    for (const [key, item] of Object.entries(value)) setMember(object, unescapeString(key), read(item));
    return object;
  };
  return read(JSON.parse(text));
}

/**
 * SQL: the JSON text `document` (written by JSON.stringify) as jsonb, its strings escaped as
 * escapeString() escapes them. JSON.stringify writes U+0000 and U+0001 as the escapes `\u0000` and
 * `\u0001`, a lone surrogate as the escape `\udXYZ` (lower case hex; upper case is read too), U+D7FF as
 * itself, and a backslash as `\\`; the backslashes go first (as `\u005c`, the same character), so that
 * a backslash followed by the text "u0000" or "ud800" is never read as an escape: after it, every
 * backslash starts an escape. Each later step's output is an escape no later step matches (`\u0001`,
 * `\u0002`, `\u08YZ`..`\u0fYZ`) or a U+D7FF that no later step looks for, so nothing is escaped twice.
 */
export const jsonbOf = (document: string) =>
  String.raw`regexp_replace(replace(replace(replace(replace(${document}, '\\', '\u005c'), '\u0001', '\u0001\u0002'), '\u0000', '\u0001\u0001'),
    chr(55295), chr(55295) || '\u0002'), '\\u[dD]([89a-fA-F][0-9a-fA-F]{2})', chr(55295) || '\\u0\1', 'g')::jsonb`;

/**
 * The row's text as jsonb: read by jsonbOf(); or, when it holds no backslash and no U+D7FF, read as it
 * is, the same jsonb without jsonbOf()'s five passes over the text. jsonbOf() changes only escapes and
 * U+D7FF, and JSON.stringify writes U+0000, U+0001 and lone surrogates only as escapes.
 */
export const document = (row: string) =>
  raw(`case when strpos(${row}.data, '\\') = 0 and strpos(${row}.data, chr(55295)) = 0 then ${row}.data::jsonb
    else ${jsonbOf(`${row}.data`)} end`);

/** A field of a row as jsonb: its text `data` read by jsonbOf(), then the field, its name escaped likewise (one binding). */
export function field(name: string) {
  return { value: `${jsonbOf('data')} -> ?`, bindings: [escapeString(name)] };
}
