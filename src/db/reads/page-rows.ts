// A page's JSON text taken apart without parsing it (./expand.ts): its rows' texts, and of each row the
// few top-level numbers an expansion reads (its id, a to-one relation's field), so that the expansions
// are set into the rows' texts as the database made them, not into rows parsed and written again.
// JSON texts (RFC 8259) hold a bare quote only where a string starts or ends, and brackets outside
// strings only as structure: a scan that skips strings whole (to their unescaped closing quote) finds
// every element and member.
import { setMember } from '../../rows.ts';

/** `"`, `\`, `:`, `{`, `[`, `}`, `]`. */
const [QUOTE, BACKSLASH, COLON, OPEN_OBJECT, OPEN_ARRAY, CLOSE_OBJECT, CLOSE_ARRAY] = ['"', '\\', ':', '{', '[', '}', ']'].map((c) =>
  c.charCodeAt(0),
);

/** The texts of the elements of the JSON array `json`, as they are in it (white space between them aside). */
export function elementTexts(json: string): string[] {
  const texts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let at = 1; at < json.length - 1; at++) {
    const c = json.charCodeAt(at);
    if (c === QUOTE) at = stringEnd(json, at);
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (depth++ === 0) start = at;
    } else if ((c === CLOSE_OBJECT || c === CLOSE_ARRAY) && --depth === 0) texts.push(json.slice(start, at + 1));
  }
  return texts;
}

/** `texts`, JSON texts of objects or arrays joined by commas, without the last of them. */
export const withoutLast = (texts: string): string => elementTexts(`[${texts}]`).slice(0, -1).join(',');

/**
 * Of the JSON object `text`, the members named in `names` whose values are numbers (as JSON.parse reads
 * them; the last of a name, as it keeps); undefined when a member's name is `reserved` or written with an
 * escape (which a comparison of texts would miss): such a row is for the caller to parse.
 */
export function numbersOf(text: string, names: readonly string[], reserved: string): Record<string, number> | undefined {
  const found: Record<string, number> = {};
  let depth = 0;
  for (let at = 0; at < text.length; at++) {
    const c = text.charCodeAt(at);
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++;
    else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
    else if (c === QUOTE) {
      const end = stringEnd(text, at);
      const colon = depth === 1 ? nextNonSpace(text, end + 1) : -1;
      if (colon >= 0 && text.charCodeAt(colon) === COLON) {
        // A member's name.
        const name = text.slice(at + 1, end);
        if (name === reserved || name.includes('\\')) return undefined;
        const value = nextNonSpace(text, colon + 1);
        if (names.includes(name) && isNumberStart(text.charCodeAt(value)))
          setMember(found, name, Number(text.slice(value, numberEnd(text, value))));
        at = colon;
        continue;
      }
      at = end;
    }
  }
  return found;
}

/** Where the string opened by the quote at `open` ends: its closing quote, the first not escaped. */
function stringEnd(json: string, open: number): number {
  let end = json.indexOf('"', open + 1);
  while (end > 0 && escaped(json, end)) end = json.indexOf('"', end + 1);
  if (end < 0) throw new Error('a JSON text read from the database ends inside a string');
  return end;
}

/** Whether the character at `at` follows an odd run of backslashes. */
function escaped(json: string, at: number): boolean {
  let slashes = 0;
  while (json.charCodeAt(at - 1 - slashes) === BACKSLASH) slashes++;
  return slashes % 2 === 1;
}

/** The first place from `at` that is no JSON white space (space, tab, line feed, carriage return). */
function nextNonSpace(text: string, at: number): number {
  let next = at;
  while (next < text.length && ' \t\n\r'.includes(text[next])) next++;
  return next;
}

/** Whether a JSON value starting with the character `c` is a number: `-` or a digit. */
const isNumberStart = (c: number) => c === 45 || (c >= 48 && c <= 57);

/** Where the number starting at `at` ends: past its digits, sign, point and exponent. */
function numberEnd(text: string, at: number): number {
  let end = at + 1;
  while (end < text.length && '0123456789.eE+-'.includes(text[end])) end++;
  return end;
}
